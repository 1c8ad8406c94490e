//! When a failed delivery is tried again, and when an endpoint gives up.

use std::time::Duration;

/// The contract's retry delays, after the 1st, 2nd, ... failed attempt.
pub const DEFAULT_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,14h,20h,24h";

/// The environment variable that overrides the schedule.
pub const ENV_VAR: &str = "WEBHOOK_RETRY_SCHEDULE";

/// An endpoint whose deliveries have all failed for this long is disabled.
pub const DISABLE_AFTER: Duration = Duration::from_secs(5 * 24 * 60 * 60);

/// Why a schedule text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("WEBHOOK_RETRY_SCHEDULE: {0}")]
pub struct ScheduleError(String);

/// The delays between attempts, read from text like `5s,5m,2h`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule {
    delays: Vec<Duration>,
}

impl Default for RetrySchedule {
    fn default() -> Self {
        RetrySchedule {
            delays: [5, 5 * 60, 30 * 60]
                .into_iter()
                .chain([2, 5, 10, 14, 20, 24].map(|h| h * 60 * 60))
                .map(Duration::from_secs)
                .collect(),
        }
    }
}

impl RetrySchedule {
    /// Parses comma-separated delays, each a whole number with a unit
    /// `s`, `m` or `h` (`5s,5m,30m`); spaces around entries are ignored.
    pub fn parse(text: &str) -> Result<RetrySchedule, ScheduleError> {
        let delays = text
            .split(',')
            .map(|entry| parse_delay(entry.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RetrySchedule { delays })
    }

    /// `WEBHOOK_RETRY_SCHEDULE`, or the contract's schedule when unset.
    pub fn from_env() -> Result<RetrySchedule, ScheduleError> {
        RetrySchedule::from_setting(std::env::var(ENV_VAR).ok().as_deref())
    }

    /// The schedule a setting's value gives: the default when absent or blank.
    pub fn from_setting(value: Option<&str>) -> Result<RetrySchedule, ScheduleError> {
        match value {
            Some(text) if !text.trim().is_empty() => RetrySchedule::parse(text),
            _ => Ok(RetrySchedule::default()),
        }
    }

    /// The wait before the next attempt once attempt number `attempt`
    /// (1 = the first) has failed; `None` when it was the last: the delivery
    /// is then FAILED.
    pub fn next_delay(&self, attempt: u32) -> Option<Duration> {
        let index = usize::try_from(attempt.checked_sub(1)?).ok()?;
        self.delays.get(index).copied()
    }

    /// How many attempts a delivery gets in all (the first and the retries).
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.delays.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1)
    }

    /// The delays, in order.
    pub fn delays(&self) -> &[Duration] {
        &self.delays
    }
}

fn parse_delay(entry: &str) -> Result<Duration, ScheduleError> {
    let bad = || {
        ScheduleError(format!(
            "{entry:?} is not a delay; write a whole number with s, m or h, e.g. 5s,5m,2h"
        ))
    };
    let split = entry.len().checked_sub(1).ok_or_else(bad)?;
    let (number, unit) = entry.split_at_checked(split).ok_or_else(bad)?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_secs)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1;
    const M: u64 = 60;
    const H: u64 = 3600;

    #[test]
    fn the_default_is_the_contracts_schedule() {
        assert_eq!(
            RetrySchedule::parse(DEFAULT_SCHEDULE).unwrap(),
            RetrySchedule::default()
        );
        assert_eq!(RetrySchedule::default().max_attempts(), 10);
        assert_eq!(DISABLE_AFTER, Duration::from_secs(5 * 24 * H));
    }

    #[test]
    fn schedules_parse() {
        let cases: &[(&str, &[u64])] = &[
            ("5s", &[5 * S]),
            ("1s,2s,3s", &[1, 2, 3]),
            ("5s, 5m , 2h", &[5 * S, 5 * M, 2 * H]),
            ("0s,1s", &[0, 1]),
            ("90m", &[90 * M]),
            ("24h", &[24 * H]),
        ];
        for (text, secs) in cases {
            let expected: Vec<_> = secs.iter().map(|s| Duration::from_secs(*s)).collect();
            assert_eq!(
                RetrySchedule::parse(text).unwrap().delays(),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn malformed_schedules_are_refused() {
        let cases = [
            "",
            "5",
            "s",
            "5x",
            "5d",
            "-5s",
            "+5s",
            "5.5s",
            "5 s",
            "5s,",
            ",5s",
            "5s,,5m",
            "5S",
            "é",
            "5é",
            "99999999999999999999s",
            "18446744073709551615h",
        ];
        for text in cases {
            assert!(RetrySchedule::parse(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn next_delay_walks_the_schedule_then_stops() {
        let schedule = RetrySchedule::default();
        let cases = [
            (0, None),
            (1, Some(5 * S)),
            (2, Some(5 * M)),
            (3, Some(30 * M)),
            (4, Some(2 * H)),
            (9, Some(24 * H)),
            (10, None),
            (u32::MAX, None),
        ];
        for (attempt, expected) in cases {
            assert_eq!(
                schedule.next_delay(attempt),
                expected.map(Duration::from_secs),
                "{attempt}"
            );
        }
    }
}
