//! The outbox: every change of a merchant-visible record records its event
//! once, in the change's own transaction, with the record's API view; a
//! change that fails records nothing.

use std::collections::BTreeMap;

use api::domain::event::{EventType, Published};
use api::domain::tenant::Mode;
use api::store::events::{self, EventFilter};
use api::store::page::PageRequest;
use serde_json::{json, Value};

use crate::payouts::Fx;

/// Every event of the fixture's test-mode tenant, by type.
async fn recorded(fx: &Fx) -> BTreeMap<&'static str, Vec<Published>> {
    let mut out: BTreeMap<&'static str, Vec<Published>> = BTreeMap::new();
    let mut page = PageRequest {
        limit: 100,
        ..Default::default()
    };
    loop {
        let p = events::list(
            &fx.app.store,
            &fx.tenant(Mode::Test),
            &EventFilter::default(),
            &page,
        )
        .await
        .unwrap();
        for e in p.items {
            out.entry(e.event_type.as_str()).or_default().push(e);
        }
        match p.next_cursor {
            Some(c) => page.cursor = Some(c),
            None => return out,
        }
    }
}

fn count(events: &BTreeMap<&'static str, Vec<Published>>, t: EventType) -> usize {
    events.get(t.as_str()).map_or(0, Vec::len)
}

/// The ids the events of a type name, in any order.
fn ids(events: &BTreeMap<&'static str, Vec<Published>>, t: EventType) -> Vec<String> {
    let mut v: Vec<String> = events
        .get(t.as_str())
        .into_iter()
        .flatten()
        .map(|e| e.data["id"].as_str().unwrap_or_default().to_string())
        .collect();
    v.sort();
    v
}

async fn ok(fx: &Fx, method: &str, path: &str, body: Option<Value>) -> Value {
    let r = fx.call(method, path, body).await;
    assert!(
        r.status == 200 || r.status == 201,
        "{method} {path}: {:?}",
        r.body
    );
    r.data().clone()
}

#[tokio::test]
async fn every_change_records_its_event_once_with_the_records_view() {
    let fx = Fx::new().await;
    let cmp = fx.test_campaign.clone();
    ok(
        &fx,
        "PUT",
        &format!("/api/v1/campaigns/{cmp}"),
        Some(json!({"isPublic": true})),
    )
    .await;
    // Affiliates: a merchant's, updated; two sign-ups, one accepted, one rejected.
    let aff = fx.earner(Mode::Test, "PAYPAL", &[100, 200]).await;
    ok(
        &fx,
        "PUT",
        &format!("/api/v1/affiliates/{aff}"),
        Some(json!({"name": "Renamed"})),
    )
    .await;
    let mut apps = Vec::new();
    for who in ["ann", "bob"] {
        let body =
            json!({"campaignId": cmp, "email": format!("{who}@signup.example.com"), "name": who});
        let r = crate::support::call_on(
            &fx.server.base,
            "POST",
            "/api/v1/affiliates/signup",
            None,
            Some(body.clone()),
        )
        .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        apps.push(r.data()["applicationId"].as_str().unwrap().to_string());
        // A second sign-up with the same e-mail fails and records nothing.
        let again = crate::support::call_on(
            &fx.server.base,
            "POST",
            "/api/v1/affiliates/signup",
            None,
            Some(body),
        )
        .await;
        assert_eq!(again.status, 409, "{:?}", again.body);
    }
    ok(
        &fx,
        "POST",
        &format!("/api/v1/applications/{}/accept", apps[0]),
        Some(json!({})),
    )
    .await;
    ok(
        &fx,
        "POST",
        &format!("/api/v1/applications/{}/reject", apps[1]),
        Some(json!({"reason": "no"})),
    )
    .await;
    // Assets: created, updated, archived; archiving again fails.
    let asset = ok(
        &fx,
        "POST",
        "/api/v1/assets/swipe-copy",
        Some(json!({"name": "A", "body": "B"})),
    )
    .await;
    let ast = asset["id"].as_str().unwrap().to_string();
    ok(
        &fx,
        "PATCH",
        &format!("/api/v1/assets/{ast}"),
        Some(json!({"name": "A2"})),
    )
    .await;
    ok(&fx, "DELETE", &format!("/api/v1/assets/{ast}"), None).await;
    assert_eq!(
        fx.call("DELETE", &format!("/api/v1/assets/{ast}"), None)
            .await
            .status,
        409
    );
    // Payouts: created, invoiced, approved, processed and paid; one rejected, one cancelled.
    let paid = fx.approved(Mode::Test, 1).await.remove(0);
    ok(
        &fx,
        "POST",
        "/api/v1/payouts/batch-process",
        Some(json!({"payoutIds": [paid]})),
    )
    .await;
    let rejected = fx.pending(Mode::Test, 1).await.remove(0);
    ok(
        &fx,
        "POST",
        &format!("/api/v1/payouts/{rejected}/reject"),
        Some(json!({"reason": "no"})),
    )
    .await;
    let cancelled = fx.pending(Mode::Test, 1).await.remove(0);
    ok(
        &fx,
        "POST",
        "/api/v1/payouts/bulk-cancel",
        Some(json!({"payoutIds": [cancelled], "reason": "dup"})),
    )
    .await;
    // A reversal, then a second one that fails.
    let pending = fx.earner(Mode::Test, "PAYPAL", &[50]).await;
    let list = ok(
        &fx,
        "GET",
        &format!("/api/v1/conversions?affiliate_id={pending}"),
        None,
    )
    .await;
    let cnv = list[0]["id"].as_str().unwrap().to_string();
    let r = fx
        .call(
            "POST",
            &format!("/api/v1/conversions/{cnv}/reverse"),
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        fx.call(
            "POST",
            &format!("/api/v1/conversions/{cnv}/reverse"),
            Some(json!({}))
        )
        .await
        .status,
        409
    );

    let ev = recorded(&fx).await;
    use EventType as T;
    // Two campaigns per fixture (test and live), one of them in this tenant.
    assert_eq!(ids(&ev, T::CampaignCreated), vec![cmp.clone()]);
    assert_eq!(ids(&ev, T::CampaignUpdated), vec![cmp.clone()]);
    // earner x4 (aff, paid, rejected, cancelled payees and `pending`) + 2 sign-ups.
    assert_eq!(count(&ev, T::AffiliateCreated), 2 + 1 + 1 + 1 + 1 + 1);
    assert_eq!(count(&ev, T::ApplicationCreated), 2);
    assert_eq!(ids(&ev, T::ApplicationAccepted), vec![apps[0].clone()]);
    assert_eq!(ids(&ev, T::ApplicationRejected), vec![apps[1].clone()]);
    // The merchant's rename, and the two decisions' affiliate changes.
    assert_eq!(count(&ev, T::AffiliateUpdated), 3);
    assert_eq!(ids(&ev, T::AssetCreated), vec![ast.clone()]);
    assert_eq!(ids(&ev, T::AssetUpdated), vec![ast.clone()]);
    assert_eq!(ids(&ev, T::AssetArchived), vec![ast.clone()]);
    assert_eq!(ev[T::AssetArchived.as_str()][0].data["status"], "ARCHIVED");
    // Six sales: aff 2, one each for the three payout payees, `pending` 1.
    assert_eq!(count(&ev, T::ConversionCreated), 6);
    assert_eq!(ids(&ev, T::ConversionReversed), vec![cnv.clone()]);
    // Each sale was approved once by the job (no hold) but `pending`'s,
    // reversed before the job ran again.
    assert_eq!(count(&ev, T::ConversionApproved), 5);
    assert_eq!(
        ev[T::ConversionReversed.as_str()][0].data["status"],
        "REVERSED"
    );
    let mut created = ids(&ev, T::PayoutCreated);
    created.retain(|id| [&paid, &rejected, &cancelled].contains(&id));
    assert_eq!(created.len(), 3, "{:?}", ids(&ev, T::PayoutCreated));
    assert_eq!(ids(&ev, T::PayoutInvoiceUploaded), vec![paid.clone()]);
    assert_eq!(ids(&ev, T::PayoutApproved), vec![paid.clone()]);
    assert_eq!(ids(&ev, T::PayoutProcessing), vec![paid.clone()]);
    assert_eq!(ids(&ev, T::PayoutPaid), vec![paid.clone()]);
    assert_eq!(ev[T::PayoutPaid.as_str()][0].data["status"], "PAID");
    assert_eq!(ids(&ev, T::PayoutRejected), vec![rejected.clone()]);
    assert_eq!(ids(&ev, T::PayoutCancelled), vec![cancelled.clone()]);
    // Event data is the API view: no private fields.
    for list in ev.values() {
        for e in list {
            let text = e.data.to_string();
            assert!(
                !text.contains("invoiceKey") && !text.contains("invoices/"),
                "{text}"
            );
            assert!(
                !text.contains("keyHash") && !text.contains("gsi1pk"),
                "{text}"
            );
        }
    }
}

/// Events written before they were keyed by time (`pk = evt_…`, listed
/// through GSI1) are listed among the newer ones in time order, across
/// pages, and found by id, until their 30 days are over.
#[tokio::test]
async fn events_written_keyed_by_id_are_listed_in_order_and_found() {
    let fx = Fx::new().await;
    let tenant = fx.tenant(Mode::Test);
    fx.earner(Mode::Test, "PAYPAL", &[100, 200, 300]).await;
    let newer = recorded(&fx).await;
    let created = &newer[EventType::ConversionCreated.as_str()];
    assert_eq!(created.len(), 3);
    // Two events as the older layout stored them: one between two newer
    // events, one older than all of them.
    let (first, second) = (created[2].created_at, created[1].created_at);
    let between = first + (second - first) / 2;
    let mut older = Vec::new();
    for at in [between, first - chrono::Duration::hours(1)] {
        let e = Published::unstored(EventType::ConversionCreated, json!({"id": "cnv_older"}), at);
        let mut item = events::item(&tenant, &e).unwrap();
        let sk = api::store::string_of(&item, "sk").unwrap().to_string();
        for (name, value) in [
            ("pk", e.id.clone()),
            ("sk", "R".to_string()),
            ("gsi1pk", format!("{}#test#EVT", fx.m.account_id)),
            ("gsi1sk", sk),
        ] {
            item.insert(name.into(), api::store::string_value(value));
        }
        fx.app.store.put(item).await.unwrap();
        older.push(e.id);
    }

    // Pages of 2, through cursors: every event once, newest first.
    let mut listed: Vec<(String, String)> = Vec::new();
    let mut path = "/api/v1/events?limit=2".to_string();
    loop {
        let r = fx.call("GET", &path, None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        for e in r.data().as_array().unwrap() {
            let at = e["createdAt"].as_str().unwrap().to_string();
            listed.push((at, e["id"].as_str().unwrap().to_string()));
        }
        match r.body["meta"]["nextCursor"].as_str() {
            Some(c) => path = format!("/api/v1/events?limit=2&cursor={c}"),
            None => break,
        }
    }
    let total: usize = newer.values().map(Vec::len).sum();
    assert_eq!(listed.len(), total + 2, "{listed:?}");
    let mut sorted = listed.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(listed, sorted, "newest first");
    let at = |id: &str| listed.iter().position(|(_, x)| x == id).unwrap();
    assert!(at(&created[1].id) < at(&older[0]) && at(&older[0]) < at(&created[2].id));
    assert_eq!(at(&older[1]), listed.len() - 1);

    // By type, by time window, and by id.
    let r = fx
        .call("GET", "/api/v1/events?type=conversion.created", None)
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 5, "{:?}", r.body);
    let all_of_type = r.each("id");
    // Through cursors, the same five; no cursor shows the event partition,
    // and a cursor is refused in another window.
    let (mut paged, mut cursors) = (Vec::new(), Vec::new());
    let mut path = "/api/v1/events?type=conversion.created&limit=2".to_string();
    loop {
        let r = fx.call("GET", &path, None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        paged.extend(r.each("id"));
        match r.body["meta"]["nextCursor"].as_str() {
            Some(c) => {
                cursors.push(c.to_string());
                path = format!("/api/v1/events?type=conversion.created&limit=2&cursor={c}");
            }
            None => break,
        }
    }
    assert_eq!(paged, all_of_type);
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    for c in &cursors {
        let shown = String::from_utf8(engine.decode(c).unwrap()).unwrap();
        assert!(
            !shown.contains("acct_") && !shown.contains("#EVT"),
            "{shown}"
        );
    }
    let from = api::domain::timestamp::format(&(first - chrono::Duration::minutes(1)));
    let elsewhere = format!(
        "/api/v1/events?type=conversion.created&limit=2&from={from}&cursor={}",
        cursors[0]
    );
    fx.call("GET", &elsewhere, None)
        .await
        .assert_error(400, "VALIDATION_FAILED");
    let r = fx
        .call(
            "GET",
            &format!("/api/v1/events?from={from}&limit=100"),
            None,
        )
        .await;
    assert_eq!(
        r.data().as_array().unwrap().len(),
        total + 1,
        "{:?}",
        r.body
    );
    for id in older.iter().chain([&created[0].id]) {
        let r = fx.call("GET", &format!("/api/v1/events/{id}"), None).await;
        assert_eq!(
            (r.status, r.data()["id"].as_str()),
            (200, Some(id.as_str()))
        );
    }
    let r = fx
        .call_as(
            &fx.m.live_key,
            "GET",
            &format!("/api/v1/events/{}", older[0]),
            None,
        )
        .await;
    r.assert_error(404, "NOT_FOUND");
}

/// The `*.updated` events of one record, by its id.
async fn updates_of(key: &str, event_type: &str, id: &str) -> usize {
    let base = &crate::support::server().base;
    crate::support::events_about(base, key, event_type, id)
        .await
        .len()
}

#[tokio::test]
async fn an_edit_that_changes_nothing_writes_nothing() {
    use crate::support::{affiliate_with_code, call, campaign, merchant};
    let m = merchant().await;
    let key = m.test_key.as_str();
    let cmp = campaign(key, json!({"name": "Same", "metadata": {"k": "v"}})).await;
    let aff = affiliate_with_code(key, cmp["id"].as_str().unwrap(), "NOOP01").await;
    let asset = call(
        "POST",
        "/api/v1/assets/swipe-copy",
        Some(key),
        Some(json!({"name": "A", "body": "B"})),
    )
    .await;
    assert_eq!(asset.status, 201, "{:?}", asset.body);
    let asset = asset.data().clone();
    let endpoint = call(
        "POST",
        "/api/v1/webhook-endpoints",
        Some(key),
        Some(json!({"url": "http://127.0.0.1:9/hook", "description": "d"})),
    )
    .await;
    assert_eq!(endpoint.status, 201, "{:?}", endpoint.body);
    let endpoint = endpoint.data().clone();
    let integration = call(
        "POST",
        "/api/v1/integrations",
        Some(key),
        Some(json!({"provider": "STRIPE", "signingSecret": "whsec_0a1b2c3d4e5f60718293a4b5c6d7e8f9", "description": "billing"})),
    )
    .await;
    assert_eq!(integration.status, 201, "{:?}", integration.body);
    let integration = integration.data().clone();
    // Each record, restated as it is, then changed; the event type of its
    // changes (none for an endpoint).
    let cases = [
        (
            "PUT",
            "campaigns",
            &cmp,
            json!({"name": "Same", "commissionValue": 10.0, "metadata": {"k": "v"}}),
            json!({"name": "Other"}),
            Some("campaign.updated"),
        ),
        (
            "PUT",
            "affiliates",
            &aff,
            json!({"name": "NOOP01", "metadata": {}}),
            json!({"name": "Other"}),
            Some("affiliate.updated"),
        ),
        (
            "PATCH",
            "assets",
            &asset,
            json!({"name": "A", "body": "B"}),
            json!({"body": "C"}),
            Some("asset.updated"),
        ),
        (
            "PATCH",
            "webhook-endpoints",
            &endpoint,
            json!({"description": "d", "status": "ENABLED"}),
            json!({"description": "e"}),
            None,
        ),
        (
            "PATCH",
            "integrations",
            &integration,
            json!({"description": "billing", "status": "ENABLED"}),
            json!({"description": "other"}),
            None,
        ),
    ];
    for (method, kind, record, same, change, event_type) in cases {
        let id = record["id"].as_str().unwrap();
        let path = format!("/api/v1/{kind}/{id}");
        let before = call("GET", &path, Some(key), None).await;
        let r = call(method, &path, Some(key), Some(same)).await;
        assert_eq!(r.status, 200, "{kind}: {:?}", r.body);
        assert_eq!(r.data(), before.data(), "{kind}: the record as it was");
        let after = call("GET", &path, Some(key), None).await;
        assert_eq!(
            after.data()["updatedAt"],
            before.data()["updatedAt"],
            "{kind}"
        );
        if let Some(t) = event_type {
            assert_eq!(updates_of(key, t, id).await, 0, "{kind}: no event");
        }
        let r = call(method, &path, Some(key), Some(change)).await;
        assert_eq!(r.status, 200, "{kind}: {:?}", r.body);
        assert_ne!(
            r.data()["updatedAt"],
            before.data()["updatedAt"],
            "{kind}: a change is stamped"
        );
        if let Some(t) = event_type {
            assert_eq!(updates_of(key, t, id).await, 1, "{kind}: one event");
        }
    }
    // The affiliate's own edit through its portal: its name, restated.
    let aff_id = aff["id"].as_str().unwrap();
    let path = format!("/api/v1/affiliates/{aff_id}/portal-sessions");
    let session = call("POST", &path, Some(key), Some(json!({}))).await;
    assert_eq!(session.status, 201, "{:?}", session.body);
    let token = session.data()["token"].as_str().unwrap().to_string();
    let path = format!("/api/v1/affiliates/{aff_id}");
    let before = call("GET", &path, Some(key), None).await;
    let r = call(
        "PATCH",
        "/api/v1/portal/me",
        Some(&token),
        Some(json!({"name": "Other"})),
    )
    .await;
    assert_eq!(r.status, 200, "portal: {:?}", r.body);
    let after = call("GET", &path, Some(key), None).await;
    assert_eq!(after.data(), before.data(), "portal: the record as it was");
    assert_eq!(
        updates_of(key, "affiliate.updated", aff_id).await,
        1,
        "portal: no event"
    );
}
