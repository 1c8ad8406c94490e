//! Payouts over HTTP: made the real way (campaign with `holdDays: 0`,
//! postbacks, the payout job), invoices attached the way S3 would (object
//! put, then the invoice-event handler), and every route checked for the
//! contract's transitions, races, the sandbox provider, tenancy and
//! validation. Every response these tests see is checked never to carry
//! an invoice storage key.

use std::sync::Arc;
use std::time::Instant;

use api::domain::tenant::{Mode, Tenant};
use api::services::app::App;
use api::services::invoices::{self, Handled};
use api::services::paying::invoice;
use api::services::payout_job::{self as job, Budget};
use serde_json::{json, Value};

use crate::support::{
    app_for, call_on, failing_payments_server, merchant_on, payouts_server, Merchant, Resp, Server,
};

const PDF: &[u8] = b"%PDF-1.4\n% test invoice\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n";

/// Fails when a response shows an invoice storage key anywhere.
fn assert_private(r: &Resp) {
    let body = r.body.to_string();
    assert!(
        !body.contains(invoice::PREFIX) && !body.contains("invoiceKey"),
        "storage key in body: {body}"
    );
    for (name, value) in &r.headers {
        let v = String::from_utf8_lossy(value.as_bytes());
        assert!(
            !v.contains(invoice::PREFIX),
            "storage key in header {name}: {v}"
        );
    }
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", ulid::Ulid::new())
}

/// One merchant on a payouts server, with a `holdDays: 0` campaign per mode.
pub(crate) struct Fx {
    pub(crate) server: &'static Server,
    pub(crate) app: Arc<App>,
    pub(crate) m: Merchant,
    pub(crate) test_campaign: String,
    live_campaign: String,
}

/// Held while a test records an affiliate's conversions and while it runs
/// the payout job: the job works on every tenant of its table, and a run
/// between two of another test's conversions would pay them apart.
pub(crate) static JOBS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Fx {
    pub(crate) async fn on(server: &'static Server) -> Fx {
        let m = merchant_on(server).await;
        let app = app_for(server).await;
        let mut campaigns = Vec::new();
        for key in [&m.test_key, &m.live_key] {
            let body = json!({"name": "Payouts", "commissionType": "PERCENTAGE",
                "commissionValue": 10, "holdDays": 0});
            let r = call_on(
                &server.base,
                "POST",
                "/api/v1/campaigns",
                Some(key),
                Some(body),
            )
            .await;
            assert_eq!(r.status, 201, "{:?}", r.body);
            campaigns.push(r.data()["id"].as_str().unwrap().to_string());
        }
        Fx {
            server,
            app,
            m,
            live_campaign: campaigns.pop().unwrap(),
            test_campaign: campaigns.pop().unwrap(),
        }
    }

    pub(crate) async fn new() -> Fx {
        Self::on(payouts_server()).await
    }

    pub(crate) fn key(&self, mode: Mode) -> &str {
        match mode {
            Mode::Test => &self.m.test_key,
            Mode::Live => &self.m.live_key,
        }
    }

    pub(crate) fn tenant(&self, mode: Mode) -> Tenant {
        Tenant::new(&self.m.account_id, mode)
    }

    /// A call with a given key; the answer is checked for storage keys.
    pub(crate) async fn call_as(
        &self,
        key: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Resp {
        let r = call_on(&self.server.base, method, path, Some(key), body).await;
        assert_private(&r);
        r
    }

    /// A call with the test key.
    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        self.call_as(&self.m.test_key, method, path, body).await
    }

    /// An ACTIVE affiliate paid by `method`, with one sale per amount,
    /// recorded while no test runs the payout job.
    pub(crate) async fn earner(&self, mode: Mode, method: &str, amounts: &[u32]) -> String {
        self.earner_in(mode, method, amounts, "USD").await
    }

    /// [`Fx::earner`], of sales in `currency`.
    pub(crate) async fn earner_in(
        &self,
        mode: Mode,
        method: &str,
        amounts: &[u32],
        currency: &str,
    ) -> String {
        // No job run between its sales: they are one payout.
        let _alone = JOBS.lock().await;
        let code = unique("p").chars().take(20).collect::<String>();
        let campaign = match mode {
            Mode::Test => &self.test_campaign,
            Mode::Live => &self.live_campaign,
        };
        let body = json!({"campaignId": campaign, "name": code, "code": code,
            "email": format!("{}@partners.example.com", code.to_lowercase()), "payoutMethod": method});
        let key = self.key(mode);
        let r = self
            .call_as(key, "POST", "/api/v1/affiliates", Some(body))
            .await;
        assert_eq!(r.status, 201, "{:?}", r.body);
        for amount in amounts {
            self.sell(mode, &code, *amount, currency).await;
        }
        r.data()["id"].as_str().unwrap().to_string()
    }

    /// A sale of `amount` in `currency` posted back with the affiliate's code.
    pub(crate) async fn sell(&self, mode: Mode, code: &str, amount: u32, currency: &str) {
        let sale = json!({"amount": amount, "currency": currency, "externalId": unique("ord"),
            "conversionType": "SALE", "affiliateCode": code});
        let p = self
            .call_as(
                self.key(mode),
                "POST",
                "/api/v1/conversions/postback",
                Some(sale),
            )
            .await;
        assert_eq!(p.status, 201, "{:?}", p.body);
    }

    /// Runs the payout job once, now, while no test records an earner.
    pub(crate) async fn run_job(&self) {
        let _alone = JOBS.lock().await;
        job::run(&self.app, api::domain::timestamp::now(), Budget::default())
            .await
            .expect("payout job");
    }

    /// The affiliate's payouts, newest first.
    pub(crate) async fn payouts_of(&self, mode: Mode, affiliate_id: &str) -> Vec<Value> {
        let path = format!("/api/v1/payouts?affiliate_id={affiliate_id}");
        let r = self.call_as(self.key(mode), "GET", &path, None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.data().as_array().unwrap().clone()
    }

    /// `n` PENDING payouts of 10.00 USD (one affiliate each), in order.
    pub(crate) async fn pending(&self, mode: Mode, n: usize) -> Vec<String> {
        let mut affiliates = Vec::new();
        for _ in 0..n {
            affiliates.push(self.earner(mode, "PAYPAL", &[100]).await);
        }
        self.run_job().await;
        let mut ids = Vec::new();
        for a in &affiliates {
            let found = self.payouts_of(mode, a).await;
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0]["status"], "PENDING");
            ids.push(found[0]["id"].as_str().unwrap().to_string());
        }
        ids
    }

    /// Puts an invoice for the payout and runs the invoice event on it.
    pub(crate) async fn attach(&self, mode: Mode, payout_id: &str) -> String {
        let key = invoice::key(&self.tenant(mode), payout_id, "inv.pdf");
        self.app
            .files()
            .put(&key, PDF.to_vec(), "application/pdf")
            .await
            .unwrap();
        let handled = invoices::on_object_created(&self.app, &key, api::domain::timestamp::now())
            .await
            .unwrap();
        assert!(matches!(handled, Handled::Applied(_)), "{handled:?}");
        key
    }

    /// `n` INVOICE_UPLOADED payouts.
    pub(crate) async fn invoiced(&self, mode: Mode, n: usize) -> Vec<String> {
        let ids = self.pending(mode, n).await;
        for id in &ids {
            self.attach(mode, id).await;
        }
        ids
    }

    /// `n` APPROVED payouts.
    pub(crate) async fn approved(&self, mode: Mode, n: usize) -> Vec<String> {
        let ids = self.invoiced(mode, n).await;
        for id in &ids {
            let path = format!("/api/v1/payouts/{id}/approve");
            let r = self.call_as(self.key(mode), "POST", &path, None).await;
            assert_eq!(r.status, 200, "{:?}", r.body);
        }
        ids
    }

    pub(crate) async fn status_of(&self, mode: Mode, id: &str) -> String {
        let r = self
            .call_as(
                self.key(mode),
                "GET",
                &format!("/api/v1/payouts/{id}"),
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.data()["status"].as_str().unwrap().to_string()
    }

    /// The conversions a payout holds, through `GET /conversions?payout_id=`.
    pub(crate) async fn conversions_of(&self, mode: Mode, id: &str) -> Vec<Value> {
        let path = format!("/api/v1/conversions?payout_id={id}");
        let r = self.call_as(self.key(mode), "GET", &path, None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.data().as_array().unwrap().clone()
    }

    /// Asserts the payout holds conversions, every one of them `status`.
    pub(crate) async fn assert_held(&self, mode: Mode, id: &str, status: &str) {
        let held = self.conversions_of(mode, id).await;
        assert!(
            !held.is_empty() && held.iter().all(|c| c["status"] == status),
            "{id}: {held:?}"
        );
    }
}

/// Asserts a 409 INVALID_STATE naming the current state.
fn assert_conflict(r: &Resp, current: &str) {
    r.assert_error(409, "INVALID_STATE");
    assert_eq!(
        r.body["error"]["details"]["currentState"], current,
        "{:?}",
        r.body
    );
}

fn mark_paid_body() -> Value {
    json!({"paymentDate": "2026-01-15", "paymentMethod": "wire"})
}

#[tokio::test]
async fn payouts_are_listed_filtered_and_read() {
    let fx = Fx::new().await;
    let a = fx.earner(Mode::Test, "PAYPAL", &[100, 50]).await;
    let b = fx.earner(Mode::Test, "WISE", &[30]).await;
    fx.run_job().await;

    let all = fx.call("GET", "/api/v1/payouts", None).await;
    assert_eq!(all.status, 200, "{:?}", all.body);
    let items = all.data().as_array().unwrap();
    assert_eq!(items.len(), 2, "{items:?}");
    // Newest first by requestedAt.
    let times: Vec<&str> = items
        .iter()
        .map(|p| p["requestedAt"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
    assert_eq!(all.body["meta"]["hasMore"], false);

    let of_a = fx.payouts_of(Mode::Test, &a).await;
    assert_eq!(of_a.len(), 1);
    let p = &of_a[0];
    assert_eq!(p["amount"], json!(15));
    assert_eq!(p["conversionCount"], 2);
    assert_eq!(p["method"], "PAYPAL");
    assert_eq!(p["currency"], "USD");

    let cases: [(&str, usize); 10] = [
        ("status=pending", 2),
        ("status=Pending", 2),
        ("status=paid", 0),
        ("method=wise", 1),
        ("method=PAYPAL&status=PENDING", 1),
        ("from=2000-01-01", 2),
        ("to=2000-01-01", 0),
        ("from=2000-01-01T00:00:00Z&to=2999-01-01", 2),
        ("limit=1", 1),
        ("affiliate_id=aff_01JD3Q5W6X7Y8Z9A0B1C2D3E4F", 0),
    ];
    for (query, n) in cases {
        let r = fx
            .call("GET", &format!("/api/v1/payouts?{query}"), None)
            .await;
        assert_eq!(r.status, 200, "{query}: {:?}", r.body);
        assert_eq!(r.data().as_array().unwrap().len(), n, "{query}");
    }
    let r = fx
        .call(
            "GET",
            &format!("/api/v1/payouts?affiliate_id={b}&method=wise"),
            None,
        )
        .await;
    assert_eq!(r.data()[0]["affiliateId"], b.as_str());
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1)).date_naive();
    let r = fx
        .call("GET", &format!("/api/v1/payouts?from={tomorrow}"), None)
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);

    for bad in [
        "status=nope",
        "method=cheque",
        "from=yesterday",
        "to=2026-13-01",
        "from=2026-02-01&to=2026-01-01",
        "limit=0",
        "offset=1&cursor=x",
        "amount=1",
    ] {
        let r = fx
            .call("GET", &format!("/api/v1/payouts?{bad}"), None)
            .await;
        r.assert_error(400, "VALIDATION_FAILED");
        assert!(r.body["error"]["details"].is_array(), "{bad}");
    }

    let id = p["id"].as_str().unwrap();
    let one = fx.call("GET", &format!("/api/v1/payouts/{id}"), None).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.data(), p);
    let fields: Vec<&String> = one.data().as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        [
            "id",
            "object",
            "affiliateId",
            "campaignId",
            "amount",
            "currency",
            "status",
            "method",
            "requestedAt",
            "conversionCount",
            "adjustmentTotal",
            "invoice",
            "approvedAt",
            "paidAt",
            "paymentDate",
            "paymentMethod",
            "paymentReference",
            "note",
            "rejectionReason",
            "cancellationReason",
            "paymentError",
            "paymentAttempt",
            "lastPaymentError",
            "createdAt",
            "updatedAt"
        ]
    );
    assert_eq!(
        one.data()["invoice"],
        json!({"uploaded": false, "fileName": null, "contentType": null, "size": null, "uploadedAt": null})
    );
    for missing in [
        "po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
        "nope",
        "cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F",
    ] {
        fx.call("GET", &format!("/api/v1/payouts/{missing}"), None)
            .await
            .assert_error(404, "NOT_FOUND");
    }

    let held = fx.conversions_of(Mode::Test, id).await;
    assert_eq!(held.len(), 2);
    assert!(held
        .iter()
        .all(|c| c["payoutId"] == id && c["status"] == "APPROVED"));
    let r = fx
        .call(
            "GET",
            &format!("/api/v1/conversions?payout_id={id}&status=paid"),
            None,
        )
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn the_merchant_transitions_follow_the_contract_table() {
    let fx = Fx::new().await;
    let [p1, p2, p3] = <[String; 3]>::try_from(fx.pending(Mode::Test, 3).await).unwrap();
    let at = |id: &str, action: &str| format!("/api/v1/payouts/{id}/{action}");

    // PENDING: no approval without an invoice, no POST mark-paid; reject works once.
    assert_conflict(&fx.call("POST", &at(&p1, "approve"), None).await, "PENDING");
    assert_conflict(
        &fx.call("POST", &at(&p1, "mark-paid"), Some(mark_paid_body()))
            .await,
        "PENDING",
    );
    let r = fx
        .call(
            "POST",
            &at(&p1, "reject"),
            Some(json!({"reason": " no invoice "})),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        (
            r.data()["status"].as_str(),
            r.data()["rejectionReason"].as_str()
        ),
        (Some("REJECTED"), Some("no invoice"))
    );
    assert_conflict(
        &fx.call("POST", &at(&p1, "reject"), Some(json!({"reason": "again"})))
            .await,
        "REJECTED",
    );
    assert_conflict(
        &fx.call("PUT", &at(&p1, "mark-paid"), None).await,
        "REJECTED",
    );

    // PENDING -> INVOICE_UPLOADED (event) -> APPROVED -> PAID (POST mark-paid).
    fx.attach(Mode::Test, &p2).await;
    assert_eq!(fx.status_of(Mode::Test, &p2).await, "INVOICE_UPLOADED");
    assert_conflict(
        &fx.call("POST", &at(&p2, "mark-paid"), Some(mark_paid_body()))
            .await,
        "INVOICE_UPLOADED",
    );
    let r = fx.call("POST", &at(&p2, "approve"), Some(json!({}))).await;
    assert_eq!(
        (r.status, r.data()["status"].as_str()),
        (200, Some("APPROVED")),
        "{:?}",
        r.body
    );
    assert!(r.data()["approvedAt"].is_string());
    assert_conflict(
        &fx.call("POST", &at(&p2, "approve"), None).await,
        "APPROVED",
    );
    let r = fx
        .call("POST", &at(&p2, "mark-paid"), Some(mark_paid_body()))
        .await;
    assert_eq!(
        (r.status, r.data()["status"].as_str()),
        (200, Some("PAID")),
        "{:?}",
        r.body
    );
    assert_eq!(r.data()["paymentDate"], "2026-01-15");
    assert_eq!(r.data()["paymentMethod"], "wire");
    assert!(r.data()["paidAt"].is_string());
    // PAID again through PUT: 200, unchanged.
    let again = fx
        .call("PUT", &at(&p2, "mark-paid"), Some(json!({"note": "dup"})))
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.data(), r.data());
    for (method, action, body) in [
        ("POST", "mark-paid", Some(mark_paid_body())),
        ("POST", "reject", Some(json!({"reason": "late"}))),
        ("POST", "approve", None),
    ] {
        assert_conflict(&fx.call(method, &at(&p2, action), body).await, "PAID");
    }
    let paid = fx.conversions_of(Mode::Test, &p2).await;
    assert!(
        !paid.is_empty() && paid.iter().all(|c| c["status"] == "PAID"),
        "{paid:?}"
    );

    // PENDING -> PAID through PUT mark-paid, with reference and note.
    let body = json!({"paymentReference": "TX-1", "note": "paid by\ncheque"});
    let r = fx.call("PUT", &at(&p3, "mark-paid"), Some(body)).await;
    assert_eq!(r.data()["status"], "PAID", "{:?}", r.body);
    assert_eq!(
        (
            r.data()["paymentReference"].as_str(),
            r.data()["note"].as_str()
        ),
        (Some("TX-1"), Some("paid by\ncheque"))
    );
    fx.assert_held(Mode::Test, &p3, "PAID").await;
}

#[tokio::test]
async fn settle_reject_and_cancel_work_from_every_open_state() {
    let fx = Fx::new().await;
    let uploaded = fx.invoiced(Mode::Test, 3).await;
    let approved = fx.approved(Mode::Test, 3).await;
    let pending = fx.pending(Mode::Test, 1).await;
    let at = |id: &str, action: &str| format!("/api/v1/payouts/{id}/{action}");

    for id in [&uploaded[0], &approved[0]] {
        let r = fx.call("PUT", &at(id, "mark-paid"), None).await;
        assert_eq!(r.data()["status"], "PAID", "{:?}", r.body);
    }
    for id in [&uploaded[1], &approved[1]] {
        let r = fx
            .call("POST", &at(id, "reject"), Some(json!({"reason": "wrong"})))
            .await;
        assert_eq!(r.data()["status"], "REJECTED", "{:?}", r.body);
        assert!(
            fx.conversions_of(Mode::Test, id).await.is_empty(),
            "released"
        );
    }
    let ids = json!([
        pending[0],
        uploaded[2],
        approved[2],
        uploaded[0],
        "po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"
    ]);
    let body = json!({"payoutIds": ids, "reason": "duplicate"});
    let r = fx
        .call("POST", "/api/v1/payouts/bulk-cancel", Some(body))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let cancelled: Vec<&str> = r.data()["cancelled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(cancelled, [&pending[0], &uploaded[2], &approved[2]]);
    assert!(r.data()["cancelled"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["status"] == "CANCELLED" && p["cancellationReason"] == "duplicate"));
    let failed = r.data()["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(
        (failed[0]["id"].as_str(), failed[0]["code"].as_str()),
        (Some(uploaded[0].as_str()), Some("INVALID_STATE"))
    );
    assert_eq!(failed[1]["code"], "NOT_FOUND");
    assert!(failed.iter().all(|f| f["message"].is_string()));
}

#[tokio::test]
async fn processing_payouts_wait_for_mark_paid_with_the_manual_provider() {
    // Live mode uses the configured provider: `manual` here, which leaves
    // the payout PROCESSING until the merchant marks it paid.
    let fx = Fx::new().await;
    let live = fx.key(Mode::Live).to_string();
    let ids = fx.invoiced(Mode::Live, 1).await;
    let id = &ids[0];
    let body = json!({"payoutIds": [id]});
    let r = fx
        .call_as(&live, "POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.data()["processed"][0]["status"],
        "PROCESSING",
        "{:?}",
        r.body
    );
    assert!(r.data()["processed"][0]["approvedAt"].is_string());
    let at = |action: &str| format!("/api/v1/payouts/{id}/{action}");
    for (method, action, body) in [
        ("POST", "approve", None),
        ("POST", "reject", Some(json!({"reason": "no"}))),
        ("POST", "mark-paid", Some(mark_paid_body())),
    ] {
        assert_conflict(
            &fx.call_as(&live, method, &at(action), body).await,
            "PROCESSING",
        );
    }
    let body = json!({"payoutIds": [id], "reason": "stop"});
    let r = fx
        .call_as(&live, "POST", "/api/v1/payouts/bulk-cancel", Some(body))
        .await;
    assert_eq!(
        r.data()["failed"][0]["code"],
        "INVALID_STATE",
        "{:?}",
        r.body
    );
    let r = fx
        .call_as(
            &live,
            "PUT",
            &at("mark-paid"),
            Some(json!({"paymentReference": "BANK-7"})),
        )
        .await;
    assert_eq!(r.data()["status"], "PAID", "{:?}", r.body);
    fx.assert_held(Mode::Live, id, "PAID").await;
}

#[tokio::test]
async fn the_invoice_is_served_and_its_storage_key_never_shown() {
    let fx = Fx::new().await;
    let ids = fx.pending(Mode::Test, 1).await;
    let id = &ids[0];
    fx.call("GET", &format!("/api/v1/payouts/{id}/invoice"), None)
        .await
        .assert_error(404, "NOT_FOUND");
    let key = fx.attach(Mode::Test, id).await;
    assert!(key.starts_with("invoices/") && key.contains(id.as_str()));

    let r = fx.call("GET", &format!("/api/v1/payouts/{id}"), None).await;
    let inv = &r.data()["invoice"];
    assert_eq!(inv["uploaded"], true);
    assert_eq!(inv["fileName"], "inv.pdf");
    assert_eq!(inv["contentType"], "application/pdf");
    assert_eq!(inv["size"], PDF.len());
    assert!(inv["uploadedAt"].is_string());
    assert!(!r.body.to_string().contains(&key));

    let resp = crate::support::http_client()
        .get(format!("{}/api/v1/payouts/{id}/invoice", fx.server.base))
        .bearer_auth(&fx.m.test_key)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let headers = resp.headers().clone();
    assert_eq!(headers["content-type"], "application/pdf");
    for (name, value) in &headers {
        let v = value.to_str().unwrap_or("");
        assert!(!v.contains("invoices/") && !v.contains(&key), "{name}: {v}");
    }
    assert_eq!(resp.bytes().await.unwrap().as_ref(), PDF);

    // Approval checks the object; every answer on the way stays key-free.
    let r = fx
        .call("POST", &format!("/api/v1/payouts/{id}/approve"), None)
        .await;
    assert_eq!(r.data()["status"], "APPROVED");
    let r = fx
        .call("GET", "/api/v1/payouts?status=approved", None)
        .await;
    assert_eq!(r.data()[0]["invoice"]["uploaded"], true);
}

#[tokio::test]
async fn racing_transitions_have_exactly_one_winner() {
    const TRIALS: usize = 50;
    const RACERS: usize = 20;
    let fx = Fx::new().await;
    let started = Instant::now();
    let ids = fx.approved(Mode::Test, TRIALS).await;
    let prepared = started.elapsed();
    for id in &ids {
        // From APPROVED, approve is never possible, reject and mark-paid
        // are, and each of them ends in a state nothing else leaves.
        let mut racers = tokio::task::JoinSet::new();
        for i in 0..RACERS {
            let (base, key, id) = (fx.server.base.clone(), fx.m.test_key.clone(), id.clone());
            racers.spawn(async move {
                let (action, body) = match i % 3 {
                    0 => ("approve", None),
                    1 => ("reject", Some(json!({"reason": "race"}))),
                    _ => ("mark-paid", Some(mark_paid_body())),
                };
                let path = format!("/api/v1/payouts/{id}/{action}");
                let r = call_on(&base, "POST", &path, Some(&key), body).await;
                (action, r)
            });
        }
        let mut winners = Vec::new();
        while let Some(joined) = racers.join_next().await {
            let (action, r) = joined.unwrap();
            assert_private(&r);
            match r.status {
                200 => winners.push((action, r.data()["status"].as_str().unwrap().to_string())),
                409 => assert_eq!(r.code(), "INVALID_STATE", "{:?}", r.body),
                other => panic!("{action}: {other} {:?}", r.body),
            }
        }
        assert_eq!(winners.len(), 1, "{id}: {winners:?}");
        assert_eq!(fx.status_of(Mode::Test, id).await, winners[0].1);
    }
    eprintln!(
        "racing: {TRIALS} trials of {RACERS} calls; setup {prepared:?}, total {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn batch_process_pays_through_the_sandbox() {
    let fx = Fx::new().await;
    let uploaded = fx.invoiced(Mode::Test, 1).await;
    let approved = fx.approved(Mode::Test, 1).await;
    let pending = fx.pending(Mode::Test, 1).await;
    let unknown = "po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    let ids = json!([uploaded[0], approved[0], uploaded[0], pending[0], unknown]);
    let r = fx
        .call(
            "POST",
            "/api/v1/payouts/batch-process",
            Some(json!({"payoutIds": ids})),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let processed = r.data()["processed"].as_array().unwrap();
    let got: Vec<&str> = processed
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        got,
        [&uploaded[0], &approved[0]],
        "duplicates are handled once"
    );
    for p in processed {
        assert_eq!(p["status"], "PAID", "{p:?}");
        assert_eq!(
            p["paymentReference"],
            format!("sandbox_{}", p["id"].as_str().unwrap())
        );
        let id = p["id"].as_str().unwrap();
        fx.assert_held(Mode::Test, id, "PAID").await;
        assert_eq!(fx.server.app.payments.sandbox().payments_of(id), 1);
    }
    let failed = r.data()["failed"].as_array().unwrap();
    let codes: Vec<(&str, &str)> = failed
        .iter()
        .map(|f| (f["id"].as_str().unwrap(), f["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        codes,
        [
            (pending[0].as_str(), "INVALID_STATE"),
            (unknown, "NOT_FOUND")
        ]
    );
    // The affiliate's paid total grew by the payout.
    let aff = processed[0]["affiliateId"].as_str().unwrap();
    let a = fx
        .call("GET", &format!("/api/v1/affiliates/{aff}"), None)
        .await;
    assert_eq!(
        a.data()["paid"]["USD"],
        processed[0]["amount"],
        "{:?}",
        a.body
    );
}

#[tokio::test]
async fn batch_process_pays_a_payout_too_large_for_one_transaction_in_chunks() {
    // 20 conversions: more than a transition pays in its own transaction,
    // so the payout is committed alone and its conversions paid in chunks.
    let fx = Fx::new().await;
    let aff = fx.earner(Mode::Test, "PAYPAL", &[100; 20]).await;
    fx.run_job().await;
    let id = fx.payouts_of(Mode::Test, &aff).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    fx.attach(Mode::Test, &id).await;
    let r = fx
        .call(
            "POST",
            "/api/v1/payouts/batch-process",
            Some(json!({"payoutIds": [id]})),
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["processed"][0]["status"], "PAID", "{:?}", r.body);
    // The job claims what the index lists as due when it runs: past 12.
    let count = r.data()["processed"][0]["conversionCount"].as_u64();
    assert!(count > Some(12), "{:?}", r.body);
    fx.assert_held(Mode::Test, &id, "PAID").await;
    let a = fx
        .call("GET", &format!("/api/v1/affiliates/{aff}"), None)
        .await;
    assert_eq!(
        a.data()["paid"]["USD"].as_f64(),
        r.data()["processed"][0]["amount"].as_f64(),
        "{:?}",
        a.body
    );
}

#[tokio::test]
async fn a_failing_provider_leaves_the_payout_approved_until_a_retry_pays_once() {
    let fx = Fx::on(failing_payments_server()).await;
    let ids = fx.invoiced(Mode::Test, 1).await;
    let id = &ids[0];
    let body = json!({"payoutIds": [id]});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body.clone()))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["processed"], json!([]));
    assert_eq!(r.data()["failed"][0]["id"], id.as_str());
    assert_eq!(
        r.data()["failed"][0]["code"],
        "SERVICE_UNAVAILABLE",
        "{:?}",
        r.body
    );
    let now = fx.call("GET", &format!("/api/v1/payouts/{id}"), None).await;
    assert_eq!(now.data()["status"], "APPROVED");
    assert!(now.data()["paymentError"].is_string());
    fx.assert_held(Mode::Test, id, "APPROVED").await;
    let sandbox = fx.server.app.payments.sandbox();
    assert_eq!(sandbox.payments_of(id), 0);
    // The failure is an event of its own, after the processing one.
    let failed = api::store::events::EventFilter {
        event_type: Some(api::domain::event::EventType::PayoutPaymentFailed),
        ..Default::default()
    };
    let page = api::store::page::PageRequest::default();
    let found = api::store::events::list(&fx.app.store, &fx.tenant(Mode::Test), &failed, &page)
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].data["id"], id.as_str());
    assert_eq!(found.items[0].data["status"], "APPROVED");

    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.data()["processed"][0]["status"], "PAID", "{:?}", r.body);
    assert_eq!(r.data()["processed"][0]["paymentError"], Value::Null);
    assert_eq!(sandbox.payments_of(id), 1);
    fx.assert_held(Mode::Test, id, "PAID").await;
    // Its events as listed, oldest first: batch-process approved the
    // invoiced payout in passing, once, before its first payment attempt.
    let r = fx.call("GET", "/api/v1/events?limit=100", None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut seen: Vec<(String, String)> = r
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["id"] == id.as_str())
        .map(|e| {
            let t = e["type"].as_str().unwrap().to_string();
            (t, e["data"]["status"].as_str().unwrap().to_string())
        })
        .collect();
    seen.reverse();
    let want = [
        ("payout.created", "PENDING"),
        ("payout.invoice_uploaded", "INVOICE_UPLOADED"),
        ("payout.approved", "APPROVED"),
        ("payout.processing", "PROCESSING"),
        ("payout.payment_failed", "APPROVED"),
        ("payout.processing", "PROCESSING"),
        ("payout.paid", "PAID"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(t, s)| (t.to_string(), s.to_string()))
        .collect();
    assert_eq!(seen, want);
}

/// batch-process's move of an APPROVED payout as the `manual` provider
/// makes it: PROCESSING, no rail asked, waiting for mark-paid.
pub(crate) async fn processed_by_hand(
    app: &App,
    tenant: &Tenant,
    id: &str,
) -> api::domain::payout::Payout {
    use api::domain::payout_command::Command;
    let by_hand = |_: &api::domain::payout::Payout| Command::Process {
        checked_invoice: None,
        rail: None,
    };
    let now = api::domain::timestamp::now();
    api::services::payouts::transition(app, tenant, id, by_hand, now)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_payout_left_processing_without_a_rail_is_the_merchants_to_mark_paid() {
    // batch-process commits the sandbox's answer with the move to
    // PROCESSING, so only a payout paid by hand (manual) stays PROCESSING
    // without a rail: the merchant may be paying it, so the payout job never
    // asks a provider for it, and only mark-paid moves it.
    let fx = Fx::new().await;
    let id = fx.approved(Mode::Test, 1).await.remove(0);
    let tenant = fx.tenant(Mode::Test);
    let left = processed_by_hand(&fx.app, &tenant, &id).await;
    assert_eq!(left.status.as_str(), "PROCESSING");
    assert_eq!(left.queue(), None, "not in the job's queue");
    for _ in 0..2 {
        fx.run_job().await;
        let r = fx.call("GET", &format!("/api/v1/payouts/{id}"), None).await;
        assert_eq!(r.data()["status"], "PROCESSING", "{:?}", r.body);
    }
    let paid_events = |fx_body: &Value| -> usize {
        fx_body
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["data"]["id"] == id.as_str())
            .count()
    };
    let r = fx
        .call("GET", "/api/v1/events?type=payout.paid", None)
        .await;
    assert_eq!(paid_events(r.data()), 0, "{:?}", r.body);
    let marked = fx
        .call("PUT", &format!("/api/v1/payouts/{id}/mark-paid"), None)
        .await;
    assert_eq!(marked.data()["status"], "PAID", "{:?}", marked.body);
    let r = fx
        .call("GET", "/api/v1/events?type=payout.paid", None)
        .await;
    assert_eq!(paid_events(r.data()), 1, "{:?}", r.body);
    fx.assert_held(Mode::Test, &id, "PAID").await;
}

#[tokio::test]
async fn batch_process_pays_many_payouts_together_and_adds_up_what_they_share() {
    // 14 payouts of one conversion each take three transactions (8 actions
    // a payout, 6 a transaction), and two of them are one affiliate's, in
    // USD and in EUR, paid in one transaction: its paid totals (one item)
    // and the tenant's rollups add up.
    let fx = Fx::new().await;
    let mut ids = fx.invoiced(Mode::Test, 13).await;
    let first = fx
        .call("GET", &format!("/api/v1/payouts/{}", ids[0]), None)
        .await;
    let twice = first.data()["affiliateId"].as_str().unwrap().to_string();
    let a = fx
        .call("GET", &format!("/api/v1/affiliates/{twice}"), None)
        .await;
    fx.sell(Mode::Test, a.data()["code"].as_str().unwrap(), 300, "EUR")
        .await;
    fx.run_job().await;
    let second = fx.payouts_of(Mode::Test, &twice).await.remove(0);
    let second = second["id"].as_str().unwrap().to_string();
    assert!(!ids.contains(&second));
    fx.attach(Mode::Test, &second).await;
    // Beside the affiliate's other payout, in the first transaction.
    ids.insert(1, second);

    // The service batch-process runs, on this test's own clients: one
    // batch read, each payout's conversions (a Query of its members, a
    // consistent batch read of them), three transactions.
    let metrics = || fx.app.store.metrics().snapshot();
    let before = metrics();
    let now = api::domain::timestamp::now();
    let tenant = fx.tenant(Mode::Test);
    let results = api::services::payouts::process_many(&fx.app, &tenant, ids.clone(), now).await;
    let cost = metrics().since(&before);
    // A transaction re-sent after a conflict with another test's adds a
    // call; a payout redone alone adds four.
    assert!(
        (1 + 14 * 2 + 3..1 + 14 * 2 + 3 + 4).contains(&cost.calls),
        "one BatchGetItem, 14 members' reads, 3 transactions, none redone alone: {cost:?}"
    );
    let got: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(got, ids, "answered in the request's order");
    for (id, r) in &results {
        let p = r.as_ref().unwrap_or_else(|e| panic!("{id}: {e:?}"));
        assert_eq!(p.status.as_str(), "PAID");
        assert_eq!(
            p.payment_reference.as_deref(),
            Some(format!("sandbox_{id}").as_str())
        );
    }
    for id in &ids {
        fx.assert_held(Mode::Test, id, "PAID").await;
    }
    // 10.00 USD and 30.00 EUR for the affiliate paid twice, 10.00 USD for
    // the others.
    let a = fx
        .call("GET", &format!("/api/v1/affiliates/{twice}"), None)
        .await;
    assert_eq!(a.data()["paid"]["USD"].as_f64(), Some(10.0), "{:?}", a.body);
    assert_eq!(a.data()["paid"]["EUR"].as_f64(), Some(30.0), "{:?}", a.body);
    let other = results[2].1.as_ref().unwrap().affiliate_id.clone();
    let o = fx
        .call("GET", &format!("/api/v1/affiliates/{other}"), None)
        .await;
    assert_eq!(o.data()["paid"]["USD"].as_f64(), Some(10.0), "{:?}", o.body);
    let s = fx
        .call("GET", "/api/v1/conversions/summary?group_by=status", None)
        .await;
    assert_eq!(s.status, 200, "{:?}", s.body);
    let groups = s.data()["groups"].as_array().unwrap();
    let paid = |currency: &str| {
        let g: Vec<&Value> = groups
            .iter()
            .filter(|g| g["status"] == "PAID" && g["currency"] == currency)
            .collect();
        assert_eq!(g.len(), 1, "{groups:?}");
        (g[0]["count"].as_u64(), g[0]["commission"].as_f64())
    };
    assert_eq!(paid("USD"), (Some(13), Some(130.0)), "{groups:?}");
    assert_eq!(paid("EUR"), (Some(1), Some(30.0)), "{groups:?}");
    assert!(
        groups
            .iter()
            .all(|g| g["status"] != "APPROVED" || g["count"].as_u64() == Some(0)),
        "nothing left APPROVED: {groups:?}"
    );
}

#[tokio::test]
async fn cancelled_payouts_return_their_conversions_to_the_pool() {
    let fx = Fx::new().await;
    let aff = fx.earner(Mode::Test, "BANK_TRANSFER", &[100, 200]).await;
    fx.run_job().await;
    let first = fx.payouts_of(Mode::Test, &aff).await.remove(0);
    let first_id = first["id"].as_str().unwrap();
    assert_eq!(fx.conversions_of(Mode::Test, first_id).await.len(), 2);

    let body = json!({"payoutIds": [first_id], "reason": "wrong amount"});
    let r = fx
        .call("POST", "/api/v1/payouts/bulk-cancel", Some(body))
        .await;
    assert_eq!(
        r.data()["cancelled"][0]["status"],
        "CANCELLED",
        "{:?}",
        r.body
    );
    assert!(fx.conversions_of(Mode::Test, first_id).await.is_empty());
    let r = fx
        .call(
            "GET",
            &format!("/api/v1/conversions?affiliate_id={aff}"),
            None,
        )
        .await;
    let back = r.data().as_array().unwrap();
    assert!(
        back.iter()
            .all(|c| c["status"] == "APPROVED" && c["payoutId"].is_null()),
        "{back:?}"
    );

    fx.run_job().await;
    let all = fx.payouts_of(Mode::Test, &aff).await;
    assert_eq!(all.len(), 2, "{all:?}");
    let again = all
        .iter()
        .find(|p| p["status"] == "PENDING")
        .expect("a new payout");
    assert_eq!(
        (&again["amount"], &again["conversionCount"]),
        (&first["amount"], &json!(2))
    );
    assert_eq!(again["method"], "BANK_TRANSFER");
    assert_eq!(
        fx.conversions_of(Mode::Test, again["id"].as_str().unwrap())
            .await
            .len(),
        2
    );
}

#[tokio::test]
async fn other_accounts_and_the_other_mode_get_404_everywhere() {
    let fx = Fx::new().await;
    let ids = fx.pending(Mode::Test, 1).await;
    let id = &ids[0];
    fx.attach(Mode::Test, id).await;
    let other = merchant_on(fx.server).await;
    for key in [
        other.test_key.as_str(),
        other.live_key.as_str(),
        fx.m.live_key.as_str(),
    ] {
        for (method, action, body) in [
            ("GET", "", None),
            ("GET", "/invoice", None),
            ("POST", "/approve", None),
            ("POST", "/reject", Some(json!({"reason": "x"}))),
            ("POST", "/mark-paid", Some(mark_paid_body())),
            ("PUT", "/mark-paid", None),
        ] {
            let r = fx
                .call_as(key, method, &format!("/api/v1/payouts/{id}{action}"), body)
                .await;
            r.assert_error(404, "NOT_FOUND");
        }
        for (path, body) in [
            ("batch-process", json!({"payoutIds": [id]})),
            ("bulk-cancel", json!({"payoutIds": [id], "reason": "x"})),
        ] {
            let r = fx
                .call_as(key, "POST", &format!("/api/v1/payouts/{path}"), Some(body))
                .await;
            assert_eq!(r.data()["failed"][0]["code"], "NOT_FOUND", "{:?}", r.body);
        }
        let r = fx.call_as(key, "GET", "/api/v1/payouts", None).await;
        assert!(r
            .data()
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["id"] != id.as_str()));
        let r = fx
            .call_as(
                key,
                "GET",
                &format!("/api/v1/conversions?payout_id={id}"),
                None,
            )
            .await;
        assert_eq!(r.data(), &json!([]));
    }
    assert_eq!(
        fx.status_of(Mode::Test, id).await,
        "INVOICE_UPLOADED",
        "nothing changed"
    );
}

#[tokio::test]
async fn bodies_and_id_lists_are_validated() {
    let fx = Fx::new().await;
    let ids = fx.invoiced(Mode::Test, 1).await;
    let at = |action: &str| format!("/api/v1/payouts/{}/{action}", ids[0]);
    let cases: Vec<(&str, String, Value, &str)> = vec![
        ("POST", at("approve"), json!({"force": true}), "force"),
        ("POST", at("reject"), json!({}), "reason"),
        ("POST", at("reject"), json!({"reason": "   "}), "reason"),
        (
            "POST",
            at("reject"),
            json!({"reason": "x".repeat(1001)}),
            "reason",
        ),
        ("POST", at("reject"), json!({"reason": "a\u{7}b"}), "reason"),
        ("POST", at("reject"), json!({"reason": 5}), "reason"),
        (
            "POST",
            at("mark-paid"),
            json!({"paymentMethod": "wire"}),
            "paymentDate",
        ),
        (
            "POST",
            at("mark-paid"),
            json!({"paymentDate": "2026-02-30", "paymentMethod": "wire"}),
            "paymentDate",
        ),
        (
            "POST",
            at("mark-paid"),
            json!({"paymentDate": "15/01/2026", "paymentMethod": "wire"}),
            "paymentDate",
        ),
        (
            "POST",
            at("mark-paid"),
            json!({"paymentDate": "2026-01-15", "paymentMethod": ""}),
            "paymentMethod",
        ),
        (
            "POST",
            at("mark-paid"),
            json!({"paymentDate": "2026-01-15", "paymentMethod": "w".repeat(101)}),
            "paymentMethod",
        ),
        (
            "PUT",
            at("mark-paid"),
            json!({"paymentReference": "r".repeat(201)}),
            "paymentReference",
        ),
        (
            "PUT",
            at("mark-paid"),
            json!({"note": "n".repeat(1001)}),
            "note",
        ),
        ("PUT", at("mark-paid"), json!({"status": "PAID"}), "status"),
        (
            "POST",
            "/api/v1/payouts/batch-process".into(),
            json!({"payoutIds": []}),
            "payoutIds",
        ),
        (
            "POST",
            "/api/v1/payouts/batch-process".into(),
            json!({"payoutIds": vec!["po_x"; 101]}),
            "payoutIds",
        ),
        (
            "POST",
            "/api/v1/payouts/batch-process".into(),
            json!({"payoutIds": "po_x"}),
            "payoutIds",
        ),
        (
            "POST",
            "/api/v1/payouts/batch-process".into(),
            json!({}),
            "payoutIds",
        ),
        (
            "POST",
            "/api/v1/payouts/bulk-cancel".into(),
            json!({"payoutIds": ["po_x"]}),
            "reason",
        ),
        (
            "POST",
            "/api/v1/payouts/bulk-cancel".into(),
            json!({"payoutIds": [], "reason": "x"}),
            "payoutIds",
        ),
    ];
    for (method, path, body, field) in cases {
        let r = fx.call(method, &path, Some(body.clone())).await;
        r.assert_error(400, "VALIDATION_FAILED");
        let paths: Vec<&Value> = r.body["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &i["path"][0])
            .collect();
        assert!(
            paths.contains(&&json!(field)),
            "{method} {path} {body}: {:?}",
            r.body
        );
    }
    // Not JSON, or not declared JSON: INVALID_REQUEST.
    let r = crate::support::raw(
        &fx.server.base,
        "POST",
        &at("reject"),
        Some(&fx.m.test_key),
        &[("content-type", "text/plain")],
        Some(b"{\"reason\":\"x\"}".to_vec()),
    )
    .await;
    r.assert_error(400, "INVALID_REQUEST");
    // A hundred copies of one id are one id.
    let body = json!({"payoutIds": vec!["po_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"; 100]});
    let r = fx
        .call("POST", "/api/v1/payouts/batch-process", Some(body))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.data()["failed"].as_array().unwrap().len(), 1);
    assert_eq!(
        fx.status_of(Mode::Test, &ids[0]).await,
        "INVOICE_UPLOADED",
        "nothing changed"
    );
}

#[tokio::test]
async fn a_run_resuming_a_payout_abandoned_meanwhile_leaves_the_pool_to_the_next() {
    use api::domain::payout::{Payout, PoolEntry};
    use api::store::work::WorkRange;
    use api::store::{affiliates, attrs, campaigns, keys, payout_items, payouts, string_value};
    let fx = Fx::new().await;
    // A pool below its campaign's minimum: approved, never paid out.
    let body = json!({"name": "Minimum", "commissionType": "PERCENTAGE", "commissionValue": 10,
        "holdDays": 0, "minimumPayout": 50});
    let r = fx.call("POST", "/api/v1/campaigns", Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let campaign_id = r.data()["id"].as_str().unwrap().to_string();
    let code = unique("m").chars().take(20).collect::<String>();
    let body = json!({"campaignId": campaign_id, "name": code, "code": code,
        "email": format!("{}@partners.example.com", code.to_lowercase()), "payoutMethod": "WISE"});
    let r = fx.call("POST", "/api/v1/affiliates", Some(body)).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    let aff = r.data()["id"].as_str().unwrap().to_string();
    fx.sell(Mode::Test, &code, 100, "USD").await;
    fx.run_job().await;
    let (t, store, now) = (
        fx.tenant(Mode::Test),
        &fx.app.store,
        api::domain::timestamp::now(),
    );
    let partition = keys::payable_pool(&t, &aff, "USD");
    let (pool, _) = payouts::members(store, &t, &partition, WorkRange::All, 10)
        .await
        .unwrap();
    assert_eq!(pool.len(), 1, "approved and left in the pool");
    // What a run listed to resume: a payout being assembled for this pool,
    // which the run that opened it has abandoned (the record is gone).
    let affiliate = affiliates::get(store, &t, &aff).await.unwrap();
    let campaign = campaigns::get(store, &t, &campaign_id).await.unwrap();
    let mut large = pool[0].clone();
    large.commission = 100.into();
    let entry = PoolEntry::Conversion(Box::new(large));
    let gone = Payout::open(&affiliate, &campaign, pool[0].currency, &[entry], now).unwrap();
    let listing = format!("LISTED#{}", gone.id);
    let mut item = payout_items::item(&t, &gone).unwrap();
    item.insert(attrs::PK.into(), string_value(listing.clone()));
    item.insert(attrs::ID.into(), string_value(gone.id.clone()));
    store.put(item).await.unwrap();
    let budget = Budget {
        items: 1_000,
        time: std::time::Duration::from_secs(120),
    };
    let report = {
        let _alone = JOBS.lock().await;
        job::run(&fx.app, now, budget).await
    };
    store.delete(&listing, keys::RECORD_SK).await.unwrap();
    let report = report.expect("payout job");
    assert!(
        !report.cut_short,
        "the claim ended at its first refused chunk: {report:?}"
    );
    let (left, _) = payouts::members(store, &t, &partition, WorkRange::All, 10)
        .await
        .unwrap();
    let left: Vec<_> = left.iter().map(|c| (&c.id, &c.payout_id)).collect();
    assert_eq!(
        left,
        [(&pool[0].id, &None)],
        "still in the pool, in no payout"
    );
}

#[tokio::test]
async fn concurrent_job_runs_make_one_payout_per_pool() {
    // Runs that overlap: one may read a pool another is claiming. Each
    // pool must still become exactly one payout holding its conversion.
    let fx = Fx::new().await;
    for _ in 0..8 {
        let mut affiliates = Vec::new();
        for _ in 0..4 {
            affiliates.push(fx.earner(Mode::Test, "WISE", &[100]).await);
        }
        // At once with each other, while no other test records an earner.
        let alone = JOBS.lock().await;
        let mut runs = tokio::task::JoinSet::new();
        for i in 0..4u64 {
            let app = fx.app.clone();
            runs.spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(7 * i)).await;
                job::run(&app, api::domain::timestamp::now(), Budget::default()).await
            });
        }
        while let Some(r) = runs.join_next().await {
            r.unwrap().expect("payout job");
        }
        drop(alone);
        for aff in &affiliates {
            let found = fx.payouts_of(Mode::Test, aff).await;
            assert_eq!(found.len(), 1, "{found:?}");
            let got = (&found[0]["conversionCount"], &found[0]["amount"]);
            assert_eq!(got, (&json!(1), &json!(10)));
        }
    }
}
