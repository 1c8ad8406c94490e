//! Lambda entry point for the application routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(applications::routes()).await
}
