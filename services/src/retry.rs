//! The optimistic-concurrency loop: read, decide, write conditionally, and on
//! a lost race read again after a short, jittered pause; and its form
//! without a pause, for a refusal that says what the next try changes.

use std::future::Future;
use std::time::Duration;

use domain::error::{Error, Result};

/// Tries a merchant's edit gets while other writers keep changing the record.
pub const UPDATE_ATTEMPTS: usize = 5;

/// First backoff ceiling; it doubles after every lost race.
const BASE_BACKOFF_MS: u64 = 10;

/// The outcome of one try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt<T> {
    /// The conditional write went through (or nothing needed writing).
    Done(T),
    /// Another writer got there first, or (for [`retry_at_once`]) the write
    /// was refused for what the next try changes; try again.
    Conflict,
}

/// Runs `f` up to `attempts` times until it is `Done`; `None` when every try lost a race.
pub async fn retry<T, F, Fut>(attempts: usize, mut f: F) -> Result<Option<T>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>>>,
{
    let tried = tries(attempts, Pause::Backoff, (), |()| {
        let attempt = f();
        async move { Ok(((), attempt.await?)) }
    });
    Ok(tried.await?.1)
}

/// [`retry`] without a pause between tries, for a refusal that says what
/// the next try changes (a fresh generated code, the records a cancelled
/// transaction found): waiting would change nothing. Each try takes `state`
/// and gives it back with its outcome, keeping what it learnt for the next
/// one; the state the last try left comes back with the result.
pub async fn retry_at_once<S, T, F, Fut>(attempts: usize, state: S, f: F) -> Result<(S, Option<T>)>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Result<(S, Attempt<T>)>>,
{
    tries(attempts, Pause::None, state, f).await
}

/// What comes between two tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pause {
    /// A jittered wait ([`backoff`]): the writer that won gets done first.
    Backoff,
    /// None: the next try goes at once.
    None,
}

/// The loop of [`retry`] and [`retry_at_once`].
async fn tries<S, T, F, Fut>(
    attempts: usize,
    pause: Pause,
    mut state: S,
    mut f: F,
) -> Result<(S, Option<T>)>
where
    F: FnMut(S) -> Fut,
    Fut: Future<Output = Result<(S, Attempt<T>)>>,
{
    for attempt in 0..attempts {
        let (after, outcome) = f(state).await?;
        if let Attempt::Done(v) = outcome {
            return Ok((after, Some(v)));
        }
        state = after;
        if pause == Pause::Backoff && attempt + 1 < attempts {
            tokio::time::sleep(backoff(attempt)).await;
        }
    }
    Ok((state, None))
}

/// [`retry`], with running out of tries reported as UNAVAILABLE naming `what`.
pub async fn retry_on_conflict<T, F, Fut>(attempts: usize, what: &'static str, f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>>>,
{
    retry(attempts, f).await?.ok_or_else(|| {
        Error::Unavailable(format!(
            "the {what} is being changed by other requests; retry"
        ))
    })
}

/// A read-modify-write that goes again while another writer wins: `read`
/// the record, `decide` its new state (a domain rule; its error ends the
/// edit), `write` it conditioned on what was read (false: somebody changed it).
pub async fn edit<T, R, RF, D, W, WF>(what: &'static str, read: R, decide: D, write: W) -> Result<T>
where
    R: Fn() -> RF,
    RF: Future<Output = Result<T>>,
    D: Fn(&T) -> Result<T>,
    W: Fn(T, T) -> WF,
    WF: Future<Output = Result<Option<T>>>,
{
    let (read, decide, write) = (&read, &decide, &write);
    retry_on_conflict(UPDATE_ATTEMPTS, what, || async move {
        let current = read().await?;
        let next = decide(&current)?;
        Ok(match write(next, current).await? {
            Some(done) => Attempt::Done(done),
            None => Attempt::Conflict,
        })
    })
    .await
}

/// Full jitter: racing writers spread out instead of colliding again in step.
fn backoff(attempt: usize) -> Duration {
    let ceiling = BASE_BACKOFF_MS << attempt.min(10);
    Duration::from_millis(rand::random::<u64>() % (ceiling + 1))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test]
    async fn a_lost_race_is_retried_until_done() {
        let calls = Cell::new(0);
        let got = retry_on_conflict(5, "thing", || async {
            calls.set(calls.get() + 1);
            Ok(if calls.get() < 3 {
                Attempt::Conflict
            } else {
                Attempt::Done(calls.get())
            })
        })
        .await;
        assert_eq!(got.unwrap(), 3);
        assert_eq!(calls.get(), 3);
    }

    #[tokio::test]
    async fn running_out_of_tries_is_unavailable() {
        let calls = Cell::new(0);
        let got: Result<()> = retry_on_conflict(4, "thing", || async {
            calls.set(calls.get() + 1);
            Ok(Attempt::Conflict)
        })
        .await;
        match got {
            Err(Error::Unavailable(m)) => {
                assert_eq!(m, "the thing is being changed by other requests; retry")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(calls.get(), 4);
    }

    #[tokio::test]
    async fn at_once_each_try_gets_what_the_last_one_kept() {
        let got = retry_at_once(3, Vec::new(), |mut seen: Vec<usize>| async move {
            seen.push(seen.len());
            Ok((seen, Attempt::<()>::Conflict))
        })
        .await;
        let (seen, done) = got.unwrap();
        assert_eq!(seen, vec![0, 1, 2]);
        assert_eq!(done, None);
        let got = retry_at_once(3, 0, |n| async move {
            Ok((
                n + 1,
                if n == 1 {
                    Attempt::Done(n)
                } else {
                    Attempt::Conflict
                },
            ))
        })
        .await;
        assert_eq!(got.unwrap(), (2, Some(1)));
    }

    #[tokio::test]
    async fn an_error_stops_at_once() {
        let calls = Cell::new(0);
        let got: Result<Option<()>> = retry(4, || async {
            calls.set(calls.get() + 1);
            Err(Error::NotFound("thing"))
        })
        .await;
        assert!(matches!(got, Err(Error::NotFound("thing"))));
        assert_eq!(calls.get(), 1);
        assert!(backoff(3) <= Duration::from_millis(80));
    }
}
