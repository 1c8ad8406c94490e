//! The webhook workers of the local host (`refctl serve`): what the
//! DynamoDB Stream event source and the scheduled sweep do on AWS, run
//! in-process against DynamoDB Local. The stream is polled every 300 ms
//! while its table is busy (every second once a read finds nothing, so idle
//! servers, the test suite's many among them, cost DynamoDB Local little) and
//! each read's new events go to `dispatch::on_events`, while the reader goes
//! on (a slow endpoint holds back no other event; a process stopped while a
//! read's first attempts run loses those attempts, which the stream gives to
//! no one again: a local host's trade, not Lambda's); due retries are swept every
//! two seconds (every five once a sweep finds nothing due).

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::webhooks as dispatch;
use domain::event::Published;
use domain::tenant::Tenant;
use domain::timestamp;
use store::stream::TableStream;

/// Pause between two reads of the stream while records come.
const POLL_EVERY: Duration = Duration::from_millis(300);
/// Pause after a read that found no record.
const IDLE_POLL_EVERY: Duration = Duration::from_secs(1);
/// Pause between two sweeps of due retries while there is work.
const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// Pause after a sweep that found nothing due.
const IDLE_SWEEP_EVERY: Duration = Duration::from_secs(5);
/// Pause before opening the stream again after a failure.
const REOPEN_AFTER: Duration = Duration::from_secs(3);
/// Reads between two looks for new shards.
const DISCOVER_EVERY: u32 = 20;
/// Stream batches whose first attempts may run at once: the reader goes on
/// while an endpoint answers slowly, as Lambda's parallel batches per
/// shard do (`ParallelizationFactor`).
const BATCHES_AT_ONCE: usize = 10;

/// Starts the stream consumer and the sweep on the current runtime.
pub fn spawn(app: Arc<App>) {
    tokio::spawn(consume(app.clone()));
    tokio::spawn(sweep(app));
}

/// Follows the table's stream for as long as the process runs. Stream
/// errors are logged in full (they carry no item, see `store::stream`);
/// delivery errors by their code only, as their causes may quote items.
async fn consume(app: Arc<App>) {
    // One set of places for every reader this process opens: batches of a
    // reader that failed still hold theirs.
    let batches = Arc::new(tokio::sync::Semaphore::new(BATCHES_AT_ONCE));
    loop {
        match TableStream::open(&app.config, &app.store).await {
            Ok(stream) => follow(&app, stream, &batches).await,
            Err(e) => tracing::warn!(error = %e, "webhook stream not readable yet"),
        }
        tokio::time::sleep(REOPEN_AFTER).await;
    }
}

/// Reads the stream until it fails, delivering each new event.
async fn follow(app: &Arc<App>, mut stream: TableStream, batches: &Arc<tokio::sync::Semaphore>) {
    let mut reads: u32 = 0;
    loop {
        if stream.is_idle() || reads.is_multiple_of(DISCOVER_EVERY) {
            if let Err(e) = stream.discover().await {
                tracing::warn!(error = %e, "webhook stream: listing shards failed");
                return;
            }
        }
        reads = reads.wrapping_add(1);
        let mut pause = IDLE_POLL_EVERY;
        match stream.poll().await {
            Ok((records, events)) => {
                if records > 0 {
                    pause = POLL_EVERY;
                }
                // A full set of batches under way holds the reader back.
                let Ok(place) = batches.clone().acquire_owned().await else {
                    return;
                };
                tokio::spawn(first_attempts(app.clone(), events, place));
            }
            Err(e) => tracing::warn!(error = %e, "webhook stream: reading failed"),
        }
        tokio::time::sleep(pause).await;
    }
}

/// First attempts of one read's events; the place is given back at the end.
async fn first_attempts(
    app: Arc<App>,
    events: Vec<(Tenant, Published)>,
    _place: tokio::sync::OwnedSemaphorePermit,
) {
    let ids: Vec<String> = events.iter().map(|(_, e)| e.id.clone()).collect();
    let found = events.into_iter().map(|e| Ok(Some(e))).collect();
    for (id, result) in ids.iter().zip(dispatch::on_events(&app, found).await) {
        if let Err(e) = result {
            tracing::warn!(event_id = %id, error = e.code().as_str(), "webhook first attempts failed");
        }
    }
}

/// Sweeps due retries for as long as the process runs.
async fn sweep(app: Arc<App>) {
    let mut pause = SWEEP_EVERY;
    loop {
        tokio::time::sleep(pause).await;
        pause = match dispatch::sweep(&app, timestamp::now()).await {
            Ok(report) if report.attempted + report.abandoned + report.skipped == 0 => {
                IDLE_SWEEP_EVERY
            }
            Ok(_) => SWEEP_EVERY,
            Err(e) => {
                tracing::warn!(error = e.code().as_str(), "webhook sweep failed");
                SWEEP_EVERY
            }
        };
    }
}
