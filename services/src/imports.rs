//! Bulk import of affiliates and referrals: each row judged by the
//! single-record rules, what the rows name read once (campaigns,
//! affiliates, the rows imported before), then each new row committed in
//! its own small transaction, several at once. Every row lands in exactly
//! one of created, existing and failed; a re-run changes nothing.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt};

use crate::app::App;
use crate::enrollments;
use domain::affiliate::{Affiliate, Enrollment};
use domain::error::{Error, Result};
use domain::ids::IdKind;
use domain::import::{
    self as import, imported_id, AffiliateRef, AffiliateRow, Failed, Imported, Outcome,
    ReferralImport,
};
use domain::referral::Referral;
use domain::tenant::Tenant;
use domain::timestamp;
use store::referrals::{self, Imported as Committed};
use store::{affiliates, campaigns};

/// Rows committed at once.
const CONCURRENT_ROWS: usize = 8;

/// One row of an import as read: its index, and its fields or why not.
pub type Row<T> = (usize, Result<T>);

fn imported(row: usize, external_id: &str, id: &str) -> Imported {
    Imported {
        row,
        external_id: external_id.to_string(),
        id: id.to_string(),
    }
}

/// The campaigns among `ids` that do not exist in the tenant (batch reads,
/// 100 at a time).
async fn missing_campaigns(
    app: &App,
    tenant: &Tenant,
    ids: BTreeSet<String>,
) -> Result<HashSet<String>> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut found = HashSet::new();
    for chunk in ids.chunks(100) {
        let read = campaigns::get_each(&app.store, tenant, chunk).await?;
        found.extend(read.into_iter().map(|c| c.id));
    }
    Ok(ids
        .into_iter()
        .filter(|id| !found.contains(*id))
        .map(str::to_string)
        .collect())
}

/// Judges each row (`judge`), then fails the rows that claim a key an
/// earlier row of the body claimed (`claims`); what passes, with its index.
fn judged<T, P>(
    rows: Vec<Row<T>>,
    out: &mut Outcome,
    judge: impl Fn(T) -> Result<P>,
    claims: impl Fn(&P) -> Vec<String>,
) -> Vec<(usize, P)> {
    let mut passed = Vec::new();
    for (i, row) in rows {
        match row.and_then(&judge) {
            Ok(p) => passed.push((i, p)),
            Err(e) => out.failed.push(Failed::new(i, &e)),
        }
    }
    let keys: Vec<(usize, Vec<String>)> = passed.iter().map(|(i, p)| (*i, claims(p))).collect();
    let firsts = import::earlier_claims(&keys);
    passed
        .into_iter()
        .zip(firsts)
        .filter_map(|((i, p), first)| match first {
            Some(row) => {
                out.failed.push(Failed::new(i, &import::claimed_by(row)));
                None
            }
            None => Some((i, p)),
        })
        .collect()
}

/// Where a committed row lands (a refusal is the row's error).
enum Landed {
    Created,
    Existing,
}

/// Commits each row (`commit` answers its externalId, the record's id and
/// where it landed), several at once. One row's failure (a clash, or
/// storage) is that row's alone: the rows committed beside it are answered.
async fn commit_rows<P, F, Fut>(todo: Vec<(usize, P)>, out: &mut Outcome, commit: F)
where
    F: Fn(P) -> Fut,
    Fut: Future<Output = (String, String, Result<Landed>)>,
{
    let commit = &commit;
    let done: Vec<_> = stream::iter(todo)
        .map(|(i, p)| async move { (i, commit(p).await) })
        .buffer_unordered(CONCURRENT_ROWS)
        .collect()
        .await;
    for (i, (x, id, landed)) in done {
        match landed {
            Ok(Landed::Created) => out.created.push(imported(i, &x, &id)),
            Ok(Landed::Existing) => out.existing.push(imported(i, &x, &id)),
            Err(e) => out.failed.push(Failed::new(i, &e)),
        }
    }
}

/// Imports affiliates: rows in a missing campaign fail NOT_FOUND, rows
/// imported before are existing, the others are enrolled (a taken e-mail
/// or chosen code fails ALREADY_EXISTS).
pub async fn affiliates(
    app: &App,
    tenant: &Tenant,
    rows: Vec<Row<AffiliateRow>>,
) -> Result<Outcome> {
    let now = timestamp::now();
    let mut out = Outcome::default();
    let enroll = |r: AffiliateRow| {
        let x = r.external_id.clone();
        r.enroll(tenant, now).map(|e| (x, e))
    };
    let planned = judged(rows, &mut out, enroll, |(_, e)| e.claims());
    let (missing, before) = affiliate_facts(app, tenant, &planned).await?;
    let todo = new_affiliates(planned, &missing, &before, &mut out);
    commit_rows(todo, &mut out, |(x, mut e)| async move {
        let landed = match enrollments::enroll_once(app, tenant, &mut e).await {
            Ok(true) => Ok(Landed::Created),
            Ok(false) => Ok(Landed::Existing),
            Err(err) => Err(err),
        };
        (x, e.affiliate.id, landed)
    })
    .await;
    Ok(out.sorted())
}

/// What the planned affiliates name: the campaigns missing from the tenant,
/// and the ids of the affiliates imported before.
async fn affiliate_facts(
    app: &App,
    tenant: &Tenant,
    planned: &[(usize, (String, Enrollment))],
) -> Result<(HashSet<String>, HashSet<String>)> {
    let campaigns = planned
        .iter()
        .map(|(_, (_, e))| e.affiliate.campaign_id.clone())
        .collect();
    let missing = missing_campaigns(app, tenant, campaigns).await?;
    let ids: Vec<&str> = planned
        .iter()
        .map(|(_, (_, e))| e.affiliate.id.as_str())
        .collect();
    let before = affiliates::get_each(&app.store, tenant, &ids)
        .await?
        .into_keys()
        .collect();
    Ok((missing, before))
}

/// The planned affiliates to enroll; one in a `missing` campaign fails, one
/// imported `before` is existing.
fn new_affiliates(
    planned: Vec<(usize, (String, Enrollment))>,
    missing: &HashSet<String>,
    before: &HashSet<String>,
    out: &mut Outcome,
) -> Vec<(usize, (String, Enrollment))> {
    let mut todo = Vec::new();
    for (i, (x, e)) in planned {
        if missing.contains(&e.affiliate.campaign_id) {
            out.failed
                .push(Failed::new(i, &Error::NotFound("campaign")));
        } else if before.contains(&e.affiliate.id) {
            out.existing.push(imported(i, &x, &e.affiliate.id));
        } else {
            todo.push((i, (x, e)));
        }
    }
    todo
}

/// The affiliates the rows name, by code (one GetItem of each code's guard)
/// or by id, read once each.
async fn named_affiliates(
    app: &App,
    tenant: &Tenant,
    refs: BTreeSet<AffiliateRef>,
) -> Result<HashMap<AffiliateRef, Affiliate>> {
    let owners: Vec<(AffiliateRef, Option<String>)> = stream::iter(refs)
        .map(|r| async move {
            let owner = match &r {
                AffiliateRef::Id(id) => Some(id.clone()),
                AffiliateRef::Code(code) => affiliates::resolve_code(&app.store, tenant, code)
                    .await?
                    .map(|o| o.affiliate_id),
            };
            Ok((r, owner))
        })
        .buffer_unordered(CONCURRENT_ROWS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let ids: Vec<&str> = owners.iter().filter_map(|(_, id)| id.as_deref()).collect();
    let found = affiliates::get_each(&app.store, tenant, &ids).await?;
    Ok(owners
        .into_iter()
        .filter_map(|(r, id)| Some((r, found.get(&id?)?.clone())))
        .collect())
}

/// Imports referrals: rows imported before are existing; a row whose
/// affiliate is unknown fails NOT_FOUND, one in another campaign 400, one
/// whose customer is bound already ALREADY_EXISTS (first touch holds).
pub async fn referrals(
    app: &App,
    tenant: &Tenant,
    rows: Vec<Row<ReferralImport>>,
) -> Result<Outcome> {
    let now = timestamp::now();
    let mut out = Outcome::default();
    let judged = judged(rows, &mut out, Ok, ReferralImport::claims);
    let refs = judged.iter().map(|(_, r)| r.affiliate.clone()).collect();
    let named = named_affiliates(app, tenant, refs).await?;
    let xs: Vec<&str> = judged.iter().map(|(_, r)| r.external_id.as_str()).collect();
    let before = referrals::imported(&app.store, tenant, &xs).await?;
    let todo = new_referrals(tenant, &judged, &named, &before, now, &mut out);
    commit_rows(todo, &mut out, |(x, referral)| async move {
        let landed = match referrals::import(&app.store, tenant, &referral, &x).await {
            Ok(Committed::Created) => Ok(Landed::Created),
            Ok(Committed::Existing) => Ok(Landed::Existing),
            Ok(Committed::CustomerBound) => Err(Error::AlreadyExists(
                "the customer is referred by an affiliate already".into(),
            )),
            Err(e) => Err(e),
        };
        (x, referral.id.unwrap_or_default(), landed)
    })
    .await;
    Ok(out.sorted())
}

/// The judged referrals to import, each planned on its affiliate; one
/// imported `before` is existing, one whose plan fails is failed.
fn new_referrals(
    tenant: &Tenant,
    judged: &[(usize, ReferralImport)],
    named: &HashMap<AffiliateRef, Affiliate>,
    before: &HashSet<String>,
    now: DateTime<Utc>,
    out: &mut Outcome,
) -> Vec<(usize, (String, Referral))> {
    let mut todo = Vec::new();
    for (i, r) in judged {
        let id = imported_id(IdKind::Referral, tenant, &r.external_id);
        if before.contains(&r.external_id) {
            out.existing.push(imported(*i, &r.external_id, &id));
            continue;
        }
        let planned = named
            .get(&r.affiliate)
            .ok_or(Error::NotFound("affiliate"))
            .and_then(|a| r.referral(tenant, a, now));
        match planned {
            Ok(referral) => todo.push((*i, (r.external_id.clone(), referral))),
            Err(e) => out.failed.push(Failed::new(*i, &e)),
        }
    }
    todo
}
