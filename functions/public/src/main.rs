//! Lambda entry point for the public routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(public::routes()).await
}
