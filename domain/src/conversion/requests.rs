//! The requests about conversions, validated: a `Postback` (from the HTTP
//! postback's body or a provider's payment, `Sale`) and a reversal's
//! `ReverseRequest`; their bodies are `wire::conversion`.

use super::*;
use crate::issue::Issue;

/// A validated postback.
#[derive(Debug, Clone, PartialEq)]
pub struct Postback {
    /// 0 for a LEAD.
    pub amount: Decimal,
    pub conversion_type: ConversionType,
    pub currency: Currency,
    pub external_id: String,
    pub affiliate_code: Option<String>,
    pub session_id: Option<String>,
    pub click_id: Option<String>,
    /// `cid:<customerId>`.
    pub customer_id: Option<CustomerKey>,
    /// `email:<sha256>`, from `customerEmail` or `customerEmailHash`.
    pub email: Option<CustomerKey>,
    pub campaign_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    pub metadata: Metadata,
    /// Other ids of the same payment (a provider's payment intent or
    /// charge), claimed with its `externalId`: a postback or event naming
    /// any of them replays the one conversion. None from the HTTP postback.
    pub aliases: Vec<String>,
    /// The provider's id of the promotion code a provider's payment carried
    /// (a Stripe `promo_…`, a Paddle `dsc_…`). None from the HTTP postback.
    pub promotion_code: Option<String>,
    pub product_id: Option<String>,
    pub plan_id: Option<String>,
}

/// How far in the future `occurredAt` may be (clock skew).
pub const FUTURE_TOLERANCE_MINUTES: i64 = 5;

/// A payment's optional keys (attribution signals, product and plan),
/// each by [`field::Key`]'s rule.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    pub affiliate_code: Option<String>,
    pub session_id: Option<String>,
    pub click_id: Option<String>,
    pub campaign_id: Option<String>,
    pub product_id: Option<String>,
    pub plan_id: Option<String>,
}

impl Keys {
    /// Checks every key given, recording each issue.
    pub fn check(&self, issues: &mut Issues) {
        for (path, v) in [
            ("affiliateCode", &self.affiliate_code),
            ("sessionId", &self.session_id),
            ("clickId", &self.click_id),
            ("campaignId", &self.campaign_id),
            ("productId", &self.product_id),
            ("planId", &self.plan_id),
        ] {
            if let Some(v) = v {
                issues.check(field::Key::parse(path, v));
            }
        }
    }
}

/// `occurredAt` no earlier than 1970-01-01T00:00:00Z, as the postback documents.
pub fn since_epoch(t: DateTime<Utc>) -> Result<(), Issue> {
    match t.timestamp() < 0 {
        false => Ok(()),
        true => Err(Issue::new(
            &["occurredAt"],
            "too_small",
            "occurredAt must not be before 1970",
        )),
    }
}

/// A postback's amount: required for a SALE (an unknown type is checked
/// as one), 0 or left out for a LEAD.
pub fn amount_of(
    amount: Option<Decimal>,
    kind: Option<ConversionType>,
    currency: Option<Currency>,
    issues: &mut Issues,
) -> Decimal {
    match (amount, kind) {
        (None, Some(ConversionType::Lead)) => {}
        (None, _) => issues.add(&["amount"], "required", "amount is required for a SALE"),
        (Some(a), k) => {
            crate::commission_terms::check_amount(k.unwrap_or_default(), a, currency, issues)
        }
    }
    amount.unwrap_or_default()
}

impl Postback {
    /// Every id the payment is claimed by: its `externalId` first, then its
    /// aliases (each once).
    pub fn claimed_ids(&self) -> Vec<&str> {
        let mut ids = vec![self.external_id.as_str()];
        for a in &self.aliases {
            if !ids.contains(&a.as_str()) {
                ids.push(a);
            }
        }
        ids
    }

    /// The customer identities the payment names, strongest first: the
    /// `customerId`, then the e-mail hash. The conversion's referral
    /// (`customerRef`) is the first of them.
    pub fn customer_keys(&self) -> Vec<CustomerKey> {
        self.customer_id
            .iter()
            .chain(self.email.iter())
            .cloned()
            .collect()
    }

    /// The identity of a customer the postback names only through the browser
    /// session or click it came from (when it names no customer id or e-mail).
    pub fn fallback_key(&self) -> Option<CustomerKey> {
        if self.customer_id.is_some() || self.email.is_some() {
            return None;
        }
        self.session_id
            .as_deref()
            .map(CustomerKey::from_session)
            .or_else(|| self.click_id.as_deref().map(CustomerKey::from_click))
    }
}

/// A payment's checked facts, as typed values: what the HTTP postback's
/// body and a provider's event (`Postback::sale`) each make a postback of.
#[derive(Debug, Clone)]
pub struct Sale {
    pub amount: Decimal,
    pub currency: Currency,
    pub external_id: String,
    /// The referral the payment carried, by what it names, and its product and plan.
    pub keys: Keys,
    pub customer_id: Option<CustomerKey>,
    pub email: Option<CustomerKey>,
    /// No later than now (a provider's clock may run ahead).
    pub occurred_at: DateTime<Utc>,
    pub metadata: Metadata,
    pub promotion_code: Option<String>,
}

impl Postback {
    /// A provider's payment judged by the postback's own rules, on its typed
    /// facts: an amount, id, referral or metadata the postback would refuse
    /// is VALIDATION_FAILED with every issue, named by the postback's fields.
    pub fn sale(s: Sale) -> Result<Postback, Error> {
        let mut issues = Issues::new();
        let kind = Some(ConversionType::Sale);
        amount_of(Some(s.amount), kind, Some(s.currency), &mut issues);
        issues.check(field::Key::parse("externalId", &s.external_id));
        s.keys.check(&mut issues);
        issues.check(since_epoch(s.occurred_at));
        metadata::validate(&s.metadata, &mut issues);
        issues.finish()?;
        Ok(Postback::of(s, ConversionType::Sale))
    }

    /// The postback of a payment's checked facts: the one place both the
    /// HTTP postback and a provider's payment become one.
    pub fn of(s: Sale, conversion_type: ConversionType) -> Postback {
        Postback {
            amount: s.amount,
            conversion_type,
            currency: s.currency,
            external_id: s.external_id,
            affiliate_code: s.keys.affiliate_code,
            session_id: s.keys.session_id,
            click_id: s.keys.click_id,
            customer_id: s.customer_id,
            email: s.email,
            campaign_id: s.keys.campaign_id,
            // Stored and compared at the API's millisecond precision.
            occurred_at: truncate_millis(s.occurred_at),
            metadata: s.metadata,
            aliases: Vec::new(),
            promotion_code: s.promotion_code,
            product_id: s.keys.product_id,
            plan_id: s.keys.plan_id,
        }
    }
}

/// Drops sub-millisecond digits, so stored and compared times agree.
pub fn truncate_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    timestamp::parse_datetime(&timestamp::format(&t)).unwrap_or(t)
}

/// A validated reversal request.
#[derive(Debug, Clone, Default)]
pub struct ReverseRequest {
    /// The part to reverse; `None`: everything left.
    pub amount: Option<Decimal>,
    pub reason: Option<String>,
}
