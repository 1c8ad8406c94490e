//! Lambda entry point for the campaign routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(campaigns::routes()).await
}
