//! Public affiliate sign-up. It answers only about the campaign named in the
//! body: a campaign that is not public is 404 whoever owns it.

use api::http::Answer;
use api::http::{Json, Public, Reply};
use api::services::app::App;
use api::services::enrollments;
use api::wire::signup::SignUp;
use api::wire::signup::SignUpView;
use axum::extract::State;
use std::sync::Arc;

/// Sign up as an affiliate
///
/// Public sign-up to a campaign that is public (`isPublic`) with sign-up open. Creates a
/// PENDING affiliate and a PENDING application in one transaction, or an ACTIVE affiliate and
/// no application when the campaign has `autoApproveAffiliates`. The same e-mail (any letter
/// case) in the same campaign gives 409 ALREADY_EXISTS, also under concurrent sign-ups. A
/// campaign that does not exist or is not public: 404 (the same answer for both). A public
/// campaign with sign-up closed: 409 INVALID_STATE with `currentState` SIGNUP_CLOSED.
/// Browser-facing: answers CORS preflight and allows any origin. No API key; rate-limited per
/// client IP.
#[utoipa::path(
    post,
    path = "/api/v1/affiliates/signup",
    operation_id = "signupAffiliate",
    tags = ["Affiliates", "Public"], security(),
    request_body = api::wire::signup::SignUp,
    responses(
        (status = 201, description = "The affiliate created.", body = api::wire::signup::SignUpView),
        (status = 409, response = api::http::openapi::Conflict)
    )
)]
pub(crate) async fn sign_up(
    caller: Public,
    State(app): State<Arc<App>>,
    Json(input): Json<SignUp>,
) -> Answer {
    let new = enrollments::sign_up(&app, input.into(), caller.network).await?;
    Reply::created(SignUpView::from(&new))
}
