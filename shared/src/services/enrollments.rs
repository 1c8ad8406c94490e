//! Enrolling an affiliate (the merchant's create, the public sign-up):
//! plan its events, commit, and replace a generated code that clashes.

use crate::domain::affiliate::Enrollment;
use crate::domain::tenant::Tenant;
use crate::error::Result;
use crate::store::affiliates::{duplicate_code, duplicate_email};
use crate::store::enrollments::{self, Enrolled};
use crate::store::Store;

/// Attempts in all (the first code, then up to two fresh ones) when a
/// generated code clashes with an existing code.
const CODE_ATTEMPTS: usize = 3;

/// Stores a new affiliate with its application (if any) and their events.
/// A clashing generated code is replaced (`e` then carries the new one);
/// anything else that clashes is ALREADY_EXISTS.
pub async fn enroll(store: &Store, tenant: &Tenant, e: &mut Enrollment) -> Result<()> {
    let mut attempt = 1;
    loop {
        let recorded = e.events()?;
        match enrollments::commit(store, tenant, e, &recorded).await? {
            Enrolled::Stored => return Ok(()),
            Enrolled::EmailTaken => return Err(duplicate_email()),
            Enrolled::CodeTaken => {
                if attempt >= CODE_ATTEMPTS || !e.retry_code() {
                    return Err(duplicate_code(&e.affiliate.code));
                }
                attempt += 1;
            }
        }
    }
}
