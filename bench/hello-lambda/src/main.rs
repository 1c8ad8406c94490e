//! A bare `lambda_runtime` hello-world: the baseline the benchmark sets the
//! functions' cold start and memory beside (`make bench`).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async {
        Ok::<Value, Error>(json!({
            "statusCode": 200,
            "headers": {"content-type": "application/json"},
            "body": "{\"hello\":\"world\"}"
        }))
    }))
    .await
}
