//! Lambda entry point for the report and switching routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(reports::routes()).await
}
