//! Enrolling an affiliate: the record, its e-mail and code guards, its
//! application when it has to be reviewed, and their events, in one
//! transaction.

use crate::domain::affiliate::Enrollment;
use crate::domain::affiliate_code::AffiliateCode;
use crate::domain::event::EventType;
use crate::domain::tenant::Tenant;
use crate::error::Result;
use crate::store::affiliates::{duplicate_code, duplicate_email, email_guard, guard, item};
use crate::store::{applications, events, keys, Store};

/// Fresh codes tried when a generated one clashes with an existing code.
const CODE_ATTEMPTS: usize = 3;

/// The role of each action of an enrollment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Record,
    EmailGuard,
    CodeGuard,
    Application,
    Event,
}

/// Stores a new affiliate, its two guards and its application (if any) in one
/// transaction. A clashing generated code is replaced; anything else that
/// clashes is ALREADY_EXISTS.
pub async fn enroll(store: &Store, tenant: &Tenant, e: &mut Enrollment) -> Result<()> {
    let mut attempt = 1;
    loop {
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
            let created = app.event(EventType::ApplicationCreated, app.created_at)?;
            events::append(&mut tx, Write::Event, tenant, &created)?;
            if !app.risk.is_clear() {
                let flagged = app.event(EventType::ApplicationFlagged, app.created_at)?;
                events::append(&mut tx, Write::Event, tenant, &flagged)?;
            }
        }
        let created = a.event(EventType::AffiliateCreated, a.created_at)?;
        events::append(&mut tx, Write::Event, tenant, &created)?;
        match store.transact(tx).await {
            Ok(()) => return Ok(()),
            Err(err) if err.failed(Write::EmailGuard) => return Err(duplicate_email()),
            Err(err) if err.failed(Write::CodeGuard) => {
                if !e.code_generated || attempt >= CODE_ATTEMPTS {
                    return Err(duplicate_code(&e.affiliate.code));
                }
                e.affiliate.code = AffiliateCode::generate();
                attempt += 1;
            }
            Err(err) => return Err(err.into_error()),
        }
    }
}
