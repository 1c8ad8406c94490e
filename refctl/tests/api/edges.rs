//! Smaller edges: a signature header sent twice, the provider receiver's
//! body limit, and the portal page that names an account kept private to
//! the browser and revalidated by its ETag.

use serde_json::json;

use crate::connector_shapes::{event, fresh, programme};
use crate::integrations::{id, now, official_signature, STRIPE_SECRET};
use crate::support::{merchant, raw, server};

#[tokio::test]
async fn a_signature_header_sent_twice_is_refused() {
    let (_, _, _, _, i) = programme().await;
    let body = event(
        "customer.created",
        json!({"id": fresh("cus_"), "metadata": {}}),
    )
    .to_string();
    let good = official_signature("stripe", STRIPE_SECRET, &body, now());
    let path = format!("/api/v1/integrations/{}/events", id(&i));
    let send = |headers: Vec<(&'static str, String)>| {
        let (path, body) = (path.clone(), body.clone());
        async move {
            let mut all: Vec<(&str, &str)> = vec![("content-type", "application/json")];
            all.extend(headers.iter().map(|(k, v)| (*k, v.as_str())));
            raw(
                &server().base,
                "POST",
                &path,
                None,
                &all,
                Some(body.into_bytes()),
            )
            .await
        }
    };
    // Each alone is the provider's; both at once are no one's.
    let forged = "t=1,v1=00".to_string();
    for pair in [[good.clone(), forged.clone()], [forged, good.clone()]] {
        let r = send(
            pair.iter()
                .map(|v| ("stripe-signature", v.clone()))
                .collect(),
        )
        .await;
        r.assert_error(400, "INVALID_REQUEST");
        assert_eq!(
            r.body["error"]["message"],
            "signature: signature header sent more than once"
        );
    }
    let r = send(vec![("stripe-signature", good)]).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
}

#[tokio::test]
async fn a_provider_event_over_one_mebibyte_is_refused_in_the_envelope() {
    let (_, _, _, _, i) = programme().await;
    let limit = api::http::body::MAX_EVENT_BYTES;
    let path = format!("/api/v1/integrations/{}/events", id(&i));
    let padded = |size: usize| {
        let mut ev = event(
            "customer.created",
            json!({"id": fresh("cus_"), "metadata": {}}),
        );
        let bare = ev.to_string().len() + r#","pad":"""#.len();
        ev["pad"] = json!("x".repeat(size - bare));
        let body = ev.to_string();
        assert_eq!(body.len(), size);
        body
    };
    let over = padded(limit + 1);
    let sig = official_signature("stripe", STRIPE_SECRET, &over, now());
    let headers = [
        ("content-type", "application/json"),
        ("stripe-signature", sig.as_str()),
    ];
    let r = raw(
        &server().base,
        "POST",
        &path,
        None,
        &headers,
        Some(over.into_bytes()),
    )
    .await;
    r.assert_error(400, "INVALID_REQUEST");
    assert_eq!(
        r.body["error"]["message"],
        format!("request body is larger than {limit} bytes")
    );
    // At the limit, it is read (and judged: a customer without referral).
    let at = padded(limit);
    let sig = official_signature("stripe", STRIPE_SECRET, &at, now());
    let headers = [
        ("content-type", "application/json"),
        ("stripe-signature", sig.as_str()),
    ];
    let r = raw(
        &server().base,
        "POST",
        &path,
        None,
        &headers,
        Some(at.into_bytes()),
    )
    .await;
    assert_eq!(
        (r.status, &r.data()["outcome"]),
        (200, &json!("IGNORED")),
        "{:?}",
        r.body
    );
}

#[tokio::test]
async fn the_portal_page_of_an_account_is_private_and_revalidated() {
    let m = merchant().await;
    let page = format!("/portal?account={}", m.account_id);
    let first = raw(&server().base, "GET", &page, None, &[], None).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("cache-control"), Some("private, no-cache"));
    let etag = first.header("etag").expect("an ETag").to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let again = raw(
        &server().base,
        "GET",
        &page,
        None,
        &[("if-none-match", &etag)],
        None,
    )
    .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let stale = raw(
        &server().base,
        "GET",
        &page,
        None,
        &[("if-none-match", "\"0\"")],
        None,
    )
    .await;
    assert_eq!(stale.status, 200);
    // The page naming no account is the same for everyone: a public document.
    let plain = raw(&server().base, "GET", "/portal", None, &[], None).await;
    assert_eq!(plain.header("cache-control"), Some("public, max-age=300"));
}
