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
    let cause = aws_smithy_types::error::display::DisplayErrorContext(&err).to_string();
    if transient {
        tracing::warn!(cause = %cause, "storage call failed");
        Error::Unavailable("a storage service is unavailable; retry later".into())
    } else {
        Error::Internal(cause)
    }
}

/// An item that does not convert to or from its type: a bug, 500.
pub fn item(err: serde_dynamo::Error) -> Error {
    Error::Internal(format!("item conversion: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use domain::error::ErrorCode;

    #[test]
    fn sdk_timeouts_are_503_and_other_failures_500() {
        let timeout: SdkError<GetItemError> = SdkError::timeout_error("operation timed out");
        assert_eq!(sdk(timeout).code(), ErrorCode::ServiceUnavailable);
        let built: SdkError<GetItemError> = SdkError::construction_failure("bad input");
        assert_eq!(sdk(built).code(), ErrorCode::ServerError);
    }
}
