//! PayPal's API as the payout rail uses it: an OAuth2 token (reused until
//! it expires), one payout batch per payout attempt (`PayPal-Request-Id` and
//! `sender_batch_id` are the attempt's key, so PayPal makes it once), and
//! the verification of its webhook events by PayPal itself.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::rails::Rails;
use domain::error::{Error, Result};
use domain::payout_rail::ProviderAnswer;
use domain::tenant::Mode;

/// A token is taken as expired this long before PayPal says it is.
const TOKEN_MARGIN: Duration = Duration::from_secs(60);

/// A payout of one item to a PayPal receiver.
#[derive(Debug, Clone)]
pub struct PaypalPayout<'a> {
    /// The amount as a decimal string with the currency's exponent (`12.50`).
    pub value: String,
    /// ISO 4217, upper case.
    pub currency: &'a str,
    pub receiver: &'a str,
    pub payout_id: &'a str,
    /// The attempt's key: `{payoutId}-{paymentAttempt}`.
    pub idempotency_key: &'a str,
}

/// The transmission headers PayPal sends with an event.
#[derive(Debug, Clone, Default)]
pub struct Transmission {
    pub id: Option<String>,
    pub time: Option<String>,
    pub sig: Option<String>,
    pub cert_url: Option<String>,
    pub auth_algo: Option<String>,
}

impl Transmission {
    /// The headers' names, in the order of the fields.
    pub const HEADERS: [&'static str; 5] = [
        "paypal-transmission-id",
        "paypal-transmission-time",
        "paypal-transmission-sig",
        "paypal-cert-url",
        "paypal-auth-algo",
    ];

    /// From a header lookup.
    pub fn from_headers(get: impl Fn(&str) -> Option<String>) -> Self {
        let [id, time, sig, cert_url, auth_algo] = Self::HEADERS.map(get);
        Transmission {
            id,
            time,
            sig,
            cert_url,
            auth_algo,
        }
    }
}

/// PayPal, called with one REST app's credentials.
pub struct Paypal<'a> {
    rails: &'a Rails,
    base: &'a str,
    client_id: &'a str,
    client_secret: &'a str,
}

impl std::fmt::Debug for Paypal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paypal")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Rails {
    /// PayPal for a tenant in `mode` (live or sandbox address) with an app's credentials.
    pub fn paypal<'a>(
        &'a self,
        mode: Mode,
        client_id: &'a str,
        client_secret: &'a str,
    ) -> Paypal<'a> {
        let base = match mode {
            Mode::Live => self.bases.paypal_live.as_str(),
            Mode::Test => self.bases.paypal_test.as_str(),
        };
        Paypal {
            rails: self,
            base,
            client_id,
            client_secret,
        }
    }
}

/// What a call came to.
enum Reply {
    Done(Value),
    Refused {
        code: String,
        message: String,
    },
    /// PayPal refused the credentials (the token, 401, 403) before looking
    /// at the request: nothing is known of an earlier call of the attempt.
    CredentialsRefused {
        code: String,
        message: String,
    },
    /// The batch of this `sender_batch_id` exists already (an earlier call
    /// of the attempt was taken): its id, from PayPal's link to it.
    Taken(Option<String>),
    NoAnswer(String),
}

impl Paypal<'_> {
    /// `POST /v1/payments/payouts` with one item: taken (the batch id),
    /// refused (PayPal's name and message), or no answer.
    pub async fn payout(&self, p: &PaypalPayout<'_>) -> ProviderAnswer {
        let body = json!({
            "sender_batch_header": {
                "sender_batch_id": p.idempotency_key,
                "email_subject": "You have a payout",
                "email_message": "You received an affiliate payout.",
            },
            "items": [{
                "recipient_type": "EMAIL",
                "receiver": p.receiver,
                "amount": {"value": p.value, "currency": p.currency},
                "sender_item_id": p.payout_id,
                "note": format!("Affiliate payout {}", p.payout_id),
            }],
        });
        let path = "/v1/payments/payouts";
        match self.post(path, &body, Some(p.idempotency_key)).await {
            Reply::Done(answer) => match answer
                .pointer("/batch_header/payout_batch_id")
                .and_then(Value::as_str)
            {
                Some(batch) => ProviderAnswer::Accepted {
                    reference: batch.to_string(),
                },
                None => ProviderAnswer::NoAnswer {
                    cause: "PayPal answered a payout without its batch id".into(),
                },
            },
            Reply::Refused { code, message } => ProviderAnswer::Refused { code, message },
            Reply::Taken(Some(batch)) => ProviderAnswer::Accepted { reference: batch },
            Reply::Taken(None) => ProviderAnswer::NoAnswer {
                cause: "PayPal has this attempt's batch already and did not name it".into(),
            },
            // The credentials refused say nothing of an earlier call of the attempt.
            Reply::CredentialsRefused { code, message } => ProviderAnswer::NoAnswer {
                cause: format!("{message} ({code})"),
            },
            Reply::NoAnswer(cause) => ProviderAnswer::NoAnswer { cause },
        }
    }

    /// `POST /v1/notifications/verify-webhook-signature`: true only when
    /// PayPal answers SUCCESS; a failure to ask is 503 (PayPal sends it again).
    pub async fn verify(&self, t: &Transmission, webhook_id: &str, event: &Value) -> Result<bool> {
        let body = json!({
            "auth_algo": t.auth_algo, "cert_url": t.cert_url, "transmission_id": t.id,
            "transmission_sig": t.sig, "transmission_time": t.time,
            "webhook_id": webhook_id, "webhook_event": event,
        });
        match self
            .post("/v1/notifications/verify-webhook-signature", &body, None)
            .await
        {
            Reply::Done(answer) => Ok(answer["verification_status"] == "SUCCESS"),
            // PayPal refused the question (a header missing or malformed):
            // the event is not verified.
            Reply::Refused { .. } | Reply::CredentialsRefused { .. } | Reply::Taken(_) => Ok(false),
            Reply::NoAnswer(cause) => Err(Error::Unavailable(format!(
                "PayPal's verification did not answer ({cause}); the event is refused for now"
            ))),
        }
    }

    async fn post(&self, path: &str, body: &Value, request_id: Option<&str>) -> Reply {
        let token = match self.token().await {
            Ok(t) => t,
            Err(reply) => return reply,
        };
        let client = match self.rails.client() {
            Ok(c) => c,
            Err(e) => return Reply::NoAnswer(e),
        };
        let mut request = client
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
            .json(body);
        if let Some(id) = request_id {
            request = request.header("paypal-request-id", id);
        }
        match request.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                match r.json::<Value>().await {
                    Ok(answer) => sorted(status, answer),
                    Err(_) => Reply::NoAnswer("PayPal's answer was lost".into()),
                }
            }
            Err(e) => Reply::NoAnswer(format!("PayPal did not answer: {}", super::cause(&e))),
        }
    }

    /// A token for these credentials, reused while it is good.
    async fn token(&self) -> std::result::Result<String, Reply> {
        let key = format!("{}|{}", self.base, self.client_id);
        if let Some(t) = self.rails.cached_token(&key) {
            return Ok(t);
        }
        let client = self.rails.client().map_err(Reply::NoAnswer)?;
        let sent = client
            .post(format!("{}/v1/oauth2/token", self.base))
            .basic_auth(self.client_id, Some(self.client_secret))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("grant_type=client_credentials")
            .send()
            .await
            .map_err(|e| Reply::NoAnswer(format!("PayPal did not answer: {}", super::cause(&e))))?;
        let status = sent.status().as_u16();
        let answer: Value = sent
            .json()
            .await
            .map_err(|_| Reply::NoAnswer("PayPal's answer was lost".into()))?;
        let Reply::Done(answer) = sorted(status, answer) else {
            return Err(sorted_token_failure(status));
        };
        let token = answer["access_token"]
            .as_str()
            .ok_or_else(|| Reply::NoAnswer("PayPal answered no access token".into()))?;
        let expires = Duration::from_secs(answer["expires_in"].as_u64().unwrap_or(0));
        if let Some(good_for) = expires.checked_sub(TOKEN_MARGIN) {
            self.rails
                .cache_token(key, token.to_string(), Instant::now() + good_for);
        }
        Ok(token.to_string())
    }
}

/// A token request that failed: refused credentials (4xx), or no answer.
fn sorted_token_failure(status: u16) -> Reply {
    match status {
        400..=499 if status != 429 => Reply::CredentialsRefused {
            code: "invalid_client".into(),
            message: "PayPal refused the integration's client id and secret".into(),
        },
        _ => Reply::NoAnswer(format!("PayPal answered {status}")),
    }
}

/// Sorts an answer: 2xx done; 429 and 5xx unknown; a `sender_batch_id`
/// used already, the batch it made; 401 and 403, the credentials refused;
/// another 4xx refused, with PayPal's `name` (or OAuth's `error`) and message.
fn sorted(status: u16, answer: Value) -> Reply {
    if status == 400 && issues(&answer).any(|i| i == "SENDER_BATCH_ID_ALREADY_USED") {
        return Reply::Taken(linked_batch(&answer));
    }
    let text = |field: &str| {
        answer
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match status {
        200..=299 => Reply::Done(answer),
        409 | 429 | 500..=599 => Reply::NoAnswer(format!("PayPal answered {status}")),
        _ => {
            let code = text("name")
                .or_else(|| text("error"))
                .unwrap_or_else(|| format!("http_{status}"));
            let detail = answer
                .pointer("/details/0/issue")
                .and_then(Value::as_str)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let message = text("message")
                .or_else(|| text("error_description"))
                .unwrap_or_else(|| format!("PayPal answered {status}"));
            let message = format!("{message}{detail}");
            match status {
                401 | 403 => Reply::CredentialsRefused { code, message },
                _ => Reply::Refused { code, message },
            }
        }
    }
}

/// The `issue` of each of an error's details.
fn issues(answer: &Value) -> impl Iterator<Item = &str> {
    answer
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("issue").and_then(Value::as_str))
}

/// The batch id an error links to (`…/v1/payments/payouts/{batch}`).
fn linked_batch(answer: &Value) -> Option<String> {
    answer
        .get("links")?
        .as_array()?
        .iter()
        .filter_map(|l| l.get("href").and_then(Value::as_str))
        .find_map(|href| href.split_once("/v1/payments/payouts/"))
        .map(|(_, rest)| rest.split(['?', '#']).next().unwrap_or_default())
        .map(|batch| batch.trim_end_matches('/').to_string())
        .filter(|b| !b.is_empty() && !b.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_sorted_by_what_is_known_of_the_outcome() {
        let cases = [
            (201, json!({"batch_header": {}}), "done"),
            (
                400,
                json!({"name": "VALIDATION_ERROR", "message": "Invalid request"}),
                "refused",
            ),
            (
                422,
                json!({"name": "INSUFFICIENT_FUNDS", "message": "m"}),
                "refused",
            ),
            (401, json!({"error": "invalid_token"}), "credentials"),
            (
                403,
                json!({"name": "NOT_AUTHORIZED", "message": "m"}),
                "credentials",
            ),
            (429, json!({}), "unknown"),
            (500, json!({}), "unknown"),
        ];
        for (status, answer, want) in cases {
            let got = match sorted(status, answer) {
                Reply::Done(_) => "done",
                Reply::Refused { .. } => "refused",
                Reply::CredentialsRefused { .. } => "credentials",
                Reply::Taken(_) => "taken",
                Reply::NoAnswer(_) => "unknown",
            };
            assert_eq!(got, want, "{status}");
        }
        let Reply::Refused { code, message } = sorted(
            400,
            json!({"name": "VALIDATION_ERROR", "message": "Invalid request", "details": [{"issue": "CURRENCY_NOT_SUPPORTED"}]}),
        ) else {
            panic!("refused");
        };
        assert_eq!(code, "VALIDATION_ERROR");
        assert_eq!(message, "Invalid request (CURRENCY_NOT_SUPPORTED)");
        // A sender_batch_id used already: the batch it made, by PayPal's link.
        let used = |links: Value| {
            json!({"name": "USER_BUSINESS_ERROR", "message": "User business error.",
                "details": [{"field": "SENDER_BATCH_ID", "location": "body",
                    "issue": "SENDER_BATCH_ID_ALREADY_USED"}],
                "links": links})
        };
        for href in [
            "https://api-m.paypal.com/v1/payments/payouts/5UXD2E8A7EBQJ",
            "https://api-m.paypal.com/v1/payments/payouts/5UXD2E8A7EBQJ?page_size=1000&page=1",
        ] {
            let linked = json!([{"href": href, "rel": "self", "method": "GET"}]);
            assert!(
                matches!(sorted(400, used(linked)), Reply::Taken(Some(b)) if b == "5UXD2E8A7EBQJ"),
                "{href}"
            );
        }
        assert!(matches!(sorted(400, used(json!([]))), Reply::Taken(None)));
    }
}
