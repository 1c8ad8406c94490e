//! How one DynamoDB call is sent: asking for its consumed capacity, which
//! the store's `CallMetrics` counts, and mapping the SDK's failure to the
//! store's error. Every single-item call goes through one of these.

/// Sends one call; the store's `CallMetrics` method `$record` counts its
/// capacity. The call's output, or the SDK's failure as the store's error.
macro_rules! metered {
    ($store:expr, $record:ident, $call:expr) => {{
        let out = $call
            .return_consumed_capacity(::aws_sdk_dynamodb::types::ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(crate::storage_error::sdk)?;
        $store.metrics.$record(out.consumed_capacity());
        out
    }};
}

/// Sends one conditional write, counted as a write. A refused condition is
/// an answer, not an error: `Err` with the item as it was (`$error` is the
/// call's SDK error type, which names the refusal); any other failure is
/// the store's error.
macro_rules! conditional {
    ($store:expr, $call:expr, $error:ident) => {{
        use ::aws_sdk_dynamodb::types::{
            ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
        };
        let res = $call
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        match res {
            Ok(out) => {
                $store.metrics.record_write_total(out.consumed_capacity());
                Ok(out)
            }
            Err(::aws_sdk_dynamodb::error::SdkError::ServiceError(e)) => match e.err() {
                $error::ConditionalCheckFailedException(c) => Err(c.item().cloned()),
                _ => {
                    return Err(crate::storage_error::sdk(
                        ::aws_sdk_dynamodb::error::SdkError::ServiceError(e),
                    ))
                }
            },
            Err(e) => return Err(crate::storage_error::sdk(e)),
        }
    }};
}
