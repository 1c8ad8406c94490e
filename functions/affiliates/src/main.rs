//! Lambda entry point for the affiliate routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(affiliates::routes()).await
}
