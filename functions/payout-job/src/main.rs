//! Lambda entry point for the payout job (scheduled daily): approves what
//! is due, opens payouts, completes their work and retries payments left
//! PROCESSING. A run cut short by its budget is finished by the next.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use services::app::App;
use services::domain::timestamp;
use services::payout_job::{self as job, Budget};
use services::store::config::Config;

#[tokio::main]
async fn main() -> Result<(), Error> {
    services::app::init_tracing();
    let app = App::new(Config::from_env()?).await;
    // The scheduled event carries nothing the job needs: it runs at "now".
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| {
        let app = app.clone();
        // Boxed, as axum boxes an HTTP handler: inline, the SDK calls nested in
        // this future overflow the compiler's query depth when it lays out main.
        Box::pin(async move {
            let report = job::run(&app, timestamp::now(), Budget::default()).await?;
            tracing::info!(report = %serde_json::to_string(&report)?, "payout job run");
            Ok::<_, Error>(report)
        })
    }))
    .await
}
