//! Lambda entry point for the invoice events (S3 `ObjectCreated` under `invoices/`).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use services::app::App;
use services::domain::timestamp;
use services::store::config::Config;

#[tokio::main]
async fn main() -> Result<(), Error> {
    services::app::init_tracing();
    // Configuration and clients are built once, before the first event.
    let app = App::new(Config::from_env()?).await;
    lambda_runtime::run(service_fn(|event: LambdaEvent<invoices::S3Event>| {
        let app = app.clone();
        // Boxed, as axum boxes an HTTP handler: inline, the SDK calls nested in
        // this future overflow the compiler's query depth when it lays out main.
        Box::pin(async move {
            let summary = invoices::handle(&app, &event.payload, timestamp::now()).await?;
            tracing::info!(
                applied = summary.applied,
                ignored = summary.ignored,
                "invoice events"
            );
            Ok::<_, Error>(summary)
        })
    }))
    .await
}
