#!/usr/bin/env python3
"""Local stand-in of the Stripe and PayPal APIs the affiliate payouts use.

    .local/venv/bin/python scripts/standin/providers.py --host 127.0.0.1 --port N [--state FILE]

One process serves both providers (their paths do not collide):

  Stripe  (form bodies with bracket notation, `Authorization: Bearer sk_...`,
           `Idempotency-Key`, errors {"error": {type, code?, message, param?}})
    POST /v1/accounts, GET /v1/accounts/{id}
    POST /v1/promotion_codes, POST /v1/promotion_codes/{id}
    POST /v1/account_links            -> url of GET /_standin/onboarding/{acct}
    POST /v1/transfers, GET /v1/transfers/{id}, GET /v1/transfers, GET /v1/balance
  PayPal  (JSON bodies checked against the OpenAPI documents' schemas)
    POST /v1/oauth2/token
    POST /v1/payments/payouts, GET /v1/payments/payouts/{id},
    GET /v1/payments/payouts-item/{id}
    POST /v1/notifications/verify-webhook-signature
  Control (no auth, JSON in and out), under /_standin/: see scripts/standin/README.md

Answers are built from the provider documents copied into
scripts/standin/providers/ (Stripe's fixtures3.json, PayPal's OpenAPI docs).
State is in memory; with --state FILE it is loaded at start and saved
atomically after every mutating request (request log and faults excepted).
One line per request is logged to stderr: method, path, status.
"""

import argparse
import base64
import binascii
import copy
import fnmatch
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import socket
import string
import sys
import threading
import time
import uuid
import zlib
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "providers")
ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
DEFAULT_BALANCE = 10**12


def load_doc(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return json.load(f)


STRIPE_FIXTURES = load_doc("stripe-fixtures3.json")["resources"]
PAYOUTS_DOC = load_doc("paypal-payments_payouts_batch_v1.json")
WEBHOOKS_DOC = load_doc("paypal-notifications_webhooks_v1.json")


def request_schema(doc, path):
    """The request body schema of POST `path` in an OpenAPI 3 document, as a
    validator whose `$ref`s resolve inside that document."""
    ref = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    root = dict(ref)
    root["components"] = doc["components"]
    jsonschema.Draft4Validator.check_schema(root)
    return jsonschema.Draft4Validator(root)


PAYOUT_VALIDATOR = request_schema(PAYOUTS_DOC, "/v1/payments/payouts")
VERIFY_VALIDATOR = request_schema(
    WEBHOOKS_DOC, "/v1/notifications/verify-webhook-signature"
)
WEBHOOK_ID_RE = re.compile(
    WEBHOOKS_DOC["components"]["schemas"]["verify_webhook_signature"]["properties"][
        "webhook_id"
    ]["pattern"]
)

STRIPE_KEY_RE = re.compile(r"^(sk|rk)_(test|live)_[A-Za-z0-9]+$")
CURRENCY_RE = re.compile(r"^[a-z]{3}$")
# ISO 4217 minor units where they differ from 2 (PayPal: HUF, JPY, TWD take none)
CURRENCY_DECIMALS = {
    **dict.fromkeys(
        ["JPY", "HUF", "TWD", "KRW", "CLP", "ISK", "VND", "XAF", "XOF", "UGX", "PYG"], 0
    ),
    **dict.fromkeys(["BHD", "JOD", "KWD", "OMR", "TND", "IQD", "LYD"], 3),
}
PAYPAL_ITEM_EVENTS = {
    "SUCCESS": ("PAYMENT.PAYOUTS-ITEM.SUCCEEDED", "A payout item has succeeded"),
    "FAILED": ("PAYMENT.PAYOUTS-ITEM.FAILED", "A payout item has failed"),
    "RETURNED": ("PAYMENT.PAYOUTS-ITEM.RETURNED", "A payout item was returned"),
    "BLOCKED": ("PAYMENT.PAYOUTS-ITEM.BLOCKED", "A payout item was blocked"),
    "DENIED": ("PAYMENT.PAYOUTS-ITEM.DENIED", "A payout item was denied"),
    "UNCLAIMED": ("PAYMENT.PAYOUTS-ITEM.UNCLAIMED", "A payout item is unclaimed"),
    "REFUNDED": ("PAYMENT.PAYOUTS-ITEM.REFUNDED", "A payout item was refunded"),
    "ONHOLD": ("PAYMENT.PAYOUTS-ITEM.HELD", "A payout item is on hold"),
    "CANCELED": ("PAYMENT.PAYOUTS-ITEM.CANCELED", "A payout item was canceled"),
}
PAYPAL_ERRORS_LINK = (
    "https://developer.paypal.com/docs/api/payments.payouts-batch/#errors"
)

ACCOUNT_PARAMS = {
    "type",
    "country",
    "email",
    "business_type",
    "business_profile",
    "capabilities",
    "company",
    "controller",
    "default_currency",
    "documents",
    "external_account",
    "groups",
    "individual",
    "metadata",
    "settings",
    "tos_acceptance",
    "account_token",
    "bank_account",
    "expand",
}
ACCOUNT_LINK_PARAMS = {
    "account",
    "type",
    "refresh_url",
    "return_url",
    "collect",
    "collection_options",
    "expand",
}
TRANSFER_PARAMS = {
    "amount",
    "currency",
    "destination",
    "description",
    "metadata",
    "source_transaction",
    "source_type",
    "transfer_group",
    "expand",
}


def rand(n, alphabet=ALNUM):
    return "".join(secrets.choice(alphabet) for _ in range(n))


def now():
    return int(time.time())


def iso_now():
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def debug_id():
    return secrets.token_hex(7)


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            deep_merge(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)
    return dst


# ------------------------------------------------------------------ errors
class Reply(Exception):
    """An answer decided early: raise Reply(status, body).

    `save` tells whether a Stripe idempotent request keeps this result (True
    once the endpoint started executing; False for auth and parameter
    validation refusals, as at Stripe)."""

    def __init__(self, status, body, save=False, headers=None):
        super().__init__(status)
        self.status, self.body, self.save, self.headers = (
            status,
            body,
            save,
            headers or {},
        )


def stripe_error(
    status, message, type_="invalid_request_error", code=None, param=None, save=False
):
    err = {"type": type_, "message": message}
    if code:
        err["code"] = code
        err["doc_url"] = f"https://stripe.com/docs/error-codes/{code.replace('_', '-')}"
    if param:
        err["param"] = param
    return Reply(status, {"error": err}, save=save)


def missing(param):
    return stripe_error(
        400, f"Missing required param: {param}.", code="parameter_missing", param=param
    )


def paypal_error(status, name, message, details=None, links=None):
    body = {
        "name": name,
        "message": message,
        "debug_id": debug_id(),
        "information_link": PAYPAL_ERRORS_LINK,
    }
    if details is not None:
        body["details"] = details
    body["links"] = links or []
    return Reply(status, body)


# ------------------------------------------------------------------ form parsing
KEY_RE = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def parse_form(raw):
    """Stripe's bracket notation: a[b][c]=1, a[]=x, a[0]=x -> nested dicts/lists."""
    out = {}
    for key, value in parse_qsl(raw, keep_blank_values=True):
        m = KEY_RE.match(key)
        if not m:
            raise stripe_error(
                400,
                f"Invalid parameter name: {key}",
                code="parameter_unknown",
                param=key,
            )
        parts = [m.group(1)] + re.findall(r"\[([^\[\]]*)\]", m.group(2))
        node = out
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if part == "" or part.isdigit():
                    if last:
                        node.append(value)
                        break
                    idx = int(part) if part else len(node)
                    while len(node) <= idx:
                        node.append({})
                    node = node[idx]
                    continue
                raise stripe_error(
                    400,
                    f"Invalid array: {key}",
                    code="parameter_invalid_array",
                    param=key,
                )
            if last:
                node[part] = value
            else:
                nxt = parts[i + 1]
                if part not in node or not isinstance(node[part], (dict, list)):
                    node[part] = [] if nxt == "" else {}
                node = node[part]
    return out


# ------------------------------------------------------------------ state
class State:
    def __init__(self, path=None):
        self.lock = threading.RLock()
        self.save_lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.path = path
        self.secret = secrets.token_bytes(32)
        self.cert_suffix = secrets.token_hex(4)
        self.reset()
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
            for k in self.persisted:
                if k in saved:
                    self.data[k] = saved[k]
            # a request cut short by a stop never finished: forget its key
            for table in ("idem", "request_ids"):
                for keyed in self.data[table].values():
                    for k in [k for k, v in keyed.items() if not v.get("done")]:
                        del keyed[k]

    persisted = (
        "accounts",
        "coupons",
        "promotion_codes",
        "transfers",
        "balances",
        "idem",
        "tokens",
        "bad_clients",
        "batches",
        "items",
        "request_ids",
        "sender_batches",
    )

    def reset(self):
        self.data = {
            "accounts": {},  # id -> {"owner": api key, "obj": account}
            "coupons": [],  # coupon ids any key may use (made through the control API)
            "promotion_codes": {},  # id -> {"owner": api key, "obj": promotion code}
            "transfers": {},  # id -> {"owner", "obj", "raw": form body}
            "balances": {},  # api key -> {currency: available}
            "idem": {},  # api key -> idempotency key -> {"fp", "status", "body", "done"}
            "tokens": {},  # access token -> {"client": id, "expires": epoch}
            "bad_clients": [],
            "batches": {},  # payout_batch_id -> {"client", "header", "items": [ids], "links", "time_created"}
            "items": {},  # payout_item_id -> {"client", "batch", "item": payout item resource, "raw"}
            "request_ids": {},  # client -> PayPal-Request-Id -> {"status", "body", "done"}
            "sender_batches": {},  # client -> sender_batch_id -> {"request_id", "batch"}
        }
        self.requests = []
        self.faults = []
        self.signatures = {}  # transmission id -> {"time", "webhook_id", "event", "sig", "cert_url"}

    def save(self):
        if not self.path:
            return
        with self.save_lock:  # snapshots are written in the order they are taken
            with self.lock:
                blob = json.dumps(
                    {k: self.data[k] for k in self.persisted}, indent=1, sort_keys=True
                )
            d = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(d, exist_ok=True)
            tmp = f"{self.path}.tmp.{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)

    # faults ---------------------------------------------------------------
    def take_fault(self, path, key, raw):
        with self.lock:
            for f in self.faults:
                if not fnmatch.fnmatchcase(path, f["path"]):
                    continue
                m = f["match"]
                if m and m not in (key or "") and m not in raw:
                    continue
                f["times"] -= 1
                if f["times"] <= 0:
                    self.faults.remove(f)
                return f
        return None


STATE = None


# ------------------------------------------------------------------ Stripe
def mask_key(key):
    m = re.match(r"^([a-z]+_(?:test|live)_)?(.*)$", key, re.DOTALL)
    prefix, rest = m.group(1) or "", m.group(2)
    tail = rest[-4:] if len(rest) > 4 else ""
    return prefix + "*" * max(len(rest) - len(tail), 0) + tail


def stripe_auth(headers):
    auth = headers.get("Authorization", "")
    if not auth:
        raise stripe_error(
            401,
            "You did not provide an API key. You need to provide your API key in the Authorization header, "
            "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication "
            "for details, or we can help at https://support.stripe.com/.",
        )
    scheme, _, key = auth.partition(" ")
    key = key.strip()
    if scheme.lower() == "basic":
        try:
            key = base64.b64decode(key).decode().split(":", 1)[0]
        except (binascii.Error, UnicodeDecodeError):
            key = ""
    elif scheme.lower() != "bearer":
        key = auth
    if not STRIPE_KEY_RE.match(key):
        raise stripe_error(401, f"Invalid API Key provided: {mask_key(key)}")
    return key


def check_params(params, allowed):
    for k in params:
        if k not in allowed:
            raise stripe_error(
                400,
                f"Received unknown parameter: {k}",
                code="parameter_unknown",
                param=k,
            )


def check_metadata(params):
    md = params.get("metadata", {})
    if md == "":
        return {}
    if not isinstance(md, dict):
        raise stripe_error(
            400, "Invalid object", code="parameter_invalid_object", param="metadata"
        )
    if len(md) > 50:
        raise stripe_error(
            400,
            "Invalid metadata: metadata cannot have more than 50 keys",
            param="metadata",
        )
    for k, v in md.items():
        if not isinstance(v, str):
            raise stripe_error(
                400,
                "Invalid string",
                code="parameter_invalid_string",
                param=f"metadata[{k}]",
            )
        if len(k) > 40:
            raise stripe_error(
                400,
                "Invalid metadata: keys can be at most 40 characters",
                param=f"metadata[{k}]",
            )
        if len(v) > 500:
            raise stripe_error(
                400,
                "Invalid metadata: values can be at most 500 characters",
                param=f"metadata[{k}]",
            )
    return {k: v for k, v in md.items() if v != ""}


def owned_account(key, acct_id):
    rec = STATE.data["accounts"].get(acct_id)
    if rec and rec["owner"] == key:
        return rec["obj"]
    return None


def stripe_create_account(key, params, base):
    check_params(params, ACCOUNT_PARAMS)
    type_ = params.get("type")
    controller = params.get("controller")
    if type_ is None and not controller:
        raise missing("type")
    if type_ is not None and type_ not in ("express", "standard", "custom"):
        raise stripe_error(
            400,
            "Invalid type: must be one of custom, express, or standard",
            param="type",
        )
    if controller and not isinstance(controller, dict):
        raise stripe_error(
            400, "Invalid object", code="parameter_invalid_object", param="controller"
        )
    if type_ is None:
        dash = controller.get("stripe_dashboard")
        dash = dash.get("type") if isinstance(dash, dict) else None
        type_ = {"express": "express", "full": "standard", "none": "custom"}.get(
            dash, "standard"
        )
    email = params.get("email")
    if email is not None and (
        not isinstance(email, str) or not re.match(r"^[^@\s]+@[^@\s]+\.[^@\s]+$", email)
    ):
        raise stripe_error(
            400, f"Invalid email address: {email}", code="email_invalid", param="email"
        )
    country = params.get("country", "US")
    if not isinstance(country, str) or not re.match(r"^[A-Za-z]{2}$", country):
        raise stripe_error(
            400,
            f"Country '{country}' is unknown. Try using a 2-character alphanumeric country code instead, such as 'US', 'EG', or 'GB'.",
            param="country",
        )
    metadata = check_metadata(params)
    acct = copy.deepcopy(STRIPE_FIXTURES["account"])
    acct_id = "acct_" + rand(16)
    due = [
        "business_type",
        "external_account",
        "tos_acceptance.date",
        "tos_acceptance.ip",
    ]
    caps = {"transfers": "inactive"}
    req_caps = params.get("capabilities")
    if isinstance(req_caps, dict) and "card_payments" in req_caps:
        caps["card_payments"] = "inactive"
    acct.update(
        {
            "id": acct_id,
            "type": type_,
            "email": email,
            "country": country.upper(),
            "metadata": metadata,
            "charges_enabled": False,
            "payouts_enabled": False,
            "details_submitted": False,
            "capabilities": caps,
            "created": now(),
            "business_type": params.get("business_type"),
            "default_currency": params.get("default_currency", "usd"),
            "controller": {"is_controller": True, "type": "application"}
            if type_ != "standard"
            else {"type": "account"},
        }
    )
    acct["requirements"] = {
        "alternatives": [],
        "current_deadline": None,
        "currently_due": list(due),
        "disabled_reason": "requirements.past_due",
        "errors": [],
        "eventually_due": list(due),
        "past_due": list(due),
        "pending_verification": [],
    }
    acct["external_accounts"]["url"] = f"/v1/accounts/{acct_id}/external_accounts"
    STATE.data["accounts"][acct_id] = {"owner": key, "obj": acct}
    return 200, acct


def enable_account(acct):
    acct.update(
        {"charges_enabled": True, "payouts_enabled": True, "details_submitted": True}
    )
    acct.setdefault("capabilities", {})["transfers"] = "active"
    if "card_payments" in acct["capabilities"]:
        acct["capabilities"]["card_payments"] = "active"
    acct["requirements"].update(
        {
            "currently_due": [],
            "eventually_due": [],
            "past_due": [],
            "disabled_reason": None,
            "current_deadline": None,
        }
    )
    acct["tos_acceptance"] = {
        "date": now(),
        "ip": "127.0.0.1",
        "user_agent": "stand-in",
    }
    if not acct.get("business_type"):
        acct["business_type"] = "individual"


def valid_url(u):
    if not isinstance(u, str):
        return False
    p = urlsplit(u)
    return p.scheme in ("http", "https") and bool(p.netloc)


def stripe_create_account_link(key, params, base):
    check_params(params, ACCOUNT_LINK_PARAMS)
    for p in ("account", "type", "refresh_url", "return_url"):
        if params.get(p) in (None, ""):
            raise missing(p)
    if params["type"] not in ("account_onboarding", "account_update"):
        raise stripe_error(
            400,
            "Invalid type: must be one of account_onboarding or account_update",
            param="type",
        )
    for p in ("refresh_url", "return_url"):
        if not valid_url(params[p]):
            raise stripe_error(400, "Not a valid URL", code="url_invalid", param=p)
    acct_id = params["account"]
    if owned_account(key, acct_id) is None:
        raise stripe_error(
            400,
            f"No such account: '{acct_id}'",
            code="resource_missing",
            param="account",
        )
    link = copy.deepcopy(STRIPE_FIXTURES["account_link"])
    t = now()
    link.update(
        {
            "created": t,
            "expires_at": t + 300,
            "url": f"{base}/_standin/onboarding/{acct_id}?"
            + urlencode({"return_url": params["return_url"]}, quote_via=quote),
        }
    )
    return 200, link


def stripe_create_transfer(key, params, base, raw):
    check_params(params, TRANSFER_PARAMS)
    for p in ("amount", "currency", "destination"):
        if params.get(p) in (None, ""):
            raise missing(p)
    amount = params["amount"]
    if not isinstance(amount, str) or not re.match(r"^[0-9]+$", amount):
        raise stripe_error(
            400,
            f"Invalid integer: {amount}",
            code="parameter_invalid_integer",
            param="amount",
        )
    amount = int(amount)
    if amount < 1:
        raise stripe_error(
            400,
            "This value must be greater than or equal to 1.",
            code="parameter_invalid_integer",
            param="amount",
        )
    currency = params["currency"]
    if not isinstance(currency, str) or not CURRENCY_RE.match(currency):
        raise stripe_error(
            400,
            f"Invalid currency: {currency}. Stripe currently supports these currencies: usd, eur, gbp, ...",
            param="currency",
        )
    metadata = check_metadata(params)
    for p in ("description", "transfer_group", "source_transaction"):
        if p in params and not isinstance(params[p], str):
            raise stripe_error(
                400, "Invalid string", code="parameter_invalid_string", param=p
            )
    dest = params["destination"]
    acct = owned_account(key, dest) if isinstance(dest, str) else None
    if acct is None:
        raise stripe_error(
            400,
            f"No such destination: '{dest}'",
            code="resource_missing",
            param="destination",
        )
    # from here on the endpoint executes: results are kept for idempotency
    if (acct.get("capabilities") or {}).get("transfers") != "active":
        raise stripe_error(
            400,
            "Your destination account needs to have at least one of the following capabilities enabled: "
            "transfers, crypto_transfers, legacy_payments",
            code="insufficient_capabilities_for_transfer",
            param="destination",
            save=True,
        )
    bal = STATE.data["balances"].setdefault(key, {})
    available = bal.get(currency, DEFAULT_BALANCE)
    if amount > available:
        raise stripe_error(
            400,
            "You have insufficient available funds in your Stripe account. Try adding funds directly to your "
            "available balance by creating Top-ups: https://stripe.com/docs/api#create_topup",
            code="balance_insufficient",
            save=True,
        )
    bal[currency] = available - amount
    tr = copy.deepcopy(STRIPE_FIXTURES["transfer"])
    tr_id = "tr_" + rand(24)
    tr.update(
        {
            "id": tr_id,
            "amount": amount,
            "amount_reversed": 0,
            "currency": currency,
            "destination": dest,
            "description": params.get("description"),
            "metadata": metadata,
            "transfer_group": params.get("transfer_group"),
            "source_transaction": params.get("source_transaction"),
            "created": now(),
            "livemode": "_live_" in key,
            "reversed": False,
            "balance_transaction": "txn_" + rand(24),
            "destination_payment": "py_" + rand(14),
            "reversals": {
                "object": "list",
                "data": [],
                "has_more": False,
                "total_count": 0,
                "url": f"/v1/transfers/{tr_id}/reversals",
            },
        }
    )
    STATE.data["transfers"][tr_id] = {"owner": key, "obj": tr, "raw": raw}
    return 200, tr


def stripe_list_transfers(key, query):
    q = dict(parse_qsl(query, keep_blank_values=True))
    items = [r["obj"] for r in STATE.data["transfers"].values() if r["owner"] == key]
    items.sort(key=lambda t: t["created"], reverse=True)
    for f in ("destination", "transfer_group"):
        if q.get(f):
            items = [t for t in items if t.get(f) == q[f]]
    if q.get("starting_after"):
        ids = [t["id"] for t in items]
        if q["starting_after"] in ids:
            items = items[ids.index(q["starting_after"]) + 1 :]
    try:
        limit = max(1, min(100, int(q.get("limit", 10))))
    except ValueError:
        raise stripe_error(
            400,
            f"Invalid integer: {q.get('limit')}",
            code="parameter_invalid_integer",
            param="limit",
        )
    return 200, {
        "object": "list",
        "url": "/v1/transfers",
        "has_more": len(items) > limit,
        "data": items[:limit],
    }


def stripe_balance(key):
    bal = STATE.data["balances"].get(key, {})
    currencies = sorted(set(bal) | {"usd"})
    avail = [
        {
            "amount": bal.get(c, DEFAULT_BALANCE),
            "currency": c,
            "source_types": {"card": bal.get(c, DEFAULT_BALANCE)},
        }
        for c in currencies
    ]
    return 200, {
        "object": "balance",
        "available": avail,
        "pending": [
            {"amount": 0, "currency": c, "source_types": {"card": 0}}
            for c in currencies
        ],
        "livemode": "_live_" in key,
    }


PROMOTION_CODE_PARAMS = {
    "active",
    "code",
    "coupon",
    "customer",
    "expires_at",
    "expand",
    "max_redemptions",
    "metadata",
    "promotion",
    "restrictions",
}
PROMOTION_CODE_RE = re.compile(r"^[a-zA-Z0-9]{1,500}$")


def stripe_create_promotion_code(key, params, base):
    """POST /v1/promotion_codes: `promotion[type]=coupon&promotion[coupon]=…`
    (current versions) or `coupon=…` (before them); the code, when given,
    letters and digits, unique among the key's active codes in any case."""
    check_params(params, PROMOTION_CODE_PARAMS)
    promotion = params.get("promotion")
    coupon = params.get("coupon")
    if promotion is not None:
        if not isinstance(promotion, dict):
            raise stripe_error(
                400, "Invalid object", code="parameter_invalid_object", param="promotion"
            )
        if promotion.get("type") != "coupon":
            raise stripe_error(
                400,
                "Invalid promotion[type]: must be coupon",
                code="parameter_invalid_string",
                param="promotion[type]",
            )
        coupon = promotion.get("coupon")
        if not coupon:
            raise missing("promotion[coupon]")
    elif not coupon:
        raise missing("promotion")
    if coupon not in STATE.data["coupons"]:
        raise stripe_error(
            400,
            f"No such coupon: '{coupon}'",
            code="resource_missing",
            param="promotion[coupon]" if promotion is not None else "coupon",
        )
    code = params.get("code") or rand(8, string.ascii_uppercase + string.digits)
    if not isinstance(code, str) or not PROMOTION_CODE_RE.match(code):
        raise stripe_error(
            400,
            "Invalid code: promotion codes may contain only letters and digits",
            code="parameter_invalid_string",
            param="code",
        )
    for rec in STATE.data["promotion_codes"].values():
        obj = rec["obj"]
        if rec["owner"] == key and obj["active"] and obj["code"].lower() == code.lower():
            raise stripe_error(
                400,
                f"An active promotion code with `code: {code}` already exists.",
                code="resource_already_exists",
                param="code",
            )
    promo = copy.deepcopy(STRIPE_FIXTURES["promotion_code"])
    promo_id = "promo_" + rand(24)
    promo.update(
        {
            "id": promo_id,
            "active": True,
            "code": code,
            "created": now(),
            "expires_at": None,
            "livemode": "_live_" in key,
            "metadata": check_metadata(params),
            "times_redeemed": 0,
            "promotion": {"coupon": coupon, "type": "coupon"},
        }
    )
    STATE.data["promotion_codes"][promo_id] = {"owner": key, "obj": promo}
    return 200, promo


def stripe_update_promotion_code(key, promo_id, params):
    """POST /v1/promotion_codes/{id}: `active` (and metadata)."""
    check_params(params, {"active", "metadata", "restrictions", "expand"})
    rec = STATE.data["promotion_codes"].get(promo_id)
    if not rec or rec["owner"] != key:
        raise stripe_error(
            404,
            f"No such promotion code: '{promo_id}'",
            code="resource_missing",
            param="id",
        )
    active = params.get("active")
    if active is not None:
        if active not in ("true", "false"):
            raise stripe_error(
                400,
                "Invalid boolean: active",
                code="parameter_invalid_boolean",
                param="active",
            )
        rec["obj"]["active"] = active == "true"
    if "metadata" in params:
        rec["obj"]["metadata"].update(check_metadata(params))
    return 200, rec["obj"]


STRIPE_POST = {
    "/v1/accounts": stripe_create_account,
    "/v1/account_links": stripe_create_account_link,
    "/v1/transfers": stripe_create_transfer,
    "/v1/promotion_codes": stripe_create_promotion_code,
}


def stripe_post_handler(path):
    """The handler of a Stripe POST path (a fixed path, or one naming an id)."""
    handler = STRIPE_POST.get(path)
    if handler is not None:
        return handler
    m = re.match(r"^/v1/promotion_codes/([^/]+)$", path)
    if m:
        return lambda key, params, base: stripe_update_promotion_code(
            key, m.group(1), params
        )
    return None


# ------------------------------------------------------------------ PayPal
def paypal_token(headers, raw):
    auth = headers.get("Authorization", "")
    client = secret = ""
    if auth.lower().startswith("basic "):
        try:
            client, _, secret = (
                base64.b64decode(auth[6:].strip()).decode().partition(":")
            )
        except (binascii.Error, UnicodeDecodeError):
            pass
    if not client or not secret or client in STATE.data["bad_clients"]:
        raise Reply(
            401,
            {
                "error": "invalid_client",
                "error_description": "Client Authentication failed",
            },
        )
    form = dict(parse_qsl(raw, keep_blank_values=True))
    grant = form.get("grant_type")
    if grant != "client_credentials":
        raise Reply(
            400,
            {
                "error": "unsupported_grant_type",
                "error_description": "Grant Type is NULL"
                if not grant
                else f"unsupported grant_type {grant}",
            },
        )
    token = "A21AA" + rand(92, ALNUM + "-_")
    STATE.data["tokens"][token] = {"client": client, "expires": now() + 32400}
    return 200, {
        "scope": "https://uri.paypal.com/services/payments/futurepayments https://uri.paypal.com/services/payments/payouts "
        "https://uri.paypal.com/services/payments/realtimepayment https://uri.paypal.com/payments/payouts "
        "https://uri.paypal.com/services/applications/webhooks",
        "access_token": token,
        "token_type": "Bearer",
        "app_id": "APP-" + rand(17, UPPER_ALNUM),
        "expires_in": 32400,
        "nonce": iso_now() + rand(43, ALNUM + "-_"),
    }


def paypal_client(headers):
    auth = headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        rec = STATE.data["tokens"].get(auth[7:].strip())
        if rec and rec["expires"] > now():
            return rec["client"]
        if rec:
            raise Reply(
                401,
                {
                    "error": "invalid_token",
                    "error_description": "Access Token not found in cache",
                },
            )
    raise Reply(
        401,
        {
            "error": "invalid_token",
            "error_description": "The token passed in was not found in the system",
        },
    )


def json_body(headers, raw):
    ctype = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise paypal_error(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            "The server does not support the request payload's media type.",
            [
                {
                    "issue": "UNSUPPORTED_MEDIA_TYPE",
                    "description": "Content-Type must be application/json",
                }
            ],
        )
    try:
        return json.loads(raw)
    except ValueError:
        raise paypal_error(
            400,
            "MALFORMED_REQUEST",
            "Incoming JSON request does not map to API request",
            [
                {
                    "issue": "MALFORMED_REQUEST_JSON",
                    "location": "body",
                    "description": "The request JSON is not well formed.",
                }
            ],
        )


def field_name(path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def schema_details(validator, body):
    details = []
    for err in sorted(
        validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path))
    ):
        path = list(err.absolute_path)
        if err.validator == "required" and isinstance(err.instance, dict):
            for name in err.validator_value:
                if name not in err.instance:
                    details.append(
                        {
                            "field": field_name(path + [name]),
                            "location": "body",
                            "issue": "MISSING_REQUIRED_PARAMETER",
                            "description": f"{name} is a required field",
                        }
                    )
            continue
        details.append(
            {
                "field": field_name(path) or "body",
                "location": "body",
                "issue": "INVALID_PARAMETER_SYNTAX"
                if err.validator == "pattern"
                else "INVALID_PARAMETER_VALUE",
                "description": err.message,
            }
        )
    return details


def amount_details(body):
    details = []
    for i, item in enumerate(body.get("items") or []):
        amt = item.get("amount") if isinstance(item, dict) else None
        if not isinstance(amt, dict):
            continue
        cur, val = amt.get("currency"), amt.get("value")
        if not isinstance(cur, str) or not isinstance(val, str):
            continue
        if not re.match(r"^[A-Z]{3}$", cur):
            details.append(
                {
                    "field": f"items[{i}].amount.currency",
                    "location": "body",
                    "issue": "Currency code is invalid",
                }
            )
            continue
        m = re.match(r"^[0-9]+(?:\.([0-9]+))?$", val)
        if not m:
            details.append(
                {
                    "field": f"items[{i}].amount.value",
                    "location": "body",
                    "issue": "Amount is invalid",
                }
            )
            continue
        places = CURRENCY_DECIMALS.get(cur, 2)
        if m.group(1) is not None and len(m.group(1)) > places:
            details.append(
                {
                    "field": f"items[{i}].amount.value",
                    "location": "body",
                    "issue": f"Currency {cur} does not support decimals"
                    if places == 0
                    else f"Currency {cur} supports at most {places} decimal places",
                }
            )
        elif float(val) <= 0:
            details.append(
                {
                    "field": f"items[{i}].amount.value",
                    "location": "body",
                    "issue": "Amount must be greater than zero",
                }
            )
    return details


def validation_error(details):
    return paypal_error(
        400, "VALIDATION_ERROR", "Invalid request - see details.", details
    )


def item_resource(rec, base):
    item = copy.deepcopy(rec["item"])
    if item.get("transaction_status") == "PENDING":
        item.pop("transaction_id", None)
    item["links"] = [
        {
            "href": f"{base}/v1/payments/payouts-item/{item['payout_item_id']}",
            "rel": "item",
            "method": "GET",
            "encType": "application/json",
        },
        {
            "href": f"{base}/v1/payments/payouts/{item['payout_batch_id']}",
            "rel": "batch",
            "method": "GET",
            "encType": "application/json",
        },
    ]
    return item


def paypal_create_payout(client, body, base, raw, request_id):
    details = schema_details(PAYOUT_VALIDATOR, body)
    if not details:
        details = amount_details(body)
    if details:
        raise validation_error(details)
    sbh = body["sender_batch_header"]
    sbid = sbh.get("sender_batch_id")
    used = STATE.data["sender_batches"].setdefault(client, {})
    if sbid is not None and sbid in used:
        first = used[sbid]
        raise paypal_error(
            400,
            "USER_BUSINESS_ERROR",
            "User business error.",
            [
                {
                    "field": "SENDER_BATCH_ID",
                    "location": "body",
                    "issue": "SENDER_BATCH_ID_ALREADY_USED",
                    "description": "Batch with given sender_batch_id already exists",
                }
            ],
            [
                {
                    "href": f"{base}/v1/payments/payouts/{first['batch']}",
                    "rel": "self",
                    "method": "GET",
                    "encType": "application/json",
                }
            ],
        )
    batch_id = rand(13, UPPER_ALNUM)
    t = iso_now()
    header = {
        k: v
        for k, v in sbh.items()
        if k in ("sender_batch_id", "email_subject", "email_message", "recipient_type")
    }
    item_ids = []
    for item in body["items"]:
        item_id = rand(13, UPPER_ALNUM)
        detail = {
            "recipient_type": item.get("recipient_type")
            or sbh.get("recipient_type")
            or "EMAIL",
            "amount": dict(item["amount"]),
            "receiver": item["receiver"],
            "recipient_wallet": item.get("recipient_wallet", "PAYPAL"),
        }
        for k in ("note", "sender_item_id", "purpose"):
            if k in item:
                detail[k] = item[k]
        STATE.data["items"][item_id] = {
            "client": client,
            "item": {
                "payout_item_id": item_id,
                "transaction_id": rand(17, UPPER_ALNUM),
                "activity_id": rand(17, UPPER_ALNUM),
                "transaction_status": "PENDING",
                "payout_item_fee": {
                    "currency": item["amount"]["currency"],
                    "value": "0.00"
                    if CURRENCY_DECIMALS.get(item["amount"]["currency"], 2) == 2
                    else "0",
                },
                "payout_batch_id": batch_id,
                "sender_batch_id": sbid,
                "payout_item": detail,
                "time_processed": t,
            },
            "raw": raw,
            "request_id": request_id,
        }
        item_ids.append(item_id)
    STATE.data["batches"][batch_id] = {
        "client": client,
        "header": header,
        "items": item_ids,
        "time_created": t,
    }
    if sbid is not None:
        used[sbid] = {"request_id": request_id, "batch": batch_id}
    return 201, {
        "batch_header": {
            "payout_batch_id": batch_id,
            "batch_status": "PENDING",
            "sender_batch_header": header,
        },
        "links": [
            {
                "href": f"{base}/v1/payments/payouts/{batch_id}",
                "rel": "self",
                "method": "GET",
                "encType": "application/json",
            }
        ],
    }


def batch_status(statuses):
    if all(s == "PENDING" for s in statuses):
        return "PENDING"
    if any(s in ("PENDING", "ONHOLD") for s in statuses):
        return "PROCESSING"
    return "SUCCESS"


def paypal_get_batch(client, batch_id, base):
    b = STATE.data["batches"].get(batch_id)
    if not b or b["client"] != client:
        raise paypal_error(
            404,
            "INVALID_RESOURCE_ID",
            "Requested resource ID was not found.",
            [
                {
                    "field": "payout_batch_id",
                    "location": "path",
                    "issue": "INVALID_RESOURCE_ID",
                    "value": batch_id,
                }
            ],
        )
    items = [item_resource(STATE.data["items"][i], base) for i in b["items"]]
    cur = items[0]["payout_item"]["amount"]["currency"] if items else "USD"
    places = CURRENCY_DECIMALS.get(cur, 2)
    total = sum(
        float(i["payout_item"]["amount"]["value"])
        for i in items
        if i["payout_item"]["amount"]["currency"] == cur
    )
    status = batch_status([i["transaction_status"] for i in items])
    header = {
        "payout_batch_id": batch_id,
        "batch_status": status,
        "time_created": b["time_created"],
        "sender_batch_header": b["header"],
        "amount": {"currency": cur, "value": f"{total:.{places}f}"},
        "fees": {"currency": cur, "value": f"{0:.{places}f}"},
    }
    if status == "SUCCESS":
        header["time_completed"] = max(i["time_processed"] for i in items)
    return 200, {
        "total_items": len(items),
        "total_pages": 1,
        "batch_header": header,
        "items": items,
        "links": [
            {
                "href": f"{base}/v1/payments/payouts/{batch_id}?page_size=1000&page=1",
                "rel": "self",
                "method": "GET",
                "encType": "application/json",
            }
        ],
    }


def paypal_get_item(client, item_id, base):
    rec = STATE.data["items"].get(item_id)
    if not rec or rec["client"] != client:
        raise paypal_error(
            404,
            "INVALID_RESOURCE_ID",
            "Requested resource ID was not found.",
            [
                {
                    "field": "payout_item_id",
                    "location": "path",
                    "issue": "INVALID_RESOURCE_ID",
                    "value": item_id,
                }
            ],
        )
    return 200, item_resource(rec, base)


def sign_event(webhook_id, event):
    if not isinstance(webhook_id, str) or not WEBHOOK_ID_RE.match(webhook_id):
        raise Reply(
            400,
            {
                "error": f"webhook_id must match {WEBHOOK_ID_RE.pattern} (pattern of the webhooks document's verify_webhook_signature.webhook_id)"
            },
        )
    if not isinstance(event, dict):
        raise Reply(400, {"error": "event must be a JSON object"})
    crc = (
        zlib.crc32(
            json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
        )
        & 0xFFFFFFFF
    )
    t = iso_now()
    while True:
        tid = str(uuid.uuid1())
        sig = base64.b64encode(
            hmac.new(
                STATE.secret, f"{tid}|{t}|{webhook_id}|{crc}".encode(), hashlib.sha256
            ).digest()
        ).decode()
        if sig[0] not in "+/":  # the document's pattern wants a word character first
            break
    cert = f"https://api-m.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-{STATE.cert_suffix}"
    STATE.signatures[tid] = {
        "time": t,
        "webhook_id": webhook_id,
        "event": copy.deepcopy(event),
        "sig": sig,
        "cert_url": cert,
        "crc": crc,
    }
    return {
        "PAYPAL-TRANSMISSION-ID": tid,
        "PAYPAL-TRANSMISSION-TIME": t,
        "PAYPAL-TRANSMISSION-SIG": sig,
        "PAYPAL-CERT-URL": cert,
        "PAYPAL-AUTH-ALGO": "SHA256withRSA",
    }


def paypal_verify(client, body):
    details = schema_details(VERIFY_VALIDATOR, body)
    if details:
        raise validation_error(details)
    rec = STATE.signatures.get(body["transmission_id"])
    ok = bool(rec) and (
        rec["time"] == body["transmission_time"]
        and rec["webhook_id"] == body["webhook_id"]
        and rec["cert_url"] == body["cert_url"]
        and body["auth_algo"] == "SHA256withRSA"
        and hmac.compare_digest(rec["sig"], body["transmission_sig"])
        and rec["event"] == body["webhook_event"]
    )
    if ok:
        expect = base64.b64encode(
            hmac.new(
                STATE.secret,
                f"{body['transmission_id']}|{rec['time']}|{rec['webhook_id']}|{rec['crc']}".encode(),
                hashlib.sha256,
            ).digest()
        ).decode()
        ok = hmac.compare_digest(expect, body["transmission_sig"])
    return 200, {"verification_status": "SUCCESS" if ok else "FAILURE"}


def item_event(rec, base):
    item = item_resource(rec, base)
    status = item["transaction_status"]
    event_type, summary = PAYPAL_ITEM_EVENTS.get(
        status, (f"PAYMENT.PAYOUTS-ITEM.{status}", f"A payout item is {status.lower()}")
    )
    ev_id = f"WH-{rand(17, UPPER_ALNUM)}-{rand(17, UPPER_ALNUM)}"
    return {
        "id": ev_id,
        "event_version": "1.0",
        "create_time": iso_now(),
        "resource_type": "payouts_item",
        "event_type": event_type,
        "summary": summary,
        "resource": item,
        "links": [
            {
                "href": f"{base}/v1/notifications/webhooks-events/{ev_id}",
                "rel": "self",
                "method": "GET",
                "encType": "application/json",
            },
            {
                "href": f"{base}/v1/notifications/webhooks-events/{ev_id}/resend",
                "rel": "resend",
                "method": "POST",
                "encType": "application/json",
            },
        ],
    }


# ------------------------------------------------------------------ control API
def find_item(ident):
    items = STATE.data["items"]
    if ident in items:
        return items[ident]
    found = [
        r
        for r in items.values()
        if r["item"]["payout_item"].get("sender_item_id") == ident
    ]
    return found[-1] if found else None


class Inflight:
    """Provider calls being answered now, and the most at once since the
    last reset (what a benchmark reads as the caller's concurrency)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.calls = 0

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1
        return False

    def stats(self, reset=False):
        with self.lock:
            out = {"inflight": self.now, "peak": self.peak, "calls": self.calls}
            if reset:
                self.peak, self.calls = self.now, 0
        return out


INFLIGHT = Inflight()


def control(method, path, query, body, base):
    q = dict(parse_qsl(query, keep_blank_values=True))
    match = q.get("match", "")
    d = STATE.data
    if method == "GET" and path == "/_standin/health":
        return 200, {"ok": True}, False
    if path == "/_standin/stats" and method in ("GET", "POST"):
        # POST reads and resets the peak and the count.
        return 200, INFLIGHT.stats(reset=method == "POST"), False
    if method == "POST" and path == "/_standin/reset":
        STATE.reset()
        return 200, {"ok": True}, True
    if method == "POST" and path == "/_standin/faults":
        kind = body.get("kind")
        if kind not in ("drop_after", "drop_before", "status", "delay"):
            raise Reply(
                400, {"error": "kind must be drop_after, drop_before, status or delay"}
            )
        if not isinstance(body.get("path"), str) or not body["path"].startswith("/"):
            raise Reply(400, {"error": "path (e.g. /v1/transfers) is required"})
        fault = {
            "id": "flt_" + rand(12),
            "path": body["path"],
            "match": str(body.get("match", "")),
            "kind": kind,
            "status": int(body.get("status", 500)),
            "body": body.get("body"),
            "seconds": float(body.get("seconds", 1)),
            "times": int(body.get("times", 1)),
        }
        STATE.faults.append(fault)
        return 201, {"id": fault["id"]}, False
    if method == "GET" and path == "/_standin/faults":
        return 200, STATE.faults, False
    if method == "GET" and path == "/_standin/requests":
        out = [
            {k: v for k, v in r.items() if k != "raw"}
            for r in STATE.requests
            if (not q.get("path") or r["path"] == q["path"])
            and (not match or match in (r["key"] or "") or match in r["raw"])
        ]
        return 200, out, False
    if method == "GET" and path == "/_standin/transfers":
        return (
            200,
            [r["obj"] for r in d["transfers"].values() if match in r["raw"]],
            False,
        )
    if method == "GET" and path == "/_standin/paypal/items":
        return (
            200,
            [
                item_resource(r, base)
                for r in d["items"].values()
                if match in r["raw"] or match in (r.get("request_id") or "")
            ],
            False,
        )
    if method == "POST" and path == "/_standin/paypal/forget-request-ids":
        # PayPal keeps a PayPal-Request-Id for a while only: after that, the
        # same sender_batch_id is refused as used instead of replayed.
        prefix = body.get("prefix")
        if not isinstance(prefix, str) or not prefix:
            raise Reply(400, {"error": "prefix (a PayPal-Request-Id prefix) is required"})
        forgotten = 0
        for keyed in d["request_ids"].values():
            for rid in [k for k in keyed if k.startswith(prefix)]:
                del keyed[rid]
                forgotten += 1
        return 200, {"forgotten": forgotten}, True
    if method == "POST" and path == "/_standin/stripe/balance":
        key, cur = body.get("apiKey"), str(body.get("currency", "usd")).lower()
        if not isinstance(key, str) or not isinstance(body.get("available"), int):
            raise Reply(
                400, {"error": "apiKey (string) and available (integer) are required"}
            )
        d["balances"].setdefault(key, {})[cur] = body["available"]
        return (
            200,
            {"apiKey": mask_key(key), "currency": cur, "available": body["available"]},
            True,
        )
    m = re.match(r"^/_standin/stripe/coupons/([^/]+)$", path)
    if m and method == "POST":
        if m.group(1) not in d["coupons"]:
            d["coupons"].append(m.group(1))
        return 200, {"id": m.group(1), "object": "coupon"}, True
    m = re.match(r"^/_standin/stripe/promotion_codes/([^/]+)$", path)
    if m and method == "GET":
        rec = d["promotion_codes"].get(m.group(1))
        if not rec:
            raise Reply(404, {"error": f"no promotion code {m.group(1)}"})
        return 200, rec["obj"], False
    m = re.match(r"^/_standin/stripe/accounts/([^/]+)$", path)
    if m and method in ("GET", "POST"):
        rec = d["accounts"].get(m.group(1))
        if not rec:
            raise Reply(404, {"error": f"no account {m.group(1)}"})
        if method == "POST":
            deep_merge(rec["obj"], body)
        return 200, rec["obj"], method == "POST"
    m = re.match(r"^/_standin/paypal/items/([^/]+)$", path)
    if m and method == "POST":
        rec = find_item(m.group(1))
        if not rec:
            raise Reply(
                404,
                {
                    "error": f"no payout item with payout_item_id or sender_item_id {m.group(1)}"
                },
            )
        status = body.get("transaction_status")
        allowed = (
            "SUCCESS",
            "FAILED",
            "RETURNED",
            "BLOCKED",
            "DENIED",
            "UNCLAIMED",
            "REFUNDED",
            "ONHOLD",
            "PENDING",
            "REVERSED",
            "CANCELED",
        )
        if status not in allowed:
            raise Reply(
                400,
                {"error": f"transaction_status must be one of {', '.join(allowed)}"},
            )
        item = rec["item"]
        item["transaction_status"] = status
        item["time_processed"] = iso_now()
        item.pop("errors", None)
        err = body.get("error")
        if err is None and status == "UNCLAIMED":
            err = {
                "name": "RECEIVER_UNREGISTERED",
                "message": "Receiver is unregistered",
            }
        if err:
            item["errors"] = {
                "name": err.get("name", "UNKNOWN"),
                "message": err.get("message", ""),
                "debug_id": debug_id(),
                "information_link": PAYPAL_ERRORS_LINK,
                "details": [],
                "links": [],
            }
        event = item_event(rec, base)
        out = {"event": event}
        if body.get("webhook_id") is not None:
            out["headers"] = sign_event(body["webhook_id"], event)
        return 200, out, True
    if method == "POST" and path == "/_standin/paypal/sign":
        return (
            200,
            {"headers": sign_event(body.get("webhook_id"), body.get("event"))},
            False,
        )
    if method == "POST" and path == "/_standin/paypal/clients":
        cid = body.get("clientId")
        if not isinstance(cid, str) or not cid:
            raise Reply(400, {"error": "clientId is required"})
        bad = set(d["bad_clients"])
        (bad.add if body.get("bad", True) else bad.discard)(cid)
        d["bad_clients"] = sorted(bad)
        return 200, {"clientId": cid, "bad": cid in bad}, True
    raise Reply(404, {"error": f"no control endpoint {method} {path}"})


ONBOARDING_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Stripe stand-in: onboarding</title></head>
<body><h1>Stripe stand-in: onboarding</h1>
<p>Connected account <code>{acct}</code> ({email}).</p>
<form method="post" action="{action}">
<input type="hidden" name="return_url" value="{ret}">
<button type="submit">Complete onboarding</button>
</form></body></html>
"""


# ------------------------------------------------------------------ HTTP
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "provider-standin/1"

    def log_message(self, fmt, *args):  # our own one-line log in finish_request
        pass

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def base(self):
        host = self.headers.get("Host") or "{}:{}".format(
            *self.server.server_address[:2]
        )
        return f"http://{host}"

    def send(self, status, body, headers=None, ctype="application/json"):
        data = (
            body
            if isinstance(body, bytes)
            else json.dumps(body, indent=2).encode() + b"\n"
        )
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.log_line(status)

    def log_line(self, status):
        sys.stderr.write(
            f"{datetime.now(UTC).strftime('%H:%M:%S.%f')[:-3]} {self.command} {self.path.split('?')[0]} {status}\n"
        )
        sys.stderr.flush()

    def drop(self):
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.log_line("dropped")

    def handle_any(self, method):
        try:
            raw_bytes = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return self.send(400, {"error": "unreadable body"})
        raw = raw_bytes.decode("utf-8", "replace")
        parts = urlsplit(self.path)
        path, query = parts.path, parts.query
        try:
            if path.startswith("/_standin/onboarding/"):
                return self.onboarding(method, path, query, raw)
            if path.startswith("/_standin/"):
                return self.control(method, path, query, raw)
            if path.startswith("/v1/"):
                paypal = ("/v1/oauth2/", "/v1/payments/", "/v1/notifications/")
                which = "paypal" if path.startswith(paypal) else "stripe"
                with INFLIGHT:
                    return self.provider(method, path, query, raw, which)
            self.send(404, {"error": f"no such path: {path}"})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # ---------------------------------------------------------------- control
    def control(self, method, path, query, raw):
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self.send(400, {"error": "the body must be a JSON object"})
        try:
            with STATE.lock:
                status, out, mutated = control(method, path, query, body, self.base())
        except Reply as r:
            return self.send(r.status, r.body)
        if mutated:
            STATE.save()
        self.send(status, out)

    def onboarding(self, method, path, query, raw):
        acct_id = path.rsplit("/", 1)[-1]
        with STATE.lock:
            rec = STATE.data["accounts"].get(acct_id)
            if not rec:
                return self.send(404, {"error": f"no account {acct_id}"})
            q = dict(parse_qsl(query, keep_blank_values=True))
            ret = q.get("return_url", "")
            if method == "GET":
                action = f"/_standin/onboarding/{acct_id}?" + urlencode(
                    {"return_url": ret}, quote_via=quote
                )
                page = ONBOARDING_PAGE.format(
                    acct=html.escape(acct_id),
                    email=html.escape(str(rec["obj"].get("email"))),
                    action=html.escape(action),
                    ret=html.escape(ret),
                )
                return self.send(200, page.encode(), ctype="text/html; charset=utf-8")
            if method != "POST":
                return self.send(405, {"error": "GET or POST"})
            form = dict(parse_qsl(raw, keep_blank_values=True))
            ret = form.get("return_url") or ret
            enable_account(rec["obj"])
        STATE.save()
        if valid_url(ret):
            return self.send(303, {"redirect": ret}, headers={"Location": ret})
        self.send(200, {"ok": True, "account": acct_id})

    # ---------------------------------------------------------------- providers
    def provider(self, method, path, query, raw, which):
        h = self.headers
        key_header = (
            h.get("Idempotency-Key")
            if which == "stripe"
            else h.get("PayPal-Request-Id")
        )
        entry = {
            "method": method,
            "path": path,
            "key": key_header,
            "status": None,
            "replayed": False,
            "raw": raw,
        }
        if raw:
            if "json" in h.get("Content-Type", ""):
                try:
                    entry["json"] = json.loads(raw)
                except ValueError:
                    entry["json"] = None
            else:
                try:
                    entry["form"] = (
                        parse_form(raw)
                        if which == "stripe"
                        else dict(parse_qsl(raw, keep_blank_values=True))
                    )
                except Reply:
                    entry["form"] = dict(parse_qsl(raw, keep_blank_values=True))
        with STATE.lock:
            STATE.requests.append(entry)
        headers = {}
        try:
            status, body, headers, mutated, after = (
                self.stripe if which == "stripe" else self.paypal
            )(method, path, query, raw, entry)
        except Reply as r:
            status, body, headers, mutated, after = (
                r.status,
                r.body,
                r.headers,
                False,
                None,
            )
        if mutated:
            STATE.save()
        if after == "drop":
            return self.drop()
        entry["status"] = status
        self.send(status, body, headers)

    def fault_gate(self, path, key, raw, entry):
        """Applies a matching fault. Returns "drop_after" when the request is
        to execute and then lose its answer; raises for drop_before/status."""
        f = STATE.take_fault(path, key, raw)
        if not f:
            return None
        if f["kind"] == "drop_before":
            raise Dropped()
        if f["kind"] == "status":
            body = f["body"]
            if body is None:
                body = (
                    {
                        "error": {
                            "type": "api_error",
                            "message": "An unknown error occurred (stand-in fault).",
                        }
                    }
                    if path.startswith("/v1/")
                    and not path.startswith(
                        ("/v1/payments/", "/v1/notifications/", "/v1/oauth2/")
                    )
                    else {
                        "name": "INTERNAL_SERVER_ERROR",
                        "message": "An internal server error has occurred.",
                        "debug_id": debug_id(),
                    }
                )
            raise Reply(f["status"], body)
        return f

    def stripe(self, method, path, query, raw, entry):
        h = self.headers
        req_headers = {"Request-Id": "req_" + rand(14)}
        try:
            key = stripe_auth(h)
        except Reply as r:
            r.headers = req_headers
            raise
        idem = h.get("Idempotency-Key") if method == "POST" else None
        if idem is not None:
            req_headers["Idempotency-Key"] = idem
        try:
            fault = self.fault_gate(path, idem, raw, entry)
        except Dropped:
            return None, None, None, False, "drop"
        base = self.base()
        if method == "GET":
            with STATE.lock:
                status, body = self.stripe_get(key, path, query)
            return status, body, req_headers, False, None
        if method != "POST":
            raise Reply(
                404,
                stripe_error(404, f"Unrecognized request URL ({method}: {path}).").body,
                headers=req_headers,
            )
        handler = stripe_post_handler(path)
        if handler is None:
            raise Reply(
                404,
                stripe_error(
                    404,
                    f"Unrecognized request URL (POST: {path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
                ).body,
                headers=req_headers,
            )
        ctype = h.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            r = stripe_error(
                400,
                f"Invalid request: unsupported Content-Type {ctype or '(none)'}. If error persists and you need assistance, please contact support@stripe.com.",
            )
            r.headers = req_headers
            raise r
        try:
            params = parse_form(raw)
        except Reply as r:
            r.headers = req_headers
            raise
        fp = canonical([method, path, params])
        slot = None
        if idem is not None:
            if len(idem) > 255:
                raise Reply(
                    400,
                    stripe_error(
                        400,
                        f"Invalid idempotency key: it must be at most 255 characters long, got {len(idem)}.",
                    ).body,
                    headers=req_headers,
                )
            with STATE.lock:
                keyed = STATE.data["idem"].setdefault(key, {})
                slot = keyed.get(idem)
                if slot is not None:
                    if slot["fp"] != fp:
                        raise Reply(
                            400,
                            {
                                "error": {
                                    "type": "idempotency_error",
                                    "message": "Keys for idempotent requests can only be used with the same parameters they were first used with. "
                                    f"Try using a key other than '{idem}' if you meant to execute a different request.",
                                }
                            },
                            headers=req_headers,
                        )
                    if not slot["done"]:
                        raise Reply(
                            409,
                            {
                                "error": {
                                    "type": "idempotency_error",
                                    "code": "idempotency_key_in_use",
                                    "message": "There is currently another in-progress request using this Idempotent Key (that probably means "
                                    f"you submitted twice, and the other request is still going through): {idem}. Please try again later.",
                                    "doc_url": "https://stripe.com/docs/error-codes/idempotency-key-in-use",
                                }
                            },
                            headers=req_headers,
                        )
                    entry["replayed"] = True
                    status, body = slot["status"], slot["body"]
                    hdrs = dict(
                        req_headers,
                        **{
                            "Idempotent-Replayed": "true",
                            "Original-Request": slot.get("request_id", ""),
                        },
                    )
                    return (
                        status,
                        body,
                        hdrs,
                        False,
                        ("drop" if fault and fault["kind"] == "drop_after" else None),
                    )
                slot = {
                    "fp": fp,
                    "done": False,
                    "request_id": req_headers["Request-Id"],
                }
                keyed[idem] = slot
        if fault and fault["kind"] == "delay":
            time.sleep(fault["seconds"])
        try:
            with STATE.lock:
                try:
                    status, body = (
                        handler(key, params, base, raw)
                        if handler is stripe_create_transfer
                        else handler(key, params, base)
                    )
                    save = True
                except Reply as r:
                    status, body, save = r.status, r.body, r.save
                if slot is not None:
                    if save:
                        slot.update({"status": status, "body": body, "done": True})
                    else:
                        STATE.data["idem"][key].pop(idem, None)
                    slot = None
        finally:
            if slot is not None:  # an unexpected exception: free the key
                with STATE.lock:
                    STATE.data["idem"].get(key, {}).pop(idem, None)
        return (
            status,
            body,
            req_headers,
            True,
            ("drop" if fault and fault["kind"] == "drop_after" else None),
        )

    def stripe_get(self, key, path, query):
        m = re.match(r"^/v1/accounts/([^/]+)$", path)
        if m:
            acct = owned_account(key, m.group(1))
            if acct is None:
                raise stripe_error(
                    404,
                    f"No such account: '{m.group(1)}'",
                    code="resource_missing",
                    param="account",
                )
            return 200, acct
        m = re.match(r"^/v1/transfers/([^/]+)$", path)
        if m:
            rec = STATE.data["transfers"].get(m.group(1))
            if not rec or rec["owner"] != key:
                raise stripe_error(
                    404,
                    f"No such transfer: '{m.group(1)}'",
                    code="resource_missing",
                    param="id",
                )
            return 200, rec["obj"]
        if path == "/v1/transfers":
            return stripe_list_transfers(key, query)
        if path == "/v1/balance":
            return stripe_balance(key)
        raise stripe_error(
            404,
            f"Unrecognized request URL (GET: {path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
        )

    def paypal(self, method, path, query, raw, entry):
        h = self.headers
        base = self.base()
        if method == "POST" and path == "/v1/oauth2/token":
            try:
                fault = self.fault_gate(path, None, raw, entry)
            except Dropped:
                return None, None, None, False, "drop"
            if fault and fault["kind"] == "delay":
                time.sleep(fault["seconds"])
            with STATE.lock:
                status, body = paypal_token(h, raw)
            return (
                status,
                body,
                {},
                True,
                ("drop" if fault and fault["kind"] == "drop_after" else None),
            )
        with STATE.lock:
            client = paypal_client(h)
        rid = h.get("PayPal-Request-Id")
        try:
            fault = self.fault_gate(path, rid, raw, entry)
        except Dropped:
            return None, None, None, False, "drop"
        after = "drop" if fault and fault["kind"] == "drop_after" else None
        if method == "GET":
            if fault and fault["kind"] == "delay":
                time.sleep(fault["seconds"])
            with STATE.lock:
                m = re.match(r"^/v1/payments/payouts/([^/]+)$", path)
                if m:
                    return (
                        *paypal_get_batch(client, m.group(1), base),
                        {},
                        False,
                        after,
                    )
                m = re.match(r"^/v1/payments/payouts-item/([^/]+)$", path)
                if m:
                    return (
                        *paypal_get_item(client, m.group(1), base),
                        {},
                        False,
                        after,
                    )
            raise paypal_error(
                404, "NOT_FOUND", "The specified resource does not exist."
            )
        if method == "POST" and path == "/v1/notifications/verify-webhook-signature":
            body = json_body(h, raw)
            if fault and fault["kind"] == "delay":
                time.sleep(fault["seconds"])
            with STATE.lock:
                return (*paypal_verify(client, body), {}, False, after)
        if method == "POST" and path == "/v1/payments/payouts":
            body = json_body(h, raw)
            slot = None
            if rid:
                with STATE.cond:
                    keyed = STATE.data["request_ids"].setdefault(client, {})
                    deadline = time.time() + 60
                    while (
                        rid in keyed
                        and not keyed[rid]["done"]
                        and time.time() < deadline
                    ):
                        STATE.cond.wait(0.5)
                    slot = keyed.get(rid)
                    if slot is not None and slot["done"]:
                        entry["replayed"] = True
                        return slot["status"], slot["body"], {}, False, after
                    slot = {"done": False}
                    keyed[rid] = slot
            if fault and fault["kind"] == "delay":
                time.sleep(fault["seconds"])
            try:
                with STATE.cond:
                    try:
                        status, out = paypal_create_payout(client, body, base, raw, rid)
                        keep = True
                    except Reply as r:
                        status, out, keep = r.status, r.body, False
                    if slot is not None:
                        if keep:
                            slot.update({"status": status, "body": out, "done": True})
                        else:
                            STATE.data["request_ids"][client].pop(rid, None)
                        slot = None
                        STATE.cond.notify_all()
            finally:
                if slot is not None:
                    with STATE.cond:
                        STATE.data["request_ids"].get(client, {}).pop(rid, None)
                        STATE.cond.notify_all()
            return status, out, {}, keep, after
        raise paypal_error(404, "NOT_FOUND", "The specified resource does not exist.")


class Dropped(Exception):
    pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global STATE
    ap = argparse.ArgumentParser(description="Local Stripe + PayPal stand-in")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8070)
    ap.add_argument(
        "--state",
        help="JSON file to load at start and save after each mutating request",
    )
    args = ap.parse_args()
    STATE = State(args.state)
    srv = Server((args.host, args.port), Handler)
    sys.stderr.write(
        f"provider stand-in (Stripe + PayPal) on http://{args.host}:{srv.server_address[1]}"
        f"{' state ' + args.state if args.state else ' (in memory)'}\n"
    )
    sys.stderr.flush()
    import signal

    signal.signal(
        signal.SIGTERM,
        lambda *_: threading.Thread(target=srv.shutdown, daemon=True).start(),
    )
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
        if args.state:
            STATE.save()


if __name__ == "__main__":
    main()
