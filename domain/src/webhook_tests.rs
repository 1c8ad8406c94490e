//! Endpoint validation, rotation and the delivery decisions, as tables.

use std::time::Duration as StdDuration;

use serde_json::json;

use super::*;

fn t0() -> DateTime<Utc> {
    timestamp::parse_datetime("2026-11-22T10:00:00.000Z").unwrap()
}

/// The draft of a body's fields (by their JSON names).
fn draft(body: Value) -> EndpointDraft {
    use crate::patch::from_json::field;
    EndpointDraft {
        url: field(&body, "url").unwrap_or_default(),
        event_types: field(&body, "eventTypes"),
        description: field(&body, "description"),
    }
}

fn new_endpoint(body: Value) -> Result<Endpoint, Error> {
    Endpoint::create(draft(body), Ok(()), t0())
}

fn endpoint() -> Endpoint {
    new_endpoint(json!({"url": "https://hooks.example.com/x"})).unwrap()
}

/// The types kept, or the paths of the issues.
type Expected = Result<Vec<&'static str>, Vec<Value>>;

/// (attempts made before, failingSince, result, task status, retry after (s), endpoint change)
type AttemptCase<'a> = (
    u32,
    Option<DateTime<Utc>>,
    &'a AttemptResult,
    DeliveryStatus,
    Option<i64>,
    EndpointChange,
);

fn issue_paths(e: Error) -> Vec<Vec<Value>> {
    match e {
        Error::Validation(issues) => issues.into_iter().map(|i| i.path).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn creation_defaults_to_every_type_and_checks_its_fields() {
    let e = endpoint();
    assert_eq!(e.event_types, vec!["*"]);
    assert_eq!(e.status, EndpointStatus::Enabled);
    assert!(e.id.starts_with("whe_"));
    assert!(e.secret.to_text().starts_with("whsec_"));
    assert!(!format!("{e:?}").contains(&e.secret.to_text()));

    let many: Vec<String> = vec!["conversion.created".to_string(); 51];
    // (body, Ok(kept types) or Err(paths of the issues))
    let cases: Vec<(Value, Expected)> = vec![
        (
            json!({"url": "u", "eventTypes": ["conversion.created", "payout.paid"]}),
            Ok(vec!["conversion.created", "payout.paid"]),
        ),
        (
            json!({"url": "u", "eventTypes": ["payout.paid", "payout.paid"]}),
            Ok(vec!["payout.paid"]),
        ),
        (json!({"url": "u", "eventTypes": ["*"]}), Ok(vec!["*"])),
        (
            json!({"url": "u", "eventTypes": []}),
            Err(vec![json!(["eventTypes"])]),
        ),
        (
            json!({"url": "u", "eventTypes": many}),
            Err(vec![json!(["eventTypes"])]),
        ),
        (
            json!({"url": "u", "eventTypes": ["payout.paid", "nope"]}),
            Err(vec![json!(["eventTypes", 1])]),
        ),
        (
            json!({"url": "u", "eventTypes": ["webhook.test"]}),
            Err(vec![json!(["eventTypes", 0])]),
        ),
        (
            json!({"url": "u", "eventTypes": ["*", "payout.paid"]}),
            Err(vec![json!(["eventTypes"])]),
        ),
        (
            json!({"url": "u", "description": "d".repeat(501)}),
            Err(vec![json!(["description"])]),
        ),
        (
            json!({"url": "u", "description": "d".repeat(500)}),
            Ok(vec!["*"]),
        ),
    ];
    for (body, expected) in cases {
        let got = new_endpoint(body.clone());
        match expected {
            Ok(types) => assert_eq!(got.unwrap().event_types, types, "{body}"),
            Err(paths) => {
                let got: Vec<Value> = issue_paths(got.unwrap_err())
                    .into_iter()
                    .map(Value::from)
                    .collect();
                assert_eq!(got, paths, "{body}");
            }
        }
    }
}

#[test]
fn a_refused_url_is_reported_with_the_other_issues() {
    let input = draft(json!({"url": "http://10.0.0.1/", "eventTypes": []}));
    let refused = Issue::new(&["url"], "invalid_string", "url must use https");
    let paths = issue_paths(Endpoint::create(input, Err(refused), t0()).unwrap_err());
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[0], vec![json!("url")]);
}

/// The changes a body names, by their JSON names.
fn patch(body: Value) -> EndpointChanges {
    use crate::patch::from_json::patch;
    EndpointChanges {
        url: patch(&body, "url"),
        event_types: patch(&body, "eventTypes"),
        description: patch(&body, "description"),
        status: patch(&body, "status"),
    }
}

#[test]
fn patches_change_what_is_sent_and_status_moves_the_reason() {
    let e = endpoint();
    let later = t0() + Duration::minutes(1);
    let off = e
        .apply(patch(json!({"status": "DISABLED"})), Ok(()), later)
        .unwrap();
    assert_eq!(off.status, EndpointStatus::Disabled);
    assert_eq!(off.disabled_reason.as_deref(), Some(MANUAL_REASON));
    assert_eq!((off.stamps.version, off.stamps.updated_at), (1, later));

    let mut failing = off.clone();
    failing.failing_since = Some(t0());
    let on = failing
        .apply(patch(json!({"status": "ENABLED"})), Ok(()), later)
        .unwrap();
    assert_eq!(on.status, EndpointStatus::Enabled);
    assert_eq!((on.disabled_reason.clone(), on.failing_since), (None, None));

    let changed = e
        .apply(
            patch(json!({"url": "https://b.example.com/", "eventTypes": ["payout.paid"], "description": "ops"})),
            Ok(()),
            later,
        )
        .unwrap();
    assert_eq!(changed.url, "https://b.example.com/");
    assert_eq!(changed.event_types, vec!["payout.paid"]);
    assert_eq!(changed.description.as_deref(), Some("ops"));
    assert_eq!(changed.secret, e.secret);
    let cleared = changed
        .apply(patch(json!({"description": null})), Ok(()), later)
        .unwrap();
    assert_eq!(cleared.description, None);

    // (patch, paths of the issues)
    let refused = [
        (json!({"url": null}), vec![json!("url")]),
        (json!({"eventTypes": null}), vec![json!("eventTypes")]),
        (json!({"status": null}), vec![json!("status")]),
        (
            json!({"eventTypes": ["x"]}),
            vec![json!("eventTypes"), json!(0)],
        ),
    ];
    for (body, path) in refused {
        let paths = issue_paths(e.apply(patch(body.clone()), Ok(()), later).unwrap_err());
        assert_eq!(paths, vec![path], "{body}");
    }
}

#[test]
fn a_rotation_keeps_the_old_secret_signing_for_a_day() {
    let e = endpoint();
    assert_eq!(e.signing_secrets(t0()), vec![&e.secret]);
    let r = e.rotate(t0());
    assert_ne!(r.secret, e.secret);
    let cases = [
        (Duration::zero(), 2),
        (Duration::hours(23), 2),
        (Duration::hours(24), 1),
        (Duration::days(3), 1),
    ];
    for (after, count) in cases {
        let secrets = r.signing_secrets(t0() + after);
        assert_eq!(secrets.len(), count, "{after}");
        assert_eq!(secrets[0], &r.secret);
        if count == 2 {
            assert_eq!(secrets[1], &e.secret);
        }
    }
    let again = r.rotate(t0() + Duration::hours(1));
    assert_eq!(again.previous_secret.as_ref(), Some(&r.secret));
    assert_eq!(again.stamps.version, 2);
}

#[test]
fn endpoints_receive_subscribed_events_from_their_creation_on_while_enabled() {
    let mut e = new_endpoint(json!({"url": "u", "eventTypes": ["conversion.created"]})).unwrap();
    let event = |t: EventType, at| Published::unstored(t, json!({}), at);
    let later = t0() + Duration::seconds(1);
    assert!(e.receives(&event(EventType::ConversionCreated, later)));
    assert!(e.receives(&event(EventType::ConversionCreated, t0())));
    assert!(!e.receives(&event(EventType::PayoutPaid, later)));
    assert!(!e.receives(&event(
        EventType::ConversionCreated,
        t0() - Duration::seconds(1)
    )));
    e.status = EndpointStatus::Disabled;
    assert!(!e.receives(&event(EventType::ConversionCreated, later)));
    assert!(e.require_enabled("replay").is_err());
}

fn result(verdict: Verdict, status: Option<u16>) -> AttemptResult {
    AttemptResult {
        status,
        duration_ms: 12,
        error: status.is_none().then(|| "timed out".to_string()),
        response_excerpt: None,
        verdict,
    }
}

fn task_after(attempts: u32) -> Task {
    let mut t = Task::start(
        None,
        "whe_1",
        ("evt_1", EventType::ConversionCreated),
        t0(),
        Duration::seconds(60),
    );
    t.attempt = attempts;
    t
}

#[test]
fn attempts_decide_the_task_the_record_and_the_endpoint() {
    let schedule = RetrySchedule::parse("1s,5s").unwrap();
    let now = t0() + Duration::seconds(2);
    let ok = result(Verdict::Delivered, Some(200));
    let gone = result(Verdict::Gone, Some(410));
    let down = result(Verdict::Retry, Some(500));
    let silent = result(Verdict::Retry, None);
    let since = Some(t0() - Duration::days(1));
    let long_ago = Some(t0() - Duration::days(5));
    use DeliveryStatus::*;
    use EndpointChange::*;
    // (attempts made before, failingSince, result, task status, retry after (s), endpoint change)
    let cases: Vec<AttemptCase> = vec![
        (0, None, &ok, Succeeded, None, Keep),
        (0, since, &ok, Succeeded, None, Recovered),
        (0, None, &gone, Failed, None, Disable(GONE_REASON)),
        (1, since, &gone, Failed, None, Disable(GONE_REASON)),
        (0, None, &down, Pending, Some(1), StartFailing(t0())),
        (1, None, &silent, Pending, Some(5), StartFailing(t0())),
        (1, since, &down, Pending, Some(5), Keep),
        (2, None, &down, Failed, None, StartFailing(t0())),
        (2, since, &silent, Failed, None, Keep),
        (0, long_ago, &down, Failed, None, Disable(FAILING_REASON)),
        (0, long_ago, &ok, Succeeded, None, Recovered),
    ];
    for (i, (before, failing_since, res, status, retry, change)) in cases.into_iter().enumerate() {
        let mut e = endpoint();
        e.failing_since = failing_since;
        let task = task_after(before);
        let out = after_attempt(&task, &e, res, &schedule, t0(), now);
        assert_eq!(out.task.status, status, "case {i}");
        assert_eq!(out.task.attempt, before + 1, "case {i}");
        assert_eq!(out.task.version, task.version + 1, "case {i}");
        let next = retry.map(|s| now + Duration::seconds(s));
        assert_eq!(out.task.next_attempt_at, next, "case {i}");
        assert_eq!(out.endpoint, change, "case {i}");
        let own = match res.verdict {
            Verdict::Delivered => Succeeded,
            _ => Failed,
        };
        assert_eq!(
            out.attempt.status, own,
            "case {i}: the attempt's own outcome"
        );
        assert_eq!(out.attempt.attempt, before + 1, "case {i}");
        assert_eq!(out.attempt.next_attempt_at, next, "case {i}");
        assert_eq!(out.attempt.response_status, res.status, "case {i}");
        assert_eq!(out.attempt.attempted_at, t0(), "case {i}");
        assert!(out.attempt.id.starts_with("dlv_"), "case {i}");
    }
}

#[test]
fn the_default_schedule_gives_ten_attempts() {
    let schedule = RetrySchedule::default();
    let e = endpoint();
    let down = result(Verdict::Retry, Some(503));
    let mut task = task_after(0);
    let mut now = t0();
    let mut attempts = 0;
    while task.status != DeliveryStatus::Failed {
        let out = after_attempt(&task, &e, &down, &schedule, now, now);
        attempts += 1;
        task = out.task;
        if let Some(next) = task.next_attempt_at {
            now = next;
        }
        assert!(attempts <= 10);
    }
    assert_eq!(attempts, 10);
    assert_eq!(schedule.delays()[0], StdDuration::from_secs(5));
}

#[test]
fn claims_take_due_pending_tasks_only() {
    let lease = Duration::seconds(60);
    let t = Task::schedule(None, "whe_1", ("evt_1", EventType::PayoutPaid), t0());
    let claimed = t.claim(t0(), lease).unwrap();
    assert_eq!(claimed.next_attempt_at, Some(t0() + lease));
    assert_eq!(claimed.version, t.version + 1);
    assert_eq!(claimed.claim(t0() + Duration::seconds(59), lease), None);
    assert!(claimed.claim(t0() + lease, lease).is_some());
    let done = claimed.abandon(t0());
    assert_eq!(done.status, DeliveryStatus::Failed);
    assert_eq!(done.claim(t0() + Duration::days(1), lease), None);
    let rerun = Task::start(
        Some(&done),
        "whe_1",
        ("evt_1", EventType::PayoutPaid),
        t0(),
        lease,
    );
    assert_eq!((rerun.attempt, rerun.version), (0, done.version + 1));
    assert_eq!(rerun.status, DeliveryStatus::Pending);
}

#[test]
fn the_payload_carries_id_type_timestamp_and_data_in_order() {
    let e = Published::unstored(EventType::PayoutPaid, json!({"id": "po_1"}), t0());
    let body = String::from_utf8(payload(&e).unwrap()).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"id":"{}","type":"payout.paid","timestamp":"2026-11-22T10:00:00.000Z","data":{{"id":"po_1"}}}}"#,
            e.id
        )
    );
    let test = test_event(&endpoint(), t0());
    assert_eq!(test.event_type, EventType::WebhookTest);
    let rec = test_attempt("whe_1", &test, &result(Verdict::Gone, Some(410)), t0());
    assert_eq!((rec.status, rec.attempt), (DeliveryStatus::Failed, 1));
}

#[test]
fn an_account_holds_at_most_sixteen_endpoints_a_mode() {
    for (count, room) in [(0, true), (15, true), (16, false), (40, false)] {
        let got = room_for_endpoint(count, MAX_ENDPOINTS);
        assert_eq!(got.is_ok(), room, "{count}");
        if let Err(e) = got {
            assert_eq!(e.code().as_str(), "LIMIT_EXCEEDED");
        }
    }
}

#[test]
fn the_stored_form_keeps_the_secrets_and_reads_back() {
    let e = endpoint().rotate(t0());
    let stored = serde_json::to_value(&e).unwrap();
    let back: Endpoint = serde_json::from_value(stored).unwrap();
    assert_eq!(back, e);
    assert!(e.previous_secret.is_some());
}
