//! Counts DynamoDB calls and the capacity they consume (benchmarks and logs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::ConsumedCapacity;

/// Running totals for one client.
#[derive(Debug, Default)]
pub struct CallMetrics {
    calls: AtomicU64,
    /// Calls under way now; a call that starts when none is counts a round trip.
    in_flight: AtomicU64,
    round_trips: AtomicU64,
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
}

/// A point-in-time copy of the totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricsSnapshot {
    pub calls: u64,
    /// Sequential round trips: calls issued while others were under way count once.
    pub round_trips: u64,
    pub read_units: f64,
    pub write_units: f64,
}

impl MetricsSnapshot {
    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &MetricsSnapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            calls: self.calls - earlier.calls,
            round_trips: self.round_trips - earlier.round_trips,
            read_units: self.read_units - earlier.read_units,
            write_units: self.write_units - earlier.write_units,
        }
    }
}

impl CallMetrics {
    /// Adds the capacity one response reported.
    pub fn record(&self, cc: Option<&ConsumedCapacity>) {
        let Some(cc) = cc else { return };
        // Responses report either the split or only the total (treated as writes
        // for writes and reads for reads by the caller through `record_read`).
        let read = cc.read_capacity_units().unwrap_or(0.0);
        let write = cc.write_capacity_units().unwrap_or(0.0);
        if read == 0.0 && write == 0.0 {
            return;
        }
        self.read_milli_units
            .fetch_add((read * 1000.0).round() as u64, Ordering::Relaxed);
        self.write_milli_units
            .fetch_add((write * 1000.0).round() as u64, Ordering::Relaxed);
    }

    /// Adds read capacity given only as a total.
    pub fn record_read_total(&self, cc: Option<&ConsumedCapacity>) {
        if let Some(total) = cc.and_then(|c| c.capacity_units()) {
            self.read_milli_units
                .fetch_add((total * 1000.0).round() as u64, Ordering::Relaxed);
        }
    }

    /// Adds write capacity given only as a total.
    pub fn record_write_total(&self, cc: Option<&ConsumedCapacity>) {
        if let Some(total) = cc.and_then(|c| c.capacity_units()) {
            self.write_milli_units
                .fetch_add((total * 1000.0).round() as u64, Ordering::Relaxed);
        }
    }

    /// The current totals.
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            calls: self.calls.load(Ordering::Relaxed),
            round_trips: self.round_trips.load(Ordering::Relaxed),
            read_units: self.read_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
            write_units: self.write_milli_units.load(Ordering::Relaxed) as f64 / 1000.0,
        }
    }
}

/// SDK interceptor that counts every DynamoDB operation the client starts.
#[derive(Debug)]
pub struct CallCounter(pub Arc<CallMetrics>);

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_execution(
        &self,
        _ctx: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.calls.fetch_add(1, Ordering::Relaxed);
        if self.0.in_flight.fetch_add(1, Ordering::SeqCst) == 0 {
            self.0.round_trips.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextRef<'_>,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}
