#!/usr/bin/env python3
"""Self-test of the Stripe + PayPal stand-in (scripts/standin/providers.py).

    .local/venv/bin/python scripts/standin/selftest.py

Starts the stand-in on a free port in a subprocess and drives it with plain
HTTP (urllib) and with Stripe's official Python library. Prints
`N passed, M failed` alone on its last line; exits 1 when anything failed.
"""

import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
from urllib.parse import parse_qs, urlencode, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "sk_test_" + uuid.uuid4().hex
OTHER_KEY = "sk_test_" + uuid.uuid4().hex
PASSED, FAILED = [], []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.raw = status, headers, body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None


def call(method, path, body=None, headers=None, form=None, bearer=None, basic=None):
    """One HTTP request on a fresh connection; raises OSError/http.client errors
    when the server drops it."""
    h = dict(headers or {})
    data = None
    if form is not None:
        data = urlencode(form).encode()
        h.setdefault("Content-Type", "application/x-www-form-urlencoded")
    elif body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    if bearer:
        h["Authorization"] = f"Bearer {bearer}"
    if basic:
        h["Authorization"] = (
            "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        )
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    try:
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        return Answer(r.status, r.headers, r.read())
    finally:
        conn.close()


def ctl(method, path, body=None):
    return call(
        method,
        path,
        body=body if body is not None else ({} if method == "POST" else None),
    )


def check(name, cond, detail=""):
    (PASSED if cond else FAILED).append(name)
    if not cond:
        print(f"FAIL {name} {detail}", flush=True)


def test(fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - a crashed test is a failed test
        FAILED.append(fn.__name__)
        print(f"FAIL {fn.__name__} crashed:\n{traceback.format_exc()}", flush=True)
    return fn


def stripe_client(key=KEY):
    import stripe

    return stripe.StripeClient(
        key, base_addresses={"api": BASE, "connect": BASE}, max_network_retries=0
    )


def new_account(key=KEY, **extra):
    a = call(
        "POST",
        "/v1/accounts",
        form={
            "type": "express",
            "email": "aff@example.com",
            "metadata[affiliateId]": "aff_1",
            **extra,
        },
        bearer=key,
    )
    assert a.status == 200, a.raw
    return a.json


def enable(acct_id):
    r = ctl(
        "POST",
        f"/_standin/stripe/accounts/{acct_id}",
        {
            "payouts_enabled": True,
            "charges_enabled": True,
            "capabilities": {"transfers": "active"},
            "requirements": {"currently_due": [], "disabled_reason": None},
        },
    )
    assert r.status == 200, r.raw
    return r.json


# ------------------------------------------------------------------ Stripe over HTTP
def stripe_http():
    a = new_account()
    check("account id", a["id"].startswith("acct_") and len(a["id"]) == 21, a["id"])
    check(
        "account starts disabled",
        a["payouts_enabled"] is False
        and a["capabilities"] == {"transfers": "inactive"}
        and a["requirements"]["disabled_reason"] == "requirements.past_due"
        and a["requirements"]["currently_due"],
    )
    check(
        "account metadata",
        a["metadata"] == {"affiliateId": "aff_1"}
        and a["type"] == "express"
        and a["country"] == "US",
    )
    check(
        "GET account",
        call("GET", f"/v1/accounts/{a['id']}", bearer=KEY).json["id"] == a["id"],
    )
    other = call("GET", f"/v1/accounts/{a['id']}", bearer=OTHER_KEY)
    check(
        "other key cannot see account",
        other.status == 404 and other.json["error"]["code"] == "resource_missing",
    )
    r = call("POST", "/v1/accounts", form={"email": "x@example.com"}, bearer=KEY)
    check(
        "account needs type",
        r.status == 400
        and r.json["error"]["code"] == "parameter_missing"
        and r.json["error"]["param"] == "type",
    )
    r = call(
        "POST",
        "/v1/accounts",
        form={"controller[stripe_dashboard][type]": "express"},
        bearer=KEY,
    )
    check("account by controller", r.status == 200 and r.json["type"] == "express")
    r = call("POST", "/v1/accounts", body={"type": "express"}, bearer=KEY)
    check("JSON body refused", r.status == 400, r.raw)
    r = call("POST", "/v1/accounts", form={"type": "express"}, bearer="sk_test_bad key")
    check(
        "bad key 401 masked",
        r.status == 401
        and r.json["error"]["type"] == "invalid_request_error"
        and "Invalid API Key provided" in r.json["error"]["message"]
        and "sk_test_bad key" not in r.raw.decode(),
    )
    r = call("POST", "/v1/accounts", form={"type": "express", "bogus": "1"}, bearer=KEY)
    check(
        "unknown param refused", r.status == 400 and r.json["error"]["param"] == "bogus"
    )
    live = call(
        "POST",
        "/v1/accounts",
        form={"type": "express"},
        bearer="sk_live_" + uuid.uuid4().hex,
    )
    check("live key account", live.status == 200)

    # account links and onboarding
    r = call(
        "POST",
        "/v1/account_links",
        form={
            "account": a["id"],
            "type": "account_onboarding",
            "refresh_url": "http://localhost:3000/refresh",
        },
        bearer=KEY,
    )
    check(
        "account link return_url required",
        r.status == 400
        and r.json["error"]["code"] == "parameter_missing"
        and r.json["error"]["param"] == "return_url",
    )
    r = call(
        "POST",
        "/v1/account_links",
        form={
            "account": a["id"],
            "type": "account_onboarding",
            "refresh_url": "ftp://x",
            "return_url": "http://localhost:3000/back?x=1",
        },
        bearer=KEY,
    )
    check(
        "account link url must be http",
        r.status == 400 and r.json["error"]["param"] == "refresh_url",
    )
    r = call(
        "POST",
        "/v1/account_links",
        form={
            "account": "acct_nope",
            "type": "account_onboarding",
            "refresh_url": "http://l/r",
            "return_url": "http://l/b",
        },
        bearer=KEY,
    )
    check(
        "account link unknown account",
        r.status == 400
        and r.json["error"]["code"] == "resource_missing"
        and r.json["error"]["param"] == "account",
    )
    r = call(
        "POST",
        "/v1/account_links",
        form={
            "account": a["id"],
            "type": "account_onboarding",
            "refresh_url": "http://localhost:3000/refresh",
            "return_url": "http://localhost:3000/back?x=1",
        },
        bearer=KEY,
    )
    link = r.json
    check(
        "account link",
        r.status == 200
        and link["object"] == "account_link"
        and link["expires_at"] - link["created"] == 300,
        r.raw,
    )
    u = urlsplit(link["url"])
    check(
        "account link url",
        u.path == f"/_standin/onboarding/{a['id']}"
        and parse_qs(u.query)["return_url"] == ["http://localhost:3000/back?x=1"],
        link["url"],
    )
    page = call("GET", u.path + "?" + u.query)
    check(
        "onboarding page",
        page.status == 200
        and b"Stripe stand-in: onboarding" in page.raw
        and b"Complete onboarding" in page.raw,
    )
    # a transfer to a not yet onboarded account is refused
    r = call(
        "POST",
        "/v1/transfers",
        form={"amount": 100, "currency": "usd", "destination": a["id"]},
        bearer=KEY,
    )
    check(
        "transfer needs transfers capability",
        r.status == 400
        and r.json["error"]["code"] == "insufficient_capabilities_for_transfer"
        and "transfers, crypto_transfers, legacy_payments"
        in r.json["error"]["message"],
    )
    done = call("POST", u.path + "?" + u.query, form={})
    check(
        "onboarding completes with 303",
        done.status == 303
        and done.headers["Location"] == "http://localhost:3000/back?x=1",
        done.status,
    )
    a2 = call("GET", f"/v1/accounts/{a['id']}", bearer=KEY).json
    check(
        "onboarded account enabled",
        a2["payouts_enabled"]
        and a2["charges_enabled"]
        and a2["details_submitted"]
        and a2["capabilities"]["transfers"] == "active"
        and a2["requirements"]["currently_due"] == []
        and a2["requirements"]["disabled_reason"] is None,
    )

    # transfers
    tag = uuid.uuid4().hex
    form = {
        "amount": 1234,
        "currency": "usd",
        "destination": a["id"],
        "transfer_group": "payout_" + tag,
        "metadata[payoutId]": tag,
        "description": "commission",
    }
    r1 = call(
        "POST",
        "/v1/transfers",
        form=form,
        bearer=KEY,
        headers={"Idempotency-Key": "k-" + tag},
    )
    t = r1.json
    check(
        "transfer",
        r1.status == 200
        and t["id"].startswith("tr_")
        and t["amount"] == 1234
        and t["destination"] == a["id"]
        and t["metadata"] == {"payoutId": tag}
        and t["destination_payment"].startswith("py_")
        and t["reversals"]["data"] == []
        and t["reversed"] is False
        and t["livemode"] is False,
        r1.raw,
    )
    r2 = call(
        "POST",
        "/v1/transfers",
        form=form,
        bearer=KEY,
        headers={"Idempotency-Key": "k-" + tag},
    )
    check(
        "idempotent replay",
        r2.status == 200
        and r2.json == t
        and r2.headers.get("Idempotent-Replayed") == "true",
    )
    check(
        "one transfer created",
        len(ctl("GET", f"/_standin/transfers?match={tag}").json) == 1,
    )
    r3 = call(
        "POST",
        "/v1/transfers",
        form=dict(form, amount=99),
        bearer=KEY,
        headers={"Idempotency-Key": "k-" + tag},
    )
    check(
        "same key other params",
        r3.status == 400
        and r3.json["error"]["type"] == "idempotency_error"
        and "same parameters" in r3.json["error"]["message"],
    )
    r4 = call(
        "POST",
        "/v1/transfers",
        form=form,
        bearer=OTHER_KEY,
        headers={"Idempotency-Key": "k-" + tag},
    )
    check(
        "idempotency scoped per key",
        r4.status == 400
        and r4.json["error"]["param"] == "destination"
        and r4.json["error"]["code"] == "resource_missing",
    )
    check("GET transfer", call("GET", f"/v1/transfers/{t['id']}", bearer=KEY).json == t)
    check(
        "GET transfer other key",
        call("GET", f"/v1/transfers/{t['id']}", bearer=OTHER_KEY).status == 404,
    )
    r = call(
        "POST",
        "/v1/transfers",
        form={"amount": "12.5", "currency": "usd", "destination": a["id"]},
        bearer=KEY,
        headers={"Idempotency-Key": "v-" + tag},
    )
    check(
        "amount must be integer",
        r.status == 400 and r.json["error"]["param"] == "amount",
    )
    r = call(
        "POST",
        "/v1/transfers",
        form={"amount": 5, "currency": "usd", "destination": a["id"]},
        bearer=KEY,
        headers={"Idempotency-Key": "v-" + tag},
    )
    check(
        "validation refusal saves no result",
        r.status == 200 and not r.headers.get("Idempotent-Replayed"),
    )
    r = call(
        "POST",
        "/v1/transfers",
        form={"amount": 5, "currency": "USD", "destination": a["id"]},
        bearer=KEY,
    )
    check(
        "currency lowercase", r.status == 400 and r.json["error"]["param"] == "currency"
    )
    r = call(
        "POST",
        "/v1/transfers",
        form={"amount": 5, "currency": "usd", "destination": "acct_0000000000000000"},
        bearer=KEY,
    )
    check(
        "unknown destination",
        r.status == 400
        and r.json["error"]["code"] == "resource_missing"
        and "No such destination: 'acct_0000000000000000'"
        in r.json["error"]["message"],
    )
    r = call("POST", "/v1/transfers", form={"amount": 5, "currency": "usd"}, bearer=KEY)
    check(
        "destination required",
        r.status == 400
        and r.json["error"]["code"] == "parameter_missing"
        and r.json["error"]["param"] == "destination",
    )
    lst = call("GET", f"/v1/transfers?destination={a['id']}&limit=1", bearer=KEY).json
    check(
        "list transfers",
        lst["object"] == "list" and len(lst["data"]) == 1 and lst["has_more"] is True,
    )
    reqs = ctl("GET", f"/_standin/requests?path=/v1/transfers&match=k-{tag}").json
    check(
        "request log",
        [(x["status"], x["replayed"]) for x in reqs]
        == [(200, False), (200, True), (400, False), (400, False)]
        and reqs[0]["form"]["metadata"] == {"payoutId": tag}
        and reqs[0]["key"] == "k-" + tag,
        reqs,
    )
    check(
        "request log hides Authorization",
        all("Authorization" not in json.dumps(x) for x in reqs),
    )


# ------------------------------------------------------------------ Stripe's own library
def stripe_promotion_codes():
    """Promotion codes: a coupon Stripe has, a code unique among the key's
    active codes in any case, deactivated by `active=false`."""
    form = {"promotion[type]": "coupon", "promotion[coupon]": "SELF10", "code": "Anna20",
            "metadata[affiliateId]": "aff_1"}
    r = call("POST", "/v1/promotion_codes", form=form, bearer=KEY)
    check("promo: unknown coupon refused", r.status == 400
          and r.json["error"]["code"] == "resource_missing", r.json)
    ctl("POST", "/_standin/stripe/coupons/SELF10")
    r = call("POST", "/v1/promotion_codes", form=form, bearer=KEY)
    promo = r.json
    check("promo: created", r.status == 200 and promo["id"].startswith("promo_")
          and promo["active"] is True and promo["code"] == "Anna20"
          and promo["promotion"] == {"coupon": "SELF10", "type": "coupon"}
          and promo["metadata"] == {"affiliateId": "aff_1"}, promo)
    again = dict(form, code="ANNA20")
    r = call("POST", "/v1/promotion_codes", form=again, bearer=KEY)
    check("promo: active code unique in any case", r.status == 400
          and r.json["error"]["code"] == "resource_already_exists", r.json)
    r = call("POST", f"/v1/promotion_codes/{promo['id']}", form={"active": "false"}, bearer=KEY)
    check("promo: deactivated", r.status == 200 and r.json["active"] is False, r.json)
    r = call("POST", "/v1/promotion_codes", form=again, bearer=KEY)
    check("promo: the code is free once inactive", r.status == 200, r.json)
    r = call("POST", f"/v1/promotion_codes/{promo['id']}", form={"active": "false"}, bearer=OTHER_KEY)
    check("promo: another key's code is no such code", r.status == 404, r.json)
    r = call("POST", "/v1/promotion_codes", form={"coupon": "SELF10", "code": "a-b"}, bearer=KEY)
    check("promo: letters and digits only", r.status == 400 and r.json["error"]["param"] == "code", r.json)


def stripe_library():
    import stripe

    sc = stripe_client()
    acct = sc.v1.accounts.create(
        params={
            "type": "express",
            "email": "lib@example.com",
            "capabilities": {"transfers": {"requested": True}},
            "metadata": {"affiliateId": "aff_lib"},
        }
    )
    check(
        "lib: account",
        acct.id.startswith("acct_")
        and acct.payouts_enabled is False
        and acct.metadata["affiliateId"] == "aff_lib",
    )
    link = sc.v1.account_links.create(
        params={
            "account": acct.id,
            "type": "account_onboarding",
            "refresh_url": "http://localhost:3000/r",
            "return_url": "http://localhost:3000/b",
        }
    )
    check(
        "lib: account link",
        link.url.startswith(BASE + "/_standin/onboarding/" + acct.id),
    )
    full = enable(acct.id)
    check(
        "lib: control enables",
        full["payouts_enabled"] is True
        and full["capabilities"]["transfers"] == "active"
        and full["id"] == acct.id,
    )
    check(
        "lib: retrieve",
        sc.v1.accounts.retrieve(acct.id).capabilities["transfers"] == "active",
    )
    tag = uuid.uuid4().hex
    params = {
        "amount": 2500,
        "currency": "eur",
        "destination": acct.id,
        "metadata": {"payoutId": tag},
        "transfer_group": tag,
    }
    t1 = sc.v1.transfers.create(
        params=params, options={"idempotency_key": "lib-" + tag}
    )
    t2 = sc.v1.transfers.create(
        params=params, options={"idempotency_key": "lib-" + tag}
    )
    check(
        "lib: idempotent transfer",
        t1.id == t2.id and t1.amount == 2500 and t1.metadata["payoutId"] == tag,
    )
    check(
        "lib: one transfer",
        len(ctl("GET", f"/_standin/transfers?match={tag}").json) == 1,
    )
    check(
        "lib: retrieve transfer", sc.v1.transfers.retrieve(t1.id).destination == acct.id
    )
    ctl(
        "POST",
        "/_standin/stripe/balance",
        {"apiKey": KEY, "currency": "gbp", "available": 100},
    )
    try:
        sc.v1.transfers.create(
            params={"amount": 101, "currency": "gbp", "destination": acct.id}
        )
        check("lib: balance_insufficient", False, "no error")
    except stripe.InvalidRequestError as e:
        check(
            "lib: balance_insufficient",
            e.code == "balance_insufficient" and e.http_status == 400,
            repr(e),
        )
    ok = sc.v1.transfers.create(
        params={"amount": 100, "currency": "gbp", "destination": acct.id}
    )
    check(
        "lib: balance lowered",
        ok.amount == 100
        and {"amount": 0, "currency": "gbp", "source_types": {"card": 0}}
        in call("GET", "/v1/balance", bearer=KEY).json["available"],
    )
    try:
        stripe_client("sk_test_wrong-key").v1.accounts.retrieve(acct.id)
        check("lib: bad key 401", False, "no error")
    except stripe.AuthenticationError as e:
        check(
            "lib: bad key 401",
            e.http_status == 401 and "Invalid API Key provided" in str(e),
            repr(e),
        )
    try:
        stripe_client(OTHER_KEY).v1.accounts.retrieve(acct.id)
        check("lib: other platform", False, "no error")
    except stripe.InvalidRequestError as e:
        check("lib: other platform", e.code == "resource_missing", repr(e))


# ------------------------------------------------------------------ PayPal
def token(client=None):
    client = client or "cid-" + uuid.uuid4().hex[:8]
    r = call(
        "POST",
        "/v1/oauth2/token",
        form={"grant_type": "client_credentials"},
        basic=(client, "secret"),
    )
    assert r.status == 200, r.raw
    return r.json["access_token"]


def payout_body(tag, value="10.00", currency="USD", **item):
    return {
        "sender_batch_header": {
            "sender_batch_id": "batch-" + tag,
            "email_subject": "You have a payout!",
            "recipient_type": "EMAIL",
        },
        "items": [
            {
                "recipient_type": "EMAIL",
                "amount": {"value": value, "currency": currency},
                "receiver": "aff@example.com",
                "sender_item_id": "item-" + tag,
                "note": "Commission",
                **item,
            }
        ],
    }


def paypal():
    r = call(
        "POST",
        "/v1/oauth2/token",
        form={"grant_type": "client_credentials"},
        basic=("cid", "sec"),
    )
    check(
        "token",
        r.status == 200
        and r.json["access_token"].startswith("A21AA")
        and r.json["token_type"] == "Bearer"
        and r.json["expires_in"] == 32400
        and r.json["app_id"].startswith("APP-")
        and "nonce" in r.json,
    )
    r = call(
        "POST",
        "/v1/oauth2/token",
        form={"grant_type": "password"},
        basic=("cid", "sec"),
    )
    check(
        "token grant type",
        r.status == 400 and r.json["error"] == "unsupported_grant_type",
    )
    r = call("POST", "/v1/oauth2/token", form={"grant_type": "client_credentials"})
    check(
        "token needs basic auth",
        r.status == 401 and r.json["error"] == "invalid_client",
    )
    ctl("POST", "/_standin/paypal/clients", {"clientId": "badcid", "bad": True})
    r = call(
        "POST",
        "/v1/oauth2/token",
        form={"grant_type": "client_credentials"},
        basic=("badcid", "sec"),
    )
    check(
        "bad client",
        r.status == 401
        and r.json
        == {
            "error": "invalid_client",
            "error_description": "Client Authentication failed",
        },
    )

    tok = token()
    tag = uuid.uuid4().hex[:12]
    r = call("POST", "/v1/payments/payouts", body=payout_body(tag), bearer="A21AAnope")
    check("payout needs token", r.status == 401 and r.json["error"] == "invalid_token")
    rid = "rid-" + tag
    r = call(
        "POST",
        "/v1/payments/payouts",
        body=payout_body(tag),
        bearer=tok,
        headers={"PayPal-Request-Id": rid},
    )
    bh = r.json["batch_header"] if r.json else {}
    check(
        "payout 201",
        r.status == 201
        and bh["batch_status"] == "PENDING"
        and bh["sender_batch_header"]["sender_batch_id"] == "batch-" + tag
        and r.json["links"][0]["rel"] == "self",
        r.raw,
    )
    again = call(
        "POST",
        "/v1/payments/payouts",
        body=payout_body(tag),
        bearer=tok,
        headers={"PayPal-Request-Id": rid},
    )
    check("payout replay", again.status == 201 and again.json == r.json)
    dup = call(
        "POST",
        "/v1/payments/payouts",
        body=payout_body(tag),
        bearer=tok,
        headers={"PayPal-Request-Id": rid + "-other"},
    )
    check(
        "sender_batch_id reused",
        dup.status == 400
        and dup.json["name"] == "USER_BUSINESS_ERROR"
        and dup.json["details"][0]["issue"] == "SENDER_BATCH_ID_ALREADY_USED",
        dup.raw,
    )
    items = ctl("GET", f"/_standin/paypal/items?match={tag}").json
    check(
        "one payout item",
        len(items) == 1
        and items[0]["transaction_status"] == "PENDING"
        and items[0]["payout_item"]["sender_item_id"] == "item-" + tag,
    )
    batch = call(
        "GET", f"/v1/payments/payouts/{bh['payout_batch_id']}", bearer=tok
    ).json
    check(
        "GET batch",
        batch["batch_header"]["batch_status"] == "PENDING"
        and batch["items"][0]["payout_item_id"] == items[0]["payout_item_id"]
        and batch["batch_header"]["amount"] == {"currency": "USD", "value": "10.00"},
    )
    item_id = items[0]["payout_item_id"]
    it = call("GET", f"/v1/payments/payouts-item/{item_id}", bearer=tok)
    check(
        "GET item",
        it.status == 200
        and it.json["payout_batch_id"] == bh["payout_batch_id"]
        and it.json["payout_item"]["amount"]["value"] == "10.00",
    )
    check(
        "GET item other client",
        call("GET", f"/v1/payments/payouts-item/{item_id}", bearer=token()).status
        == 404,
    )

    def refused(name, body, field=None):
        r = call("POST", "/v1/payments/payouts", body=body, bearer=tok)
        ok = (
            r.status == 400
            and r.json["name"] == "VALIDATION_ERROR"
            and r.json["message"] == "Invalid request - see details."
            and r.json["details"]
            and r.json["details"][0]["location"] == "body"
            and (field is None or r.json["details"][0]["field"] == field)
        )
        check("refused: " + name, ok, r.raw)

    t2 = uuid.uuid4().hex[:12]
    refused(
        "no items",
        {"sender_batch_header": {"sender_batch_id": t2}, "items": []},
        "items",
    )
    refused(
        "no receiver",
        {
            "sender_batch_header": {"sender_batch_id": t2},
            "items": [{"amount": {"value": "1.00", "currency": "USD"}}],
        },
        "items[0].receiver",
    )
    refused("amount as number", payout_body(t2, value=1.5), "items[0].amount.value")
    refused("no header", {"items": payout_body(t2)["items"]}, "sender_batch_header")
    refused(
        "three decimals USD", payout_body(t2, value="1.005"), "items[0].amount.value"
    )
    refused(
        "decimals JPY",
        payout_body(t2, value="100.5", currency="JPY"),
        "items[0].amount.value",
    )
    refused("note too long", payout_body(t2, note="x" * 4001), "items[0].note")
    ok = call(
        "POST",
        "/v1/payments/payouts",
        body=payout_body(t2, value="100", currency="JPY"),
        bearer=tok,
    )
    check("JPY integer ok", ok.status == 201, ok.raw)
    bad = call("POST", "/v1/payments/payouts", body=b"{not json", bearer=tok)
    check(
        "malformed JSON", bad.status == 400 and bad.json["name"] == "MALFORMED_REQUEST"
    )

    # item status and webhooks
    r = ctl(
        "POST",
        f"/_standin/paypal/items/item-{tag}",
        {"transaction_status": "SUCCESS", "webhook_id": "1JE4291016473214C"},
    )
    ev, hdrs = r.json["event"], r.json["headers"]
    check(
        "item event",
        ev["event_type"] == "PAYMENT.PAYOUTS-ITEM.SUCCEEDED"
        and ev["resource_type"] == "payouts_item"
        and ev["event_version"] == "1.0"
        and ev["id"].startswith("WH-")
        and ev["resource"]["payout_item_id"] == item_id
        and ev["resource"]["transaction_status"] == "SUCCESS"
        and ev["resource"]["transaction_id"]
        and ev["resource"]["payout_item"]["sender_item_id"] == "item-" + tag,
        r.raw,
    )
    check(
        "item event headers",
        set(hdrs)
        == {
            "PAYPAL-TRANSMISSION-ID",
            "PAYPAL-TRANSMISSION-TIME",
            "PAYPAL-TRANSMISSION-SIG",
            "PAYPAL-CERT-URL",
            "PAYPAL-AUTH-ALGO",
        },
    )
    check(
        "GET item after status",
        call("GET", f"/v1/payments/payouts-item/{item_id}", bearer=tok).json[
            "transaction_status"
        ]
        == "SUCCESS",
    )
    check(
        "batch SUCCESS",
        call("GET", f"/v1/payments/payouts/{bh['payout_batch_id']}", bearer=tok).json[
            "batch_header"
        ]["batch_status"]
        == "SUCCESS",
    )

    def verify(h, webhook_id, event):
        return call(
            "POST",
            "/v1/notifications/verify-webhook-signature",
            bearer=tok,
            body={
                "auth_algo": h["PAYPAL-AUTH-ALGO"],
                "cert_url": h["PAYPAL-CERT-URL"],
                "transmission_id": h["PAYPAL-TRANSMISSION-ID"],
                "transmission_sig": h["PAYPAL-TRANSMISSION-SIG"],
                "transmission_time": h["PAYPAL-TRANSMISSION-TIME"],
                "webhook_id": webhook_id,
                "webhook_event": event,
            },
        )

    # the receiver re-serialises the event: key order must not matter
    reordered = json.loads(json.dumps(ev, sort_keys=True))
    v = verify(hdrs, "1JE4291016473214C", reordered)
    check(
        "verify SUCCESS",
        v.status == 200 and v.json == {"verification_status": "SUCCESS"},
        v.raw,
    )
    forged = json.loads(json.dumps(ev))
    forged["resource"]["payout_item"]["amount"]["value"] = "9999.00"
    check(
        "verify forged event FAILURE",
        verify(hdrs, "1JE4291016473214C", forged).json
        == {"verification_status": "FAILURE"},
    )
    check(
        "verify other webhook FAILURE",
        verify(hdrs, "OTHERWEBHOOK1", ev).json == {"verification_status": "FAILURE"},
    )
    fake = dict(
        hdrs,
        **{"PAYPAL-TRANSMISSION-SIG": "AAAA" + hdrs["PAYPAL-TRANSMISSION-SIG"][4:]},
    )
    check(
        "verify forged sig FAILURE",
        verify(fake, "1JE4291016473214C", ev).json
        == {"verification_status": "FAILURE"},
    )
    s = ctl(
        "POST",
        "/_standin/paypal/sign",
        {
            "webhook_id": "WEBHOOK2",
            "event": {
                "id": "WH-1",
                "event_type": "PAYMENT.PAYOUTSBATCH.SUCCESS",
                "resource": {"a": 1},
            },
        },
    )
    check(
        "sign + verify",
        verify(
            s.json["headers"],
            "WEBHOOK2",
            {
                "resource": {"a": 1},
                "event_type": "PAYMENT.PAYOUTSBATCH.SUCCESS",
                "id": "WH-1",
            },
        ).json["verification_status"]
        == "SUCCESS",
    )
    v = call(
        "POST",
        "/v1/notifications/verify-webhook-signature",
        bearer=tok,
        body={"webhook_id": "X"},
    )
    check(
        "verify body validated",
        v.status == 400 and v.json["name"] == "VALIDATION_ERROR",
    )
    v = call(
        "POST", "/v1/notifications/verify-webhook-signature", body={"webhook_id": "X"}
    )
    check("verify needs token", v.status == 401)
    r = ctl(
        "POST",
        f"/_standin/paypal/items/{item_id}",
        {
            "transaction_status": "FAILED",
            "error": {
                "name": "RECEIVER_UNREGISTERED",
                "message": "Receiver is unregistered",
            },
        },
    )
    check(
        "FAILED event",
        r.json["event"]["event_type"] == "PAYMENT.PAYOUTS-ITEM.FAILED"
        and r.json["event"]["resource"]["errors"]["name"] == "RECEIVER_UNREGISTERED"
        and "headers" not in r.json,
    )


# ------------------------------------------------------------------ faults
def faults():
    acct = new_account()
    enable(acct["id"])

    def transfer(tag, key):
        return call(
            "POST",
            "/v1/transfers",
            form={
                "amount": 700,
                "currency": "usd",
                "destination": acct["id"],
                "metadata[payoutId]": tag,
            },
            bearer=KEY,
            headers={"Idempotency-Key": key},
        )

    # drop_after: executed, the answer lost; the retry with the same key replays
    tag = uuid.uuid4().hex
    f = ctl(
        "POST",
        "/_standin/faults",
        {"path": "/v1/transfers", "match": tag, "kind": "drop_after"},
    )
    check("fault created", f.status == 201 and f.json["id"])
    try:
        transfer(tag, "da-" + tag)
        check("drop_after: connection error", False, "got an answer")
    except (OSError, http.client.HTTPException):
        check("drop_after: connection error", True)
    made = ctl("GET", f"/_standin/transfers?match={tag}").json
    check("drop_after: transfer exists", len(made) == 1)
    r = transfer(tag, "da-" + tag)
    check(
        "drop_after: replay",
        r.status == 200
        and r.headers.get("Idempotent-Replayed") == "true"
        and r.json["id"] == made[0]["id"],
    )
    log = ctl("GET", f"/_standin/requests?path=/v1/transfers&match={tag}").json
    check(
        "drop_after: logged",
        [(x["status"], x["replayed"]) for x in log] == [(None, False), (200, True)],
        log,
    )

    # drop_before: nothing executed
    tag = uuid.uuid4().hex
    ctl(
        "POST",
        "/_standin/faults",
        {"path": "/v1/transfers", "match": tag, "kind": "drop_before"},
    )
    try:
        transfer(tag, "db-" + tag)
        check("drop_before: connection error", False)
    except (OSError, http.client.HTTPException):
        check("drop_before: connection error", True)
    check(
        "drop_before: nothing created",
        ctl("GET", f"/_standin/transfers?match={tag}").json == [],
    )
    r = transfer(tag, "db-" + tag)
    check(
        "drop_before: retry executes",
        r.status == 200 and not r.headers.get("Idempotent-Replayed"),
    )

    # status: answered without executing, twice, then gone
    tag = uuid.uuid4().hex
    ctl(
        "POST",
        "/_standin/faults",
        {
            "path": "/v1/transfers",
            "match": tag,
            "kind": "status",
            "status": 503,
            "body": {"error": {"type": "api_error", "message": "down"}},
            "times": 2,
        },
    )
    r1, r2 = transfer(tag, "st-" + tag), transfer(tag, "st-" + tag)
    check(
        "status fault",
        r1.status == 503 and r1.json["error"]["message"] == "down" and r2.status == 503,
    )
    check(
        "status: nothing created",
        ctl("GET", f"/_standin/transfers?match={tag}").json == [],
    )
    r3 = transfer(tag, "st-" + tag)
    check(
        "status: fault gone, executes",
        r3.status == 200 and not r3.headers.get("Idempotent-Replayed"),
    )

    # delay: a concurrent request with the same key sees idempotency_key_in_use
    tag = uuid.uuid4().hex
    ctl(
        "POST",
        "/_standin/faults",
        {"path": "/v1/transfers", "match": tag, "kind": "delay", "seconds": 1.0},
    )
    out = {}
    th = threading.Thread(target=lambda: out.update(first=transfer(tag, "dl-" + tag)))
    t0 = time.time()
    th.start()
    time.sleep(0.3)
    second = transfer(tag, "dl-" + tag)
    th.join()
    check("delay: slow", time.time() - t0 >= 1.0 and out["first"].status == 200)
    check(
        "delay: key in use 409",
        second.status == 409
        and second.json["error"]["code"] == "idempotency_key_in_use",
        second.raw,
    )
    check(
        "delay: one transfer",
        len(ctl("GET", f"/_standin/transfers?match={tag}").json) == 1,
    )

    # faults only fire for requests containing their match string
    tag, other = uuid.uuid4().hex, uuid.uuid4().hex
    ctl(
        "POST",
        "/_standin/faults",
        {"path": "/v1/transfers", "match": tag, "kind": "status", "status": 500},
    )
    check("fault ignores other requests", transfer(other, "o-" + other).status == 200)
    check("fault fires on match", transfer(tag, "o-" + tag).status == 500)

    # PayPal: drop_after on a payout, then the same PayPal-Request-Id replays
    tok = token()
    tag = uuid.uuid4().hex[:12]
    ctl(
        "POST",
        "/_standin/faults",
        {"path": "/v1/payments/payouts", "match": "pp-" + tag, "kind": "drop_after"},
    )
    try:
        call(
            "POST",
            "/v1/payments/payouts",
            body=payout_body(tag),
            bearer=tok,
            headers={"PayPal-Request-Id": "pp-" + tag},
        )
        check("paypal drop_after: connection error", False)
    except (OSError, http.client.HTTPException):
        check("paypal drop_after: connection error", True)
    r = call(
        "POST",
        "/v1/payments/payouts",
        body=payout_body(tag),
        bearer=tok,
        headers={"PayPal-Request-Id": "pp-" + tag},
    )
    check(
        "paypal drop_after: replay",
        r.status == 201
        and len(ctl("GET", f"/_standin/paypal/items?match={tag}").json) == 1,
    )


# ------------------------------------------------------------------ state file
def state_file():
    global PORT, BASE
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "providers.json")
        port = free_port()
        proc = start(port, ["--state", path])
        saved = PORT, BASE
        PORT, BASE = port, f"http://127.0.0.1:{port}"
        try:
            acct = new_account()
        finally:
            stop(proc)
        proc = start(port, ["--state", path])
        try:
            r = call("GET", f"/v1/accounts/{acct['id']}", bearer=KEY)
            check(
                "state kept across restart",
                r.status == 200 and r.json["id"] == acct["id"],
            )
        finally:
            stop(proc)
            PORT, BASE = saved


def start(port, extra=()):
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
    proc = subprocess.Popen(
        [
            sys.executable,
            os.path.join(HERE, "providers.py"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *extra,
        ],
        stdout=log,
        stderr=log,
    )
    proc.log = log
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/_standin/health", timeout=1
            ) as r:
                if r.status == 200:
                    return proc
        except (OSError, urllib.error.URLError):
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    log.seek(0)
    sys.stderr.write(log.read().decode())
    proc.kill()
    raise SystemExit("the stand-in did not start")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    global PORT, BASE
    PORT = free_port()
    BASE = f"http://127.0.0.1:{PORT}"
    proc = start(PORT)
    t0 = time.time()
    try:
        for fn in (stripe_http, stripe_promotion_codes, stripe_library, paypal, faults):
            test(fn)
        r = ctl("POST", "/_standin/reset")
        check("reset", r.status == 200 and ctl("GET", "/_standin/transfers").json == [])
    finally:
        stop(proc)
        proc.log.seek(0)
        log = proc.log.read().decode()
    test(state_file)
    check("log has no secret", KEY not in log and "Bearer" not in log)
    check(
        "log one line per request",
        all(len(line.split()) == 4 for line in log.splitlines()[1:]),
        log[-500:],
    )
    if FAILED and os.environ.get("SELFTEST_LOG"):
        sys.stderr.write(log)
    print(f"({time.time() - t0:.1f}s)")
    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
