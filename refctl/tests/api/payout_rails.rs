//! Payouts paid through Stripe Connect (contract section 14), against the
//! stack's Stripe stand-in (`scripts/standin/`), with the faults a
//! money-moving path must survive: an answer lost after the transfer, a
//! crash between PROCESSING and the call, two callers at once, a refusal
//! then a retry, the provider down. Each test's merchant has its own Stripe
//! key, so the stand-in's objects and faults are its own.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use api::domain::payout_rail::Rail;
use api::domain::tenant::Mode;
use api::services::payout_job::{self as job, Budget};
use api::services::payout_rails;
use api::store::payouts as store_payouts;
use serde_json::{json, Value};

use crate::integrations::{official_signature, STRIPE_SECRET};
use crate::payouts::{processed_by_hand, Fx};
use crate::support::{
    call_on, http_client, rails_later_server, rails_server, raw, start, test_config, Resp, Server,
};

/// The stand-in's address (the test stack's, as `scripts/test.sh` sets it).
fn standin() -> String {
    std::env::var("STRIPE_API_BASE").unwrap_or_else(|_| "http://127.0.0.1:18070".into())
}

pub(crate) async fn standin_call(method: &str, path: &str, body: Option<Value>) -> Value {
    let client = http_client();
    let url = format!("{}{path}", standin());
    let request = match method {
        "GET" => client.get(url),
        _ => client.post(url).json(&body.unwrap_or(json!({}))),
    };
    let r = request
        .send()
        .await
        .expect("the Stripe stand-in (scripts/stack.sh)");
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap()
}

/// What a stand-in list at `path` holds.
async fn standin_list(path: &str) -> Vec<Value> {
    standin_call("GET", path, None)
        .await
        .as_array()
        .unwrap()
        .clone()
}

/// The transfers the stand-in made for a payout.
async fn transfers_of(payout_id: &str) -> Vec<Value> {
    standin_list(&format!("/_standin/transfers?match={payout_id}")).await
}

/// The idempotency keys of the transfer requests the stand-in received for a payout.
async fn transfer_keys(payout_id: &str) -> Vec<String> {
    let path = format!("/_standin/requests?path=/v1/transfers&match={payout_id}");
    let found = standin_call("GET", &path, None).await;
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn fault(payout_id: &str, fault: Value) {
    let mut body = json!({"path": "/v1/transfers", "match": payout_id});
    for (k, v) in fault.as_object().unwrap() {
        body[k] = v.clone();
    }
    standin_call("POST", "/_standin/faults", Some(body)).await;
}

/// A merchant whose test mode pays through Stripe.
struct Rails {
    fx: Fx,
    integration: String,
    api_key: String,
}

impl Rails {
    async fn new() -> Rails {
        Self::on(rails_server()).await
    }

    async fn on(server: &'static Server) -> Rails {
        let fx = Fx::on(server).await;
        let api_key = format!("sk_test_{}", ulid::Ulid::new());
        let body = json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET, "apiKey": api_key});
        let r = fx.call("POST", "/api/v1/integrations", Some(body)).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        assert_eq!(r.data()["canPay"], true);
        assert!(
            !r.body.to_string().contains(&api_key),
            "the key is write-only"
        );
        let integration = r.data()["id"].as_str().unwrap().to_string();
        Rails {
            fx,
            integration,
            api_key,
        }
    }

    async fn affiliate(&self, id: &str) -> Value {
        let r = self
            .fx
            .call("GET", &format!("/api/v1/affiliates/{id}"), None)
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.data().clone()
    }

    /// An affiliate paid through Stripe, its account created (PENDING).
    async fn onboarding(&self, amounts: &[u32]) -> (String, String) {
        let aff = self.fx.earner(Mode::Test, "STRIPE", amounts).await;
        let path = format!("/api/v1/affiliates/{aff}/payout-account");
        let r = self.fx.call("POST", &path, None).await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        assert!(r.data()["url"]
            .as_str()
            .unwrap()
            .contains("/_standin/onboarding/"));
        let account = self.affiliate(&aff).await["payoutAccount"].clone();
        assert_eq!(account["status"], "PENDING", "{account}");
        (aff, account["accountId"].as_str().unwrap().to_string())
    }

    /// An affiliate whose account Stripe says can be paid.
    async fn connected(&self, amounts: &[u32]) -> (String, String) {
        let (aff, account) = self.onboarding(amounts).await;
        let r = self.account_updated(&account, true).await;
        assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
        let shown = self.affiliate(&aff).await["payoutAccount"].clone();
        assert_eq!(
            (&shown["status"], &shown["requirementsDue"]),
            (&json!("ACTIVE"), &json!([]))
        );
        (aff, account)
    }

    /// Stripe's `account.updated` for `account`, enabled or not at the stand-in.
    async fn account_updated(&self, account: &str, enabled: bool) -> Resp {
        let change = match enabled {
            true => json!({"payouts_enabled": true, "charges_enabled": true,
                "capabilities": {"transfers": "active"},
                "requirements": {"currently_due": [], "disabled_reason": null}}),
            false => json!({}),
        };
        let object = standin_call(
            "POST",
            &format!("/_standin/stripe/accounts/{account}"),
            Some(change),
        )
        .await;
        self.deliver(account, object).await
    }

    async fn deliver(&self, account: &str, object: Value) -> Resp {
        self.deliver_signed(account, object, STRIPE_SECRET).await
    }

    /// Stripe's `account.updated` signed with `secret` by Stripe's library.
    async fn deliver_signed(&self, account: &str, object: Value, secret: &str) -> Resp {
        let event = json!({"id": format!("evt_{}", ulid::Ulid::new()), "object": "event",
            "type": "account.updated", "livemode": false, "account": account,
            "created": chrono::Utc::now().timestamp(), "data": {"object": object}});
        let body = event.to_string();
        let sig = official_signature("stripe", secret, &body, chrono::Utc::now().timestamp());
        let path = format!("/api/v1/integrations/{}/events", self.integration);
        let headers = [
            ("stripe-signature", sig.as_str()),
            ("content-type", "application/json"),
        ];
        raw(
            &self.fx.server.base,
            "POST",
            &path,
            None,
            &headers,
            Some(body.into_bytes()),
        )
        .await
    }

    /// A merchant whose payout job runs 11 minutes ahead (on a table of its
    /// own), and an APPROVED payout of a connected affiliate.
    async fn approved_ahead() -> (Rails, String) {
        let rails = Rails::on(rails_later_server()).await;
        let (aff, _) = rails.connected(&[100]).await;
        let id = rails.approved(&aff).await;
        (rails, id)
    }

    /// A connected affiliate's payout whose transfer Stripe made and whose
    /// answer was lost: batch-process answered 503 for it.
    async fn answer_lost() -> (Rails, String) {
        let rails = Rails::new().await;
        let (aff, _) = rails.connected(&[100]).await;
        let id = rails.approved(&aff).await;
        fault(&id, json!({"kind": "drop_after"})).await;
        let lost = rails.batch_process(&id).await;
        assert_eq!(
            failure(&lost)["code"],
            "SERVICE_UNAVAILABLE",
            "{:?}",
            lost.body
        );
        (rails, id)
    }

    /// The affiliate's one payout, APPROVED.
    async fn approved(&self, aff: &str) -> String {
        // Another test's job run may be assembling this payout (invisible
        // until its claim completes): run the job again, a bounded number of times.
        let mut found = Vec::new();
        for _ in 0..5 {
            self.fx.run_job().await;
            found = self.fx.payouts_of(Mode::Test, aff).await;
            if !found.is_empty() {
                break;
            }
        }
        assert_eq!(found.len(), 1, "{found:?}");
        let id = found[0]["id"].as_str().unwrap().to_string();
        self.fx.attach(Mode::Test, &id).await;
        let r = self
            .fx
            .call("POST", &format!("/api/v1/payouts/{id}/approve"), None)
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        id
    }

    async fn batch_process_on(&self, base: &str, ids: &[&str]) -> Resp {
        let body = json!({"payoutIds": ids});
        let r = call_on(
            base,
            "POST",
            "/api/v1/payouts/batch-process",
            Some(&self.fx.m.test_key),
            Some(body),
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r
    }

    /// batch-process of `id`, which answers it processed as `status`.
    async fn processed_as(&self, id: &str, status: &str) -> Resp {
        let r = self.batch_process(id).await;
        assert_eq!(r.data()["processed"][0]["status"], status, "{:?}", r.body);
        r
    }

    /// batch-process of `id`, Stripe answering its transfer `status` with `body`.
    async fn answered(&self, id: &str, status: u16, body: Value) -> Resp {
        fault(
            id,
            json!({"kind": "status", "status": status, "body": body}),
        )
        .await;
        self.batch_process(id).await
    }

    async fn batch_process(&self, id: &str) -> Resp {
        self.batch_process_on(&self.fx.server.base, &[id]).await
    }

    async fn payout(&self, id: &str) -> Value {
        let r = self
            .fx
            .call("GET", &format!("/api/v1/payouts/{id}"), None)
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.data().clone()
    }
}

/// The one failure of a batch-process answer.
fn failure(r: &Resp) -> Value {
    let failed = r.data()["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{:?}", r.body);
    failed[0].clone()
}

#[tokio::test]
async fn a_payout_is_paid_once_through_stripe_connect() {
    let rails = Rails::new().await;
    let (aff, account) = rails.connected(&[100, 250]).await;
    let id = rails.approved(&aff).await;
    let r = rails.batch_process(&id).await;
    let paid = &r.data()["processed"][0];
    assert_eq!(
        (
            &paid["status"],
            &paid["paymentAttempt"],
            &paid["paymentMethod"]
        ),
        (&json!("PAID"), &json!(1), &json!("STRIPE")),
        "{:?}",
        r.body
    );
    let transfers = transfers_of(&id).await;
    assert_eq!(transfers.len(), 1, "{transfers:?}");
    let t = &transfers[0];
    assert_eq!(paid["paymentReference"], t["id"]);
    assert!(t["id"].as_str().unwrap().starts_with("tr_"));
    // 10% of 350.00 USD, in cents, to the affiliate's account, named by the payout.
    assert_eq!(
        (
            &t["amount"],
            &t["currency"],
            &t["destination"],
            &t["transfer_group"]
        ),
        (&json!(3500), &json!("usd"), &json!(account), &json!(id))
    );
    assert_eq!(
        (&t["metadata"]["payoutId"], &t["metadata"]["affiliateId"]),
        (&json!(id), &json!(aff))
    );
    assert_eq!(transfer_keys(&id).await, [format!("{id}-1")]);
    rails.fx.assert_held(Mode::Test, &id, "PAID").await;
    assert_eq!(
        rails.affiliate(&aff).await["paid"]["USD"].as_f64(),
        Some(35.0)
    );
    // Processed again: PAID stays PAID, nothing is sent.
    let again = rails.batch_process(&id).await;
    assert_eq!(again.data()["processed"][0]["status"], "PAID");
    assert_eq!(transfer_keys(&id).await.len(), 1);
}

/// An affiliate owed in two currencies has two payouts; one batch-process
/// of both pays both (the affiliate is one key of its reads, whichever
/// payouts name it).
#[tokio::test]
async fn two_payouts_of_one_affiliate_are_paid_in_one_batch_process() {
    let rails = Rails::new().await;
    let (aff, account) = rails.connected(&[100]).await;
    let code = rails.affiliate(&aff).await["code"]
        .as_str()
        .unwrap()
        .to_string();
    rails.fx.sell(Mode::Test, &code, 200, "EUR").await;
    let mut found = Vec::new();
    for _ in 0..5 {
        rails.fx.run_job().await;
        found = rails.fx.payouts_of(Mode::Test, &aff).await;
        if found.len() == 2 {
            break;
        }
    }
    assert_eq!(found.len(), 2, "{found:?}");
    let mut ids = Vec::new();
    for p in &found {
        let id = p["id"].as_str().unwrap().to_string();
        rails.fx.attach(Mode::Test, &id).await;
        let approve = format!("/api/v1/payouts/{id}/approve");
        let r = rails.fx.call("POST", &approve, None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        ids.push(id);
    }
    let both: Vec<&str> = ids.iter().map(String::as_str).collect();
    let r = rails.batch_process_on(&rails.fx.server.base, &both).await;
    assert_eq!(r.data()["failed"], json!([]), "{:?}", r.body);
    let paid: Vec<&Value> = r.data()["processed"].as_array().unwrap().iter().collect();
    assert_eq!(paid.len(), 2, "{:?}", r.body);
    for (p, id) in paid.iter().zip(&ids) {
        assert_eq!((&p["id"], &p["status"]), (&json!(id), &json!("PAID")));
        let transfers = transfers_of(id).await;
        assert_eq!(transfers.len(), 1, "{transfers:?}");
        assert_eq!(transfers[0]["destination"], json!(account));
    }
}

#[tokio::test]
async fn an_answer_lost_after_the_transfer_is_asked_again_with_the_same_key() {
    let (rails, id) = Rails::answer_lost().await;
    let waiting = rails.payout(&id).await;
    assert_eq!(
        (&waiting["status"], &waiting["paymentAttempt"]),
        (&json!("PROCESSING"), &json!(1))
    );
    assert_eq!(transfers_of(&id).await.len(), 1, "made, its answer lost");
    // The list shows what waits on the provider.
    let listed = rails
        .fx
        .call("GET", "/api/v1/payouts?status=processing", None)
        .await;
    assert!(listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["id"] == json!(id)));
    let again = rails.processed_as(&id, "PAID").await;
    assert_eq!(
        transfer_keys(&id).await,
        [format!("{id}-1"), format!("{id}-1")]
    );
    let transfers = transfers_of(&id).await;
    assert_eq!(transfers.len(), 1, "one transfer");
    assert_eq!(
        again.data()["processed"][0]["paymentReference"],
        transfers[0]["id"]
    );
}

#[tokio::test]
async fn a_crash_between_processing_and_the_call_is_paid_once_by_the_payout_job() {
    let (rails, id) = Rails::approved_ahead().await;
    let tenant = rails.fx.tenant(Mode::Test);
    let app = &rails.fx.app;
    let now = api::domain::timestamp::now();
    // The move to PROCESSING committed, and then nothing: the process died.
    let read = store_payouts::get(&app.store, &tenant, &id).await.unwrap();
    let processing = payout_rails::begin(app, &tenant, Rail::Stripe, read, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(processing.payment_attempt, 1);
    assert!(transfer_keys(&id).await.is_empty());
    // The job leaves it while it may still be answered, then asks once.
    job::run(app, now, Budget::default()).await.unwrap();
    assert!(transfer_keys(&id).await.is_empty(), "not before 10 minutes");
    let later = now + chrono::Duration::minutes(11);
    job::run(app, later, Budget::default()).await.unwrap();
    assert_eq!(rails.payout(&id).await["status"], "PAID");
    job::run(app, later, Budget::default()).await.unwrap();
    assert_eq!(transfer_keys(&id).await, [format!("{id}-1")]);
    assert_eq!(transfers_of(&id).await.len(), 1);
}

#[tokio::test]
async fn a_payout_processed_without_a_rail_is_never_sent_to_one() {
    // Processed before the merchant's integration paid (manual: the merchant
    // pays it by hand), then its affiliate is on the rail: neither the job
    // nor another batch-process sends it, since the merchant may be paying it.
    let (rails, id) = Rails::approved_ahead().await;
    let tenant = rails.fx.tenant(Mode::Test);
    let app = &rails.fx.app;
    let left = processed_by_hand(app, &tenant, &id).await;
    assert_eq!(
        (left.status.as_str(), left.payment_attempt),
        ("PROCESSING", 1)
    );
    let later = api::domain::timestamp::now() + chrono::Duration::minutes(11);
    job::run(app, later, Budget::default()).await.unwrap();
    rails.processed_as(&id, "PROCESSING").await;
    assert_eq!(rails.payout(&id).await["status"], "PROCESSING");
    assert!(transfer_keys(&id).await.is_empty(), "no transfer");
}

#[tokio::test]
async fn a_refused_key_on_a_redrive_keeps_the_attempt_and_pays_once() {
    // The transfer was made and its answer lost; then Stripe refuses the
    // key (revoked, say) before looking at the request: that says nothing
    // of the transfer, so the attempt and its key are kept.
    let (rails, id) = Rails::answer_lost().await;
    let refused = json!({"error": {"type": "invalid_request_error",
        "message": "Invalid API Key provided: sk_test_****abcd"}});
    let r = rails.answered(&id, 401, refused).await;
    assert_eq!(
        r.data()["failed"][0]["code"],
        "SERVICE_UNAVAILABLE",
        "{:?}",
        r.body
    );
    let kept = rails.payout(&id).await;
    assert_eq!(
        (&kept["status"], &kept["paymentAttempt"]),
        (&json!("PROCESSING"), &json!(1)),
        "{kept}"
    );
    rails.processed_as(&id, "PAID").await;
    assert_eq!(transfers_of(&id).await.len(), 1, "one transfer");
    let keys = transfer_keys(&id).await;
    assert!(keys.iter().all(|k| *k == format!("{id}-1")), "{keys:?}");
}

#[tokio::test]
async fn a_payout_sent_through_stripe_is_never_sent_through_paypal() {
    // Its transfer's answer lost, the merchant then pays through PayPal and
    // the affiliate moves to it: the payout waits for its own rail.
    let (rails, id) = Rails::answer_lost().await;
    let aff = rails.payout(&id).await["affiliateId"]
        .as_str()
        .unwrap()
        .to_string();
    let fx = &rails.fx;
    let stop = json!({"apiKey": null});
    let path = format!("/api/v1/integrations/{}", rails.integration);
    assert_eq!(fx.call("PATCH", &path, Some(stop)).await.status, 200);
    let u = ulid::Ulid::new().to_string();
    let paypal = json!({"provider": "PAYPAL", "clientId": format!("Ab{u}"),
        "clientSecret": format!("EE{u}"), "webhookId": format!("WH{u}")});
    let r = fx.call("POST", "/api/v1/integrations", Some(paypal)).await;
    assert_eq!(
        (r.status, &r.data()["canPay"]),
        (201, &json!(true)),
        "{:?}",
        r.body
    );
    let moved = json!({"payoutMethod": "PAYPAL", "payoutEmail": format!("{}@receivers.example.com", aff.to_lowercase())});
    let r = fx
        .call("PUT", &format!("/api/v1/affiliates/{aff}"), Some(moved))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    rails.processed_as(&id, "PROCESSING").await;
    assert!(
        paypal_requests(&id).await.is_empty(),
        "nothing sent to PayPal"
    );
}

#[tokio::test]
async fn two_batch_processes_at_once_make_one_transfer() {
    let rails = Rails::new().await;
    let (aff, _) = rails.connected(&[100]).await;
    let id = rails.approved(&aff).await;
    // The first call holds the key a while, so the second meets it in use.
    fault(&id, json!({"kind": "delay", "seconds": 1})).await;
    let (a, b) = tokio::join!(rails.batch_process(&id), rails.batch_process(&id));
    let outcomes = [&a, &b].map(|r| r.data()["processed"].as_array().map_or(0, Vec::len));
    assert!(outcomes.contains(&1), "{:?} {:?}", a.body, b.body);
    rails.processed_as(&id, "PAID").await;
    assert_eq!(transfers_of(&id).await.len(), 1);
    assert!(transfer_keys(&id)
        .await
        .iter()
        .all(|k| *k == format!("{id}-1")));
}

#[tokio::test]
async fn a_refusal_then_a_retry_uses_two_keys_and_pays_once() {
    let rails = Rails::new().await;
    let (aff, _) = rails.connected(&[100]).await;
    let id = rails.approved(&aff).await;
    let refusal = json!({"error": {"type": "invalid_request_error", "code": "balance_insufficient",
        "message": "You have insufficient available funds in your Stripe account."}});
    let refused = rails.answered(&id, 400, refusal).await;
    let f = failure(&refused);
    assert_eq!(f["code"], "INVALID_STATE", "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("balance_insufficient"),
        "{f}"
    );
    let back = rails.payout(&id).await;
    assert_eq!(back["status"], "APPROVED");
    assert_eq!(back["lastPaymentError"]["code"], "balance_insufficient");
    assert!(back["lastPaymentError"]["message"]
        .as_str()
        .unwrap()
        .contains("insufficient"));
    let events = rails
        .fx
        .call("GET", "/api/v1/events?type=payout.payment_failed", None)
        .await;
    assert!(
        events
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["data"]["id"] == json!(id)),
        "{:?}",
        events.body
    );
    let paid = rails.batch_process(&id).await;
    let p = &paid.data()["processed"][0];
    assert_eq!(
        (&p["status"], &p["paymentAttempt"]),
        (&json!("PAID"), &json!(2)),
        "{:?}",
        paid.body
    );
    assert_eq!(
        transfer_keys(&id).await,
        [format!("{id}-1"), format!("{id}-2")]
    );
    assert_eq!(transfers_of(&id).await.len(), 1);
}

/// A server on the payouts table whose Stripe address answers nothing.
fn provider_down_server(table: &str) -> &'static Server {
    static DOWN: OnceLock<Server> = OnceLock::new();
    DOWN.get_or_init(|| {
        let mut config = test_config();
        config.table_name = table.to_string();
        config.bucket_name = table.to_string();
        config.account_rate_per_minute = 100_000;
        // Nothing listens on port 9 of this machine: every call fails at once.
        config.providers = api::store::config::ProviderBases::all_at("http://127.0.0.1:9");
        start(config, false)
    })
}

#[tokio::test]
async fn the_provider_down_answers_503_in_seconds_and_loses_nothing() {
    let rails = Rails::new().await;
    let (aff, _) = rails.connected(&[100]).await;
    let id = rails.approved(&aff).await;
    let down = provider_down_server(&rails.fx.app.config.table_name);
    let began = Instant::now();
    let r = rails.batch_process_on(&down.base, &[&id]).await;
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(failure(&r)["code"], "SERVICE_UNAVAILABLE");
    assert_eq!(rails.payout(&id).await["status"], "PROCESSING");
    // Once it is back, the same attempt pays.
    rails.processed_as(&id, "PAID").await;
    assert_eq!(transfer_keys(&id).await, [format!("{id}-1")]);
}

#[tokio::test]
async fn a_payout_without_an_active_account_is_refused_before_any_call() {
    let rails = Rails::new().await;
    let (aff, _) = rails.onboarding(&[100]).await;
    let id = rails.approved(&aff).await;
    let r = rails.batch_process(&id).await;
    let f = failure(&r);
    assert_eq!(f["code"], "INVALID_STATE", "{f}");
    assert!(
        f["message"].as_str().unwrap().contains("no_destination"),
        "{f}"
    );
    let back = rails.payout(&id).await;
    assert_eq!(
        (&back["status"], &back["lastPaymentError"]["code"]),
        (&json!("APPROVED"), &json!("no_destination"))
    );
    assert!(transfer_keys(&id).await.is_empty());
    // A PAYPAL affiliate of the same merchant is paid as without a rail (the sandbox).
    let other = rails.fx.earner(Mode::Test, "PAYPAL", &[100]).await;
    let sandboxed = rails.approved(&other).await;
    let r = rails.batch_process(&sandboxed).await;
    assert_eq!(
        r.data()["processed"][0]["paymentReference"],
        json!(format!("sandbox_{sandboxed}"))
    );
}

#[tokio::test]
async fn onboarding_makes_one_account_and_a_fresh_link_each_time() {
    let rails = Rails::new().await;
    let (aff, account) = rails.onboarding(&[]).await;
    let path = format!("/api/v1/affiliates/{aff}/payout-account");
    let again = rails.fx.call("POST", &path, None).await;
    assert_eq!(again.status, 201, "{:?}", again.body);
    assert_eq!(again.data()["object"], "account_link");
    assert!(again.data()["url"].as_str().unwrap().contains(&account));
    assert_eq!(
        rails.affiliate(&aff).await["payoutAccount"]["accountId"],
        json!(account)
    );
    let created = standin_call(
        "GET",
        &format!("/_standin/requests?path=/v1/accounts&match={aff}"),
        None,
    )
    .await;
    assert_eq!(created.as_array().unwrap().len(), 1, "{created}");
    // From the portal, with the affiliate's own token.
    let session = rails
        .fx
        .call(
            "POST",
            &format!("/api/v1/affiliates/{aff}/portal-sessions"),
            None,
        )
        .await;
    let token = session.data()["token"].as_str().unwrap().to_string();
    let base = &rails.fx.server.base;
    let r = call_on(
        base,
        "POST",
        "/api/v1/portal/payout-account",
        Some(&token),
        None,
    )
    .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let me = call_on(base, "GET", "/api/v1/portal/me", Some(&token), None).await;
    assert_eq!(
        me.data()["affiliate"]["payoutAccount"]["accountId"],
        json!(account)
    );
    // Restricted by Stripe: shown as such, with what it needs.
    let restricted = json!({"requirements": {"currently_due": ["external_account"], "disabled_reason": "requirements.past_due"}});
    let object = standin_call(
        "POST",
        &format!("/_standin/stripe/accounts/{account}"),
        Some(restricted),
    )
    .await;
    assert_eq!(
        rails.deliver(&account, object).await.data()["outcome"],
        "APPLIED"
    );
    let shown = rails.affiliate(&aff).await["payoutAccount"].clone();
    assert_eq!(
        (&shown["status"], &shown["requirementsDue"]),
        (&json!("RESTRICTED"), &json!(["external_account"]))
    );
}

#[tokio::test]
async fn account_updates_of_unknown_or_other_tenants_accounts_are_ignored() {
    let (ours, theirs) = (Rails::new().await, Rails::new().await);
    let (aff, account) = theirs.onboarding(&[]).await;
    let object = standin_call("GET", &format!("/_standin/stripe/accounts/{account}"), None).await;
    let mut enabled = object.clone();
    enabled["payouts_enabled"] = json!(true);
    let r = ours.deliver(&account, enabled.clone()).await;
    assert_eq!(
        (&r.data()["outcome"], &r.data()["reason"]),
        (&json!("IGNORED"), &json!("unknown connected account"))
    );
    assert_eq!(
        theirs.affiliate(&aff).await["payoutAccount"]["status"],
        "PENDING"
    );
    enabled["id"] = json!("acct_unknown0000000");
    let r = ours.deliver("acct_unknown0000000", enabled).await;
    assert_eq!(r.data()["outcome"], "IGNORED");
}

#[tokio::test]
async fn stripe_keys_of_another_shape_or_mode_are_refused_and_one_integration_pays() {
    let rails = Rails::new().await;
    let create = |body: Value| rails.fx.call("POST", "/api/v1/integrations", Some(body));
    for (provider, key) in [
        ("STRIPE", "sk_live_51Habc"),
        ("STRIPE", "pk_test_51Habc"),
        ("PADDLE", "sk_test_51Habc"),
    ] {
        let r =
            create(json!({"provider": provider, "signingSecret": STRIPE_SECRET, "apiKey": key}))
                .await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert_eq!(
            r.body["error"]["details"][0]["path"],
            json!(["apiKey"]),
            "{:?}",
            r.body
        );
    }
    let second =
        json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET, "apiKey": "rk_test_51Habc"});
    create(second.clone())
        .await
        .assert_error(409, "ALREADY_EXISTS");
    // Stored sealed, never as sent.
    let item = rails
        .fx
        .app
        .store
        .get_item(&rails.integration, "R")
        .await
        .unwrap()
        .unwrap();
    let stored = format!("{:?}", item.get("apiKey"));
    assert!(
        stored.contains("sealed:v1:") && !stored.contains(&rails.api_key),
        "{stored}"
    );
    // Its key removed, it no longer pays, and another may.
    let path = format!("/api/v1/integrations/{}", rails.integration);
    let r = rails
        .fx
        .call("PATCH", &path, Some(json!({"apiKey": null})))
        .await;
    assert_eq!(r.data()["canPay"], false, "{:?}", r.body);
    let r = create(second).await;
    assert_eq!(
        (r.status, &r.data()["canPay"]),
        (201, &json!(true)),
        "{:?}",
        r.body
    );
    let r = rails
        .fx
        .call("PATCH", &path, Some(json!({"apiKey": "sk_test_51Hother"})))
        .await;
    r.assert_error(409, "ALREADY_EXISTS");
}

/// A merchant whose test mode pays through PayPal.
struct Paypal {
    fx: Fx,
    integration: String,
    webhook_id: String,
}

impl Paypal {
    async fn new() -> Paypal {
        let fx = Fx::on(rails_server()).await;
        let u = ulid::Ulid::new().to_string();
        let (client_id, secret, webhook_id) =
            (format!("Ab{u}"), format!("EE{u}"), format!("WH{u}"));
        let body = json!({"provider": "PAYPAL", "clientId": client_id, "clientSecret": secret,
            "webhookId": webhook_id});
        let r = fx.call("POST", "/api/v1/integrations", Some(body)).await;
        assert_eq!(
            (r.status, &r.data()["canPay"]),
            (201, &json!(true)),
            "{:?}",
            r.body
        );
        let text = r.body.to_string();
        assert!(
            !text.contains(&secret) && !text.contains(&client_id),
            "write-only: {text}"
        );
        Paypal {
            integration: r.data()["id"].as_str().unwrap().to_string(),
            fx,
            webhook_id,
        }
    }

    /// A PAYPAL affiliate with a payout e-mail and its APPROVED payout.
    async fn approved(&self) -> (String, String) {
        self.approved_in("USD", &[100, 250]).await
    }

    /// [`Paypal::approved`], of sales of `amounts` in `currency`.
    async fn approved_in(&self, currency: &str, amounts: &[u32]) -> (String, String) {
        let aff = self
            .fx
            .earner_in(Mode::Test, "PAYPAL", amounts, currency)
            .await;
        let email = format!("{}@receivers.example.com", aff.to_lowercase());
        let path = format!("/api/v1/affiliates/{aff}");
        let r = self
            .fx
            .call("PUT", &path, Some(json!({"payoutEmail": email})))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let mut found = Vec::new();
        for _ in 0..5 {
            self.fx.run_job().await;
            found = self.fx.payouts_of(Mode::Test, &aff).await;
            if !found.is_empty() {
                break;
            }
        }
        assert_eq!(found.len(), 1, "{found:?}");
        let id = found[0]["id"].as_str().unwrap().to_string();
        self.fx.attach(Mode::Test, &id).await;
        let r = self
            .fx
            .call("POST", &format!("/api/v1/payouts/{id}/approve"), None)
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        (id, email)
    }

    async fn batch_process(&self, id: &str) -> Resp {
        let r = self
            .fx
            .call(
                "POST",
                "/api/v1/payouts/batch-process",
                Some(json!({"payoutIds": [id]})),
            )
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r
    }

    /// PayPal's event for the payout's item reaching `status`, with the
    /// transmission headers PayPal signs it with for `webhook_id`.
    async fn item_event(&self, payout: &str, status: &str, webhook_id: &str) -> (Value, Value) {
        let body = json!({"transaction_status": status, "webhook_id": webhook_id});
        let out = standin_call(
            "POST",
            &format!("/_standin/paypal/items/{payout}"),
            Some(body),
        )
        .await;
        (out["event"].clone(), out["headers"].clone())
    }

    async fn deliver(&self, event: &Value, headers: &Value) -> Resp {
        let mut sent: Vec<(&str, &str)> = vec![("content-type", "application/json")];
        for (name, value) in headers.as_object().unwrap() {
            sent.push((name.as_str(), value.as_str().unwrap()));
        }
        let path = format!("/api/v1/integrations/{}/events", self.integration);
        let body = event.to_string().into_bytes();
        raw(&self.fx.server.base, "POST", &path, None, &sent, Some(body)).await
    }

    async fn payout(&self, id: &str) -> Value {
        let r = self
            .fx
            .call("GET", &format!("/api/v1/payouts/{id}"), None)
            .await;
        r.data().clone()
    }
}

/// The PayPal payout requests the stand-in received for a payout.
async fn paypal_requests(payout_id: &str) -> Vec<Value> {
    standin_list(&format!(
        "/_standin/requests?path=/v1/payments/payouts&match={payout_id}"
    ))
    .await
}

#[tokio::test]
async fn a_payout_is_paid_once_through_paypal_when_paypal_says_so() {
    let pp = Paypal::new().await;
    let (id, email) = pp.approved().await;
    let r = pp.batch_process(&id).await;
    let sent = &r.data()["processed"][0];
    assert_eq!(
        (&sent["status"], &sent["paymentAttempt"]),
        (&json!("PROCESSING"), &json!(1)),
        "{:?}",
        r.body
    );
    let batch = sent["paymentReference"].as_str().unwrap().to_string();
    let requests = paypal_requests(&id).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    let (req, key) = (&requests[0]["json"], format!("{id}-1"));
    assert_eq!(
        (requests[0]["key"].as_str(), requests[0]["status"].as_u64()),
        (Some(key.as_str()), Some(201))
    );
    assert_eq!(req["sender_batch_header"]["sender_batch_id"], json!(key));
    let item = &req["items"][0];
    assert_eq!(
        (&item["receiver"], &item["amount"], &item["sender_item_id"]),
        (
            &json!(email),
            &json!({"value": "35.00", "currency": "USD"}),
            &json!(id)
        )
    );
    // Waiting on PayPal: never sent again.
    let again = pp.batch_process(&id).await;
    assert_eq!(again.data()["processed"][0]["status"], "PROCESSING");
    pp.fx.run_job().await;
    assert_eq!(paypal_requests(&id).await.len(), 1);
    let (event, headers) = pp.item_event(&id, "SUCCESS", &pp.webhook_id).await;
    assert_eq!(event["resource"]["payout_batch_id"], json!(batch));
    let applied = pp.deliver(&event, &headers).await;
    assert_eq!(applied.data()["outcome"], "APPLIED", "{:?}", applied.body);
    let paid = pp.payout(&id).await;
    assert_eq!(
        (&paid["status"], &paid["paymentReference"]),
        (&json!("PAID"), &event["resource"]["payout_item_id"])
    );
    pp.fx.assert_held(Mode::Test, &id, "PAID").await;
    assert_eq!(
        pp.deliver(&event, &headers).await.data()["outcome"],
        "DUPLICATE"
    );
    // A later failure never moves a PAID payout.
    let (failed, headers) = pp.item_event(&id, "RETURNED", &pp.webhook_id).await;
    let ignored = pp.deliver(&failed, &headers).await;
    assert_eq!(ignored.data()["outcome"], "IGNORED", "{:?}", ignored.body);
    assert_eq!(pp.payout(&id).await["status"], "PAID");
}

#[tokio::test]
async fn forged_paypal_events_are_refused_and_move_nothing() {
    let pp = Paypal::new().await;
    let (id, _) = pp.approved().await;
    pp.batch_process(&id).await;
    // Signed for another webhook, tampered with, or without its headers.
    let (other, other_headers) = pp.item_event(&id, "SUCCESS", "WHanotherwebhook0").await;
    let (event, headers) = pp.item_event(&id, "SUCCESS", &pp.webhook_id).await;
    let mut tampered = event.clone();
    tampered["resource"]["payout_item"]["amount"]["value"] = json!("9999.00");
    let cases = [
        (&other, &other_headers),
        (&tampered, &headers),
        (&event, &json!({})),
    ];
    for (body, sent) in cases {
        let r = pp.deliver(body, sent).await;
        r.assert_error(400, "INVALID_REQUEST");
    }
    assert_eq!(pp.payout(&id).await["status"], "PROCESSING");
    let path = format!("/api/v1/integrations/{}/deliveries", pp.integration);
    let log = pp.fx.call("GET", &path, None).await;
    let rejected = log
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["outcome"] == "REJECTED")
        .count();
    assert_eq!(rejected, 3, "{:?}", log.body);
    // The genuine one still applies.
    assert_eq!(
        pp.deliver(&event, &headers).await.data()["outcome"],
        "APPLIED"
    );
}

#[tokio::test]
async fn a_paypal_failure_returns_the_payout_for_a_new_attempt() {
    let pp = Paypal::new().await;
    let (id, _) = pp.approved().await;
    pp.batch_process(&id).await;
    let (unclaimed, headers) = pp.item_event(&id, "UNCLAIMED", &pp.webhook_id).await;
    assert_eq!(
        pp.deliver(&unclaimed, &headers).await.data()["outcome"],
        "APPLIED"
    );
    let noted = pp.payout(&id).await;
    assert_eq!(
        (&noted["status"], &noted["lastPaymentError"]["code"]),
        (&json!("PROCESSING"), &json!("RECEIVER_UNREGISTERED"))
    );
    let (failed, headers) = pp.item_event(&id, "FAILED", &pp.webhook_id).await;
    assert_eq!(
        pp.deliver(&failed, &headers).await.data()["outcome"],
        "APPLIED"
    );
    let back = pp.payout(&id).await;
    assert_eq!(back["status"], "APPROVED", "{back}");
    let again = pp.batch_process(&id).await;
    assert_eq!(
        again.data()["processed"][0]["paymentAttempt"],
        2,
        "{:?}",
        again.body
    );
    let keys: Vec<Value> = paypal_requests(&id)
        .await
        .iter()
        .map(|r| r["key"].clone())
        .collect();
    assert_eq!(keys, [json!(format!("{id}-1")), json!(format!("{id}-2"))]);
    // The first attempt's event again: answered once.
    let stale = pp.deliver(&failed, &headers).await;
    assert_eq!(stale.data()["outcome"], "DUPLICATE");
}

/// PayPal's payout items of a payout.
async fn paypal_items(payout_id: &str) -> Vec<Value> {
    standin_list(&format!("/_standin/paypal/items?match={payout_id}")).await
}

/// batch-process of `id` whose payout call PayPal takes and whose answer
/// is lost: 503, PROCESSING, no batch id known.
async fn taken_and_lost(pp: &Paypal, id: &str) {
    let lost = json!({"path": "/v1/payments/payouts", "kind": "drop_after"});
    fault(id, lost).await;
    let r = pp.batch_process(id).await;
    assert_eq!(
        r.data()["failed"][0]["code"],
        "SERVICE_UNAVAILABLE",
        "{:?}",
        r.body
    );
    let left = pp.payout(id).await;
    assert_eq!(
        (&left["status"], &left["paymentReference"]),
        (&json!("PROCESSING"), &Value::Null),
        "{left}"
    );
}

#[tokio::test]
async fn a_paypal_event_settles_the_attempt_whose_answer_was_lost() {
    let pp = Paypal::new().await;
    let (id, _) = pp.approved().await;
    taken_and_lost(&pp, &id).await;
    // The event names the attempt by its sender_batch_id.
    let (paid, headers) = pp.item_event(&id, "SUCCESS", &pp.webhook_id).await;
    assert_eq!(paid["resource"]["sender_batch_id"], format!("{id}-1"));
    let r = pp.deliver(&paid, &headers).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    let settled = pp.payout(&id).await;
    assert_eq!(
        (&settled["status"], &settled["paymentMethod"]),
        (&json!("PAID"), &json!("PAYPAL"))
    );
    assert_eq!(paypal_requests(&id).await.len(), 1, "one payout call");
}

#[tokio::test]
async fn a_paypal_batch_made_before_is_found_when_paypal_forgets_the_request_id() {
    let pp = Paypal::new().await;
    let (id, _) = pp.approved().await;
    taken_and_lost(&pp, &id).await;
    // PayPal no longer replays the request: it refuses the sender_batch_id
    // as used, and links to the batch it made.
    let prefix = json!({"prefix": id});
    standin_call("POST", "/_standin/paypal/forget-request-ids", Some(prefix)).await;
    let again = pp.batch_process(&id).await;
    let items = paypal_items(&id).await;
    assert_eq!(items.len(), 1, "one batch: {items:?}");
    let taken = &again.data()["processed"][0];
    assert_eq!(
        (&taken["status"], &taken["paymentAttempt"]),
        (&json!("PROCESSING"), &json!(1)),
        "{:?}",
        again.body
    );
    assert_eq!(taken["paymentReference"], items[0]["payout_batch_id"]);
    let statuses: Vec<(Value, Value)> = paypal_requests(&id)
        .await
        .iter()
        .map(|r| (r["key"].clone(), r["status"].clone()))
        .collect();
    let key = json!(format!("{id}-1"));
    assert_eq!(statuses, [(key.clone(), Value::Null), (key, json!(400))]);
    let (paid, headers) = pp.item_event(&id, "SUCCESS", &pp.webhook_id).await;
    assert_eq!(
        pp.deliver(&paid, &headers).await.data()["outcome"],
        "APPLIED"
    );
    assert_eq!(pp.payout(&id).await["status"], "PAID");
}

#[tokio::test]
async fn paypal_is_sent_whole_forints_and_never_a_rounded_amount() {
    let pp = Paypal::new().await;
    // 10% of 10,000 HUF: 1,000, sent as PayPal takes HUF, in whole units.
    let (id, _) = pp.approved_in("HUF", &[10_000]).await;
    let sent = pp.batch_process(&id).await;
    assert_eq!(
        sent.data()["processed"][0]["status"],
        "PROCESSING",
        "{:?}",
        sent.body
    );
    let requests = paypal_requests(&id).await;
    let amount = &requests[0]["json"]["items"][0]["amount"];
    assert_eq!(amount, &json!({"value": "1000", "currency": "HUF"}));
    // 10% of 10,005 HUF: 1,000.50, which PayPal cannot pay exactly: refused
    // before any call, for the merchant to adjust.
    let (odd, _) = pp.approved_in("HUF", &[10_005]).await;
    let r = pp.batch_process(&odd).await;
    let failed = &r.data()["failed"][0];
    assert_eq!(failed["code"], "INVALID_STATE", "{:?}", r.body);
    let back = pp.payout(&odd).await;
    assert_eq!(
        (&back["status"], &back["lastPaymentError"]["code"]),
        (&json!("APPROVED"), &json!("amount_not_payable")),
        "{back}"
    );
    assert!(paypal_requests(&odd).await.is_empty(), "no call");
}

#[tokio::test]
async fn a_paypal_integration_takes_its_credentials_and_only_those() {
    let fx = Fx::on(rails_server()).await;
    let cases = [
        json!({"provider": "PAYPAL", "clientId": "Ab1", "clientSecret": "EE1"}),
        json!({"provider": "PAYPAL", "clientId": "Ab1", "clientSecret": "EE1", "webhookId": "WH-1"}),
        json!({"provider": "PAYPAL", "clientId": "Ab1", "clientSecret": "EE1", "webhookId": "WH1", "signingSecret": STRIPE_SECRET}),
        json!({"provider": "STRIPE", "signingSecret": STRIPE_SECRET, "clientId": "Ab1"}),
        json!({"provider": "STRIPE"}),
    ];
    for body in cases {
        let r = fx
            .call("POST", "/api/v1/integrations", Some(body.clone()))
            .await;
        r.assert_error(400, "VALIDATION_FAILED");
    }
}

#[tokio::test]
async fn a_connect_endpoint_signs_with_its_own_secret_and_every_secret_is_sealed() {
    let rails = Rails::new().await;
    let (aff, account) = rails.onboarding(&[]).await;
    let connect = format!("whsec_connect_{}", ulid::Ulid::new());
    let path = format!("/api/v1/integrations/{}", rails.integration);
    let r = rails
        .fx
        .call(
            "PATCH",
            &path,
            Some(json!({"connectSigningSecret": connect})),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(!r.body.to_string().contains(&connect), "write-only");
    let enabled = json!({"payouts_enabled": true, "capabilities": {"transfers": "active"},
        "requirements": {"currently_due": [], "disabled_reason": null}});
    let object = standin_call(
        "POST",
        &format!("/_standin/stripe/accounts/{account}"),
        Some(enabled),
    )
    .await;
    let other = rails
        .deliver_signed(&account, object.clone(), "whsec_neither_of_the_two")
        .await;
    other.assert_error(400, "INVALID_REQUEST");
    let r = rails.deliver_signed(&account, object, &connect).await;
    assert_eq!(r.data()["outcome"], "APPLIED", "{:?}", r.body);
    assert_eq!(
        rails.affiliate(&aff).await["payoutAccount"]["status"],
        "ACTIVE"
    );
    // Both signing secrets and the key are stored sealed.
    let item = rails
        .fx
        .app
        .store
        .get_item(&rails.integration, "R")
        .await
        .unwrap()
        .unwrap();
    for (field, plain) in [
        ("signingSecret", STRIPE_SECRET),
        ("connectSigningSecret", connect.as_str()),
        ("apiKey", rails.api_key.as_str()),
    ] {
        let stored = format!("{:?}", item.get(field));
        assert!(
            stored.contains("sealed:v1:") && !stored.contains(plain),
            "{field}: {stored}"
        );
    }
}
