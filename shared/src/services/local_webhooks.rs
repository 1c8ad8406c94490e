//! The webhook workers of the local host (`refctl serve`): what the
//! DynamoDB Stream event source and the scheduled sweep do on AWS, run
//! in-process against DynamoDB Local. The stream is polled every 300 ms
//! while its table is busy (every second once a read finds nothing, so idle
//! servers, the test suite's many among them, cost DynamoDB Local little) and
//! each new event goes to `dispatch::on_event`; due retries are swept every
//! two seconds (every five once a sweep finds nothing due).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;

use crate::app::App;
use crate::services::webhooks as dispatch;
use crate::store::stream::TableStream;
use crate::timestamp;

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
/// Events handed to `on_event` side by side.
const PARALLEL: usize = 16;

/// Starts the stream consumer and the sweep on the current runtime.
pub fn spawn(app: Arc<App>) {
    tokio::spawn(consume(app.clone()));
    tokio::spawn(sweep(app));
}

/// Follows the table's stream for as long as the process runs. Stream
/// errors are logged in full (they carry no item, see `store::stream`);
/// delivery errors by their code only, as their causes may quote items.
async fn consume(app: Arc<App>) {
    loop {
        match TableStream::open(&app.config, &app.store).await {
            Ok(stream) => follow(&app, stream).await,
            Err(e) => tracing::warn!(error = %e, "webhook stream not readable yet"),
        }
        tokio::time::sleep(REOPEN_AFTER).await;
    }
}

/// Reads the stream until it fails, delivering each new event.
async fn follow(app: &App, mut stream: TableStream) {
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
                for chunk in events.chunks(PARALLEL) {
                    let runs = chunk
                        .iter()
                        .map(|(tenant, event)| dispatch::on_event(app, tenant, event));
                    for (result, (_, event)) in join_all(runs).await.into_iter().zip(chunk) {
                        if let Err(e) = result {
                            tracing::warn!(event_id = %event.id, error = e.code().as_str(), "webhook first attempts failed");
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "webhook stream: reading failed"),
        }
        tokio::time::sleep(pause).await;
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
