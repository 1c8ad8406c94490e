//! What the API, the events and the portal show of an adjustment.

use crate::number::Number;
use domain::adjustment::AdjustmentRequest;
use domain::commission_terms::check_money;
use domain::conversion::Adjustment;
use domain::error::Error;
use domain::field;
use domain::money::{json_number, Currency};
use domain::timestamp::Timestamp;
use domain::validation::Issues;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A manual adjustment as the API shows it.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Adjustment)]
pub struct AdjustmentView<'a> {
    #[schema(value_type = domain::ids::AdjustmentId)]
    pub id: &'a str,
    pub object: &'static str,
    pub affiliate_id: &'a str,
    /// Positive: a bonus; negative: a manual clawback. Major units of `currency`, exact to its
    /// minor unit.
    pub amount: Number,
    pub currency: Currency,
    pub reason: &'a str,
    /// The merchant's idempotency key, when one was given.
    pub external_id: Option<&'a str>,
    /// The payout it was netted into; null while it waits in the affiliate's pool (and again
    /// when that payout is rejected or cancelled).
    #[schema(value_type = Option<domain::ids::PayoutId>)]
    pub payout_id: Option<&'a str>,
    pub created_at: Timestamp,
}

impl<'a> From<&'a Adjustment> for AdjustmentView<'a> {
    fn from(a: &'a Adjustment) -> Self {
        AdjustmentView {
            id: &a.id,
            object: "adjustment",
            affiliate_id: &a.affiliate_id,
            amount: a.amount.into(),
            currency: a.currency,
            reason: a.reason.as_deref().unwrap_or_default(),
            external_id: a.external_id.as_deref(),
            payout_id: a.payout_id.as_deref(),
            created_at: a.created_at.into(),
        }
    }
}

/// A manual adjustment as the affiliate's portal shows it (no `externalId`:
/// the merchant's own key).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalAdjustment)]
pub struct PortalAdjustment<'a> {
    pub id: &'a str,
    /// Positive: a bonus; negative: taken back.
    pub amount: Number,
    pub currency: Currency,
    pub reason: &'a str,
    /// The payout it was netted into; null while it waits for your next payout.
    pub payout_id: Option<&'a str>,
    pub created_at: Timestamp,
}

impl<'a> From<&'a Adjustment> for PortalAdjustment<'a> {
    fn from(a: &'a Adjustment) -> Self {
        PortalAdjustment {
            id: &a.id,
            amount: a.amount.into(),
            currency: a.currency,
            reason: a.reason.as_deref().unwrap_or_default(),
            payout_id: a.payout_id.as_deref(),
            created_at: a.created_at.into(),
        }
    }
}

/// `POST /api/v1/affiliates/{id}/adjustments`: a bonus or a manual clawback.
#[derive(utoipa::ToSchema, Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = AdjustmentRequest)]
pub struct NewAdjustment {
    /// Positive: a bonus; negative: a manual clawback; never 0. Below 10^12 in magnitude, with at
    /// most as many decimals as the currency's minor unit (USD 2, JPY 0, KWD 3).
    #[serde(with = "json_number")]
    #[schema(value_type = field::SignedAmount)]
    pub amount: Decimal,
    /// ISO 4217, any letter case (see `CurrencyCode`): the pool, and so the payout, it joins.
    #[schema(value_type = domain::money::Currency)]
    pub currency: String,
    /// Why, as the affiliate sees it in the portal: 1-500 characters, not blank, one line.
    #[schema(value_type = field::AdjustmentReason)]
    pub reason: String,
    /// The merchant's idempotency key, unique in the account and mode: the same key with the
    /// same affiliate, amount, currency and reason answers 200 with the original adjustment
    /// (header `Idempotent-Replayed: true`) and writes nothing; with anything else, 409
    /// ALREADY_EXISTS.
    #[schema(value_type = Option<field::Key>)]
    pub external_id: Option<String>,
}

impl NewAdjustment {
    /// The request, every issue reported at once with its path: the amount
    /// not 0, below 10^12 in magnitude and exact to the currency; the reason
    /// and `externalId` within their lengths, without control characters.
    pub fn validate(self) -> Result<AdjustmentRequest, Error> {
        let mut issues = Issues::new();
        let currency = issues.check(Currency::parse("currency", &self.currency));
        check_amount(self.amount, currency, &mut issues);
        issues.check(field::AdjustmentReason::parse("reason", &self.reason));
        if let Some(x) = &self.external_id {
            issues.check(field::Key::parse("externalId", x));
        }
        issues.finish()?;
        let currency = currency.ok_or_else(|| Error::internal("a currency issue not recorded"))?;
        Ok(AdjustmentRequest {
            amount: currency.round(self.amount),
            currency,
            reason: self.reason,
            external_id: self.external_id,
        })
    }
}

/// An adjustment's amount: not 0, then any amount's rules.
fn check_amount(amount: Decimal, currency: Option<Currency>, issues: &mut Issues) {
    if amount.is_zero() {
        issues.add(
            &["amount"],
            "invalid_value",
            "amount must not be 0 (positive: a bonus; negative: a clawback)",
        );
    }
    check_money(amount, currency, issues);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn body(v: Value) -> NewAdjustment {
        serde_json::from_value(v).unwrap()
    }

    /// The paths and codes of a body's issues, in order (none when it is valid).
    fn issues(v: Value) -> Vec<(String, String)> {
        match body(v).validate() {
            Ok(_) => vec![],
            Err(Error::Validation(all)) => all
                .into_iter()
                .map(|i| (i.path[0].as_str().unwrap().to_string(), i.code))
                .collect(),
            Err(e) => panic!("not a validation failure: {e}"),
        }
    }

    /// The issues of a body with these fields (`externalId` left out when `None`).
    fn judged(
        amount: Value,
        currency: &str,
        reason: &str,
        xid: Option<&str>,
    ) -> Vec<(String, String)> {
        let mut v = json!({"amount": amount, "currency": currency, "reason": reason});
        if let Some(x) = xid {
            v["externalId"] = json!(x);
        }
        issues(v)
    }

    /// Expected issues: each one's path and code.
    type Want<'a> = &'a [(&'a str, &'a str)];

    fn want(all: Want) -> Vec<(String, String)> {
        all.iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn amounts_are_not_zero_below_ten_to_the_twelve_and_exact_to_the_currency() {
        let cases: [(Value, &str, Want); 11] = [
            (json!(25.5), "usd", &[]),
            (json!(-10), "EUR", &[]),
            (json!(999999999999.99_f64), "USD", &[]),
            (json!(-999999999999.99_f64), "USD", &[]),
            (json!(1.234), "KWD", &[]),
            (json!(0), "USD", &[("amount", "invalid_value")]),
            (json!(0.0), "USD", &[("amount", "invalid_value")]),
            (json!(1000000000000_i64), "USD", &[("amount", "too_big")]),
            (json!(-1000000000000_i64), "USD", &[("amount", "too_small")]),
            (json!(1.5), "JPY", &[("amount", "invalid_value")]),
            (json!(1.001), "USD", &[("amount", "invalid_value")]),
        ];
        for (amount, currency, issues) in cases {
            let got = judged(amount.clone(), currency, "Bonus", None);
            assert_eq!(got, want(issues), "{amount} {currency}");
        }
    }

    #[test]
    fn texts_are_checked_and_every_issue_is_reported_with_its_path() {
        let (long, long_id) = ("r".repeat(501), "x".repeat(256));
        let cases: [(&str, &str, Option<&str>, Want); 10] = [
            ("XAU", "Gold", None, &[("currency", "invalid_string")]),
            ("USD", "", None, &[("reason", "too_small")]),
            ("USD", "   ", None, &[("reason", "too_small")]),
            ("USD", &long, None, &[("reason", "too_big")]),
            ("USD", "a\nb", None, &[("reason", "invalid_string")]),
            ("USD", "ok", Some("x-1"), &[]),
            ("USD", "ok", Some(""), &[("externalId", "too_small")]),
            ("USD", "ok", Some(&long_id), &[("externalId", "too_big")]),
            (
                "USD",
                "ok",
                Some("a\u{85}b"),
                &[("externalId", "invalid_string")],
            ),
            (
                "nope",
                " ",
                Some(""),
                &[
                    ("currency", "invalid_string"),
                    ("reason", "too_small"),
                    ("externalId", "too_small"),
                ],
            ),
        ];
        for (currency, reason, xid, issues) in cases {
            let got = judged(json!(5), currency, reason, xid);
            assert_eq!(got, want(issues), "{currency} {reason:?} {xid:?}");
        }
        // Every field at once.
        let all = judged(json!(0), "nope", "", Some(""));
        assert_eq!(
            all,
            want(&[
                ("currency", "invalid_string"),
                ("amount", "invalid_value"),
                ("reason", "too_small"),
                ("externalId", "too_small"),
            ])
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let r = serde_json::from_value::<NewAdjustment>(
            json!({"amount": 5, "currency": "USD", "reason": "ok", "note": "x"}),
        );
        assert!(r.unwrap_err().to_string().contains("unknown field `note`"));
    }

    #[test]
    fn a_valid_request_is_exact_to_the_currency_and_keeps_what_was_sent() {
        let r = body(
            json!({"amount": 25.5, "currency": "usd", "reason": " Bonus ", "externalId": "b-1"}),
        )
        .validate()
        .unwrap();
        assert_eq!(r.amount.to_string(), "25.50");
        assert_eq!(r.currency.code(), "USD");
        assert_eq!(r.reason, " Bonus ");
        assert_eq!(r.external_id.as_deref(), Some("b-1"));
    }
}
