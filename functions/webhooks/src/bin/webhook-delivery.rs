//! Lambda entry point of the webhook stream consumer: the table's DynamoDB
//! Stream, filtered to inserted event items, drives first attempts.

use api::services::app::App;
use api::store::config::Config;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    api::services::app::init_tracing();
    let app = App::new(Config::from_env()?).await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let app = app.clone();
        // Boxed, as axum boxes an HTTP handler: inline, the SDK calls nested in
        // this future overflow the compiler's query depth when it lays out main.
        Box::pin(async move { Ok::<_, Error>(webhooks::deliver_batch(&app, &event.payload).await) })
    }))
    .await
}
