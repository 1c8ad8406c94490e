//! Lambda entry point for the event and webhook endpoint routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(webhooks::routes()).await
}
