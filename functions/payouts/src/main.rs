//! Lambda entry point for the payout routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    api::lambda::run(payouts::routes()).await
}
