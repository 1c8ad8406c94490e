//! Bulk import from another platform: the records each row of the
//! affiliates and referrals imports plans, each row judged by the rules of
//! the single-record routes (the affiliate create's, the postback's customer
//! identities; the rows' bodies are `wire::import`'s). A row's `externalId` names it for good: the
//! records it makes have ids derived from it, so a re-run finds them and
//! changes nothing.

use chrono::{DateTime, Utc};

use crate::affiliate::{Affiliate, AffiliateDraft, AffiliateStatus, Enrollment};
use crate::application::Application;
use crate::error::{Error, ErrorCode};
use crate::field;
use crate::ids::{derived_id, sibling, IdKind};
use crate::referral::{CustomerKey, Referral, ReferralSource};
use crate::tenant::Tenant;
use crate::validation::Issues;

/// The most rows an import takes.
pub const MAX_ROWS: usize = 500;

/// A row of `POST /api/v1/affiliates/import`: the create body's fields (the
/// same rules), with the row's `externalId` and starting status (read by
/// `http::import`, described below).
#[derive(Debug)]
pub struct AffiliateRow {
    pub external_id: String,
    pub status: Option<AffiliateStatus>,
    pub affiliate: AffiliateDraft,
}

impl AffiliateRow {
    /// The affiliate (and, when PENDING, its application) the row makes in
    /// `tenant`, with the id its `externalId` derives.
    pub fn enroll(self, tenant: &Tenant, now: DateTime<Utc>) -> Result<Enrollment, Error> {
        let mut issues = Issues::new();
        issues.check(field::ImportId::parse("externalId", &self.external_id));
        // An imported affiliate starts ACTIVE, or PENDING with an application.
        let status = match self.status {
            None | Some(AffiliateStatus::Active) => AffiliateStatus::Active,
            Some(AffiliateStatus::Pending) => AffiliateStatus::Pending,
            Some(_) => {
                issues.add(
                    &["status"],
                    "invalid_enum_value",
                    "status must be ACTIVE or PENDING",
                );
                AffiliateStatus::Active
            }
        };
        let mut e = Affiliate::enroll(self.affiliate, status, now, issues)?;
        e.affiliate.id = imported_id(IdKind::Affiliate, tenant, &self.external_id);
        if status == AffiliateStatus::Pending {
            let a = &e.affiliate;
            let mut app = Application::pending(&a.id, &a.campaign_id, None, now);
            app.id = sibling(&a.id, IdKind::Application).unwrap_or(app.id);
            e.application = Some(app);
        }
        Ok(e)
    }
}

/// The id of the record an import row makes: derived from the tenant and
/// the row's `externalId`, so the same row makes the same record.
pub fn imported_id(kind: IdKind, tenant: &Tenant, external_id: &str) -> String {
    derived_id(kind, &format!("import#{}#{external_id}", tenant.key()))
}

/// Which affiliate a referral row names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AffiliateRef {
    Code(String),
    Id(String),
}

/// A referral row, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferralImport {
    pub external_id: String,
    pub campaign_id: String,
    pub affiliate: AffiliateRef,
    pub customer: CustomerKey,
    pub first_payment_at: Option<DateTime<Utc>>,
}

impl ReferralImport {
    /// What the row claims within its body: its `externalId` and its customer.
    pub fn claims(&self) -> Vec<String> {
        vec![
            format!("id {}", self.external_id),
            format!("customer {}", self.customer),
        ]
    }

    /// The listed referral the row makes for `affiliate` (checked to be in
    /// the row's campaign), bound `now`, its first payment counted.
    pub fn referral(
        &self,
        tenant: &Tenant,
        affiliate: &Affiliate,
        now: DateTime<Utc>,
    ) -> Result<Referral, Error> {
        if affiliate.campaign_id != self.campaign_id {
            return Err(Error::invalid(
                &["campaignId"],
                "invalid_reference",
                "the affiliate is not in this campaign",
            ));
        }
        Ok(Referral {
            id: Some(imported_id(IdKind::Referral, tenant, &self.external_id)),
            affiliate_id: affiliate.id.clone(),
            campaign_id: self.campaign_id.clone(),
            customer_key: self.customer.to_string(),
            bound_at: now,
            source: ReferralSource::Import,
            session_id: None,
            linked_from: None,
            first_payment_at: self.first_payment_at,
            first_payment_counted: false,
            payments: u32::from(self.first_payment_at.is_some()),
            lead_at: None,
        })
    }
}

/// For each row of a body (in row order), the earlier row that claimed one
/// of its keys first (its `externalId`, an e-mail in a campaign, a code):
/// rows of one body never race each other for them, the first one claims.
pub fn earlier_claims(keys: &[(usize, Vec<String>)]) -> Vec<Option<usize>> {
    let mut claimed: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    keys.iter()
        .map(|(row, ks)| {
            let first = ks.iter().find_map(|k| claimed.get(k.as_str()).copied());
            if first.is_none() {
                for k in ks {
                    claimed.insert(k, *row);
                }
            }
            first
        })
        .collect()
}

impl Enrollment {
    /// What an imported affiliate claims within its body: its id (so its
    /// `externalId`), its e-mail in its campaign and its code (any case).
    pub fn claims(&self) -> Vec<String> {
        let a = &self.affiliate;
        let mut keys = vec![
            format!("id {}", a.id),
            format!("email {} {}", a.campaign_id, a.email.lower()),
        ];
        if !self.code_generated {
            keys.push(format!("code {}", a.code.lower()));
        }
        keys
    }
}

/// The failure of a row whose key an earlier row of the body claimed.
pub fn claimed_by(row: usize) -> Error {
    Error::AlreadyExists(format!(
        "row {row} of this import claims the same externalId, e-mail (in the campaign), code or customer"
    ))
}

/// One row's outcome: its index and the record it names.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The row's 0-based index.
    pub row: usize,
    pub external_id: String,
    /// The record's id (`aff_…` or `ref_…`).
    pub id: String,
}

/// A row that was not imported.
#[derive(Debug, Clone)]
pub struct Failed {
    pub row: usize,
    pub code: ErrorCode,
    pub message: String,
}

impl Failed {
    /// A row's failure, as its error says it (an internal one is logged, not shown).
    pub fn new(row: usize, err: &Error) -> Failed {
        Failed {
            row,
            code: err.code(),
            message: err.item_message(&format!("import row {row}")),
        }
    }
}

/// Every row lands in exactly one list, in row order
/// (`wire::import::ImportResult` shows it).
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Rows that made a new record.
    pub created: Vec<Imported>,
    /// Rows whose `externalId` was imported before: nothing changed.
    pub existing: Vec<Imported>,
    /// Rows refused, with why; nothing of them was written.
    pub failed: Vec<Failed>,
}

impl Outcome {
    /// Sorts each list by row.
    pub fn sorted(mut self) -> Outcome {
        self.created.sort_by_key(|r| r.row);
        self.existing.sort_by_key(|r| r.row);
        self.failed.sort_by_key(|r| r.row);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_row_claims_its_keys() {
        let k = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rows = [
            (0, k(&["id a", "email c x"])),
            (1, k(&["id b", "email c x"])),
            (2, k(&["id a", "email c y"])),
            (3, k(&["id d", "email c y", "code q"])),
            (4, k(&["id e", "email c z", "code q"])),
        ];
        // Row 2 repeats row 0's id; row 3's e-mail is free (row 2 claimed nothing).
        assert_eq!(
            earlier_claims(&rows),
            [None, Some(0), Some(0), None, Some(3)]
        );
    }
}
