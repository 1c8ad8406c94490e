//! SDK and item-conversion failures as API errors: the one place they map
//! (the domain's error knows no SDK, so the store calls these at its edge).

use domain::error::Error;

type SdkError<E> = aws_smithy_runtime_api::client::result::SdkError<
    E,
    aws_smithy_runtime_api::client::orchestrator::HttpResponse,
>;

/// Service error codes that mean "overloaded, try again", after the SDK's own retries.
const TRANSIENT_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "SlowDown",
];

/// An SDK failure: a timeout, an unreachable or dropped connection,
/// throttling or a 5xx of the store is 503 (the client may retry); anything
/// else is a bug or a misconfiguration, 500.
pub fn sdk<E>(err: SdkError<E>) -> Error
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata
        + std::error::Error
        + Send
        + Sync
        + 'static,
{
    use aws_smithy_runtime_api::client::result::SdkError as E_;
    let transient = match &err {
        E_::DispatchFailure(_) | E_::TimeoutError(_) | E_::ResponseError(_) => true,
        E_::ServiceError(ctx) => {
            ctx.raw().status().is_server_error()
                || ctx
                    .err()
                    .code()
                    .is_some_and(|c| TRANSIENT_CODES.contains(&c))
        }
        _ => false,
    };
    let cause = cause(&err);
    if transient {
        tracing::warn!(cause = %cause, "storage call failed");
        Error::Unavailable(UNAVAILABLE.into())
    } else {
        Error::Internal(cause)
    }
}

/// What the 503 of a storage failure says.
const UNAVAILABLE: &str = "a storage service is unavailable; retry later";

/// What a log may say of an SDK failure: a service's status, code and
/// message, never its raw response (whose body can carry item images or
/// object keys); a failure before any answer, its own chain of causes.
fn cause<E>(err: &SdkError<E>) -> String
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
{
    use aws_smithy_runtime_api::client::result::SdkError as E_;
    use aws_smithy_types::error::metadata::ProvideErrorMetadata;
    match err {
        E_::ServiceError(ctx) => format!(
            "service error {}: {}: {}",
            ctx.raw().status().as_u16(),
            err.code().unwrap_or("no code"),
            err.message().unwrap_or("no message")
        ),
        E_::ResponseError(ctx) => {
            format!(
                "unreadable response, status {}",
                ctx.raw().status().as_u16()
            )
        }
        _ => aws_smithy_types::error::display::DisplayErrorContext(err).to_string(),
    }
}

/// A body that broke off while it was read: 503, as a dropped connection.
pub fn body(err: impl std::fmt::Display) -> Error {
    tracing::warn!(cause = %err, "storage body read failed");
    Error::Unavailable(UNAVAILABLE.into())
}

/// An item that does not convert to or from its type: a bug, 500. The
/// cause keeps the rule that failed and leaves out the value it quotes (an
/// e-mail, a storage key).
pub fn item(err: serde_dynamo::Error) -> Error {
    Error::Internal(format!(
        "item conversion: {}",
        without_values(&err.to_string())
    ))
}

/// A conversion error's text without the values it quotes: serde quotes a
/// value in double quotes (`invalid type: string "…"`) and an unknown
/// variant in backticks (`unknown variant `…``); field and variant names
/// it expects stay.
fn without_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('"').enumerate() {
        out.push_str(if i % 2 == 0 { part } else { "\"…\"" });
    }
    const VARIANT: &str = "unknown variant `";
    if let Some(start) = out.find(VARIANT).map(|at| at + VARIANT.len()) {
        if let Some(len) = out[start..].find('`') {
            out.replace_range(start..start + len, "…");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::types::AttributeValue;
    use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
    use aws_smithy_types::error::ErrorMetadata;
    use domain::error::ErrorCode;

    #[test]
    fn an_item_that_does_not_convert_names_its_rule_not_its_value() {
        let wrong: std::result::Result<domain::payout::PayoutStatus, _> =
            serde_dynamo::from_attribute_value(AttributeValue::S("someone@example.com".into()));
        let Error::Internal(cause) = item(wrong.unwrap_err()) else {
            panic!("a 500")
        };
        assert!(
            cause.starts_with("item conversion: unknown variant `…`, expected one of `PENDING`"),
            "{cause}"
        );
        assert!(!cause.contains("someone@example.com"), "{cause}");
        let quoted = "invalid type: string \"someone@example.com\", expected u32";
        assert_eq!(
            without_values(quoted),
            "invalid type: string \"…\", expected u32"
        );
    }

    #[test]
    fn sdk_timeouts_are_503_and_other_failures_500() {
        let timeout: SdkError<GetItemError> = SdkError::timeout_error("operation timed out");
        assert_eq!(sdk(timeout).code(), ErrorCode::ServiceUnavailable);
        let built: SdkError<GetItemError> = SdkError::construction_failure("bad input");
        assert_eq!(sdk(built).code(), ErrorCode::ServerError);
    }

    /// An answer of `status` with `body`, as the SDK hands it over.
    fn raw(status: u16, body: &'static str) -> HttpResponse {
        HttpResponse::new(
            status.try_into().unwrap(),
            aws_smithy_types::body::SdkBody::from(body),
        )
    }

    #[test]
    fn a_refused_call_names_its_code_and_message_and_never_the_raw_answer() {
        let meta = ErrorMetadata::builder()
            .code("AccessDeniedException")
            .message("not authorized")
            .build();
        let body = r#"{"message":"not authorized","Key":"invoices/ten_1/po_1/invoice.pdf"}"#;
        let refused: SdkError<GetItemError> =
            SdkError::service_error(GetItemError::generic(meta), raw(400, body));
        let Error::Internal(cause) = sdk(refused) else {
            panic!("a refusal is a 500")
        };
        assert_eq!(
            cause,
            "service error 400: AccessDeniedException: not authorized"
        );
    }

    #[test]
    fn a_store_error_answer_is_503_in_fixed_words() {
        let meta = ErrorMetadata::builder()
            .code("InternalServerError")
            .message("try again")
            .build();
        let body = r#"{"Item":{"email":{"S":"someone@example.com"}}}"#;
        let failed: SdkError<GetItemError> =
            SdkError::service_error(GetItemError::generic(meta), raw(500, body));
        let err = sdk(failed);
        assert_eq!(err.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(err.to_string(), UNAVAILABLE);
    }
}
