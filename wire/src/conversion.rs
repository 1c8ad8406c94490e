//! What the API and the events show of a conversion, and the bodies of the
//! postback and of a reversal.

use crate::number::Number;
use chrono::{DateTime, Utc};
use domain::commission_plan::CommissionSource;
use domain::commission_terms::CommissionReason;
use domain::metadata::Metadata;
use domain::money::Currency;
use domain::risk::Risk;
use domain::timestamp::Timestamp;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use chrono::Duration;
use domain::conversion::{
    amount_of, since_epoch, AttributionMethod, Conversion, ConversionStatus, ConversionType, Keys,
    Postback, ReverseRequest, Sale, FUTURE_TOLERANCE_MINUTES,
};
use domain::error::Error;
use domain::field;
use domain::metadata;
use domain::money::json_number_opt;
use domain::referral::CustomerKey;
use domain::timestamp;
use domain::validation::Issues;

/// A conversion (a sale reported by the merchant's server through the postback).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Conversion)]
pub struct ConversionView<'a> {
    #[schema(value_type = domain::ids::ConversionId)]
    pub id: &'a str,
    pub object: &'static str,
    /// The merchant's idempotency key (unique across all accounts and modes).
    pub external_id: &'a str,
    /// The attributed affiliate's campaign; for an unattributed conversion the postback's
    /// `campaignId`, else null.
    pub campaign_id: Option<&'a str>,
    /// Null when unattributed.
    pub affiliate_id: Option<&'a str>,
    /// The payment in major units of `currency`, exact to its minor unit.
    pub amount: Number,
    /// ISO 4217 code.
    pub currency: Currency,
    pub conversion_type: ConversionType,
    /// In `currency`, rounded half-even to its minor unit. 0 when the payment earns nothing
    /// (see `commissionReason`).
    pub commission: Number,
    /// Null when the commission rules applied normally, even if the rounded commission is 0.
    pub commission_reason: Option<CommissionReason>,
    /// What decided the commission: the affiliate's override, a campaign rule (its name and
    /// 0-based index), a tier, the campaign's own rate, or NONE (see `commissionReason`).
    pub commission_source: CommissionSource,
    /// As the postback (or the provider's payment) named it.
    pub product_id: Option<&'a str>,
    /// As the postback (or the provider's payment) named it.
    pub plan_id: Option<&'a str>,
    /// The customer's n-th attributed payment in the campaign (1 = the first); null for a lead,
    /// an unattributed payment, or one recorded before payments were counted.
    pub payment_number: Option<u32>,
    pub status: ConversionStatus,
    pub attribution: AttributionMethod,
    /// The referral (customer identity) the payment belongs to: `cid:<customerId>`,
    /// `email:<sha256 hex>`, `ses:<ses_…>` or `clk:<clk_…>`. Null when unattributed or when the
    /// postback named no customer, session or click.
    pub customer_ref: Option<&'a str>,
    /// True when the customer had an attributed payment recorded before this one.
    pub is_recurring: bool,
    pub click_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// As the postback sent it. A plain e-mail is never stored.
    pub customer_id: Option<&'a str>,
    /// The campaign's hold period at postback time (0 without a campaign).
    #[schema(minimum = 0)]
    pub hold_days: u32,
    /// `occurredAt + holdDays` days: from then on the payout job approves the commission.
    pub payable_at: Timestamp,
    /// The payout holding this conversion, once one does.
    pub payout_id: Option<&'a str>,
    #[schema(value_type = domain::metadata::MetadataSchema)]
    pub metadata: &'a Metadata,
    /// When the payment happened (the postback's `occurredAt`, default the time of the
    /// postback). List order, `from`/`to`, summary periods and the hold period all use it.
    pub occurred_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When the conversion was last reversed (in full or in part).
    pub reversed_at: Option<Timestamp>,
    /// The reason given with the last reversal.
    pub reversal_reason: Option<&'a str>,
    /// The part of `amount` reversed so far (0 until a reversal; `amount` once REVERSED).
    // A bound cannot stand beside the `Number` component: described inline.
    #[schema(value_type = f64, minimum = 0)]
    pub reversed_amount: Number,
    /// The part of `commission` given back so far: `commission * reversedAmount / amount`,
    /// rounded half-even to the minor unit. The commission still earned is `commission -
    /// commissionReversed`.
    // A bound cannot stand beside the `Number` component: described inline.
    #[schema(value_type = f64, minimum = 0)]
    pub commission_reversed: Number,
    /// Risk flags found when it was recorded, and their level (see `docs/risk.md`).
    pub risk: &'a Risk,
}

impl ConversionView<'_> {
    /// The view with no trace of the customer's e-mail: a `customerRef`
    /// that is the e-mail's hash left out (an export leaves the API).
    pub fn without_email_hash(mut self) -> Self {
        let hashed = self
            .customer_ref
            .and_then(domain::referral::CustomerKey::parse)
            .is_some_and(|k| matches!(k, domain::referral::CustomerKey::EmailHash(_)));
        if hashed {
            self.customer_ref = None;
        }
        self
    }
}

impl<'a> From<&'a Conversion> for ConversionView<'a> {
    fn from(c: &'a Conversion) -> Self {
        ConversionView {
            id: &c.id,
            object: "conversion",
            external_id: &c.external_id,
            campaign_id: c.campaign_id.as_deref(),
            affiliate_id: c.affiliate_id.as_deref(),
            amount: c.amount.into(),
            currency: c.currency,
            conversion_type: c.conversion_type,
            commission: c.commission.into(),
            commission_reason: c.commission_reason,
            commission_source: c.source(),
            product_id: c.product_id.as_deref(),
            plan_id: c.plan_id.as_deref(),
            payment_number: c.payment_number,
            status: c.status,
            attribution: c.attribution,
            customer_ref: c.customer_ref.as_deref(),
            is_recurring: c.is_recurring,
            click_id: c.click_id.as_deref(),
            session_id: c.session_id.as_deref(),
            customer_id: c.customer_id.as_deref(),
            hold_days: c.hold_days,
            payable_at: c.payable_at.into(),
            payout_id: c.payout_id.as_deref(),
            metadata: &c.metadata,
            occurred_at: c.occurred_at.into(),
            created_at: c.created_at.into(),
            updated_at: c.updated_at.into(),
            reversed_at: c.reversed_at.map(Timestamp),
            reversal_reason: c.reversal_reason.as_deref(),
            reversed_amount: c.reversed_amount.into(),
            commission_reversed: c.commission_reversed.into(),
            risk: &c.risk,
        }
    }
}

/// A cookieless server-to-server conversion. Unknown fields give 400 VALIDATION_FAILED.
/// Attribution signals that are unknown, expired, of another campaign or malformed are skipped
/// (never an error): the payment is still recorded, unattributed if nothing matches.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PostbackRequest)]
pub struct PostbackBody {
    /// A SALE's amount (required): greater than 0, below 10^12, with at most as many decimals
    /// as the currency's minor unit (USD 2, JPY 0, KWD 3). A LEAD's: 0 or left out.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::AmountOrZero>)]
    pub amount: Option<Decimal>,
    /// ISO 4217, any letter case (see `CurrencyCode`); `amount` may have at most its minor
    /// unit's decimals.
    #[schema(value_type = domain::money::Currency)]
    pub currency: String,
    /// Idempotency key, unique across every account and mode: the same key again from this
    /// account and mode answers 200 with the original conversion (header `Idempotent-Replayed:
    /// true`) and writes nothing; from another account, or from the other mode of this one, 409
    /// ALREADY_EXISTS.
    #[schema(value_type = field::Key)]
    pub external_id: String,
    #[schema(value_type = ConversionType)]
    pub conversion_type: String,
    /// Explicit code attribution (any letter case).
    #[schema(value_type = Option<field::Key>)]
    pub affiliate_code: Option<String>,
    /// `ses_…` from the browser script (after consent). Counts when the payment's `occurredAt`
    /// falls inside its click's window: from 5 minutes before the click until `expiresAt`
    /// (`cookieDays` after the click).
    #[schema(value_type = Option<field::Key>)]
    pub session_id: Option<String>,
    /// `clk_…`, same window rule as `sessionId`.
    #[schema(value_type = Option<field::Key>)]
    pub click_id: Option<String>,
    /// Hex SHA-256 of the trimmed, lowercased e-mail (stored lowercase).
    #[schema(value_type = Option<field::EmailHash>)]
    pub customer_email_hash: Option<String>,
    /// Hashed on arrival; the address itself is never stored. With `customerEmailHash` too,
    /// both must denote the same address.
    #[schema(value_type = Option<domain::email::Email>)]
    pub customer_email: Option<String>,
    /// Restricts attribution to this campaign (signals of other campaigns are skipped) and
    /// files an unattributed conversion under it. Unknown: 404 NOT_FOUND.
    #[schema(value_type = Option<field::Key>)]
    pub campaign_id: Option<String>,
    /// The merchant's customer id. Send it (or the e-mail) on every payment of a customer so
    /// later payments are recognised and the recurring rules apply.
    #[schema(value_type = Option<field::CustomerRef>)]
    pub customer_id: Option<String>,
    /// The product paid for (1-255 characters): `commissionRules` may pay by it.
    #[schema(value_type = Option<field::Key>)]
    pub product_id: Option<String>,
    /// The plan or price paid (1-255 characters): `commissionRules` may pay by it.
    #[schema(value_type = Option<field::Key>)]
    pub plan_id: Option<String>,
    /// When the payment happened; default now. At most 5 minutes in the future; may be
    /// back-dated. Stored at millisecond precision. Not before 1970-01-01T00:00:00Z.
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
    #[schema(value_type = Option<domain::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

/// The issue of a `conversionType` that is none of the types.
fn unknown_type(issues: &mut Issues) {
    issues.add(
        &["conversionType"],
        "invalid_enum_value",
        format!(
            "conversionType must be one of {}",
            ConversionType::ALL.map(ConversionType::as_str).join(", ")
        ),
    );
}

/// The customer's e-mail identity from `customerEmail` and/or
/// `customerEmailHash` (both given: they must agree).
pub(crate) fn email_identity(
    email: Option<&str>,
    hash: Option<&str>,
    issues: &mut Issues,
) -> Option<CustomerKey> {
    let from_email = email.and_then(|e| issues.check(CustomerKey::from_email(e)));
    // Hex is case-blind: an upper-case hash is accepted and stored in lowercase.
    let from_hash = hash.and_then(|h| issues.check(CustomerKey::from_email_hash(h)));
    match (from_email, from_hash) {
        (Some(a), Some(b)) if a != b => {
            issues.add(
                &["customerEmailHash"],
                "invalid_combination",
                "customerEmailHash is not the hash of customerEmail; send one of them",
            );
            None
        }
        (Some(k), _) | (None, Some(k)) => Some(k),
        (None, None) => None,
    }
}

/// `occurredAt`: now when absent; at most a few minutes in the future, not before 1970.
fn occurred_at(raw: Option<&str>, now: DateTime<Utc>, issues: &mut Issues) -> DateTime<Utc> {
    match raw {
        None => now,
        Some(raw) => match timestamp::parse_datetime(raw) {
            Some(t) if t > now + Duration::minutes(FUTURE_TOLERANCE_MINUTES) => {
                issues.add(
                    &["occurredAt"],
                    "too_big",
                    format!(
                        "occurredAt must be at most {FUTURE_TOLERANCE_MINUTES} minutes in the future"
                    ),
                );
                now
            }
            Some(t) => issues.check(since_epoch(t)).map_or(now, |()| t),
            None => {
                issues.add(
                    &["occurredAt"],
                    "invalid_date",
                    "occurredAt must be an ISO-8601 date-time with an offset",
                );
                now
            }
        },
    }
}

impl PostbackBody {
    /// Checks every field and reports every problem at once.
    pub fn validate(self, now: DateTime<Utc>) -> Result<Postback, Error> {
        let mut issues = Issues::new();
        let currency = issues.check(Currency::parse("currency", &self.currency));
        let kind = ConversionType::parse(&self.conversion_type);
        let amount = amount_of(self.amount, kind, currency, &mut issues);
        issues.check(field::Key::parse("externalId", &self.external_id));
        if kind.is_none() {
            unknown_type(&mut issues);
        }
        let keys = Keys {
            affiliate_code: self.affiliate_code,
            session_id: self.session_id,
            click_id: self.click_id,
            campaign_id: self.campaign_id,
            product_id: self.product_id,
            plan_id: self.plan_id,
        };
        keys.check(&mut issues);
        let customer_id = self
            .customer_id
            .as_deref()
            .and_then(|id| issues.check(CustomerKey::from_id(id)));
        let email = email_identity(
            self.customer_email.as_deref(),
            self.customer_email_hash.as_deref(),
            &mut issues,
        );
        let occurred_at = occurred_at(self.occurred_at.as_deref(), now, &mut issues);
        let metadata = self.metadata.unwrap_or_default();
        metadata::validate(&metadata, &mut issues);
        issues.finish()?;
        let sale = Sale {
            amount,
            currency: currency.expect("checked above"),
            external_id: self.external_id,
            keys,
            customer_id,
            email,
            occurred_at,
            metadata,
            promotion_code: None,
        };
        Ok(Postback::of(sale, kind.unwrap_or_default()))
    }
}

/// Body of release: an empty object (or no body). Any field is rejected.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = ReleaseRequest)]
pub struct ReleaseBody {}

/// Optional; an empty body reverses the whole conversion.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = ReverseRequest)]
pub struct ReverseBody {
    /// The part of the payment to reverse (a partial refund), in major units of the
    /// conversion's currency: above 0, at most what is left to reverse (`amount -
    /// reversedAmount`), exact to the currency's minor unit. Absent: everything left.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::Amount>)]
    pub amount: Option<Decimal>,
    #[schema(value_type = Option<field::Reason>)]
    pub reason: Option<String>,
}

impl ReverseBody {
    /// The optional reason, at most 1000 characters, not blank; the amount is
    /// checked against the conversion when it is reversed.
    pub fn validate(self) -> Result<ReverseRequest, Error> {
        let mut issues = Issues::new();
        if let Some(r) = &self.reason {
            issues.check(field::Reason::parse("reason", r));
        }
        issues.finish()?;
        Ok(ReverseRequest {
            amount: self.amount,
            reason: self.reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::referral::email_hash;
    use serde_json::json;

    fn body(v: serde_json::Value) -> Result<Postback, Error> {
        domain::json_body::from_value::<PostbackBody>(v)?.validate(Utc::now())
    }

    fn issue_paths(r: Result<Postback, Error>) -> Vec<String> {
        match r {
            Err(Error::Validation(issues)) => issues
                .iter()
                .map(|i| {
                    i.path
                        .iter()
                        .map(|p| p.as_str().unwrap_or("").to_string())
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .collect(),
            other => panic!("expected validation failure, got {other:?}"),
        }
    }

    fn base() -> serde_json::Value {
        json!({"amount": 19.99, "currency": "usd", "externalId": "ord_1", "conversionType": "SALE"})
    }

    fn with(extra: serde_json::Value) -> serde_json::Value {
        let mut b = base();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    }

    #[test]
    fn a_minimal_postback_is_valid_and_normalised() {
        let p = body(base()).unwrap();
        assert_eq!(p.amount.to_string(), "19.99");
        assert_eq!(p.currency.code(), "USD");
        assert!(p.email.is_none());
        assert!(p.customer_keys().is_empty());
        assert_eq!(p.fallback_key(), None);
        assert!(p.occurred_at <= Utc::now());
    }

    #[test]
    fn amounts_must_be_positive_and_fit_the_currency() {
        assert_eq!(issue_paths(body(with(json!({"amount": 0})))), ["amount"]);
        assert_eq!(issue_paths(body(with(json!({"amount": -1})))), ["amount"]);
        assert_eq!(
            issue_paths(body(with(json!({"amount": 19.999})))),
            ["amount"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"amount": 10.5, "currency": "JPY"})))),
            ["amount"]
        );
        assert!(body(with(json!({"amount": 10.125, "currency": "KWD"}))).is_ok());
        assert_eq!(issue_paths(body(with(json!({"amount": 1e12})))), ["amount"]);
        assert!(matches!(
            body(with(json!({"amount": "19.99"}))),
            Err(Error::Validation(_))
        ));
    }

    #[test]
    fn currency_type_and_external_id_are_checked() {
        assert_eq!(
            issue_paths(body(with(json!({"currency": "ABC"})))),
            ["currency"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"currency": "XAU"})))),
            ["currency"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"conversionType": "REFUND"})))),
            ["conversionType"]
        );
        // A LEAD has no amount: 0 or left out.
        assert_eq!(
            issue_paths(body(with(json!({"conversionType": "LEAD"})))),
            ["amount"]
        );
        let mut lead = with(json!({"conversionType": "LEAD"}));
        lead.as_object_mut().unwrap().remove("amount");
        assert_eq!(body(lead).unwrap().amount, Decimal::ZERO);
        assert!(body(with(json!({"conversionType": "LEAD", "amount": 0}))).is_ok());
        let mut sale = with(json!({}));
        sale.as_object_mut().unwrap().remove("amount");
        assert_eq!(issue_paths(body(sale)), ["amount"]);
        assert_eq!(
            issue_paths(body(with(json!({"externalId": ""})))),
            ["externalId"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"externalId": "x".repeat(256)})))),
            ["externalId"]
        );
        assert!(body(with(json!({"externalId": "x".repeat(255)}))).is_ok());
        assert_eq!(issue_paths(body(with(json!({"extra": 1})))), ["extra"]);
    }

    #[test]
    fn customer_identities_are_hashed_checked_and_ordered() {
        let h = email_hash("jane@example.com");
        let p = body(with(json!({"customerEmail": " Jane@Example.com "}))).unwrap();
        assert_eq!(p.email, Some(CustomerKey::EmailHash(h.clone())));
        let p = body(with(
            json!({"customerEmailHash": h.to_uppercase(), "customerId": "u1"}),
        ))
        .unwrap();
        assert_eq!(
            p.customer_keys()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec!["cid:u1".to_string(), format!("email:{h}")]
        );
        let p = body(with(json!({"sessionId": "ses_x", "clickId": "clk_y"}))).unwrap();
        assert_eq!(p.fallback_key(), Some(CustomerKey::from_session("ses_x")));
        let p = body(with(json!({"clickId": "clk_y"}))).unwrap();
        assert_eq!(p.fallback_key(), Some(CustomerKey::from_click("clk_y")));
        let p = body(with(json!({"clickId": "clk_y", "customerId": "u1"}))).unwrap();
        assert_eq!(p.fallback_key(), None);
        assert_eq!(
            issue_paths(body(with(json!({"customerEmailHash": "abc"})))),
            ["customerEmailHash"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"customerEmail": "not-an-email"})))),
            ["customerEmail"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"customerId": "  "})))),
            ["customerId"]
        );
        assert_eq!(
            issue_paths(body(with(json!({
                "customerEmail": "a@b.co", "customerEmailHash": h
            })))),
            ["customerEmailHash"]
        );
    }

    #[test]
    fn occurred_at_may_be_back_dated_but_not_far_in_the_future() {
        let p = body(with(json!({"occurredAt": "2020-02-29T12:00:00.123456Z"}))).unwrap();
        assert_eq!(
            timestamp::format(&p.occurred_at),
            "2020-02-29T12:00:00.123Z"
        );
        let soon = timestamp::format(&(Utc::now() + Duration::minutes(4)));
        assert!(body(with(json!({ "occurredAt": soon }))).is_ok());
        let late = timestamp::format(&(Utc::now() + Duration::minutes(6)));
        assert_eq!(
            issue_paths(body(with(json!({ "occurredAt": late })))),
            ["occurredAt"]
        );
        assert_eq!(
            issue_paths(body(with(json!({"occurredAt": "yesterday"})))),
            ["occurredAt"]
        );
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let paths = issue_paths(body(json!({
            "amount": 0, "currency": "US", "externalId": "", "conversionType": "sale",
            "metadata": {"k": "v".repeat(501)},
        })));
        assert_eq!(
            paths,
            [
                "currency",
                "amount",
                "externalId",
                "conversionType",
                "metadata.k"
            ]
        );
    }
}
