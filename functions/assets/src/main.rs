//! Lambda entry point for the asset routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(assets::routes()).await
}
