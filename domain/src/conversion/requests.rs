//! The requests about conversions: the postback and its validation into a
//! `Postback`, and the bodies of a release and a reversal.

use super::*;

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
    #[schema(value_type = crate::money::Currency)]
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
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub affiliate_code: Option<String>,
    /// `ses_…` from the browser script (after consent). Counts when the payment's `occurredAt`
    /// falls inside its click's window: from 5 minutes before the click until `expiresAt`
    /// (`cookieDays` after the click).
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub session_id: Option<String>,
    /// `clk_…`, same window rule as `sessionId`.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub click_id: Option<String>,
    /// Hex SHA-256 of the trimmed, lowercased e-mail (stored lowercase).
    #[serde(default)]
    #[schema(value_type = Option<field::EmailHash>)]
    pub customer_email_hash: Option<String>,
    /// Hashed on arrival; the address itself is never stored. With `customerEmailHash` too,
    /// both must denote the same address.
    #[serde(default)]
    #[schema(value_type = Option<crate::email::Email>)]
    pub customer_email: Option<String>,
    /// Restricts attribution to this campaign (signals of other campaigns are skipped) and
    /// files an unattributed conversion under it. Unknown: 404 NOT_FOUND.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub campaign_id: Option<String>,
    /// The merchant's customer id. Send it (or the e-mail) on every payment of a customer so
    /// later payments are recognised and the recurring rules apply.
    #[serde(default)]
    #[schema(value_type = Option<field::CustomerRef>)]
    pub customer_id: Option<String>,
    /// The product paid for (1-255 characters): `commissionRules` may pay by it.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub product_id: Option<String>,
    /// The plan or price paid (1-255 characters): `commissionRules` may pay by it.
    #[serde(default)]
    #[schema(value_type = Option<field::Key>)]
    pub plan_id: Option<String>,
    /// When the payment happened; default now. At most 5 minutes in the future; may be
    /// back-dated. Stored at millisecond precision. Not before 1970-01-01T00:00:00Z.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub occurred_at: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<crate::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

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
    fn check(&self, issues: &mut Issues) {
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

/// A postback's amount: required for a SALE (an unknown type is checked
/// as one), 0 or left out for a LEAD.
fn amount_of(
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

/// The customer's e-mail identity from `customerEmail` and/or
/// `customerEmailHash` (both given: they must agree).
fn email_identity(
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
            Some(t) if t.timestamp() < 0 => {
                issues.add(
                    &["occurredAt"],
                    "too_small",
                    "occurredAt must not be before 1970",
                );
                now
            }
            Some(t) => t,
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

/// A payment a provider reported, as typed facts: what a provider's event
/// makes the postback of (`Postback::sale`).
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
        let amount = amount_of(Some(s.amount), kind, Some(s.currency), &mut issues);
        issues.check(field::Key::parse("externalId", &s.external_id));
        s.keys.check(&mut issues);
        if s.occurred_at.timestamp() < 0 {
            issues.add(
                &["occurredAt"],
                "too_small",
                "occurredAt must not be before 1970",
            );
        }
        metadata::validate(&s.metadata, &mut issues);
        issues.finish()?;
        Ok(Postback::of(Sale { amount, ..s }, ConversionType::Sale))
    }

    /// The postback of a payment's checked facts: the one place both the
    /// HTTP postback and a provider's payment become one.
    fn of(s: Sale, conversion_type: ConversionType) -> Postback {
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
    #[serde(default)]
    #[schema(value_type = Option<field::Reason>)]
    pub reason: Option<String>,
}

/// A validated reversal request.
#[derive(Debug, Clone, Default)]
pub struct ReverseRequest {
    /// The part to reverse; `None`: everything left.
    pub amount: Option<Decimal>,
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
