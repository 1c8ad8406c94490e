//! The webhook settings of the environment: the retry schedule, whether
//! local endpoint URLs are allowed, the attempt timeout and the most
//! endpoints an account holds. Read once at
//! start-up (`config`), used by the delivery parts (`webhooks`).

use std::time::Duration;

use domain::webhook_schedule::{RetrySchedule, ScheduleError};

/// The contract's timeout of one delivery attempt, also the most allowed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// The environment variable of the local development setting.
pub const ALLOW_LOCAL_VAR: &str = "WEBHOOK_ALLOW_LOCAL";
/// The environment variable of the delivery timeout, in milliseconds.
pub const TIMEOUT_VAR: &str = "WEBHOOK_TIMEOUT_MS";
/// The environment variable of the most endpoints an account holds in a mode.
pub const MAX_ENDPOINTS_VAR: &str = "WEBHOOK_MAX_ENDPOINTS";
/// The most `WEBHOOK_MAX_ENDPOINTS` may say.
const MAX_ENDPOINTS_CEILING: u64 = 10_000;

/// Why the webhook settings could not be read. Reported at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `WEBHOOK_RETRY_SCHEDULE` is malformed.
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// `WEBHOOK_ALLOW_LOCAL` is neither `true`, `false` nor `only`.
    #[error("WEBHOOK_ALLOW_LOCAL must be true, false or only, not {0:?}")]
    AllowLocal(String),
    /// `WEBHOOK_TIMEOUT_MS` is not a whole number of milliseconds from 1 to 15000.
    #[error("WEBHOOK_TIMEOUT_MS must be a whole number from 1 to 15000, not {0:?}")]
    Timeout(String),
    /// `WEBHOOK_MAX_ENDPOINTS` is not a whole number from 1 to 10000.
    #[error("WEBHOOK_MAX_ENDPOINTS must be a whole number from 1 to 10000, not {0:?}")]
    MaxEndpoints(String),
}

/// The webhook settings of the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// `WEBHOOK_RETRY_SCHEDULE` (default: the contract's schedule).
    pub retry_schedule: RetrySchedule,
    /// `WEBHOOK_ALLOW_LOCAL` (default `false`): allows `http` and loopback
    /// endpoint URLs, for `make run` and the tests; off in the template.
    pub allow_local: bool,
    /// `WEBHOOK_ALLOW_LOCAL=only`: loopback URLs and nothing else, checked
    /// without DNS, so a test run's generated URLs never leave the machine.
    pub loopback_only: bool,
    /// `WEBHOOK_TIMEOUT_MS` (default: the contract's 15 s, also the most):
    /// how long one attempt may take; the tests shorten it.
    pub timeout: Duration,
    /// `WEBHOOK_MAX_ENDPOINTS` (default
    /// [`domain::webhook::MAX_ENDPOINTS`], 16): the most endpoints an
    /// account holds in one mode; the API fuzzer, which creates hundreds,
    /// raises it.
    pub max_endpoints: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            retry_schedule: RetrySchedule::default(),
            allow_local: false,
            loopback_only: false,
            timeout: DEFAULT_TIMEOUT,
            max_endpoints: domain::webhook::MAX_ENDPOINTS,
        }
    }
}

impl WebhookSettings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<WebhookSettings, SettingsError> {
        WebhookSettings::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `var`, which answers a variable's value.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<WebhookSettings, SettingsError> {
        let retry_schedule =
            RetrySchedule::from_setting(var(domain::webhook_schedule::ENV_VAR).as_deref())?;
        let (allow_local, loopback_only) = match var(ALLOW_LOCAL_VAR).as_deref().map(str::trim) {
            None | Some("") | Some("false") => (false, false),
            Some("true") => (true, false),
            Some("only") => (true, true),
            Some(other) => return Err(SettingsError::AllowLocal(other.to_string())),
        };
        let timeout = match var(TIMEOUT_VAR).as_deref().map(str::trim) {
            None | Some("") => DEFAULT_TIMEOUT,
            Some(text) => text
                .parse::<u64>()
                .ok()
                .map(Duration::from_millis)
                .filter(|t| !t.is_zero() && *t <= DEFAULT_TIMEOUT)
                .ok_or_else(|| SettingsError::Timeout(text.to_string()))?,
        };
        let max_endpoints = match var(MAX_ENDPOINTS_VAR).as_deref().map(str::trim) {
            None | Some("") => domain::webhook::MAX_ENDPOINTS,
            Some(text) => text
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=MAX_ENDPOINTS_CEILING).contains(n))
                .ok_or_else(|| SettingsError::MaxEndpoints(text.to_string()))?,
        };
        Ok(WebhookSettings {
            retry_schedule,
            allow_local,
            loopback_only,
            timeout,
            max_endpoints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<WebhookSettings, SettingsError> {
        WebhookSettings::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn settings_default_to_the_contract_and_strict_urls() {
        let settings = read(&[]).unwrap();
        assert_eq!(settings.retry_schedule, RetrySchedule::default());
        assert!(!settings.allow_local);
        assert_eq!(settings.timeout, DEFAULT_TIMEOUT);
        assert_eq!(settings, WebhookSettings::default());
    }

    #[test]
    fn the_timeout_is_read_in_milliseconds_up_to_the_contracts() {
        // (value, Some(milliseconds) or None for an error)
        let cases: &[(&str, Option<u64>)] = &[
            ("", Some(15_000)),
            ("500", Some(500)),
            (" 1 ", Some(1)),
            ("15000", Some(15_000)),
            ("15001", None),
            ("0", None),
            ("-1", None),
            ("1.5", None),
            ("1s", None),
        ];
        for (value, expected) in cases {
            let got = read(&[(TIMEOUT_VAR, value)]);
            match expected {
                None => assert!(got.is_err(), "{value:?}"),
                Some(ms) => assert_eq!(
                    got.unwrap().timeout,
                    Duration::from_millis(*ms),
                    "{value:?}"
                ),
            }
        }
    }

    #[test]
    fn the_endpoint_cap_is_a_whole_number_from_one() {
        assert_eq!(read(&[]).unwrap().max_endpoints, 16);
        assert_eq!(
            read(&[(MAX_ENDPOINTS_VAR, " 500 ")]).unwrap().max_endpoints,
            500
        );
        for bad in ["0", "-1", "1.5", "10001", "many"] {
            assert!(read(&[(MAX_ENDPOINTS_VAR, bad)]).is_err(), "{bad:?}");
        }
    }

    /// Variables as (name, value) pairs.
    type Vars<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn settings_are_read_from_their_variables() {
        const SCHEDULE: &str = "WEBHOOK_RETRY_SCHEDULE";
        const LOCAL: &str = "WEBHOOK_ALLOW_LOCAL";
        // (variables, Some((the schedule they give, allow_local)) or None for an error)
        let cases: &[(Vars, Option<(&str, bool)>)] = &[
            (
                &[(LOCAL, "true")],
                Some((domain::webhook_schedule::DEFAULT_SCHEDULE, true)),
            ),
            (
                &[(LOCAL, "false")],
                Some((domain::webhook_schedule::DEFAULT_SCHEDULE, false)),
            ),
            (
                &[(LOCAL, "")],
                Some((domain::webhook_schedule::DEFAULT_SCHEDULE, false)),
            ),
            (
                &[(LOCAL, "only")],
                Some((domain::webhook_schedule::DEFAULT_SCHEDULE, true)),
            ),
            (&[(LOCAL, "yes")], None),
            (&[(LOCAL, "TRUE")], None),
            (&[(SCHEDULE, "1s,2s")], Some(("1s,2s", false))),
            (
                &[(SCHEDULE, " ")],
                Some((domain::webhook_schedule::DEFAULT_SCHEDULE, false)),
            ),
            (&[(SCHEDULE, "1d")], None),
            (&[(SCHEDULE, "1s"), (LOCAL, "true")], Some(("1s", true))),
        ];
        for (vars, expected) in cases {
            let got = read(vars);
            match expected {
                None => assert!(got.is_err(), "{vars:?}"),
                Some((schedule, allow_local)) => {
                    let got = got.unwrap();
                    let schedule = RetrySchedule::parse(schedule).unwrap();
                    assert_eq!(got.retry_schedule, schedule, "{vars:?}");
                    assert_eq!(got.allow_local, *allow_local, "{vars:?}");
                    assert_eq!(got.loopback_only, vars == &[(LOCAL, "only")], "{vars:?}");
                }
            }
        }
    }
}
