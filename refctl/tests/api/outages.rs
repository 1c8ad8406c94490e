//! Retries after an outage: the store stalls 20 seconds, then, soon after it
//! is back, 4 seconds more. Each stall's calls retry within their own bound
//! (attempts and operation timeout), so the short stall is ridden out in
//! full: no quota drained by the long one leaves it without retries.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api::store::config::SdkTimeouts;
use serde_json::json;

use crate::support::{call_on, start, test_config, Resp, Server};

/// A proxy to DynamoDB Local that holds every byte while `paused` (as a
/// stopped process would: what was sent is read once it resumes).
fn pausable_proxy(upstream: &str) -> (String, Arc<AtomicBool>) {
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let paused = Arc::new(AtomicBool::new(false));
    let flag = paused.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (p1, p2) = (flag.clone(), flag.clone());
            std::thread::spawn(move || pipe(client, server, &p1));
            std::thread::spawn(move || pipe(s2, c2, &p2));
        }
    });
    (format!("http://{addr}"), paused)
}

fn pipe(mut from: TcpStream, mut to: TcpStream, paused: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        while paused.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// `n` postbacks at once, each of its own `externalId`.
async fn postbacks(s: &Server, key: &str, n: usize) -> Vec<Resp> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (base, key) = (s.base.clone(), key.to_string());
            tokio::spawn(async move {
                let body = json!({"externalId": format!("o-{}", ulid::Ulid::new()),
                                  "amount": 10, "currency": "USD", "conversionType": "SALE"});
                call_on(
                    &base,
                    "POST",
                    "/api/v1/conversions/postback",
                    Some(&key),
                    Some(body),
                )
                .await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers
}

fn created(answers: &[Resp]) -> usize {
    answers.iter().filter(|r| r.status == 201).count()
}

#[tokio::test]
async fn a_short_stall_after_a_long_outage_still_gets_its_retries() {
    let mut config = test_config();
    let (proxy, paused) = pausable_proxy(config.dynamodb_endpoint.as_deref().unwrap());
    config.dynamodb_endpoint = Some(proxy);
    // Production's attempt bound; a whole call may take long enough for its
    // three attempts to outlast a 4-second stall.
    config.sdk_timeouts = SdkTimeouts {
        connect: Duration::from_secs(1),
        attempt: Duration::from_secs(2),
        operation: Duration::from_secs(9),
        max_attempts: 3,
    };
    let s = start(config, false);
    refctl::setup::tables_create(&s.app)
        .await
        .expect("tables create");
    let m = crate::support::merchant_in(&s.app).await;
    let key = m.test_key.as_str();
    let healthy = postbacks(&s, key, 20).await;
    assert_eq!(created(&healthy), 20, "{:?}", healthy[0].body);

    // 20 seconds down, under steady traffic: every call retries and fails.
    paused.store(true, Ordering::SeqCst);
    let down = Instant::now();
    let mut failed = 0;
    while down.elapsed() < Duration::from_secs(20) {
        let wave = postbacks(&s, key, 20).await;
        failed += wave.iter().filter(|r| r.status == 503).count();
    }
    paused.store(false, Ordering::SeqCst);
    assert!(failed >= 20, "the outage answered {failed} 503s");
    // What the outage held reaches the store first: wait until a postback
    // goes through again (no timing is asserted), then a whole wave.
    let back = Instant::now();
    while created(&postbacks(&s, key, 1).await) == 0 {
        assert!(
            back.elapsed() < Duration::from_secs(90),
            "the store never came back"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let wave = postbacks(&s, key, 20).await;
    let statuses: Vec<u16> = wave.iter().map(|r| r.status).collect();
    assert_eq!(created(&wave), 20, "back up: {statuses:?}");

    // 4 seconds down: the calls retry through it.
    paused.store(true, Ordering::SeqCst);
    let stall = tokio::spawn(async {
        tokio::time::sleep(Duration::from_secs(4)).await;
    });
    let wave = {
        let (s, key) = (&s, key);
        let sent = postbacks(s, key, 20);
        let resume = async {
            stall.await.unwrap();
            paused.store(false, Ordering::SeqCst);
        };
        tokio::join!(sent, resume).0
    };
    let statuses: Vec<u16> = wave.iter().map(|r| r.status).collect();
    assert_eq!(created(&wave), 20, "{statuses:?}");
}
