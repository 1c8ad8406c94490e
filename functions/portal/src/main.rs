//! Lambda entry point for the affiliate portal's routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(portal::routes()).await
}
