//! The import bodies: the rows of the affiliates and referrals imports, as
//! the description states them (an affiliates row is the create body's
//! fields with its `externalId` and status), and a referrals row, judged
//! into the domain's `ReferralImport`.

use crate::affiliate::NewAffiliate;
use chrono::DateTime;
use chrono::Utc;
use domain::affiliate::AffiliateStatus;
use domain::error::{Error, ErrorCode};
use domain::field;
use domain::import::AffiliateRef;
use domain::import::AffiliateRow;
use domain::import::ReferralImport;
use domain::import::MAX_ROWS;
use domain::import::{Imported, Outcome};
use domain::json_body::from_value;
use domain::referral::CustomerKey;
use domain::timestamp;
use domain::validation::Issues;
use serde::{Deserialize, Serialize};
use serde_json::Value;
/// An affiliates row's own fields, beside the create body's.
#[derive(utoipa::ToSchema, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RowFields {
    /// The affiliate's id on the platform it comes from: a re-run with the same `externalId`
    /// changes nothing.
    #[schema(value_type = field::ImportId)]
    external_id: String,
    /// ACTIVE (the default) or PENDING (with an application for the merchant to accept);
    /// another status fails the row.
    status: Option<AffiliateStatus>,
}

/// An affiliates row: `externalId` and `status`, then the rest as the
/// create's body (its type: the same fields, the same rules, unknown names
/// refused); the issues of both parts together.
pub fn affiliate_row(v: Value) -> Result<AffiliateRow, Error> {
    let Value::Object(mut fields) = v else {
        return Err(Error::internal("an object row is no object"));
    };
    let own: serde_json::Map<String, Value> = ["externalId", "status"]
        .into_iter()
        .filter_map(|k| fields.remove_entry(k))
        .collect();
    let affiliate: Result<NewAffiliate, Error> = from_value(Value::Object(fields));
    let own: Result<RowFields, Error> = from_value(Value::Object(own));
    match (own, affiliate) {
        (Ok(own), Ok(affiliate)) => Ok(AffiliateRow {
            external_id: own.external_id,
            status: own.status,
            affiliate: affiliate.into(),
        }),
        (Err(Error::Validation(mut a)), Err(Error::Validation(b))) => {
            a.extend(b);
            Err(Error::Validation(a))
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// The description of an affiliates import row: its own fields, then the
/// create body's.
fn affiliate_row_schema() -> serde_json::Value {
    let own = field::keywords::<RowFields>();
    let create = field::keywords::<NewAffiliate>();
    let mut properties = own["properties"].clone();
    if let (Some(all), Some(more)) = (properties.as_object_mut(), create["properties"].as_object())
    {
        all.extend(more.clone());
    }
    let mut required = own["required"].as_array().cloned().unwrap_or_default();
    required.extend(create["required"].as_array().cloned().unwrap_or_default());
    serde_json::json!({
        "type": "object",
        "description": "A row of `POST /api/v1/affiliates/import`: the create body's fields (the same rules), with the row's `externalId` and starting status.",
        "required": required,
        "properties": properties,
        "additionalProperties": false,
    })
}

/// The rows of an import (JSON), of the row type named `row`.
fn rows_schema(row: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_ROWS,
        "items": {"$ref": format!("#/components/schemas/{row}")},
    })
}

/// The JSON body of the affiliates import (its description only).
pub struct AffiliateRows;

/// The name of the `externalId` rule the rows refer to.
fn import_id_name() -> String {
    <field::ImportId as utoipa::ToSchema>::name().into_owned()
}

domain::described!(
    AffiliateRows,
    "AffiliateImport",
    rows_schema("AffiliateImportRow"),
    [
        ("AffiliateImportRow", affiliate_row_schema()),
        (import_id_name(), field::keywords::<field::ImportId>()),
    ]
);

/// The JSON body of the referrals import (its description only).
pub struct ReferralRows;

domain::described!(
    ReferralRows,
    "ReferralImport",
    rows_schema("ReferralImportRow"),
    [
        ("ReferralImportRow", field::keywords::<ReferralRow>()),
        (import_id_name(), field::keywords::<field::ImportId>()),
    ]
);

/// A row of `POST /api/v1/referrals/import`: which affiliate brought which
/// customer, and when the customer first paid.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = ReferralImportRow)]
pub struct ReferralRow {
    /// The referral's id on the platform it comes from: a re-run with the same `externalId`
    /// changes nothing.
    #[schema(value_type = field::ImportId)]
    pub external_id: String,
    /// The affiliate's campaign.
    pub campaign_id: String,
    /// The affiliate, by its code (any letter case) or its id: exactly one of the two.
    pub affiliate_code: Option<String>,
    pub affiliate_id: Option<String>,
    /// The customer, as a postback names it: exactly one of `customerId`, `customerEmail` (hashed
    /// at once, never stored) and `customerEmailHash`.
    #[schema(value_type = Option<field::CustomerRef>)]
    pub customer_id: Option<String>,
    #[schema(value_type = Option<domain::email::Email>)]
    pub customer_email: Option<String>,
    #[schema(value_type = Option<field::EmailHash>)]
    pub customer_email_hash: Option<String>,
    /// The customer's first payment (ISO-8601 date-time, not in the future): its recurring window
    /// continues from there.
    #[schema(format = DateTime)]
    pub first_payment_at: Option<String>,
}

impl ReferralRow {
    /// The row judged, every issue at once: one affiliate, one customer
    /// identity by the postback's rules, a first payment that is no later
    /// than `now`.
    pub fn validate(self, now: DateTime<Utc>) -> Result<ReferralImport, Error> {
        let mut issues = Issues::new();
        issues.check(field::ImportId::parse("externalId", &self.external_id));
        let affiliate = match (self.affiliate_code, self.affiliate_id) {
            (Some(code), None) => Some(AffiliateRef::Code(code)),
            (None, Some(id)) => Some(AffiliateRef::Id(id)),
            _ => {
                issues.add(
                    &["affiliateCode"],
                    "invalid_combination",
                    "give exactly one of affiliateCode and affiliateId",
                );
                None
            }
        };
        let customer = match (
            self.customer_id,
            self.customer_email,
            self.customer_email_hash,
        ) {
            (Some(id), None, None) => issues.check(CustomerKey::from_id(&id)),
            (None, Some(email), None) => issues.check(CustomerKey::from_email(&email)),
            (None, None, Some(hash)) => issues.check(CustomerKey::from_email_hash(&hash)),
            _ => {
                issues.add(
                    &["customerId"],
                    "invalid_combination",
                    "give exactly one of customerId, customerEmail and customerEmailHash",
                );
                None
            }
        };
        let first_payment_at = self.first_payment_at.as_deref().and_then(|raw| {
            match timestamp::parse_datetime(raw).filter(|t| *t <= now) {
                Some(t) => Some(t),
                None => {
                    issues.add(
                        &["firstPaymentAt"],
                        "invalid_date",
                        "firstPaymentAt must be an ISO-8601 date-time, not in the future",
                    );
                    None
                }
            }
        });
        issues.finish()?;
        let (Some(affiliate), Some(customer)) = (affiliate, customer) else {
            return Err(Error::internal("validated fields are missing"));
        };
        Ok(ReferralImport {
            external_id: self.external_id,
            campaign_id: self.campaign_id,
            affiliate,
            customer,
            first_payment_at,
        })
    }
}

/// One row's outcome: its index and the record it names.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = ImportedRow)]
pub struct ImportedRow<'a> {
    /// The row's 0-based index (of the array element, or of the CSV line after the header).
    pub row: usize,
    pub external_id: &'a str,
    /// The record's id (`aff_…` or `ref_…`).
    pub id: &'a str,
}

impl<'a> From<&'a Imported> for ImportedRow<'a> {
    fn from(r: &'a Imported) -> Self {
        ImportedRow {
            row: r.row,
            external_id: &r.external_id,
            id: &r.id,
        }
    }
}

/// A row that was not imported.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = ImportFailure)]
pub struct ImportFailure<'a> {
    pub row: usize,
    pub code: ErrorCode,
    pub message: &'a str,
}

/// Every row lands in exactly one list, in row order.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = ImportResult)]
pub struct ImportResult<'a> {
    /// Rows that made a new record.
    pub created: Vec<ImportedRow<'a>>,
    /// Rows whose `externalId` was imported before: nothing changed.
    pub existing: Vec<ImportedRow<'a>>,
    /// Rows refused, with why; nothing of them was written.
    pub failed: Vec<ImportFailure<'a>>,
}

impl<'a> From<&'a Outcome> for ImportResult<'a> {
    fn from(o: &'a Outcome) -> Self {
        let failed = o.failed.iter().map(|f| ImportFailure {
            row: f.row,
            code: f.code,
            message: &f.message,
        });
        ImportResult {
            created: o.created.iter().map(ImportedRow::from).collect(),
            existing: o.existing.iter().map(ImportedRow::from).collect(),
            failed: failed.collect(),
        }
    }
}
