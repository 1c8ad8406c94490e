//! Enrolling an affiliate: the record, its e-mail and code guards, its
//! application when it has to be reviewed, and their events, in one
//! transaction.

use crate::affiliates::{email_guard, guard, item};
use crate::{applications, events, keys, Store};
use domain::affiliate::Enrollment;
use domain::change::Event;
use domain::error::Result;
use domain::tenant::Tenant;

/// The role of each action of an enrollment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    EmailGuard,
    CodeGuard,
    Application,
    Event,
}

/// How an enrollment's transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enrolled {
    /// The affiliate, its guards, its application and the events are written.
    Stored,
    /// The campaign already has an affiliate with this e-mail.
    EmailTaken,
    /// The tenant already has an affiliate with this code.
    CodeTaken,
    /// An affiliate with this id exists (an imported row's, imported before).
    Exists,
}

/// Stores a new affiliate, its two guards, its application (if any) and
/// `recorded` in one transaction; nothing when a guard is taken.
pub async fn commit(
    store: &Store,
    tenant: &Tenant,
    e: &Enrollment,
    recorded: &[Event],
) -> Result<Enrolled> {
    let a = &e.affiliate;
    let mut tx = store.tx();
    tx.put_new(Write::Record, item(tenant, a)?)
        .put_new(Write::EmailGuard, guard(email_guard(tenant, a), tenant, a)?)
        .put_new(
            Write::CodeGuard,
            guard(keys::code_guard(tenant, a.code.as_str()), tenant, a)?,
        );
    if let Some(app) = &e.application {
        tx.put_new(Write::Application, applications::item(tenant, app)?);
    }
    events::append_all(&mut tx, Write::Event, tenant, recorded)?;
    match store.transact(tx).await {
        Ok(()) => Ok(Enrolled::Stored),
        // The record first: an import row written before also holds its guards.
        Err(err) if err.failed(Write::Record) => Ok(Enrolled::Exists),
        Err(err) if err.failed(Write::EmailGuard) => Ok(Enrolled::EmailTaken),
        Err(err) if err.failed(Write::CodeGuard) => Ok(Enrolled::CodeTaken),
        Err(err) => Err(err.into_error()),
    }
}
