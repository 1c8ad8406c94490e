"""Schemathesis hooks for scripts/api-fuzz.sh (loaded through SCHEMATHESIS_HOOKS).

docs/openapi.json states every rule JSON Schema can state. A few rules tie
one value to another or to server state, and the description states them
in words only:

- `cursor` must be a `meta.nextCursor` the same list returned, and not be
  combined with `offset`;
- `from` must not be after `to`; `min_amount` must not be above `max_amount`;
- a money amount has at most its currency's decimals (and a FIXED
  commission's `commissionValue` is such an amount, above 0);
- `recurringMonthsLimit` stays null while `commissionRecurring` is false,
  after merging an update with the stored campaign; FIXED needs a currency
  and PERCENTAGE takes none, after merging too;
- identify's `customerEmailHash` must be the hash of `customerEmail` when
  both are sent;
- a webhook endpoint's URL must resolve to a public address (in this run,
  to this machine's loopback: WEBHOOK_ALLOW_LOCAL=only);
- `occurredAt` is from 1970 to at most 5 minutes ahead, a replay window at
  most 30 days back;
- integers are written without a fraction (`12`, not `12.0`, which JSON
  Schema counts as an integer too); a number has at most 28 decimals;
- a redelivery to one endpoint needs an endpoint subscribed to the event's
  type;
- a partial reversal's `amount` is at most what is left of the conversion,
  exact to its currency's minor unit;
- a manual adjustment's `amount` is not 0 and exact to its currency's minor
  unit;
- an integration's Stripe `apiKey` is of the key's mode, and an update takes
  only the fields of the stored integration's provider.

The receiver of a provider's events (`receiveIntegrationEvent`) takes the
provider's signature over the raw body as its credential: no generated
request carries a valid one, so its documented 400 INVALID_REQUEST
("signature: …") is the API doing what the description says.

A public route of a campaign (the sign-up, the public profile) answers 404
for a private campaign, so following an affiliate's or a campaign's
`campaignId` there and meeting that 404 is not a created resource going
missing; that ST302 finding is dropped for those two operations. Nor is a
404 that names another kind of record than the one the link created (an
integration PATCH naming a generated `campaignId`: "campaign not found").

A click's `sessionId` is the session the browser held before, kept for
reference only, so a click that follows a click's answer (linked by that
session) and answers 404 for its own generated campaign and code is not a
created resource going missing; that one ST302 finding is dropped.

An asset's DELETE archives it (a soft delete, as the description says):
reading it afterwards answers the ARCHIVED asset, so schemathesis's
"deleted resource still available" finding is the documented behaviour for
assets and is dropped; for every other DELETE it still fails the run.

A schema-valid request the API rejects *only* for such rules (every issue of
its 400 VALIDATION_FAILED answer is one of them) is the API doing what the
description says, so that failure is dropped here. Anything else, every
other check and every other answer, still fails the run.

The webhook endpoint URL is the one value the run itself chooses: generated
URLs would name hosts elsewhere, so positive bodies point at a closed port on
this machine's loopback, where deliveries fail at once.
"""

import json
import uuid

import schemathesis

# Public routes of a campaign, 404 for a private one (isPublic false).
PUBLIC_ONLY = ("signupAffiliate", "getPublicCampaign")

# (operation id or "*", first element of the issue path, issue code)
DOCUMENTED_IN_WORDS = {
    ("*", "cursor", "invalid_cursor"),
    ("*", "cursor", "invalid_combination"),
    ("*", "from", "invalid_range"),
    ("listConversions", "min_amount", "invalid_range"),
    # a number has at most 28 decimals (3.25e-28 has more)
    ("listConversions", "min_amount", "invalid_number"),
    ("listConversions", "max_amount", "invalid_number"),
    ("postConversion", "amount", "invalid_value"),
    # a SALE's amount is required and above 0; a LEAD's 0 or left out
    ("postConversion", "amount", "required"),
    ("postConversion", "amount", "too_small"),
    ("postConversion", "occurredAt", "too_big"),
    ("postConversion", "occurredAt", "too_small"),
    ("createCampaign", "commissionValue", "invalid_value"),
    ("createCampaign", "commissionValue", "too_small"),
    ("createCampaign", "minimumPayout", "invalid_value"),
    ("updateCampaign", "commissionValue", "invalid_value"),
    ("updateCampaign", "commissionValue", "invalid_type"),
    ("updateCampaign", "commissionValue", "too_small"),
    ("updateCampaign", "commissionValue", "too_big"),
    ("updateCampaign", "minimumPayout", "invalid_type"),
    ("updateCampaign", "minimumPayout", "invalid_value"),
    ("updateCampaign", "currency", "required"),
    ("updateCampaign", "currency", "invalid_value"),
    ("updateCampaign", "recurringMonthsLimit", "invalid_value"),
    # risk.reviewAbove and taxForm.fromAmount: a number with at most 28 decimals
    ("createCampaign", "risk", "invalid_value"),
    ("updateCampaign", "risk", "invalid_value"),
    ("createCampaign", "taxForm", "invalid_value"),
    ("updateCampaign", "taxForm", "invalid_value"),
    ("trackIdentify", "customerEmailHash", "invalid_combination"),
    ("postConversion", "customerEmailHash", "invalid_combination"),
    ("createWebhookEndpoint", "url", "invalid_string"),
    ("updateWebhookEndpoint", "url", "invalid_string"),
    ("replayWebhookEvents", "from", "too_small"),
    ("replayWebhookEvents", "from", "invalid_range"),
    ("redeliverEvent", "endpointId", "invalid_value"),
    # a partial reversal's amount: at most what is left, exact to the currency
    ("reverseConversion", "amount", "too_big"),
    ("reverseConversion", "amount", "invalid_value"),
    # a Stripe key of the integration's mode (sk_test_/rk_test_ with a test key)
    ("createIntegration", "apiKey", "invalid_string"),
    ("updateIntegration", "apiKey", "invalid_string"),
    # an update takes the fields of the stored integration's provider
    ("updateIntegration", "signingSecret", "not_allowed"),
    ("updateIntegration", "connectSigningSecret", "not_allowed"),
    ("updateIntegration", "apiKey", "not_allowed"),
    ("updateIntegration", "clientId", "not_allowed"),
    ("updateIntegration", "clientSecret", "not_allowed"),
    ("updateIntegration", "webhookId", "not_allowed"),
    # ENABLED only once the signing secret has its provider's shape
    ("updateIntegration", "status", "invalid_value"),
    # a promotion code: of a STRIPE or PADDLE integration, its provider id of
    # that provider's shape, a coupon only to create one at Stripe
    ("createPromotionCode", "integrationId", "invalid_value"),
    ("createPromotionCode", "providerId", "invalid_string"),
    ("createPromotionCode", "providerId", "required"),
    ("createPromotionCode", "couponId", "invalid_combination"),
    ("createPromotionCode", "couponId", "required"),
    ("createPromotionCode", "code", "required"),
    # a series needs a window of days: period or from/to (at most 366 days),
    # not period=all; the portal's daily series likewise
    ("summarizeConversions", "period", "invalid_combination"),
    ("summarizeConversions", "group_by", "invalid_combination"),
    ("summarizeConversions", "to", "invalid_combination"),
    ("summarizeConversions", "to", "too_big"),
    ("getPortalStats", "series", "invalid_combination"),
    # an export's window spans at most 366 days; its filters are the list's
    ("exportConversions", "to", "too_big"),
    ("exportConversions", "min_amount", "invalid_range"),
    ("exportConversions", "min_amount", "invalid_number"),
    ("exportConversions", "max_amount", "invalid_number"),
    # a manual adjustment's amount: not 0, exact to its currency's minor unit
    ("createAffiliateAdjustment", "amount", "invalid_value"),
    # commission rules and overrides, described in words (docs/commissions.md):
    # a FIXED pay needs its currency, a PERCENTAGE none and at most 100; ranges
    # ascend; lists of ids hold 1-50; the name is text; tiers ascend by
    # minCustomers; a rule for leads and a lead commission pay FIXED amounts
    *[(op, field, code)
      for op in ("createCampaign", "updateCampaign", "updateAffiliate", "previewCommission")
      for field in ("commissionRules", "commissionOverride", "amount", "tiers", "leadCommission")
      for code in ("required", "invalid_value", "invalid_range", "too_small", "too_big", "invalid_string")],
}

# DELETEs that archive: the resource stays readable, with its archived state.
SOFT_DELETES = ("DELETE /api/v1/assets/",)

# A closed port on loopback: deliveries to it fail at once and go nowhere.
LOCAL_RECEIVER = "http://127.0.0.1:9/webhooks"


def _issues(response):
    if response is None or response.status_code != 400:
        return None
    try:
        body = json.loads(response.content)
    except (ValueError, TypeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or error.get("code") != "VALIDATION_FAILED":
        return None
    details = error.get("details")
    return details if isinstance(details, list) and details else None


def _signature_refused(response):
    try:
        error = json.loads(response.content).get("error") or {}
    except (ValueError, TypeError, AttributeError):
        return False
    return error.get("code") == "INVALID_REQUEST" and str(error.get("message", "")).startswith("signature")


def _another_record(failure, response):
    """A 404 whose message names another kind of record than the one the
    link's first operation created (its path's resource, after /api/v1/)."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    if not message.endswith(" not found"):
        return False
    noun = message[: -len(" not found")].replace(" ", "-")
    parts = str(getattr(failure, "created_with", "")).split(" ")[-1].split("/")
    created = parts[3] if len(parts) > 3 else ""
    return bool(created) and not created.startswith(noun)


def _failed_rows(response):
    try:
        return bool(json.loads(response.content)["data"]["failed"])
    except (ValueError, KeyError, TypeError):
        return False


def _error_code(response, code):
    try:
        error = json.loads(response.content).get("error") or {}
    except (ValueError, TypeError, AttributeError):
        return False
    return error.get("code") == code


def _documented(operation_id, issue):
    if issue.get("code") == "invalid_type" and str(issue.get("message", "")).startswith(
        "invalid type: floating point"
    ):
        return True
    path = issue.get("path") or [None]
    key = (path[0], issue.get("code"))
    return ("*",) + key in DOCUMENTED_IN_WORDS or (operation_id,) + key in DOCUMENTED_IN_WORDS


@schemathesis.hook
def filter_failure(context, failure, case, response):
    kind = type(failure).__name__
    operation_id = case.operation.definition.raw.get("operationId")
    if kind == "RejectedPositiveData" and operation_id == "receiveIntegrationEvent":
        return not _signature_refused(response)
    if kind == "RejectedPositiveData" and operation_id == "uploadPortalInvoice":
        # Generated bytes are no PDF, PNG or JPEG: documented 400.
        return not _error_code(response, "INVALID_REQUEST")
    if kind == "AcceptedNegativeData" and operation_id in ("importAffiliates", "importReferrals"):
        # A row the schema refuses fails alone, in the 200's `failed` list
        # (documented): the body as a whole is refused only when it is no
        # array of 1-500 rows.
        return not (response is not None and response.status_code == 200 and _failed_rows(response))
    if kind == "RejectedPositiveData" and operation_id == "uploadPortalTaxForm":
        # Generated bytes are no PDF: documented 400.
        return not _error_code(response, "INVALID_REQUEST")
    if kind == "RejectedPositiveData" and operation_id in ("importAffiliates", "importReferrals") and str(
        getattr(case, "media_type", "")
    ).startswith("text/csv"):
        # Generated text is rarely CSV with a header row naming each column
        # once and as many cells on each line: documented 400.
        return not (_error_code(response, "VALIDATION_FAILED") or _error_code(response, "INVALID_REQUEST"))
    if kind == "EnsureResourceAvailability" and _another_record(failure, response):
        # The 404 names a record the request named (a generated campaignId),
        # not the one the link created.
        return False
    if kind == "EnsureResourceAvailability" and operation_id in PUBLIC_ONLY:
        # The campaign an answer names may be private: its public routes
        # answer the documented 404.
        return not _error_code(response, "NOT_FOUND")
    if kind == "EnsureResourceAvailability" and operation_id == "trackClick":
        # A click answer's sessionId, sent with the next click, is kept for
        # reference only: that click's 404 comes from its own generated
        # campaign and code (documented), never from the session.
        return not _error_code(response, "NOT_FOUND")
    if kind == "UseAfterFree":
        return not str(getattr(failure, "free", "")).startswith(SOFT_DELETES)
    if kind != "RejectedPositiveData":
        return True
    issues = _issues(response)
    if issues is None:
        return True
    return not all(_documented(operation_id, issue) for issue in issues)


@schemathesis.hook("map_case").apply_to(operation_id=["createWebhookEndpoint", "updateWebhookEndpoint"])
def local_receiver(context, case):
    body = case.body
    positive = case.meta is None or case.meta.generation.mode.is_positive
    if positive and isinstance(body, dict) and isinstance(body.get("url"), str):
        body["url"] = LOCAL_RECEIVER
    return case


@schemathesis.hook("map_case")
def unique_idempotency_key(context, case):
    # A client makes a fresh key per request; generated keys collide ("0"
    # on every operation), which answers 409 or a replay instead of
    # creating what the stateful links need. Negative cases keep theirs.
    headers = case.headers or {}
    positive = case.meta is None or case.meta.generation.mode.is_positive
    if positive and "Idempotency-Key" in headers:
        headers["Idempotency-Key"] = f"fuzz-{uuid.uuid4()}"
    return case
