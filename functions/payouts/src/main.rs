//! Lambda entry point for the payout routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::lambda::run(payouts::routes()).await
}
