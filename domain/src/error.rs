//! The one error type of the API and its stable codes.

use serde::Serialize;

use crate::issue::Issue;

/// Stable machine-readable error code (the full set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationFailed,
    InvalidRequest,
    Unauthorized,
    PermissionDenied,
    NotFound,
    AlreadyExists,
    InvalidState,
    RateLimitExceeded,
    LimitExceeded,
    ServerError,
    ServiceUnavailable,
}

impl ErrorCode {
    /// Every code, in the order the documentation lists them.
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::ValidationFailed,
        ErrorCode::InvalidRequest,
        ErrorCode::Unauthorized,
        ErrorCode::PermissionDenied,
        ErrorCode::NotFound,
        ErrorCode::AlreadyExists,
        ErrorCode::InvalidState,
        ErrorCode::RateLimitExceeded,
        ErrorCode::LimitExceeded,
        ErrorCode::ServerError,
        ErrorCode::ServiceUnavailable,
    ];

    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ValidationFailed => "VALIDATION_FAILED",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::InvalidState => "INVALID_STATE",
            ErrorCode::RateLimitExceeded => "RATE_LIMIT_EXCEEDED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::ServerError => "SERVER_ERROR",
            ErrorCode::ServiceUnavailable => "SERVICE_UNAVAILABLE",
        }
    }

    /// The HTTP status that carries this code.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::ValidationFailed | ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::PermissionDenied => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::AlreadyExists | ErrorCode::InvalidState => 409,
            ErrorCode::RateLimitExceeded | ErrorCode::LimitExceeded => 429,
            ErrorCode::ServerError => 500,
            ErrorCode::ServiceUnavailable => 503,
        }
    }
}

/// Every failure the API can report. Mapped to the envelope in `http::envelope`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the request failed validation")]
    Validation(Vec<Issue>),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("method not allowed; allowed: {}", .allow.join(", "))]
    MethodNotAllowed { allow: Vec<String> },
    #[error("invalid or expired API key")]
    Unauthorized,
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("no route matches {0}")]
    RouteNotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{resource} is {current}; {action} is not possible in that state")]
    InvalidState {
        resource: &'static str,
        current: String,
        action: &'static str,
    },
    #[error("payouts of this program are not paid through Stripe (no STRIPE integration of this mode has an apiKey), so there is no Stripe account to set up")]
    NotPaidThroughStripe,
    #[error("the payment provider refused: {message} ({code})")]
    ProviderRefused {
        current: String,
        code: String,
        message: String,
    },
    #[error("the conversion is in payout {payout_id}, which is open; reject or cancel that payout first")]
    InPayout { current: String, payout_id: String },
    #[error("the payout's invoice file is missing from storage; upload it again, then approve")]
    InvoiceMissing { current: String },
    #[error("the payout's invoice was replaced while it was being approved; review the new file, then approve")]
    InvoiceReplaced { current: String },
    #[error("rate limit exceeded; retry in {retry_after} seconds")]
    RateLimited { retry_after: u64 },
    #[error("{0}")]
    LimitExceeded(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// 409 INVALID_STATE: `resource` is in state `current`, where `action` is
    /// not possible.
    pub fn state(resource: &'static str, current: &str, action: &'static str) -> Error {
        Error::InvalidState {
            resource,
            current: current.to_string(),
            action,
        }
    }

    /// What one item of a bulk answer says of this error (`what` names the
    /// item in the log): its own message, the issues' messages joined for a
    /// validation error, and for an internal one a fixed text, the cause
    /// logged instead, as the envelope does for a whole call.
    pub fn item_message(&self, what: &str) -> String {
        match self {
            Error::Internal(cause) => {
                tracing::error!(item = %what, cause = %cause, "bulk item failed");
                "an internal error occurred; it has been logged".to_string()
            }
            Error::Validation(issues) => issues
                .iter()
                .map(|i| i.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
            _ => self.to_string(),
        }
    }

    /// The stable code this error carries.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Validation(_) => ErrorCode::ValidationFailed,
            Error::InvalidRequest(_) | Error::MethodNotAllowed { .. } => ErrorCode::InvalidRequest,
            Error::Unauthorized => ErrorCode::Unauthorized,
            Error::PermissionDenied(_) => ErrorCode::PermissionDenied,
            Error::NotFound(_) | Error::RouteNotFound(_) => ErrorCode::NotFound,
            Error::AlreadyExists(_) => ErrorCode::AlreadyExists,
            Error::InvalidState { .. }
            | Error::InPayout { .. }
            | Error::InvoiceMissing { .. }
            | Error::InvoiceReplaced { .. }
            | Error::ProviderRefused { .. }
            | Error::NotPaidThroughStripe => ErrorCode::InvalidState,
            Error::RateLimited { .. } => ErrorCode::RateLimitExceeded,
            Error::LimitExceeded(_) => ErrorCode::LimitExceeded,
            Error::Unavailable(_) => ErrorCode::ServiceUnavailable,
            Error::Internal(_) => ErrorCode::ServerError,
        }
    }

    /// One validation issue at `path`.
    pub fn invalid(path: &[&str], code: &str, message: impl Into<String>) -> Self {
        Error::Validation(vec![Issue::new(path, code, message)])
    }

    /// An internal failure; its cause is logged once and never sent to the client.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Error::Internal(cause.to_string())
    }
}

/// Seconds a client is told to wait (`Retry-After`) after a 503.
pub const UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 2;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
