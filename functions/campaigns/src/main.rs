//! Lambda entry point for the campaign routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(campaigns::routes()).await
}
