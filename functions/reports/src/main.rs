//! Lambda entry point for the report and switching routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(reports::routes()).await
}
