//! Affiliates: the partners of a campaign, their codes and payout details.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate_code::AffiliateCode;
use crate::application::{Application, Decision};
use crate::commission_plan::Pay;
use crate::commission_tiers::Referred;
use crate::edit::{self, Stamped, Stamps};
use crate::email::Email;
use crate::enums::wire_enum;
use crate::error::Error;
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::metadata::{self, Metadata, MetadataPatch};
use crate::money::Currency;
use crate::patch::Patch;
use crate::payout_account::PayoutAccount;
use crate::risk::Risk;
use crate::tax_form::TaxForm;
use crate::timestamp::serde_ts_opt;
use crate::validation::Issues;

wire_enum! {
    /// PENDING: signed up, application not decided. ACTIVE: earns commission. SUSPENDED: paused
    /// by the merchant. REJECTED: application rejected. A merchant switches between ACTIVE and
    /// SUSPENDED; PENDING and REJECTED follow the application.
    pub enum AffiliateStatus {
        /// Signed up; waiting for the application to be decided.
        Pending = "PENDING",
        /// Earns commission.
        Active = "ACTIVE",
        /// Paused by the merchant; earns nothing until reactivated.
        Suspended = "SUSPENDED",
        /// The application was rejected.
        Rejected = "REJECTED",
    }
}

crate::status::statuses!(AffiliateStatus);

impl AffiliateStatus {
    /// True for the two states a merchant switches between directly; the
    /// others change only through the affiliate's application.
    pub fn merchant_settable(self) -> bool {
        matches!(self, AffiliateStatus::Active | AffiliateStatus::Suspended)
    }
}

/// The description of the status a merchant may set: the states for which
/// [`AffiliateStatus::merchant_settable`] holds.
pub struct SettableStatus;

impl utoipa::PartialSchema for SettableStatus {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let settable: Vec<&str> = AffiliateStatus::ALL
            .into_iter()
            .filter(|s| s.merchant_settable())
            .map(AffiliateStatus::as_str)
            .collect();
        crate::schema::from_json(serde_json::json!({"type": "string", "enum": settable}))
    }
}

wire_enum! {
    /// How an affiliate wants to be paid.
    pub enum PayoutMethod {
        Paypal = "PAYPAL",
        /// Stripe Connect: transfers to the affiliate's connected account (`payoutAccount`).
        Stripe = "STRIPE",
        Wise = "WISE",
        BankTransfer = "BANK_TRANSFER",
        Manual = "MANUAL",
    }
}

/// Money per currency, exact.
pub type Totals = BTreeMap<Currency, Decimal>;

/// An affiliate as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Affiliate {
    pub id: String,
    pub campaign_id: String,
    pub email: Email,
    pub name: String,
    pub code: AffiliateCode,
    pub status: AffiliateStatus,
    pub payout_method: Option<PayoutMethod>,
    pub payout_email: Option<Email>,
    /// Its connected account at the paying provider, once onboarding started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payout_account: Option<PayoutAccount>,
    pub website: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
    /// The network (salted client-address hash of that day) its public
    /// sign-up came from; never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signup_network: Option<String>,
    /// Risk flags of its sign-up (not stored while there are none).
    #[serde(default, skip_serializing_if = "Risk::is_clear")]
    pub risk: Risk,
    /// What it earns instead of the campaign's rules and rate.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::commission_plan::stored_json"
    )]
    pub commission_override: Option<Pay>,
    /// The tax form it uploaded last (see `domain::tax_form`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax_form: Option<TaxForm>,
    /// When it was last suspended; never shown. A portal token issued before
    /// it opens nothing, even once the affiliate is ACTIVE again.
    #[serde(
        with = "serde_ts_opt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub suspended_at: Option<DateTime<Utc>>,
    /// Commission earned, per currency (maintained by the conversion flow).
    #[serde(default)]
    pub earned: Totals,
    /// Commission paid out, per currency (maintained by the payout flow).
    #[serde(default)]
    pub paid: Totals,
    /// Distinct paying customers referred and the tier they reach (kept
    /// with the totals by the conversion flow, not in the record).
    #[serde(skip)]
    pub referred: Referred,
    /// Its version and times; the version is bumped by every write of the
    /// fields above the totals.
    #[serde(flatten)]
    pub stamps: Stamps,
}

/// A new affiliate as the merchant, a sign-up or an import row asks for it
/// (`wire::affiliate::NewAffiliate` is its body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AffiliateDraft {
    pub campaign_id: String,
    pub email: String,
    pub name: String,
    pub code: Option<String>,
    pub payout_method: Option<PayoutMethod>,
    pub payout_email: Option<String>,
    pub website: Option<String>,
    pub metadata: Option<Metadata>,
}

/// An affiliate's changes: only what is given changes
/// (`wire::affiliate::AffiliatePatch` is their body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AffiliateChanges {
    pub name: Patch<String>,
    pub email: Patch<String>,
    pub code: Patch<String>,
    pub status: Patch<AffiliateStatus>,
    pub payout_method: Patch<PayoutMethod>,
    pub payout_email: Patch<String>,
    pub website: Patch<String>,
    pub metadata: Patch<MetadataPatch>,
    pub commission_override: Patch<Pay>,
}

impl Stamped for Affiliate {
    fn stamp(&mut self, now: DateTime<Utc>) {
        self.stamps.stamp(now);
    }
}

impl Affiliate {
    /// Whether its portal opens: only while ACTIVE, so a suspension ends
    /// every session at once.
    pub fn opens_portal(&self) -> bool {
        self.status == AffiliateStatus::Active
    }

    /// Whether a portal token issued at `issued_at` (to the second, as
    /// tokens say) opens its portal: while ACTIVE, and only if issued no
    /// earlier than the second of its last suspension (a session the
    /// suspension ended stays ended; one opened after it works at once).
    pub fn opens_portal_to(&self, issued_at: DateTime<Utc>) -> bool {
        self.opens_portal()
            && self
                .suspended_at
                .is_none_or(|s| issued_at.timestamp() >= s.timestamp())
    }

    /// The affiliate once its application is decided.
    pub fn decided(&self, decision: &Decision, now: DateTime<Utc>) -> Affiliate {
        let mut a = self.clone();
        a.status = AffiliateStatus::after(decision);
        a.stamps.stamp(now);
        a
    }
}

impl AffiliateStatus {
    /// The affiliate's status once its application is decided.
    pub fn after(decision: &Decision) -> AffiliateStatus {
        match decision {
            Decision::Accept => AffiliateStatus::Active,
            Decision::Reject { .. } => AffiliateStatus::Rejected,
        }
    }
}

/// A new affiliate (and its application, when it has to be reviewed) ready to store.
#[derive(Debug, Clone)]
pub struct Enrollment {
    pub affiliate: Affiliate,
    pub application: Option<Application>,
    /// A generated code may be replaced when it clashes; a chosen one may not.
    pub code_generated: bool,
}

impl Enrollment {
    /// Takes a fresh code after the one it carries clashed with an existing
    /// code: only a generated code may be replaced (false for a chosen one).
    pub fn retry_code(&mut self) -> bool {
        if self.code_generated {
            self.affiliate.code = AffiliateCode::generate();
        }
        self.code_generated
    }
}

fn required(path: &str, issues: &mut Issues) {
    issues.add(&[path], "invalid_type", format!("{path} cannot be null"));
}

impl Affiliate {
    /// Builds and validates a new affiliate in `status`; `issues` may already
    /// hold problems of the surrounding body, so every one is reported at once.
    pub fn enroll(
        input: AffiliateDraft,
        status: AffiliateStatus,
        now: DateTime<Utc>,
        mut issues: Issues,
    ) -> Result<Enrollment, Error> {
        let email = issues.check(Email::parse("email", &input.email));
        let code_generated = input.code.is_none();
        let code = match &input.code {
            Some(c) => issues.check(AffiliateCode::parse("code", c)),
            None => Some(AffiliateCode::generate()),
        };
        let payout_email = input
            .payout_email
            .as_deref()
            .and_then(|e| issues.check(Email::parse("payoutEmail", e)));
        if let Some(w) = &input.website {
            issues.check(field::Url::parse("website", w));
        }
        issues.check(field::Name::parse("name", &input.name));
        let metadata = input.metadata.unwrap_or_default();
        metadata::validate(&metadata, &mut issues);
        issues.finish()?;
        let (Some(email), Some(code)) = (email, code) else {
            return Err(Error::internal("validated fields are missing"));
        };
        Ok(Enrollment {
            affiliate: Affiliate {
                id: new_id(IdKind::Affiliate),
                campaign_id: input.campaign_id,
                email,
                name: input.name,
                code,
                status,
                payout_method: input.payout_method,
                payout_email,
                payout_account: None,
                website: input.website,
                metadata,
                signup_network: None,
                risk: Risk::default(),
                suspended_at: None,
                commission_override: None,
                tax_form: None,
                earned: Totals::new(),
                paid: Totals::new(),
                referred: Referred::default(),
                stamps: Stamps::new(now),
            },
            application: None,
            code_generated,
        })
    }

    /// Applies a partial update. Field problems come first (400); a status
    /// change the current state forbids comes next (409).
    pub fn apply(&self, patch: AffiliateChanges, now: DateTime<Utc>) -> Result<Affiliate, Error> {
        let mut issues = Issues::new();
        let i = &mut issues;
        let mut a = self.clone();
        if let Some(v) = patch.name.required("name", i) {
            i.check(field::Name::parse("name", &v));
            a.name = v;
        }
        let email = patch.email.required("email", i);
        if let Some(e) = email.and_then(|v| i.check(Email::parse("email", &v))) {
            a.email = e;
        }
        let code = patch.code.required("code", i);
        if let Some(c) = code.and_then(|v| i.check(AffiliateCode::parse("code", &v))) {
            a.code = c;
        }
        let state_error = a.apply_status(patch.status, now, i);
        a.payout_method = patch.payout_method.apply_opt(a.payout_method);
        match patch.payout_email {
            Patch::Value(v) => a.payout_email = i.check(Email::parse("payoutEmail", &v)),
            Patch::Null => a.payout_email = None,
            Patch::Absent => {}
        }
        match patch.website {
            Patch::Value(v) => {
                i.check(field::Url::parse("website", &v));
                a.website = Some(v);
            }
            Patch::Null => a.website = None,
            Patch::Absent => {}
        }
        match patch.metadata {
            Patch::Value(m) => a.metadata = metadata::merge(a.metadata, m),
            Patch::Null => a.metadata.clear(),
            Patch::Absent => {}
        }
        match patch.commission_override {
            Patch::Value(pay) => {
                pay.check("commissionOverride", i);
                a.commission_override = Some(pay);
            }
            Patch::Null => a.commission_override = None,
            Patch::Absent => {}
        }
        metadata::validate(&a.metadata, i);
        issues.finish()?;
        if let Some(e) = state_error {
            return Err(e);
        }
        Ok(edit::stamped(self, a, now))
    }
}

impl Affiliate {
    /// A merchant's status change: only between ACTIVE and SUSPENDED (field
    /// issues go to `issues`; a state that forbids it is the 409 returned);
    /// a suspension is remembered, so the portal tokens it ended stay ended.
    fn apply_status(
        &mut self,
        status: Patch<AffiliateStatus>,
        now: DateTime<Utc>,
        issues: &mut Issues,
    ) -> Option<Error> {
        match status {
            Patch::Value(s) if !s.merchant_settable() => issues.add(
                &["status"],
                "invalid_enum_value",
                "status can be set to ACTIVE or SUSPENDED only; PENDING and REJECTED follow the application",
            ),
            Patch::Value(s) if s == self.status => {}
            Patch::Value(_) if !self.status.merchant_settable() => {
                return Some(Error::state("affiliate", self.status.as_str(), "changing status outside its application"));
            }
            Patch::Value(s) => {
                if s == AffiliateStatus::Suspended {
                    self.suspended_at = Some(now);
                }
                self.status = s;
            }
            Patch::Null => required("status", issues),
            Patch::Absent => {}
        }
        None
    }
}

impl Affiliate {
    /// The affiliate with the tax form it sent (replacing one before).
    pub fn with_tax_form(&self, form: TaxForm, now: DateTime<Utc>) -> Affiliate {
        let mut next = self.clone();
        next.tax_form = Some(form);
        crate::edit::stamped(self, next, now)
    }
}

/// Test inputs written as the JSON bodies that carry them.
#[cfg(test)]
impl AffiliateDraft {
    pub(crate) fn from_json(body: &serde_json::Value) -> AffiliateDraft {
        use crate::patch::from_json::field;
        AffiliateDraft {
            campaign_id: field(body, "campaignId").unwrap_or_default(),
            email: field(body, "email").unwrap_or_default(),
            name: field(body, "name").unwrap_or_default(),
            code: field(body, "code"),
            payout_method: field(body, "payoutMethod"),
            payout_email: field(body, "payoutEmail"),
            website: field(body, "website"),
            metadata: field(body, "metadata"),
        }
    }
}

#[cfg(test)]
impl AffiliateChanges {
    pub(crate) fn from_json(body: &serde_json::Value) -> AffiliateChanges {
        use crate::patch::from_json::patch;
        AffiliateChanges {
            name: patch(body, "name"),
            email: patch(body, "email"),
            code: patch(body, "code"),
            status: patch(body, "status"),
            payout_method: patch(body, "payoutMethod"),
            payout_email: patch(body, "payoutEmail"),
            website: patch(body, "website"),
            metadata: patch(body, "metadata"),
            commission_override: patch(body, "commissionOverride"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventType;

    /// An enrollment with the code `code` (generated when `None`).
    fn enrollment(code: Option<&str>, email: &str) -> Enrollment {
        let mut body = serde_json::json!({"campaignId": "cmp_1", "email": email, "name": "A"});
        if let Some(c) = code {
            body["code"] = c.into();
        }
        let input = AffiliateDraft::from_json(&body);
        let at = crate::timestamp::now();
        Affiliate::enroll(input, AffiliateStatus::Pending, at, Issues::new()).unwrap()
    }

    #[test]
    fn an_enrollment_records_its_application_its_flags_and_its_affiliate() {
        let types = |e: &Enrollment| -> Vec<EventType> {
            e.events().iter().map(|e| e.event_type).collect()
        };
        let mut e = enrollment(None, "a@x.io");
        assert_eq!(types(&e), [EventType::AffiliateCreated]);
        let mut app = Application::pending(
            &e.affiliate.id,
            "cmp_1",
            None,
            e.affiliate.stamps.created_at,
        );
        e.application = Some(app.clone());
        assert_eq!(
            types(&e),
            [EventType::ApplicationCreated, EventType::AffiliateCreated]
        );
        app.risk = Risk::of(crate::risk::assess_signup(
            "a@mailinator.com",
            app.created_at,
        ));
        assert!(!app.risk.is_clear(), "a disposable address is flagged");
        e.application = Some(app);
        assert_eq!(
            types(&e),
            [
                EventType::ApplicationCreated,
                EventType::ApplicationFlagged,
                EventType::AffiliateCreated
            ]
        );
    }

    #[test]
    fn only_a_generated_code_is_replaced_after_a_clash() {
        let mut generated = enrollment(None, "a@x.io");
        let first = generated.affiliate.code.clone();
        assert!(generated.retry_code());
        assert_ne!(generated.affiliate.code, first);
        let mut chosen = enrollment(Some("MYCODE"), "b@x.io");
        assert!(!chosen.retry_code());
        assert_eq!(chosen.affiliate.code.as_str(), "MYCODE");
    }

    fn new(json: serde_json::Value) -> Result<Enrollment, Error> {
        let input = AffiliateDraft::from_json(&json);
        Affiliate::enroll(input, AffiliateStatus::Active, Utc::now(), Issues::new())
    }

    fn patch(json: serde_json::Value) -> AffiliateChanges {
        AffiliateChanges::from_json(&json)
    }

    #[test]
    fn codes_are_generated_when_absent_and_checked_when_given() {
        let e = new(serde_json::json!({"campaignId": "cmp_1", "email": "A@x.io", "name": "A"}))
            .unwrap();
        assert!(e.code_generated);
        assert_eq!(e.affiliate.code.as_str().len(), 8);
        let e = new(
            serde_json::json!({"campaignId": "cmp_1", "email": "a@x.io", "name": "A", "code": "DEMO10"}),
        )
        .unwrap();
        assert!(!e.code_generated);
        let err = new(
            serde_json::json!({"campaignId": "cmp_1", "email": "nope", "name": "",
            "code": "x", "website": "ftp://x", "payoutEmail": "bad"}),
        )
        .unwrap_err();
        let Error::Validation(issues) = err else {
            panic!("expected validation")
        };
        assert_eq!(issues.len(), 5, "{issues:?}");
    }

    #[test]
    fn only_an_active_affiliate_opens_its_portal() {
        let mut a = new(serde_json::json!({"campaignId": "cmp_1", "email": "a@x.io", "name": "A"}))
            .unwrap()
            .affiliate;
        for (status, opens) in [
            (AffiliateStatus::Active, true),
            (AffiliateStatus::Pending, false),
            (AffiliateStatus::Suspended, false),
            (AffiliateStatus::Rejected, false),
        ] {
            a.status = status;
            assert_eq!(a.opens_portal(), opens, "{status:?}");
        }
    }

    #[test]
    fn status_changes_only_between_active_and_suspended() {
        let a = new(serde_json::json!({"campaignId": "cmp_1", "email": "a@x.io", "name": "A"}))
            .unwrap()
            .affiliate;
        let s = a
            .apply(
                patch(serde_json::json!({"status": "SUSPENDED"})),
                Utc::now(),
            )
            .unwrap();
        assert_eq!(s.status, AffiliateStatus::Suspended);
        assert_eq!(s.stamps.version, 1);
        assert!(matches!(
            a.apply(patch(serde_json::json!({"status": "PENDING"})), Utc::now()),
            Err(Error::Validation(_))
        ));
        let mut pending = a.clone();
        pending.status = AffiliateStatus::Pending;
        assert!(matches!(
            pending.apply(patch(serde_json::json!({"status": "ACTIVE"})), Utc::now()),
            Err(Error::InvalidState { .. })
        ));
        // Other fields of a pending affiliate may change.
        let renamed = pending
            .apply(
                patch(serde_json::json!({"name": "B", "payoutMethod": "WISE"})),
                Utc::now(),
            )
            .unwrap();
        assert_eq!(renamed.name, "B");
        assert_eq!(renamed.payout_method, Some(PayoutMethod::Wise));
        assert!(a
            .apply(patch(serde_json::json!({"email": null})), Utc::now())
            .is_err());
    }
}
