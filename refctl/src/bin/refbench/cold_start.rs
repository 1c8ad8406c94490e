//! Cold start and memory of the real binaries: each function's release
//! binary, built for this host in this run, and a bare `lambda_runtime`
//! hello-world are started under the local Lambda Runtime API and sent one
//! sample event from `events/`. Init is process start to the first
//! `invocation/next`; peak RSS is the process's high-water mark (VmHWM) after
//! the first invocation. Each binary starts once uncounted, then `RUNS` times
//! (an HTTP function alternating with and without the secret read); medians
//! are shown and times are given as ratios to the hello-world's, since the
//! machine is shared and noisy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use api::services::app::App;
use api::store::accounts;
use api::store::config::Config;
use refctl::runtime_api::{function_command, Outcome, RuntimeApi};
use serde_json::Value;

/// Each binary, the sample event it is sent (the hello-world ignores its),
/// and whether it is configured with the API key signing secret in Secrets
/// Manager (the HTTP functions but the hello-world, whose event is
/// borrowed), so it also starts with a plain secret, the control.
const BINARIES: &[(&str, &str, bool)] = &[
    ("hello-lambda", "campaigns-list.json", false),
    ("campaigns", "campaigns-list.json", true),
    ("affiliates", "affiliates-list.json", true),
    ("applications", "applications-list.json", true),
    ("assets", "assets-list.json", true),
    ("conversions", "conversions-list.json", true),
    ("integrations", "integrations-list.json", true),
    ("payouts", "payouts-list.json", true),
    ("reports", "reports-referrals-list.json", true),
    ("portal", "portal-me.json", true),
    ("webhooks", "webhook-endpoints-list.json", true),
    ("public", "public-campaign-profile.json", true),
    ("invoices", "invoices-object-created.json", false),
    ("payout-job", "payout-job-schedule.json", false),
    ("webhook-delivery", "webhook-delivery-stream.json", false),
    ("webhook-sweep", "webhook-sweep-schedule.json", false),
];

const RUNS: usize = 5;
const SAMPLE_KEY: &str = "rk_test_REPLACE_WITH_A_TEST_KEY";
const SAMPLE_CAMPAIGN: &str = "cmp_01JD8Z3K4M5N6P7Q8R9S0T1V2W";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The packages to build: each function's, and the hello-world's.
const PACKAGES: &[&str] = &[
    "hello-lambda",
    "campaigns",
    "affiliates",
    "applications",
    "assets",
    "conversions",
    "integrations",
    "payouts",
    "reports",
    "portal",
    "webhooks",
    "public",
    "invoices",
    "payout-job",
];

/// Builds each package in release for this host, one cargo call per package
/// as `sam build` does (so a function links only what its own features ask
/// for), and returns the executables cargo reports, by target name.
pub(crate) fn build_release_of(packages: &[&str]) -> BTreeMap<String, PathBuf> {
    let mut bins = BTreeMap::new();
    for package in packages {
        let mut cmd = Command::new(env!("CARGO"));
        // The variables `cargo run` set for this process would change the
        // inner build's fingerprints; the build must match a plain command's.
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            if k.starts_with("CARGO_") && k != "CARGO_TARGET_DIR" && k != "CARGO_HOME" {
                cmd.env_remove(k);
            }
        }
        cmd.args(["build", "--release", "--bins", "-p", package])
            .arg("--message-format=json")
            .current_dir(root());
        eprintln!("refbench: cargo build --release --bins -p {package}");
        let out = cmd.stderr(Stdio::inherit()).output().expect("cargo runs");
        assert!(
            out.status.success(),
            "the release build of {package} failed"
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(msg) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let (Some(name), Some(exe)) =
                (msg["target"]["name"].as_str(), msg["executable"].as_str())
            {
                bins.insert(name.to_string(), PathBuf::from(exe));
            }
        }
    }
    bins
}

/// One start of one binary: init, first invocation, peak RSS in KiB.
struct Start {
    init: Duration,
    first: Duration,
    peak_kib: u64,
}

/// A process's peak RSS (VmHWM) so far, in KiB.
pub(crate) fn peak_rss_kib(child: &Child) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Starts `exe` with only what Lambda and the template would set, and `env`.
async fn start_once(
    name: &str,
    exe: &Path,
    config: &Config,
    event: &Value,
    env: &[(&str, &str)],
) -> Start {
    let api = RuntimeApi::start().await;
    let mut cmd = function_command(exe, name, &api, config);
    cmd.envs(env.iter().copied());
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("the binary starts");
    let deadline = t0 + Duration::from_secs(30);
    while api.first_next().is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    let init = api.first_next().expect("the binary asked for an event") - t0;
    let t1 = Instant::now();
    let outcome = api.invoke(event).await;
    let first = t1.elapsed();
    // With a plain secret the sample key is refused (401): still an answer.
    assert!(
        matches!(outcome, Outcome::Response(_)),
        "{name}: {outcome:?}"
    );
    let peak_kib = peak_rss_kib(&child);
    let _ = child.kill();
    let _ = child.wait();
    Start {
        init,
        first,
        peak_kib,
    }
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// A table, the local signing secret, a merchant key and a campaign to read.
async fn prepare(mut config: Config) -> (std::sync::Arc<App>, Vec<(&'static str, String)>) {
    let suffix = ulid::Ulid::new().to_string().to_lowercase();
    config.table_name = format!("cold-{suffix}");
    config.bucket_name = format!("cold-{suffix}");
    config.api_key_secret_arn = Some(format!("cold-{suffix}/api-key-secret"));
    let app = App::new(config).await;
    refctl::setup::tables_create(&app).await.expect("tables");
    let account = accounts::create_account(&app.store, "Cold", "growth")
        .await
        .unwrap();
    let key = crate::test_key(&app, &account.id).await;
    let campaign = api::domain::ids::new_id(api::domain::ids::IdKind::Campaign);
    (app, vec![(SAMPLE_KEY, key), (SAMPLE_CAMPAIGN, campaign)])
}

/// Builds, starts every binary once uncounted and then `RUNS` times (an
/// HTTP function `RUNS` more with a plain secret) and prints the table.
pub async fn report(config: Config) {
    let bins = build_release_of(PACKAGES);
    let (app, swaps) = prepare(config).await;
    let mut rows = Vec::new();
    for (name, event_file, reads_secret) in BINARIES {
        let exe = bins
            .get(*name)
            .unwrap_or_else(|| panic!("cargo built no {name}"));
        let file = root().join("events").join(event_file);
        let mut text = std::fs::read_to_string(&file).expect("sample event");
        for (from, to) in &swaps {
            text = text.replace(from, to);
        }
        let event: Value = serde_json::from_str(&text).expect("sample event parses");
        // A first start is not counted: it reads the new binary from disk
        // and meets the emulators' first answers.
        start_once(name, exe, &app.config, &event, &[]).await;
        // The starts with and without the secret read alternate, so the
        // machine's drift weighs on both columns alike.
        let (mut starts, mut plains) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            starts.push(start_once(name, exe, &app.config, &event, &[]).await);
            if *reads_secret {
                let env = [("API_KEY_SECRET", PLAIN_SECRET)];
                plains.push(start_once(name, exe, &app.config, &event, &env).await.init);
            }
        }
        let plain = reads_secret.then(|| median(plains));
        let size = std::fs::metadata(exe).map(|m| m.len()).unwrap_or(0);
        rows.push(Row {
            name,
            size,
            init: median(starts.iter().map(|s| s.init).collect()),
            plain,
            first: median(starts.iter().map(|s| s.first).collect()),
            peak_kib: starts.iter().map(|s| s.peak_kib).max().unwrap_or(0),
        });
    }
    crate::drop_table(&app.store).await;
    print_table(&rows);
}

/// A plain signing secret (32 bytes or more), for starts without the read.
const PLAIN_SECRET: &str = "a-plain-secret-for-the-cold-start-bench";

/// One binary's figures: medians, and the highest peak.
struct Row {
    name: &'static str,
    size: u64,
    init: Duration,
    /// Init with a plain secret instead of the Secrets Manager read.
    plain: Option<Duration>,
    first: Duration,
    peak_kib: u64,
}

fn print_table(rows: &[Row]) {
    let (hello_init, hello_first) = (rows[0].init, rows[0].first);
    let ratio = |d: Duration, base: Duration| d.as_secs_f64() / base.as_secs_f64().max(1e-9);
    println!(
        "Cold start and memory, release binaries for this host, {RUNS} starts each (medians; \
         times as ratios to the hello-world's; targets: init at most 3x, peak RSS at most 32 MiB)"
    );
    println!();
    println!(
        "| binary | size (host) | init ÷ hello | init without the secret read ÷ hello \
         | first invocation ÷ hello | peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let plain = row
            .plain
            .map_or("-".to_string(), |d| format!("{:.1}x", ratio(d, hello_init)));
        println!(
            "| {} | {:.2} MiB | {:.1}x | {plain} | {:.1}x | {:.1} MiB |",
            row.name,
            row.size as f64 / 1048576.0,
            ratio(row.init, hello_init),
            ratio(row.first, hello_first),
            row.peak_kib as f64 / 1024.0
        );
    }
}
