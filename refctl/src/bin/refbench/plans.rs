//! Commission plan rows (contract section 15): the attributed postback on a
//! campaign with 20 rules and 10 tiers (a new customer, then its recurring
//! payment), a LEAD, the preview, and a manual adjustment. The rules are built so none holds
//! for the measured payments: every one of them is tried.

use http::Method;
use serde_json::{json, Value};

use crate::Bench;

/// 20 rules by product, none naming the benchmark's payments.
fn rules() -> Value {
    (0..20)
        .map(|i| {
            json!({"name": format!("Product {i}"), "when": {"productIds": [format!("prod_{i}")]},
                   "pay": {"type": "PERCENTAGE", "value": 20 + i}})
        })
        .collect()
}

/// 10 tiers from 5 customers up.
fn tiers() -> Value {
    (0..10)
        .map(|i| {
            json!({"name": format!("Tier {i}"), "minCustomers": 5 * (i + 1),
                   "pay": {"type": "PERCENTAGE", "value": 11 + i}})
        })
        .collect()
}

/// The campaign and its affiliate (`BENCHPLN`), by id; one postback
/// first, so the rows measure a process that has read them (warm).
async fn programme(b: &mut Bench, k: Option<&str>) -> (String, String) {
    let body = json!({"name": "Plans", "commissionType": "PERCENTAGE", "commissionValue": 10,
        "commissionRecurring": true, "commissionRules": rules(), "tiers": tiers(),
        "leadCommission": {"value": 2, "currency": "USD"}});
    let (s, v) = b
        .send(Method::POST, "/api/v1/campaigns", k, Some(&body))
        .await;
    assert_eq!(s, 201, "{v}");
    let campaign = v["data"]["id"].as_str().unwrap().to_string();
    let aff = json!({"campaignId": campaign, "email": "benchpln@example.com", "name": "BENCHPLN",
        "code": "BENCHPLN"});
    let (s, v) = b
        .send(Method::POST, "/api/v1/affiliates", k, Some(&aff))
        .await;
    assert_eq!(s, 201, "{v}");
    let affiliate = v["data"]["id"].as_str().unwrap().to_string();
    let warm = json!({"amount": 10, "currency": "USD", "conversionType": "SALE",
        "externalId": "bench-plan-0", "affiliateCode": "BENCHPLN", "customerId": "bench-plan-cus-0"});
    let (s, v) = b
        .send(Method::POST, "/api/v1/conversions/postback", k, Some(&warm))
        .await;
    assert_eq!(s, 201, "{v}");
    (campaign, affiliate)
}

/// The commission plan rows.
pub async fn plan_rows(b: &mut Bench, k: Option<&str>) {
    let (campaign, affiliate) = programme(b, k).await;
    let by_code = |order: &str, customer: &str| json!({"externalId": order, "affiliateCode": "BENCHPLN", "customerId": customer});
    b.measure_postback(
        "POST /conversions/postback (20 rules, 10 tiers: new customer, counted)",
        k,
        by_code("bench-plan-1", "bench-plan-cus-1"),
    )
    .await;
    b.measure_postback(
        "POST /conversions/postback (20 rules, 10 tiers: the customer's payment 2)",
        k,
        by_code("bench-plan-2", "bench-plan-cus-1"),
    )
    .await;
    let mut lead = by_code("bench-plan-3", "bench-plan-cus-2");
    lead["conversionType"] = json!("LEAD");
    lead["amount"] = json!(0);
    b.measure_postback("POST /conversions/postback (LEAD, new customer)", k, lead)
        .await;
    let preview = json!({"amount": 49.99, "currency": "USD", "paymentNumber": 2, "customers": 12});
    b.measure_status(
        "POST /campaigns/{id}/commission-preview (20 rules, 10 tiers)",
        200,
        Method::POST,
        &format!("/api/v1/campaigns/{campaign}/commission-preview"),
        k,
        Some(&preview),
    )
    .await;
    let bonus = json!({"amount": 15, "currency": "USD", "reason": "Launch bonus",
        "externalId": "bench-bonus-1"});
    b.measure(
        "POST /affiliates/{id}/adjustments (a bonus, with externalId)",
        Method::POST,
        &format!("/api/v1/affiliates/{affiliate}/adjustments"),
        k,
        Some(&bonus),
    )
    .await;
}
