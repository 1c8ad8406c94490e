//! What the API and the events show of an affiliate (its totals as numbers,
//! never its version), and the bodies that create and change one.

use crate::tax_form::TaxFormView;
use domain::affiliate::AffiliateChanges;
use domain::affiliate::AffiliateDraft;
use domain::affiliate::SettableStatus;
use domain::affiliate::{Affiliate, AffiliateStatus, PayoutMethod, Totals};
use domain::commission_plan::Pay;
use domain::commission_tiers::TierMark;
use domain::email::Email;
use domain::field;
use domain::metadata::Metadata;
use domain::metadata::MetadataPatch;
use domain::money::json_number;
use domain::patch::Patch;
use domain::payout_account::PayoutAccount;
use domain::risk::Risk;
use domain::timestamp::Timestamp;
use serde::ser::SerializeMap;
use serde::Deserialize;
use serde::{Serialize, Serializer};

/// An affiliate as its merchant sees it.
#[derive(utoipa::ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Affiliate)]
pub struct AffiliateView<'a> {
    #[schema(value_type = domain::ids::AffiliateId)]
    id: &'a str,
    object: &'static str,
    #[schema(value_type = domain::ids::CampaignId)]
    campaign_id: &'a str,
    /// Kept as given (trimmed); compared and looked up in lowercase.
    #[schema(value_type = domain::email::Email)]
    email: &'a str,
    #[schema(min_length = 1, max_length = 200)]
    name: &'a str,
    /// The affiliate code (`ref` in links, `affiliateCode` in postbacks). Unique per account
    /// and mode in any letter case.
    #[schema(value_type = domain::affiliate_code::AffiliateCode)]
    code: &'a str,
    status: AffiliateStatus,
    payout_method: Option<PayoutMethod>,
    #[schema(format = Email)]
    payout_email: Option<&'a str>,
    /// Its Stripe connected account (created by `POST .../payout-account`), or null.
    #[schema(value_type = Option<domain::payout_account::PayoutAccount>)]
    payout_account: Option<&'a PayoutAccount>,
    website: Option<&'a str>,
    #[schema(value_type = domain::metadata::MetadataSchema)]
    metadata: &'a Metadata,
    /// Risk flags of its public sign-up, and their level (see `docs/risk.md`).
    risk: &'a Risk,
    /// What it earns instead of the campaign's rules and rate; null: the campaign decides.
    commission_override: Option<&'a Pay>,
    /// The campaign tier its customers reached, since when; null: none (see
    /// `docs/commissions.md`).
    tier: Option<&'a TierMark>,
    /// Distinct customers with an attributed paying conversion it referred.
    customers_referred: u32,
    /// The tax form it uploaded last through the portal (the file:
    /// `GET /api/v1/affiliates/{id}/tax-form`); null: none.
    tax_form: Option<TaxFormView>,
    #[schema(value_type = TotalsSchema)]
    earned: TotalsJson<'a>,
    #[schema(value_type = TotalsSchema)]
    paid: TotalsJson<'a>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> From<&'a Affiliate> for AffiliateView<'a> {
    fn from(a: &'a Affiliate) -> Self {
        AffiliateView {
            id: &a.id,
            object: "affiliate",
            campaign_id: &a.campaign_id,
            email: a.email.as_str(),
            name: &a.name,
            code: a.code.as_str(),
            status: a.status,
            payout_method: a.payout_method,
            payout_email: a.payout_email.as_ref().map(Email::as_str),
            payout_account: a.payout_account.as_ref(),
            website: a.website.as_deref(),
            metadata: &a.metadata,
            risk: &a.risk,
            commission_override: a.commission_override.as_ref(),
            tier: a.referred.tier.as_ref(),
            customers_referred: a.referred.customers,
            tax_form: a.tax_form.as_ref().map(TaxFormView::from),
            earned: TotalsJson(&a.earned),
            paid: TotalsJson(&a.paid),
            created_at: a.stamps.created_at.into(),
            updated_at: a.stamps.updated_at.into(),
        }
    }
}

/// The description of `Totals` on the wire: money per currency.
pub struct TotalsSchema;

domain::described!(
    TotalsSchema,
    "Totals",
    serde_json::json!({
        "type": "object",
        "description": "Money per currency in major units (ISO 4217 code to number).",
        "propertyNames": {"pattern": "^[A-Z]{3}$"},
        "additionalProperties": {"type": "number"},
        "example": {"USD": 125.5},
    })
);

/// Serialises totals as `{ "USD": 12.5 }` with JSON numbers.
struct TotalsJson<'a>(&'a Totals);

impl Serialize for TotalsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (c, d) in self.0 {
            m.serialize_entry(c.code(), &json_number::number(d))?;
        }
        m.end()
    }
}

/// Body of `POST /api/v1/affiliates`: the merchant adds an ACTIVE affiliate (no application).
/// Unknown fields (such as `status` or `id`) are rejected.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = AffiliateCreate)]
pub struct NewAffiliate {
    /// A campaign of the key's account and mode; another one is 404.
    #[schema(value_type = field::IdRef)]
    pub campaign_id: String,
    /// Kept as given (trimmed); compared and looked up in lowercase.
    #[schema(value_type = domain::email::Email)]
    pub email: String,
    #[schema(value_type = field::Name)]
    pub name: String,
    /// The affiliate code (`ref` in links, `affiliateCode` in postbacks). Unique per account
    /// and mode in any letter case. Generated (8 characters) when absent.
    #[schema(value_type = Option<domain::affiliate_code::AffiliateCode>)]
    pub code: Option<String>,
    pub payout_method: Option<PayoutMethod>,
    #[schema(value_type = Option<domain::email::Email>)]
    pub payout_email: Option<String>,
    /// An `http` or `https` URL (scheme in any letter case) with a host, without white space;
    /// at most 2000 characters.
    #[schema(value_type = Option<field::Url>)]
    pub website: Option<String>,
    #[schema(value_type = Option<domain::metadata::MetadataSchema>)]
    pub metadata: Option<Metadata>,
}

impl From<NewAffiliate> for AffiliateDraft {
    fn from(b: NewAffiliate) -> Self {
        moved! { b => AffiliateDraft {
            campaign_id, email, name, code, payout_method, payout_email, website, metadata,
        } }
    }
}

/// Body of `PUT /api/v1/affiliates/{id}`: a partial update; only the fields sent change.
/// `status` may be ACTIVE or SUSPENDED (others: 400), and only an ACTIVE or SUSPENDED affiliate
/// changes status this way (a PENDING or REJECTED one: 409 INVALID_STATE; it follows its
/// application). A new `email` must be free in the campaign and a new `code` in the account and
/// mode (409 ALREADY_EXISTS); the old value is released in the same transaction. Null clears
/// `payoutMethod`, `payoutEmail`, `website` and `metadata`; null for `name`, `email`, `code` or
/// `status` is 400. `campaignId` cannot change.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = AffiliateUpdate)]
pub struct AffiliatePatch {
    #[serde(default)]
    #[schema(value_type = field::Name)]
    pub name: Patch<String>,
    /// Kept as given (trimmed); compared and looked up in lowercase.
    #[serde(default)]
    #[schema(value_type = domain::email::Email)]
    pub email: Patch<String>,
    /// The affiliate code (`ref` in links, `affiliateCode` in postbacks). Unique per account
    /// and mode in any letter case.
    #[serde(default)]
    #[schema(value_type = domain::affiliate_code::AffiliateCode)]
    pub code: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = <SettableStatus as utoipa::PartialSchema>::schema)]
    pub status: Patch<AffiliateStatus>,
    #[serde(default)]
    #[schema(value_type = Option<PayoutMethod>)]
    pub payout_method: Patch<PayoutMethod>,
    #[serde(default)]
    #[schema(value_type = Option<domain::email::Email>)]
    pub payout_email: Patch<String>,
    /// An `http` or `https` URL (scheme in any letter case) with a host, without white space;
    /// at most 2000 characters.
    #[serde(default)]
    #[schema(value_type = Option<field::Url>)]
    pub website: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<domain::metadata::MetadataPatchSchema>)]
    pub metadata: Patch<MetadataPatch>,
    /// What this affiliate earns instead of the campaign's rules and rate (null removes it).
    /// The section 5 rules still decide whether a payment earns; recorded commissions keep
    /// their amounts.
    #[serde(default)]
    #[schema(value_type = Option<domain::commission_plan::Pay>)]
    pub commission_override: Patch<Pay>,
}

impl From<AffiliatePatch> for AffiliateChanges {
    fn from(b: AffiliatePatch) -> Self {
        moved! { b => AffiliateChanges {
            name, email, code, status, payout_method, payout_email, website, metadata,
            commission_override,
        } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::money::Currency;
    use domain::validation::Issues;
    use rust_decimal::Decimal;

    #[test]
    fn view_hides_the_version_and_shows_totals_as_numbers() {
        let input: NewAffiliate = serde_json::from_value(
            serde_json::json!({"campaignId": "cmp_1", "email": "a@x.io", "name": "A"}),
        )
        .unwrap();
        let at = domain::timestamp::now();
        let mut a = Affiliate::enroll(input.into(), AffiliateStatus::Active, at, Issues::new())
            .unwrap()
            .affiliate;
        a.earned
            .insert(Currency::parse("c", "USD").unwrap(), Decimal::new(1250, 2));
        let v = serde_json::to_value(AffiliateView::from(&a)).unwrap();
        assert_eq!(v["earned"]["USD"], 12.5);
        assert!(v.get("version").is_none());
        assert_eq!(v["object"], "affiliate");
    }
}
