//! Running a merchant's POST under its `Idempotency-Key`: claim the key,
//! or replay its kept answer, or wait while its first request runs; then
//! keep the answer (a success) or release the key (a failure). Kept answers
//! are sealed like the other secrets: a create's answer may hold one shown
//! only there (a webhook endpoint's).

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::auth::sealing;
use domain::error::Result;
use domain::idempotency::{self, Decision, IdempotencyKey, KeptAnswer, KeptRequest};
use domain::tenant::Tenant;
use domain::timestamp;
use store::idempotency::{self as kept, Claimed};

/// How long a copy waits for the first request before its 409.
const WAIT: Duration = Duration::from_secs(8);
/// How often it looks again meanwhile.
const POLL: Duration = Duration::from_millis(100);

/// How a request under a key goes on.
#[derive(Debug)]
pub enum Begun {
    /// Run it, holding the key by this claim.
    Run(Claim),
    /// Answer this, run nothing.
    Replay(KeptAnswer),
}

/// A key held by a running request.
#[derive(Debug, Clone)]
pub struct Claim {
    key: IdempotencyKey,
    claim: String,
}

/// Claims `key` for a request with `fingerprint`, or finds what to answer:
/// the kept answer of the same request, 409 ALREADY_EXISTS for another
/// request, or, while the first request runs, its answer once it has one
/// (409 when it runs past [`WAIT`]).
pub async fn begin(
    app: &App,
    tenant: &Tenant,
    key: IdempotencyKey,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> Result<Begun> {
    let store = &app.store;
    let mine = KeptRequest::claimed(fingerprint, now);
    let mut found = match kept::claim(store, tenant, &key, &mine, now).await? {
        Claimed::Mine => return Ok(run(key, mine)),
        Claimed::Kept(found) => found,
    };
    let started = tokio::time::Instant::now();
    loop {
        let now = timestamp::now();
        match idempotency::decide(&found, fingerprint, now) {
            Decision::Replay(answer) => {
                let data = sealing::open(&app.signing, &answer.data).await?;
                let status = answer.status;
                return Ok(Begun::Replay(KeptAnswer { status, data }));
            }
            Decision::Mismatch => return Err(idempotency::mismatch(&key)),
            Decision::TakeOver => {
                let mine = KeptRequest::claimed(fingerprint, now);
                if kept::take_over(store, tenant, &key, &found.claim, &mine).await? {
                    return Ok(run(key, mine));
                }
            }
            Decision::InProgress if started.elapsed() >= WAIT => {
                return Err(idempotency::in_progress(&key))
            }
            Decision::InProgress => tokio::time::sleep(POLL).await,
        }
        found = match kept::read(store, tenant, &key, timestamp::now()).await? {
            Some(found) => found,
            // Released meanwhile (the first request failed): claim it anew.
            None => {
                let mine = KeptRequest::claimed(fingerprint, timestamp::now());
                match kept::claim(store, tenant, &key, &mine, timestamp::now()).await? {
                    Claimed::Mine => return Ok(run(key, mine)),
                    Claimed::Kept(found) => found,
                }
            }
        };
    }
}

fn run(key: IdempotencyKey, mine: KeptRequest) -> Begun {
    Begun::Run(Claim {
        key,
        claim: mine.claim,
    })
}

/// Ends a run: keeps a success's answer (`data`, the answer's JSON) for
/// replay, or releases the key after a failure.
pub async fn finish(
    app: &App,
    tenant: &Tenant,
    claim: &Claim,
    status: u16,
    data: Option<String>,
) -> Result<()> {
    let store = &app.store;
    match data.filter(|_| idempotency::keeps(status)) {
        Some(data) => {
            let data = sealing::seal(&app.signing, &data).await?;
            let answer = KeptAnswer { status, data };
            kept::keep_answer(store, tenant, &claim.key, &claim.claim, &answer).await
        }
        None => kept::release(store, tenant, &claim.key, &claim.claim).await,
    }
}
