//! The affiliate portal (contract section 13): what an affiliate sees of
//! its own programme through a portal token. Views here carry no customer
//! identity, no merchant metadata and no merchant-only note; pure.

use crate::tax_form::{TaxFormSetting, TaxFormView};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::affiliate::{Affiliate, AffiliatePatch, AffiliateStatus, PayoutMethod};
use crate::asset::{Asset, AssetType};
use crate::campaign::{Campaign, CampaignTerms};
use crate::commission_plan::CommissionSource;
use crate::commission_terms::ConversionType;
use crate::commission_tiers::TierMark;
use crate::conversion::{Conversion, ConversionStatus};
use crate::error::Error;
use crate::field;
use crate::money::{json_number, Currency};
use crate::patch::Patch;
use crate::payout::{InvoiceView, Payout, PayoutStatus};
use crate::timestamp::{serde_ts, serde_ts_opt};

/// Body of `POST /api/v1/affiliates/{id}/portal-sessions`.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PortalSessionCreate)]
pub struct NewPortalSession {
    /// Where the page's "Back" link leads (an `http` or `https` URL, ASCII: percent-encode
    /// anything else): signed into the token, and shown by `GET /portal/me` as `returnUrl`;
    /// not otherwise used.
    #[serde(default)]
    #[schema(
        max_length = 2000,
        pattern = r#"^[Hh][Tt][Tt][Pp][Ss]?://[\u0021-\u002E\u0030-\u007E][\u0021-\u007E]*$"#
    )]
    pub return_url: Option<String>,
}

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
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: DateTime<Utc>,
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
    #[schema(value_type = Option<crate::email::Email>)]
    pub payout_email: Patch<String>,
}

impl PortalMePatch {
    /// The merchant's patch of the same fields (its rules apply alike).
    pub fn as_affiliate_patch(&self) -> AffiliatePatch {
        AffiliatePatch {
            name: self.name.clone(),
            payout_method: self.payout_method.clone(),
            payout_email: self.payout_email.clone(),
            ..AffiliatePatch::default()
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
    #[schema(value_type = Option<crate::payout_account::PayoutAccount>)]
    pub payout_account: Option<&'a crate::payout_account::PayoutAccount>,
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
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub minimum_payout: Decimal,
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
                minimum_payout: c.minimum_payout,
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

/// A landing URL with the affiliate's `ref` parameter (before any fragment).
pub fn referral_link(landing: &str, code: &str) -> String {
    let (base, fragment) = match landing.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (landing, None),
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let code: String = url_encode(code);
    match fragment {
        Some(f) => format!("{base}{sep}ref={code}#{f}"),
        None => format!("{base}{sep}ref={code}"),
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A conversion as its affiliate sees it: no customer, no metadata.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = PortalConversion)]
pub struct PortalConversion<'a> {
    pub id: &'a str,
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    #[schema(value_type = crate::money::Currency)]
    pub currency: Currency,
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission: Decimal,
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub commission_reversed: Decimal,
    pub status: ConversionStatus,
    pub is_recurring: bool,
    pub conversion_type: ConversionType,
    /// What decided the commission (a rule's or tier's name, the campaign's rate, ...).
    pub commission_source: CommissionSource,
    /// The customer's n-th attributed payment (1 = the first); null for a lead.
    pub payment_number: Option<u32>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub occurred_at: DateTime<Utc>,
    pub payout_id: Option<&'a str>,
}

impl<'a> From<&'a Conversion> for PortalConversion<'a> {
    fn from(c: &'a Conversion) -> Self {
        PortalConversion {
            id: &c.id,
            amount: c.amount,
            currency: c.currency,
            commission: c.commission,
            commission_reversed: c.commission_reversed,
            status: c.status,
            is_recurring: c.is_recurring,
            conversion_type: c.conversion_type,
            commission_source: c.source(),
            payment_number: c.payment_number,
            occurred_at: c.occurred_at,
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
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    #[schema(value_type = crate::money::Currency)]
    pub currency: Currency,
    pub status: PayoutStatus,
    pub method: PayoutMethod,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub requested_at: DateTime<Utc>,
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_at: Option<DateTime<Utc>>,
    pub conversion_count: u64,
    #[serde(with = "json_number")]
    #[schema(value_type = f64)]
    pub adjustment_total: Decimal,
    pub invoice: InvoiceView<'a>,
}

impl<'a> From<&'a Payout> for PortalPayout<'a> {
    fn from(p: &'a Payout) -> Self {
        PortalPayout {
            id: &p.id,
            amount: p.amount,
            currency: p.currency,
            status: p.status,
            method: p.method,
            requested_at: p.requested_at,
            paid_at: p.paid_at,
            conversion_count: p.conversion_count,
            adjustment_total: p.adjustment_total,
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

/// The content type an invoice's first bytes prove (PDF, PNG or JPEG),
/// whatever the request claimed; 400 for anything else or an empty or
/// oversized file.
pub fn invoice_type(bytes: &[u8], max: u64) -> Result<&'static str, Error> {
    if bytes.is_empty() || bytes.len() as u64 > max {
        return Err(Error::InvalidRequest(format!(
            "an invoice is 1 byte to {max} bytes"
        )));
    }
    if bytes.starts_with(b"%PDF-") {
        Ok("application/pdf")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Ok("image/png")
    } else if bytes.starts_with(b"\xFF\xD8\xFF") {
        Ok("image/jpeg")
    } else {
        Err(Error::InvalidRequest(
            "an invoice must be a PDF, PNG or JPEG file".into(),
        ))
    }
}

/// The stored name of an affiliate's invoice: the name it sent, kept to
/// letters, digits, `.`, `-` and `_` (at most 100 in all), with the
/// extension of what the bytes are (`pdf`, `png`, `jpg`) in place of its own,
/// so a file the merchant saves opens as what it is; `invoice.<ext>` when
/// nothing of the name is left.
pub fn invoice_file_name(sent: Option<&str>, content_type: &str) -> String {
    let ext = match content_type {
        "application/pdf" => "pdf",
        "image/png" => "png",
        _ => "jpg",
    };
    let kept: String = sent
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .collect();
    let stem = kept
        .rsplit_once('.')
        .map_or(kept.as_str(), |(stem, _)| stem);
    let stem: String = stem
        .trim_matches('.')
        .chars()
        .take(100 - ext.len() - 1)
        .collect();
    match stem.is_empty() {
        true => format!("invoice.{ext}"),
        false => format!("{stem}.{ext}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invoices_name_keeps_safe_characters_and_takes_its_bytes_extension() {
        let pdf = "application/pdf";
        let cases = [
            (Some("March/invoice.pdf"), pdf, "Marchinvoice.pdf"),
            (Some("a.html"), pdf, "a.pdf"),
            (Some("photo.JPEG"), "image/jpeg", "photo.jpg"),
            (Some("scan"), "image/png", "scan.png"),
            (Some("../../etc/passwd"), pdf, "invoice.pdf"),
            (Some("é\"; filename=evil.exe"), pdf, "filenameevil.pdf"),
            (None, "image/png", "invoice.png"),
        ];
        for (sent, kind, want) in cases {
            assert_eq!(invoice_file_name(sent, kind), want, "{sent:?}");
        }
        let long = invoice_file_name(Some(&"x".repeat(300)), pdf);
        assert_eq!((long.len(), long.ends_with(".pdf")), (100, true));
    }

    #[test]
    fn referral_links_add_the_code_as_ref() {
        let cases = [
            (
                "https://shop.example.com",
                "ANN10",
                "https://shop.example.com?ref=ANN10",
            ),
            (
                "https://shop.example.com/p?x=1",
                "ANN10",
                "https://shop.example.com/p?x=1&ref=ANN10",
            ),
            (
                "https://shop.example.com/#top",
                "A B",
                "https://shop.example.com/?ref=A%20B#top",
            ),
        ];
        for (landing, code, want) in cases {
            assert_eq!(referral_link(landing, code), want);
        }
    }

    #[test]
    fn invoices_are_known_by_their_first_bytes() {
        assert_eq!(
            invoice_type(b"%PDF-1.4 ...", 100).unwrap(),
            "application/pdf"
        );
        assert_eq!(
            invoice_type(b"\x89PNG\r\n\x1a\n....", 100).unwrap(),
            "image/png"
        );
        assert_eq!(
            invoice_type(b"\xFF\xD8\xFF\xE0..", 100).unwrap(),
            "image/jpeg"
        );
        for bad in [&b""[..], b"GIF89a", b"<html>", &[b'%'; 101][..]] {
            assert!(invoice_type(bad, 100).is_err(), "{bad:?}");
        }
    }
}
