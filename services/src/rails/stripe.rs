//! Stripe's API as the product uses it: connected accounts (Express),
//! their onboarding links and transfers (the payout rail), and promotion
//! codes. Form-encoded bodies with
//! `Authorization: Bearer <key>`; every call that creates something carries
//! an `Idempotency-Key`, which Stripe answers once.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use crate::rails::Rails;
use domain::error::{Error, Result};
use domain::payout_rail::ProviderAnswer;

/// A transfer to a connected account.
#[derive(Debug, Clone)]
pub struct Transfer<'a> {
    /// Minor units of `currency`.
    pub amount_minor: i64,
    /// ISO 4217, any case (sent lowercase).
    pub currency: &'a str,
    pub destination: &'a str,
    pub payout_id: &'a str,
    pub affiliate_id: &'a str,
    /// The attempt's key: `{payoutId}-{paymentAttempt}`.
    pub idempotency_key: &'a str,
}

/// A connected account as created.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub id: String,
    pub currently_due: Vec<String>,
}

/// An onboarding link.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountLink {
    pub url: String,
    pub expires_at: DateTime<Utc>,
}

/// Stripe, called with one key.
pub struct Stripe<'a> {
    rails: &'a Rails,
    api_key: &'a str,
}

impl std::fmt::Debug for Stripe<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stripe").finish_non_exhaustive()
    }
}

impl Rails {
    /// Stripe with a merchant's key (opened from its integration).
    pub fn stripe<'a>(&'a self, api_key: &'a str) -> Stripe<'a> {
        Stripe {
            rails: self,
            api_key,
        }
    }
}

impl Stripe<'_> {
    /// `POST /v1/transfers`: paid (the `tr_…` id), refused (Stripe's code
    /// and message), or no answer (the outcome is unknown).
    pub async fn transfer(&self, t: &Transfer<'_>) -> ProviderAnswer {
        let form = [
            ("amount", t.amount_minor.to_string()),
            ("currency", t.currency.to_ascii_lowercase()),
            ("destination", t.destination.to_string()),
            ("transfer_group", t.payout_id.to_string()),
            ("description", format!("Affiliate payout {}", t.payout_id)),
            ("metadata[payoutId]", t.payout_id.to_string()),
            ("metadata[affiliateId]", t.affiliate_id.to_string()),
        ];
        match self
            .post("/v1/transfers", &form, Some(t.idempotency_key))
            .await
        {
            Reply::Done(body) => match body.get("id").and_then(Value::as_str) {
                Some(id) => ProviderAnswer::Paid {
                    reference: id.to_string(),
                },
                None => ProviderAnswer::NoAnswer {
                    cause: "Stripe answered a transfer without an id".into(),
                },
            },
            Reply::Refused { code, message } => ProviderAnswer::Refused { code, message },
            // The key refused says nothing of an earlier call of the attempt.
            Reply::KeyRefused { code, message } => ProviderAnswer::NoAnswer {
                cause: format!("Stripe refused the integration's apiKey: {message} ({code})"),
            },
            Reply::NoAnswer(cause) => ProviderAnswer::NoAnswer { cause },
        }
    }

    /// `POST /v1/accounts`: an Express account whose requirements Stripe
    /// collects, named by the affiliate (its id is the idempotency key, so
    /// two calls at once make one account).
    pub async fn create_account(&self, affiliate_id: &str, email: &str) -> Result<Account> {
        let form = [
            ("type", "express".to_string()),
            ("email", email.to_string()),
            ("capabilities[transfers][requested]", "true".to_string()),
            ("metadata[affiliateId]", affiliate_id.to_string()),
        ];
        let key = format!("account-{affiliate_id}");
        let body = self.post("/v1/accounts", &form, Some(&key)).await.done()?;
        let id = body
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::Unavailable("Stripe answered an account without an id".into()))?;
        Ok(Account {
            id: id.to_string(),
            currently_due: domain::connector::stripe::currently_due(&body),
        })
    }

    /// `POST /v1/account_links`: a fresh onboarding link.
    pub async fn account_link(
        &self,
        account: &str,
        refresh_url: &str,
        return_url: &str,
    ) -> Result<AccountLink> {
        let form = [
            ("account", account.to_string()),
            ("type", "account_onboarding".to_string()),
            ("refresh_url", refresh_url.to_string()),
            ("return_url", return_url.to_string()),
        ];
        let body = self.post("/v1/account_links", &form, None).await.done()?;
        let url = body.get("url").and_then(Value::as_str);
        let expires = body
            .get("expires_at")
            .and_then(Value::as_i64)
            .and_then(|t| Utc.timestamp_opt(t, 0).single());
        match (url, expires) {
            (Some(url), Some(expires_at)) => Ok(AccountLink {
                url: url.to_string(),
                expires_at,
            }),
            _ => Err(Error::Unavailable(
                "Stripe answered an account link without its url".into(),
            )),
        }
    }

    /// `POST /v1/promotion_codes`: a promotion code of `coupon` for the
    /// affiliate, its `promo_…` id. The product's id for it is the
    /// idempotency key, so a retried call makes one code.
    pub async fn create_promotion_code(
        &self,
        code: &str,
        coupon: &str,
        affiliate_id: &str,
        promotion_code_id: &str,
    ) -> Result<String> {
        let form = [
            ("code", code.to_string()),
            ("promotion[type]", "coupon".to_string()),
            ("promotion[coupon]", coupon.to_string()),
            ("metadata[affiliateId]", affiliate_id.to_string()),
            ("metadata[promotionCodeId]", promotion_code_id.to_string()),
        ];
        let key = format!("promotion-code-{promotion_code_id}");
        let body = self
            .post("/v1/promotion_codes", &form, Some(&key))
            .await
            .done()?;
        body.get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                Error::Unavailable("Stripe answered a promotion code without an id".into())
            })
    }

    /// `POST /v1/promotion_codes/{id}` with `active=false`: the code no longer
    /// applies at Stripe.
    pub async fn deactivate_promotion_code(&self, id: &str) -> Result<()> {
        let form = [("active", "false".to_string())];
        let path = format!("/v1/promotion_codes/{id}");
        self.post(&path, &form, None).await.done().map(|_| ())
    }

    async fn post(&self, path: &str, form: &[(&str, String)], key: Option<&str>) -> Reply {
        let client = match self.rails.client() {
            Ok(c) => c,
            Err(e) => return Reply::NoAnswer(e),
        };
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let mut request = client
            .post(format!("{}{path}", self.rails.bases().stripe))
            .bearer_auth(self.api_key)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Reply::NoAnswer(format!("Stripe did not answer: {}", super::cause(&e)))
            }
        };
        let status = response.status().as_u16();
        match response.json::<Value>().await {
            Ok(body) => Reply::of(status, body),
            Err(e) => Reply::NoAnswer(format!("Stripe's answer was lost: {}", super::cause(&e))),
        }
    }
}

/// A Stripe answer, sorted by what it means for the caller.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Done(Value),
    /// Stripe refused it: nothing was done.
    Refused {
        code: String,
        message: String,
    },
    /// Stripe refused the key itself (401, 403) before looking at the
    /// request: nothing was done by this call, and nothing is known of an
    /// earlier call with the same idempotency key.
    KeyRefused {
        code: String,
        message: String,
    },
    /// The outcome is unknown.
    NoAnswer(String),
}

impl Reply {
    /// Sorts an answer: 2xx done; 429, 5xx, 409 (the key is in use by a
    /// call still running) and an idempotency error (the key was used with
    /// other parameters) leave the outcome unknown; any other 4xx refuses.
    fn of(status: u16, body: Value) -> Reply {
        let error = body.get("error");
        let text = |field: &str| {
            error
                .and_then(|e| e.get(field))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let kind = text("type");
        match status {
            200..=299 => Reply::Done(body),
            409 | 429 | 500..=599 => Reply::NoAnswer(format!("Stripe answered {status}")),
            _ if kind.as_deref() == Some("idempotency_error") => {
                Reply::NoAnswer("Stripe refused the idempotency key's reuse".into())
            }
            _ => {
                let code = text("code")
                    .or(kind)
                    .unwrap_or_else(|| format!("http_{status}"));
                let message =
                    text("message").unwrap_or_else(|| format!("Stripe answered {status}"));
                match status {
                    401 | 403 => Reply::KeyRefused { code, message },
                    _ => Reply::Refused { code, message },
                }
            }
        }
    }

    /// The answer's body, or the API's error: a refusal is 409 naming
    /// Stripe's code, no answer is 503.
    fn done(self) -> Result<Value> {
        match self {
            Reply::Done(body) => Ok(body),
            Reply::Refused { code, message } | Reply::KeyRefused { code, message } => {
                Err(Error::ProviderRefused {
                    current: "REFUSED_BY_STRIPE".into(),
                    code,
                    message,
                })
            }
            Reply::NoAnswer(cause) => Err(Error::Unavailable(format!("{cause}; retry"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_sorted_by_what_is_known_of_the_outcome() {
        let refusal = json!({"error": {"type": "invalid_request_error",
            "code": "balance_insufficient", "message": "You have insufficient funds."}});
        let cases = [
            (200, json!({"id": "tr_1"}), "done"),
            (400, refusal, "refused"),
            (
                401,
                json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key"}}),
                "key refused",
            ),
            (
                400,
                json!({"error": {"type": "idempotency_error", "message": "m"}}),
                "unknown",
            ),
            (
                409,
                json!({"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}}),
                "unknown",
            ),
            (429, json!({}), "unknown"),
            (500, json!({}), "unknown"),
            (503, json!({}), "unknown"),
            (
                401,
                json!({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided: sk_test_****1234"}}),
                "key refused",
            ),
            (
                403,
                json!({"error": {"type": "invalid_request_error", "code": "secret_key_required"}}),
                "key refused",
            ),
        ];
        for (status, body, want) in cases {
            let got = match Reply::of(status, body) {
                Reply::Done(_) => "done",
                Reply::Refused { .. } => "refused",
                Reply::KeyRefused { .. } => "key refused",
                Reply::NoAnswer(_) => "unknown",
            };
            assert_eq!(got, want, "{status}");
        }
        let Reply::Refused { code, message } = Reply::of(
            402,
            json!({"error": {"type": "invalid_request_error", "code": "balance_insufficient", "message": "m"}}),
        ) else {
            panic!("refused");
        };
        assert_eq!(
            (code.as_str(), message.as_str()),
            ("balance_insufficient", "m")
        );
    }
}
