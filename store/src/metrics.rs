//! Counts DynamoDB calls and the capacity they consume (benchmarks and logs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::ConsumedCapacity;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

/// Running totals for one client.
#[derive(Debug, Default)]
pub struct CallMetrics {
    calls: AtomicU64,
    /// The deepest chain among calls that have ended: a call starting now
    /// waited for that many round trips before it.
    ended_depth: AtomicU64,
    /// The deepest chain among calls started: the round trips so far.
    round_trips: AtomicU64,
    read_milli_units: AtomicU64,
    write_milli_units: AtomicU64,
}

/// A point-in-time copy of the totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricsSnapshot {
    pub calls: u64,
    /// Sequential round trips: the longest chain of calls in which each
    /// started after the one before it had ended (calls under way together
    /// share a link).
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

    /// Counts a call starting now, and returns its depth: one more than the
    /// deepest call ended before it (the ones it may have waited for).
    fn started(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let depth = self.ended_depth.load(Ordering::SeqCst) + 1;
        self.round_trips.fetch_max(depth, Ordering::SeqCst);
        depth
    }

    /// Notes the end of a call that started at `depth`.
    fn ended(&self, depth: u64) {
        self.ended_depth.fetch_max(depth, Ordering::SeqCst);
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

/// A call's place in its chain, kept in its own config bag from start to end.
#[derive(Debug, Clone, Copy)]
struct Depth(u64);

impl Storable for Depth {
    type Storer = StoreReplace<Self>;
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
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let depth = self.0.started();
        cfg.interceptor_state().store_put(Depth(depth));
        Ok(())
    }

    fn read_after_execution(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextRef<'_>,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(Depth(depth)) = cfg.load::<Depth>() {
            self.0.ended(*depth);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_are_the_longest_chain_of_calls_each_started_after_one_ended() {
        let m = CallMetrics::default();
        // Two calls at once, then a third once the first is back.
        let (a, b) = (m.started(), m.started());
        m.ended(a);
        let c = m.started();
        // The second is still under way when the third starts: the chain
        // a -> c is two deep whatever else is in flight.
        m.ended(b);
        m.ended(c);
        let d = m.started();
        m.ended(d);
        assert_eq!((a, b, c, d), (1, 1, 2, 3));
        let s = m.snapshot();
        assert_eq!((s.calls, s.round_trips), (4, 3));
        // The next operation counts from there.
        let e = m.started();
        m.ended(e);
        assert_eq!(m.snapshot().since(&s).round_trips, 1);
    }
}
