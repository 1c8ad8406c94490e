//! The affiliate portal's views (contract section 13): no customer identity,
//! no merchant metadata and no merchant-only note.

use crate::campaign::CampaignTerms;
use crate::number::Number;
use crate::payout::InvoiceView;
use crate::tax_form::TaxFormView;
use chrono::{DateTime, Utc};
use domain::affiliate::AffiliateChanges;
use domain::affiliate::{Affiliate, AffiliateStatus, PayoutMethod};
use domain::asset::{Asset, AssetType};
use domain::campaign::Campaign;
use domain::commission_plan::CommissionSource;
use domain::commission_terms::ConversionType;
use domain::commission_tiers::TierMark;
use domain::conversion::{Conversion, ConversionStatus};
use domain::error::Error;
use domain::field;
use domain::money::Currency;
use domain::patch::Patch;
use domain::payout::{Payout, PayoutStatus};
use domain::portal::referral_link;
use domain::tax_form::TaxFormSetting;
use domain::timestamp::Timestamp;
use serde::{Deserialize, Serialize};

/// A portal session: the page's URL (the token in its fragment, kept out of
/// server logs) and the token itself, valid for one hour.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalSession)]
pub struct PortalSession {
    pub object: &'static str,
    /// `{base}/portal?account=<acct_…>#token=…` (the account names the origins that may frame
    /// the page).
    pub url: String,
    /// `pt_<mode>_…`: the bearer of the portal routes (and of nothing else).
    pub token: String,
    pub expires_at: Timestamp,
}

impl PortalSession {
    /// The session opened at `url` with `token`, valid until `expires_at`.
    pub fn new(url: String, token: String, expires_at: DateTime<Utc>) -> PortalSession {
        PortalSession {
            object: "portal_session",
            url,
            token,
            expires_at: expires_at.into(),
        }
    }
}

/// The affiliate as it sees itself.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalAffiliate)]
pub struct PortalAffiliate<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub code: &'a str,
    pub status: AffiliateStatus,
    pub payout_method: Option<PayoutMethod>,
    #[schema(format = Email)]
    pub payout_email: Option<&'a str>,
    /// Its Stripe connected account and whether it can be paid, or null before "Set up
    /// payouts".
    #[schema(value_type = Option<domain::payout_account::PayoutAccount>)]
    pub payout_account: Option<&'a domain::payout_account::PayoutAccount>,
    /// The campaign tier its customers reached, since when; null: none.
    pub tier: Option<&'a TierMark>,
    /// Distinct customers with an attributed paying conversion it referred.
    pub customers_referred: u32,
    /// The tax form it sent last; null: none.
    pub tax_form: Option<TaxFormView>,
}

/// The campaign's terms, as the affiliate earns by them.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalTerms)]
pub struct PortalTerms<'a> {
    #[serde(flatten)]
    pub terms: CampaignTerms<'a>,
    pub hold_days: u32,
    pub minimum_payout: Number,
    /// Whether payment waits for the affiliate's tax form (W-9, W-8BEN or W-8BEN-E); null:
    /// never.
    pub tax_form: Option<&'a TaxFormSetting>,
}

/// `GET /api/v1/portal/me`.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalMe)]
pub struct PortalMe<'a> {
    pub affiliate: PortalAffiliate<'a>,
    pub campaign: PortalTerms<'a>,
    /// The campaign's `landingUrl` with `?ref=<code>` (`&ref=` when it has a query); null
    /// while the campaign has no landing URL.
    pub referral_link: Option<String>,
    /// The merchant's page the portal's "Back" link leads to (the session's `returnUrl`);
    /// null when the session named none.
    pub return_url: Option<&'a str>,
}

impl<'a> PortalMe<'a> {
    /// The view of an affiliate and its campaign.
    pub fn of(a: &'a Affiliate, c: &'a Campaign, return_url: Option<&'a str>) -> PortalMe<'a> {
        PortalMe {
            affiliate: PortalAffiliate {
                id: &a.id,
                name: &a.name,
                code: a.code.as_str(),
                status: a.status,
                payout_method: a.payout_method,
                payout_email: a.payout_email.as_ref().map(|e| e.as_str()),
                payout_account: a.payout_account.as_ref(),
                tier: a.referred.tier.as_ref(),
                customers_referred: a.referred.customers,
                tax_form: a.tax_form.as_ref().map(TaxFormView::from),
            },
            campaign: PortalTerms {
                terms: CampaignTerms::from(c),
                hold_days: c.hold_days,
                minimum_payout: c.minimum_payout.into(),
                tax_form: c.tax_form.as_ref(),
            },
            referral_link: c
                .landing_url
                .as_deref()
                .map(|u| referral_link(u, a.code.as_str())),
            return_url,
        }
    }
}

/// A conversion as its affiliate sees it: no customer, no metadata.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalConversion)]
pub struct PortalConversion<'a> {
    pub id: &'a str,
    pub amount: Number,
    pub currency: Currency,
    pub commission: Number,
    pub commission_reversed: Number,
    pub status: ConversionStatus,
    pub is_recurring: bool,
    pub conversion_type: ConversionType,
    /// What decided the commission (a rule's or tier's name, the campaign's rate, ...).
    pub commission_source: CommissionSource,
    /// The customer's n-th attributed payment (1 = the first); null for a lead.
    pub payment_number: Option<u32>,
    pub occurred_at: Timestamp,
    pub payout_id: Option<&'a str>,
}

impl<'a> From<&'a Conversion> for PortalConversion<'a> {
    fn from(c: &'a Conversion) -> Self {
        PortalConversion {
            id: &c.id,
            amount: c.amount.into(),
            currency: c.currency,
            commission: c.commission.into(),
            commission_reversed: c.commission_reversed.into(),
            status: c.status,
            is_recurring: c.is_recurring,
            conversion_type: c.conversion_type,
            commission_source: c.source(),
            payment_number: c.payment_number,
            occurred_at: c.occurred_at.into(),
            payout_id: c.payout_id.as_deref(),
        }
    }
}

/// A payout as its affiliate sees it (no merchant note or reasons).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalPayout)]
pub struct PortalPayout<'a> {
    pub id: &'a str,
    pub amount: Number,
    pub currency: Currency,
    pub status: PayoutStatus,
    pub method: PayoutMethod,
    pub requested_at: Timestamp,
    pub paid_at: Option<Timestamp>,
    pub conversion_count: u64,
    pub adjustment_total: Number,
    pub invoice: InvoiceView<'a>,
}

impl<'a> From<&'a Payout> for PortalPayout<'a> {
    fn from(p: &'a Payout) -> Self {
        PortalPayout {
            id: &p.id,
            amount: p.amount.into(),
            currency: p.currency,
            status: p.status,
            method: p.method,
            requested_at: p.requested_at.into(),
            paid_at: p.paid_at.map(Timestamp),
            conversion_count: p.conversion_count,
            adjustment_total: p.adjustment_total.into(),
            invoice: InvoiceView::from(p.invoice.as_ref()),
        }
    }
}

/// Swipe copy and other finalized assets of the affiliate's campaign.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalAsset)]
pub struct PortalAsset<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: AssetType,
    pub name: &'a str,
    pub body: Option<&'a str>,
}

impl<'a> From<&'a Asset> for PortalAsset<'a> {
    fn from(a: &'a Asset) -> Self {
        PortalAsset {
            id: &a.id,
            kind: a.kind,
            name: &a.name,
            body: a.body.as_deref(),
        }
    }
}

/// Body of `POST /api/v1/affiliates/{id}/portal-sessions`.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PortalSessionCreate)]
pub struct NewPortalSession {
    /// Where the page's "Back" link leads (an `http` or `https` URL, ASCII: percent-encode
    /// anything else): signed into the token, and shown by `GET /portal/me` as `returnUrl`;
    /// not otherwise used.
    #[schema(value_type = Option<field::ReturnUrl>)]
    pub return_url: Option<String>,
}

impl NewPortalSession {
    /// The `returnUrl`, checked against its rule (400 VALIDATION_ERROR).
    pub fn return_url(self) -> Result<Option<String>, Error> {
        if let Some(u) = &self.return_url {
            field::ReturnUrl::parse("returnUrl", u).map_err(|i| Error::Validation(vec![i]))?;
        }
        Ok(self.return_url)
    }
}

/// Body of `PATCH /api/v1/portal/me`: the affiliate's own name and payout details.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PortalMeUpdate)]
pub struct PortalMePatch {
    #[serde(default)]
    #[schema(value_type = field::Name)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<PayoutMethod>)]
    pub payout_method: Patch<PayoutMethod>,
    #[serde(default)]
    #[schema(value_type = Option<domain::email::Email>)]
    pub payout_email: Patch<String>,
}

/// The merchant's changes of the same fields (their rules apply alike).
impl From<PortalMePatch> for AffiliateChanges {
    fn from(b: PortalMePatch) -> Self {
        AffiliateChanges {
            name: b.name,
            payout_method: b.payout_method,
            payout_email: b.payout_email,
            ..AffiliateChanges::default()
        }
    }
}
