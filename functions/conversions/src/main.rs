//! Lambda entry point for the conversion routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(conversions::routes()).await
}
