//! Lambda entry point for the payment-provider integration routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(integrations::routes()).await
}
