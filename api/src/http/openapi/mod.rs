//! The API's OpenAPI 3.1 description, as utoipa states it: the operations
//! from the handlers' statements (`#[utoipa::path]`, registered by each
//! function's `routes()`), the schemas from the types (`ToSchema`), and
//! here what they share: the tags and servers, the components every
//! operation refers to (error answers, headers, parameters, envelopes), the
//! webhook, the rules of the layers every operation passes
//! (`operations.rs`) and the conventions every schema follows
//! (`schemas.rs`). `refctl openapi` adds what utoipa cannot say and prints
//! it as `docs/openapi.json`.

mod answers;
mod components;
mod envelopes;
mod operations;
mod params;
mod schemas;

pub use answers::{
    BadRequest, Conflict, EndpointCapReached, InvalidRequest, InvoiceFile, MethodNotAllowed,
    NotFound, OpenApiDocument, PermissionDenied, QuotaReached, ServerError, ServiceUnavailable,
    TooManyRequests, Unauthorized, ValidationFailed,
};
pub use params::{DateOrTime, EmailLine, FilterAmount, Line, PeriodParam};

use utoipa::openapi::OpenApi as Description;
use utoipa::{Modify, OpenApi};

use components::Shared;
use envelopes::{ErrorEnvelope, Meta};

/// What every operation shares, stated once.
#[derive(OpenApi)]
#[openapi(
    servers((url = "http://127.0.0.1:3000", description = "Local host (`refctl serve`)")),
    security(("apiKey" = [])),
    tags(
        (name = "Campaigns", description = "A merchant's affiliate campaigns and their commission rules."),
        (name = "Public", description = "Unauthenticated, browser-facing routes (rate-limited per client IP, CORS for any origin)."),
        (name = "Meta", description = "About the API itself."),
        (name = "Tracking", description = "Anonymous click tracking and session-to-customer binding, called by the browser script (`/tracker.js` of the local host; see `tracker/README.md`). A click records which affiliate sent a visitor; its session id is what a merchant's checkout later passes to `identify` and to the conversion postback."),
        (name = "Affiliates", description = "The partners of a campaign: their e-mail (unique per campaign), code (unique per account and mode), status and payout details."),
        (name = "Applications", description = "Sign-ups waiting for the merchant: accept (the affiliate becomes ACTIVE) or reject (the affiliate becomes REJECTED). No e-mail is sent by the API."),
        (name = "Assets", description = "Marketing material for affiliates. Swipe copy (text) is created through the API; images, files and links come from the dashboard upload flow. Assets are archived, never deleted."),
        (name = "Conversions", description = "Sales reported by the merchant's server (postback), attributed to affiliates with the campaign's commission rules, listed and summarised. Amounts and commissions are exact decimals in major units of their own currency; currencies are never converted or mixed."),
        (name = "Payouts", description = "What affiliates are owed, one payout per affiliate and currency, created by the daily payout job from APPROVED conversions (never through the API), moved through invoice, approval and payment, or rejected or cancelled. Payment goes through a provider: `manual` (the merchant pays and marks the payout paid) or `sandbox` (moves no money; test mode always uses it)."),
        (name = "Portal", description = "What an affiliate sees of its own programme with a portal token (`POST /api/v1/affiliates/{id}/portal-sessions`): its terms and referral link, its numbers, conversions, payouts and swipe copy, its payout details and invoices; and the hosted page at `/portal`. Never another affiliate's record, a customer's identity or merchant metadata."),
        (name = "Reports", description = "Switching and reporting: the referred customers, bulk import of affiliates and referrals from another platform (idempotent by `externalId`), the conversions as CSV and the yearly payments report (see docs/reports.md)."),
        (name = "Events", description = "Every change of a merchant-visible record appends an event in the same transaction (an outbox); events are kept 30 days."),
        (name = "Webhooks", description = "Endpoints that receive events by HTTPS POST, signed as the Standard Webhooks specification says (verify with its official libraries; see docs/webhooks.md). Retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h; a 410 answer, or 5 days of failures only, disables the endpoint."),
    ),
    components(
        schemas(
            Meta,
            crate::http::envelope::ListMeta,
            ErrorEnvelope,
            crate::ErrorCode,
            ::domain::issue::Issue,
            crate::domain::webhook::WebhookPayload,
            crate::wire::commission_tiers::TierChangeView<'static>,
            // Named only by query parameters.
            crate::domain::tax_form::TaxFormFilter,
            crate::domain::summary::SeriesBy,
        ),
        responses(
            ValidationFailed,
            InvalidRequest,
            BadRequest,
            Unauthorized,
            PermissionDenied,
            NotFound,
            MethodNotAllowed,
            Conflict,
            TooManyRequests,
            ServerError,
            ServiceUnavailable,
        ),
    ),
    modifiers(&Shared),
)]
pub struct ApiDoc;

/// The description of `routes` (every function's, merged): what they state,
/// what they share, and what the layers give each operation.
pub fn describe(routes: Description) -> Description {
    let mut doc = ApiDoc::openapi();
    doc.merge(routes);
    operations::Operations.modify(&mut doc);
    schemas::Conventions.modify(&mut doc);
    doc
}
