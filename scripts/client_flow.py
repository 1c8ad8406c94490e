"""A short merchant flow through the Python client that openapi-python-client
generates from docs/openapi.json (scripts/api-fuzz.sh generates it and runs
this with the package on PYTHONPATH).

Usage: client_flow.py BASE_URL TEST_KEY

Creates a campaign and an affiliate, tracks a click, identifies the session,
posts a payment (and replays it), lists the conversions and reads the
summary. Every answer must parse into the model its operation documents,
with every required part present and no field the description does not name
(the models keep unnamed fields in `additional_properties`, which must stay
empty). Prints `# pass N` / `# fail N`; exits non-zero on a failure.
"""

import datetime
import enum
import sys
import uuid

from affiliate_api_client import AuthenticatedClient, Client
from affiliate_api_client.api.affiliates import create_affiliate, get_affiliate, list_affiliates
from affiliate_api_client.api.campaigns import create_campaign, get_campaign
from affiliate_api_client.api.conversions import list_conversions, post_conversion, summarize_conversions
from affiliate_api_client.api.public import get_public_campaign
from affiliate_api_client.api.tracking import track_click, track_identify
from affiliate_api_client.models import (
    AffiliateCreate,
    AffiliateListResponse,
    AffiliateResponse,
    AffiliateStatus,
    AttributionMethod,
    CampaignCreate,
    CampaignResponse,
    CommissionType,
    ConversionListResponse,
    ConversionResponse,
    ConversionStatus,
    ConversionSummaryResponse,
    ConversionType,
    CurrencyCode,
    ErrorEnvelope,
    IdentifyByEmail,
    PayoutMethod,
    PostbackRequest,
    PublicCampaignResponse,
    SummaryGroupBy,
    SummaryPeriod,
    TrackClickRequest,
    TrackClickResponse,
    TrackIdentifyResponse,
)
from affiliate_api_client.types import Unset

results = {"pass": 0, "fail": 0}


def strict(value, where):
    """Every attrs model in `value` has its required fields set and no unnamed field."""
    if isinstance(value, Unset):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            strict(item, f"{where}[{i}]")
        return
    if isinstance(value, (str, int, float, bool, enum.Enum, datetime.date, type(None))):
        return
    extra = getattr(value, "additional_properties", None)
    if extra is None:
        return
    assert not extra, f"{where}: fields the description does not name: {sorted(extra)}"
    for name in value.__attrs_attrs__:
        if name.name != "additional_properties":
            strict(getattr(value, name.name), f"{where}.{name.name}")


def step(name, response, model, status):
    """The answer has the status and parses into `model`, strictly."""
    try:
        parsed = response.parsed
        if isinstance(parsed, ErrorEnvelope):
            raise AssertionError(f"{response.status_code} {parsed.error.code}: {parsed.error.message}")
        assert response.status_code == status, f"status {response.status_code}, expected {status}"
        assert isinstance(parsed, model), f"parsed as {type(parsed).__name__}, expected {model.__name__}"
        assert parsed.success is True
        strict(parsed, model.__name__)
    except AssertionError as e:
        results["fail"] += 1
        print(f"not ok - {name}: {e}\n  body: {response.content[:400]!r}")
        raise SystemExit(finish())
    results["pass"] += 1
    print(f"ok - {name}")
    return parsed.data


def finish():
    print(f"# pass {results['pass']}\n# fail {results['fail']}")
    return 1 if results["fail"] else 0


def main(base, key):
    client = AuthenticatedClient(base_url=base, token=key, raise_on_unexpected_status=True)
    public = Client(base_url=base, raise_on_unexpected_status=True)
    run = uuid.uuid4().hex[:10]

    campaign = step(
        "create a campaign",
        create_campaign.sync_detailed(
            client=client,
            body=CampaignCreate(
                name=f"Client flow {run}",
                commission_type=CommissionType.FIXED,
                commission_value=12.5,
                currency=CurrencyCode.EUR,
                commission_recurring=True,
                recurring_months_limit=12,
                is_public=True,
                hold_days=0,
            ),
        ),
        CampaignResponse,
        201,
    )
    assert campaign.commission_type is CommissionType.FIXED and campaign.currency is CurrencyCode.EUR
    step("read it back", get_campaign.sync_detailed(campaign.id, client=client), CampaignResponse, 200)
    step(
        "read its public profile",
        get_public_campaign.sync_detailed(campaign.id, client=public),
        PublicCampaignResponse,
        200,
    )

    code = f"flow_{run}"
    affiliate = step(
        "create an affiliate",
        create_affiliate.sync_detailed(
            client=client,
            body=AffiliateCreate(
                campaign_id=campaign.id,
                email=f"partner-{run}@partners.example.com",
                name="Flow Partner",
                code=code,
                payout_method=PayoutMethod.PAYPAL,
                website="https://partner.example.com",
            ),
        ),
        AffiliateResponse,
        201,
    )
    assert affiliate.status is AffiliateStatus.ACTIVE and affiliate.payout_method is PayoutMethod.PAYPAL
    step("read the affiliate", get_affiliate.sync_detailed(affiliate.id, client=client), AffiliateResponse, 200)
    listed = step(
        "list the campaign's affiliates",
        list_affiliates.sync_detailed(client=client, campaign_id=campaign.id),
        AffiliateListResponse,
        200,
    )
    assert [a.id for a in listed] == [affiliate.id]

    click = step(
        "track a click",
        track_click.sync_detailed(client=public, body=TrackClickRequest(campaign_id=campaign.id, ref=code)),
        TrackClickResponse,
        201,
    )
    step(
        "identify the session",
        track_identify.sync_detailed(
            client=public,
            body=IdentifyByEmail(session_id=click.session_id, customer_email=f"buyer-{run}@shop.example.com"),
        ),
        TrackIdentifyResponse,
        200,
    )

    postback = PostbackRequest(
        amount=80.0,
        currency=CurrencyCode.EUR,
        external_id=f"order-{run}",
        conversion_type=ConversionType.SALE,
        session_id=click.session_id,
        customer_email=f"buyer-{run}@shop.example.com",
    )
    conversion = step("post a payment", post_conversion.sync_detailed(client=client, body=postback), ConversionResponse, 201)
    assert conversion.affiliate_id == affiliate.id and conversion.attribution is AttributionMethod.SESSION
    assert conversion.commission == 12.5 and conversion.status is ConversionStatus.PENDING
    assert conversion.commission_reason is None
    again = step("replay the payment", post_conversion.sync_detailed(client=client, body=postback), ConversionResponse, 200)
    assert again.id == conversion.id

    unattributed = step(
        "post an unattributed payment",
        post_conversion.sync_detailed(
            client=client,
            body=PostbackRequest(
                amount=15.0,
                currency=CurrencyCode.EUR,
                external_id=f"order-{run}-2",
                conversion_type=ConversionType.SALE,
                campaign_id=campaign.id,
            ),
        ),
        ConversionResponse,
        201,
    )
    assert unattributed.status is ConversionStatus.UNATTRIBUTED and unattributed.affiliate_id is None

    conversions = step(
        "list the campaign's conversions",
        list_conversions.sync_detailed(client=client, campaign_id=campaign.id, limit=10),
        ConversionListResponse,
        200,
    )
    assert {c.id for c in conversions} == {conversion.id, unattributed.id}

    summary = step(
        "summarise by status",
        summarize_conversions.sync_detailed(
            client=client, period=SummaryPeriod.DAYS30, group_by=SummaryGroupBy.STATUS, campaign_id=campaign.id
        ),
        ConversionSummaryResponse,
        200,
    )
    assert summary.group_by is SummaryGroupBy.STATUS
    assert [(t.currency, t.count, t.revenue) for t in summary.totals] == [(CurrencyCode.EUR, 2, 95)]
    return finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
