//! Lambda entry point for the conversion routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(conversions::routes()).await
}
