//! Lambda entry point of the webhook retry sweep (scheduled every minute):
//! attempts the deliveries whose retry is due.

use api::services::app::App;
use api::services::webhooks as dispatch;
use api::store::config::Config;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    api::services::app::init_tracing();
    let app = App::new(Config::from_env()?).await;
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| {
        let app = app.clone();
        // Boxed, as axum boxes an HTTP handler: inline, the SDK calls nested in
        // this future overflow the compiler's query depth when it lays out main.
        Box::pin(async move {
            let report = dispatch::sweep(&app, api::domain::timestamp::now()).await?;
            tracing::info!(
                attempted = report.attempted,
                abandoned = report.abandoned,
                skipped = report.skipped,
                "webhook sweep"
            );
            Ok::<_, Error>(report)
        })
    }))
    .await
}
