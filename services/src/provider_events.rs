//! A payment provider's event, received: the integration is found by its
//! id, the signature checked on the raw body (`domain::connector`), the
//! event applied once per provider event id, and every delivery logged.
//! Its commands run through the same paths as the merchant's own calls:
//! the postback (`services::postback`), identify's binding
//! (`services::tracking`) and the reversal (`Conversion::reverse`).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::app::App;
use crate::auth::sealing;
use crate::payout_accounts::{self, Updated};
use crate::rails::paypal::Transmission;
use crate::rate_limit;
use crate::reverse::{self, Refunded, Restored};
use crate::{payout_transitions, postback, tracking};
use domain::account::Account;
use domain::affiliate_code::CodeOwner;
use domain::connector::{
    self, Binding, Command, Link, Mapped, Payment, Provider, Refund, RefundPart, Restore,
    SignatureError,
};
use domain::conversion::{Keys, Postback, Sale};
use domain::error::{Error, Result};
use domain::ids::{self, IdKind};
use domain::integration::{DeliveryOutcome, Integration};
use domain::payout_rail::AccountUpdate;
use domain::payout_rail::PayoutResult;
use domain::referral::{self, CustomerKey, ReferralSource};
use domain::tenant::Tenant;
use store::integrations::{self, DeliveryRow, Marked};
use store::payouts as store_payouts;
use store::{accounts, clicks, conversions, parked_links, parked_refunds, promotion_codes};

/// The answer to the provider.
#[derive(Debug, Clone)]
pub struct Answer {
    pub outcome: DeliveryOutcome,
    pub reason: Option<String>,
    pub conversion_id: Option<String>,
}

/// Receives one delivery, given each provider's signature header as sent:
/// 404 for an unknown or deleted integration, 400 (logged REJECTED) for a
/// bad or missing signature of its provider; once signed, 409 for a
/// disabled integration, 429 beyond its rate limit, 403 (logged REJECTED)
/// while its account is locked or its subscription expired. Every refusal
/// but the 400 is retried by the provider, so nothing is lost.
///
/// Every command is idempotent (a payment is recorded once per
/// `externalId`, a refund reverses up to its running total, a Paddle
/// adjustment once per id, a binding keeps the first touch), so the event
/// is applied first and marked applied after, in the transaction that logs
/// it: a failure leaves nothing marked and the provider's retry applies it;
/// a repeat finds the mark and answers DUPLICATE.
pub async fn receive(
    app: &App,
    integration_id: &str,
    delivery: &Delivery<'_>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<Answer> {
    let (integration, tenant) = find(app, integration_id).await?;
    if let Err(reason) = verified(app, &tenant, &integration, delivery, body, now).await? {
        return Err(rejected(app, &tenant, &integration, reason, now).await);
    }
    let mapped = match integration.provider {
        Provider::Stripe => connector::stripe::map(body),
        Provider::Paddle => connector::paddle::map(body),
        Provider::Paypal => connector::paypal::map(body),
    };
    let usable = applicable(mapped.as_ref(), &tenant);
    let planned = usable.as_ref().map_or(&[][..], |(_, c)| *c);
    // What the commands read first, read beside the admission.
    let (account, read) = tokio::join!(
        admit(app, &tenant, &integration, now),
        prefetch(app, &tenant, planned)
    );
    let (account, read) = (account?, read?);
    let (mapped, commands) = match usable {
        Ok(found) => found,
        Err(reason) => {
            // The contract's warning: a verified event nothing was done for.
            tracing::warn!(integration = %integration.id, %reason, "provider event ignored");
            let row = row(
                mapped.as_ref(),
                DeliveryOutcome::Ignored,
                Some(&reason),
                None,
                now,
            );
            integrations::log_delivery(&app.store, &tenant, &integration.id, &row).await?;
            return Ok(answer(DeliveryOutcome::Ignored, Some(reason), None));
        }
    };
    let ran = run(app, &tenant, &integration, &account, commands, &read, now).await?;
    finish(app, &tenant, &integration, mapped, ran, now).await
}

/// What a delivery carries besides its body: each HMAC provider's signature
/// header as sent (every copy of it), and PayPal's transmission headers.
#[derive(Debug, Clone, Default)]
pub struct Delivery<'a> {
    pub signatures: Vec<(Provider, &'a str)>,
    pub transmission: Transmission,
}

/// Whether the delivery is the provider's own: Stripe's and Paddle's by
/// their HMAC signature on the raw body, PayPal's by PayPal's API (asked
/// only when every transmission header is there); the refusal's reason
/// otherwise.
async fn verified(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    delivery: &Delivery<'_>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<std::result::Result<(), &'static str>> {
    match integration.provider {
        Provider::Paypal => verified_by_paypal(app, tenant, integration, delivery, body).await,
        _ => verified_by_hmac(app, integration, delivery, body, now).await,
    }
}

/// Stripe's and Paddle's HMAC signature on the raw body, against the
/// endpoint's secret and then Stripe's Connect endpoint's (the same URL may
/// receive both): the first refusal is the reason.
async fn verified_by_hmac(
    app: &App,
    integration: &Integration,
    delivery: &Delivery<'_>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<std::result::Result<(), &'static str>> {
    let mut sent = delivery
        .signatures
        .iter()
        .filter(|(p, _)| *p == integration.provider)
        .map(|(_, s)| *s);
    let signature = sent.next();
    // Two headers: which one the provider meant is unknowable.
    if sent.next().is_some() {
        return Ok(Err(SignatureError::Repeated.reason()));
    }
    let mut refused = None;
    let secrets = [
        Some(&integration.signing_secret),
        integration.connect_signing_secret.as_ref(),
    ];
    for sealed in secrets.into_iter().flatten() {
        let secret = sealing::open(&app.signing, sealed).await?;
        match integration
            .provider
            .verify(signature, body, &secret, now.timestamp())
        {
            Ok(()) => return Ok(Ok(())),
            Err(e) => refused = refused.or(Some(e.reason())),
        }
    }
    Ok(Err(refused.unwrap_or("no signing secret")))
}

/// PayPal's own verification through its API, asked only when every
/// transmission header is there and the body is a JSON event.
async fn verified_by_paypal(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    delivery: &Delivery<'_>,
    body: &[u8],
) -> Result<std::result::Result<(), &'static str>> {
    let t = &delivery.transmission;
    let complete = [&t.id, &t.time, &t.sig, &t.cert_url, &t.auth_algo]
        .iter()
        .all(|h| h.is_some());
    let event = serde_json::from_slice::<serde_json::Value>(body);
    let (true, Ok(event), Some(webhook_id), Some(client_id), Some(sealed)) = (
        complete,
        event,
        &integration.webhook_id,
        &integration.client_id,
        &integration.client_secret,
    ) else {
        return Ok(Err(
            "PayPal transmission headers missing, or the body is no JSON event",
        ));
    };
    let secret = sealing::open(&app.signing, sealed).await?;
    let paypal = app.rails.paypal(tenant.mode, client_id, &secret);
    Ok(match paypal.verify(t, webhook_id, &event).await? {
        true => Ok(()),
        false => Err("PayPal did not verify the event"),
    })
}

/// A mapped event and its commands, or why it is ignored.
fn applicable<'m>(
    mapped: Option<&'m Mapped>,
    tenant: &Tenant,
) -> std::result::Result<(&'m Mapped, &'m [Command]), String> {
    let Some(m) = mapped else {
        return Err("the body is no event of this provider".into());
    };
    m.commands_for(tenant.mode).map(|commands| (m, commands))
}

/// The integration and its tenant.
async fn find(app: &App, id: &str) -> Result<(Integration, Tenant)> {
    if !ids::is_valid(IdKind::Integration, id) {
        return Err(Error::NotFound("integration"));
    }
    integrations::get_with_tenant(&app.store, id)
        .await?
        .ok_or(Error::NotFound("integration"))
}

/// A delivery whose signature is refused: logged REJECTED while such
/// deliveries stay within the integration's rate limit (their own count,
/// so unsigned traffic never takes the provider's place), and 400.
async fn rejected(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    reason: &str,
    now: DateTime<Utc>,
) -> Error {
    let scope = format!("int:{}:rejected", integration.id);
    let limit = app.config.account_rate_per_minute;
    let logged = match rate_limit::hit(&app.store, &scope, limit).await {
        Ok(rate) if rate.check().is_ok() => {
            log_rejected(app, tenant, integration, reason, now).await
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    };
    match logged {
        Ok(()) => Error::InvalidRequest(format!("signature: {reason}")),
        Err(e) => e,
    }
}

/// A signed delivery is taken while the integration is enabled, within its
/// rate limit (not the client address's: a provider sends from many) and
/// its account usable; the account, read beside the count.
async fn admit(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    now: DateTime<Utc>,
) -> Result<Account> {
    integration.check_receiving()?;
    let scope = format!("int:{}", integration.id);
    let limit = app.config.account_rate_per_minute;
    let (rate, account) = tokio::join!(
        rate_limit::hit(&app.store, &scope, limit),
        accounts::get_account(&app.store, &tenant.account_id)
    );
    rate?.check()?;
    let account = account?;
    if let Err(e) = account.check_usable(now) {
        log_rejected(app, tenant, integration, &e.to_string(), now).await?;
        return Err(e);
    }
    Ok(account)
}

/// Logs a delivery refused before it was read, with its reason.
async fn log_rejected(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let row = row(None, DeliveryOutcome::Rejected, Some(reason), None, now);
    integrations::log_delivery(&app.store, tenant, &integration.id, &row).await
}

/// What running an event's commands came to.
struct Ran {
    answer: Answer,
    /// Other ids of the payment recorded, to claim for its conversion.
    aliases: Vec<(String, String)>,
    /// Each payment recorded (or replayed): refunds and links kept for it
    /// apply to its conversion.
    paid: Vec<Paid>,
}

/// A payment recorded (or replayed) by an event.
struct Paid {
    conversion_id: String,
    /// Every id the payment may be known by.
    ids: Vec<String>,
    /// Its own id, when its other ids arrive apart (a kept link may name them).
    linked_later: Option<String>,
}

/// Marks the event applied and logs it (one transaction), while the
/// recorded payment's other ids are claimed for its conversion and the
/// refunds that arrived before it are read; those then apply to its
/// conversion. They are read once the payment's conversion and its other
/// ids are committed, so no refund is missed: one kept before the read is
/// found by it, one kept after finds the conversion itself (see
/// `reverse`). A failure to apply one is the delivery's failure, and the
/// provider's retry (DUPLICATE) reads them again.
async fn finish(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    mapped: &Mapped,
    ran: Ran,
    now: DateTime<Utc>,
) -> Result<Answer> {
    let Ran {
        mut answer,
        aliases,
        paid,
    } = ran;
    let store = &app.store;
    let logged = row(
        Some(mapped),
        answer.outcome,
        answer.reason.as_deref(),
        answer.conversion_id.as_deref(),
        now,
    );
    let (first, kept) = tokio::join!(
        integrations::record_applied(store, tenant, &integration.id, &mapped.event_id, &logged),
        claim_then_read_kept(app, tenant, aliases, &paid, now)
    );
    for (conversion_id, refunds) in kept? {
        if let Some(reason) =
            apply_kept(app, tenant, integration, &conversion_id, refunds, now).await?
        {
            answer.reason = Some(reason);
        }
    }
    if let Marked::Before(event_row) = first? {
        // The event's row tells what applied it: this delivery's outcome
        // when it applied it and the first to mark it found nothing to do.
        let applied = (answer.outcome == DeliveryOutcome::Applied).then_some(&logged);
        answer.outcome = DeliveryOutcome::Duplicate;
        let repeat = row(
            Some(mapped),
            DeliveryOutcome::Duplicate,
            None,
            answer.conversion_id.as_deref(),
            now,
        );
        let event_row = event_row.as_deref();
        integrations::log_repeat(store, tenant, &integration.id, event_row, applied, &repeat)
            .await?;
    }
    Ok(answer)
}

/// Claims the recorded payments' other ids for their conversions, then
/// reads the refunds kept under any of their ids: each conversion with its
/// refunds. Beside that, the links kept for a payment whose ids arrive
/// apart are read again (the link's event and the payment's may run at
/// once, each missing the other's write): the ids such a link adds are
/// claimed and their refunds read after, which costs round trips only then.
async fn claim_then_read_kept(
    app: &App,
    tenant: &Tenant,
    aliases: Vec<(String, String)>,
    paid: &[Paid],
    now: DateTime<Utc>,
) -> Result<Vec<(String, Vec<Refund>)>> {
    let store = &app.store;
    let ids: Vec<Vec<String>> = paid.iter().map(|p| p.ids.clone()).collect();
    let links = paid.iter().map(|p| async move {
        match &p.linked_later {
            Some(id) => parked_links::of_payment(store, tenant, id).await,
            None => Ok(None),
        }
    });
    let (kept, links) = tokio::join!(
        claim_then_read(app, tenant, &aliases, &ids, now),
        futures::future::join_all(links)
    );
    let mut kept = kept?;
    for (i, link) in links.into_iter().enumerate() {
        let added: Vec<String> = link?
            .map(|l| l.aliases)
            .unwrap_or_default()
            .into_iter()
            .filter(|a| !ids[i].contains(a))
            .collect();
        if added.is_empty() {
            continue;
        }
        let claims: Vec<(String, String)> = added
            .iter()
            .map(|a| (a.clone(), paid[i].conversion_id.clone()))
            .collect();
        let more = claim_then_read(app, tenant, &claims, &[added], now).await?;
        for r in more.into_iter().flatten() {
            if !kept[i].iter().any(|k| k.identity() == r.identity()) {
                kept[i].push(r);
            }
        }
    }
    Ok(paid
        .iter()
        .map(|p| p.conversion_id.clone())
        .zip(kept)
        .collect())
}

/// Claims each `(alias, conversion)`, then reads the refunds kept under each
/// list of ids (read after the claims, so a refund kept meanwhile finds the
/// conversion itself).
async fn claim_then_read(
    app: &App,
    tenant: &Tenant,
    aliases: &[(String, String)],
    ids: &[Vec<String>],
    now: DateTime<Utc>,
) -> Result<Vec<Vec<Refund>>> {
    let store = &app.store;
    let claims = aliases
        .iter()
        .map(|(alias, conversion)| conversions::claim_alias(store, tenant, alias, conversion, now));
    futures::future::try_join_all(claims).await?;
    let kept = ids
        .iter()
        .map(|ids| parked_refunds::of_payment(store, tenant, ids));
    futures::future::try_join_all(kept).await
}

/// Applies the refunds kept for a payment to its conversion, discarding
/// each once applied; the reason to give when one was.
async fn apply_kept(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    conversion_id: &str,
    refunds: Vec<Refund>,
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let mut reason = None;
    for r in refunds {
        let (_, not_done) = apply_refund(app, tenant, integration, conversion_id, &r, now).await?;
        parked_refunds::discard(&app.store, tenant, &r).await?;
        if not_done.is_none() {
            reason = Some("a refund received before the payment was applied".to_string());
        }
    }
    Ok(reason)
}

/// Links a payment's other ids (a Stripe invoice's payment intent and
/// charge) to its conversion and applies the refunds kept under them; a
/// link of a payment not recorded yet is kept for it (IGNORED, "unknown
/// payment"), and applied when the payment is recorded. When one of those
/// ids holds another conversion already (the merchant posted the payment
/// back under its payment intent between the invoice and its link), the
/// payment was recorded twice: the postback's conversion stays (refunds and
/// disputes name the ids it holds) and the invoice's is reversed in full.
async fn link(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    l: &Link,
    read: &Prefetched,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    let store = &app.store;
    let mut conversion = read.linked.get(&l.payment_id).cloned().flatten();
    if conversion.is_none() {
        parked_links::park(store, tenant, l, now).await?;
        // Recorded meanwhile, its own read of kept links having missed
        // this one: this links it.
        conversion = conversions::claimed_by(store, tenant, &l.payment_id).await?;
    }
    let Some(mut id) = conversion else {
        return Ok((None, Some("unknown payment".into())));
    };
    let held = read.held.get(&l.payment_id).cloned().flatten();
    if let Some(other) = held.filter(|other| *other != id) {
        reverse_second_record(app, tenant, &id, &other, now).await?;
        id = other;
    }
    let claims: Vec<(String, String)> = l.aliases.iter().map(|a| (a.clone(), id.clone())).collect();
    let kept = claim_then_read(app, tenant, &claims, std::slice::from_ref(&l.aliases), now).await?;
    apply_kept(
        app,
        tenant,
        integration,
        &id,
        kept.into_iter().flatten().collect(),
        now,
    )
    .await?;
    Ok((Some(id), None))
}

/// Reverses in full the conversion `second` that records again the payment
/// `first` records (nothing when it is reversed already: a link delivered
/// again).
async fn reverse_second_record(
    app: &App,
    tenant: &Tenant,
    second: &str,
    first: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let whole = Refund {
        payment_ids: Vec::new(),
        part: RefundPart::Full,
        once_key: None,
        currency: None,
    };
    let reason = format!("the same payment as {first}, posted back under its payment intent");
    reverse::refund(app, tenant, second, &whole, &reason, now).await?;
    Ok(())
}

fn answer(
    outcome: DeliveryOutcome,
    reason: Option<String>,
    conversion_id: Option<String>,
) -> Answer {
    Answer {
        outcome,
        reason,
        conversion_id,
    }
}

/// What an event's commands read first, read before they run (beside the
/// admission, so at no round trip of their own).
#[derive(Debug, Default)]
struct Prefetched {
    /// The link kept for each payment whose other ids arrive apart.
    links: HashMap<String, Link>,
    /// The conversion each link's payment is recorded as, if it is.
    linked: HashMap<String, Option<String>>,
    /// The conversion that holds one of each link's other ids already, if
    /// one does (the merchant posted the payment back under it).
    held: HashMap<String, Option<String>>,
    /// The owner of each promotion code a binding names, if active.
    promotions: HashMap<String, Option<CodeOwner>>,
}

/// Reads what `commands` read first: kept links, linked conversions, the
/// conversions holding a link's other ids and promotion-code owners (one
/// read each, all at once).
async fn prefetch(app: &App, tenant: &Tenant, commands: &[Command]) -> Result<Prefetched> {
    let store = &app.store;
    let mut read = Prefetched::default();
    let (mut links, mut linking, mut promotions) = (Vec::new(), Vec::new(), Vec::new());
    for c in commands {
        match c {
            Command::Record(p) if p.linked_later => links.push(p.external_id.clone()),
            Command::Link(l) => linking.push(l),
            Command::Bind(b) if b.by_promotion => promotions.push(b.referral.clone()),
            _ => {}
        }
    }
    let (l, c, h, o) = tokio::join!(
        futures::future::try_join_all(
            links
                .iter()
                .map(|id| parked_links::of_payment(store, tenant, id))
        ),
        futures::future::try_join_all(linking.iter().map(|l| conversions::claimed_by(
            store,
            tenant,
            &l.payment_id
        ))),
        futures::future::try_join_all(
            linking
                .iter()
                .map(|l| conversions::claimed_by_any(store, tenant, &l.aliases))
        ),
        futures::future::try_join_all(
            promotions
                .iter()
                .map(|id| promotion_codes::owner(store, tenant, id))
        )
    );
    for (id, link) in links.into_iter().zip(l?) {
        read.links.extend(link.map(|l| (id, l)));
    }
    let paid_ids = || linking.iter().map(|l| l.payment_id.clone());
    read.linked.extend(paid_ids().zip(c?));
    read.held.extend(paid_ids().zip(h?));
    read.promotions.extend(promotions.into_iter().zip(o?));
    Ok(read)
}

/// Runs an event's commands in order; the answer names the last conversion
/// touched, and is IGNORED when no command did anything (each says why).
async fn run(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    account: &Account,
    commands: &[Command],
    read: &Prefetched,
    now: DateTime<Utc>,
) -> Result<Ran> {
    let mut ran = Ran {
        answer: answer(DeliveryOutcome::Applied, None, None),
        aliases: Vec::new(),
        paid: Vec::new(),
    };
    let mut done = false;
    let mut customer_bound = false;
    for command in commands {
        let (conversion, reason) = match command {
            Command::Record(p) => {
                match record(app, tenant, integration, account, p, read, now).await? {
                    Taken::Recorded {
                        id,
                        unclaimed,
                        ids,
                        bound,
                    } => {
                        customer_bound |= bound;
                        ran.aliases
                            .extend(unclaimed.into_iter().map(|a| (a, id.clone())));
                        ran.paid.push(Paid {
                            conversion_id: id.clone(),
                            ids,
                            linked_later: p.linked_later.then(|| p.external_id.clone()),
                        });
                        (Some(id), None)
                    }
                    Taken::Skipped(reason) => (None, Some(reason)),
                }
            }
            // A checkout's payment recorded now bound its customer already.
            Command::Bind(_) if customer_bound => (None, None),
            Command::Bind(b) => bind(app, tenant, integration, b, read, now).await?,
            Command::Reverse(r) => reverse(app, tenant, integration, r, now).await?,
            Command::Restore(r) => restore(app, tenant, integration, r, now).await?,
            Command::Link(l) => link(app, tenant, integration, l, read, now).await?,
            Command::AccountUpdated(u) => account_updated(app, tenant, u, now).await?,
            Command::PayoutResult(r) => payout_result(app, tenant, r, now).await?,
        };
        done |= reason.is_none();
        let a = &mut ran.answer;
        a.conversion_id = conversion.or(a.conversion_id.take());
        a.reason = reason.or(a.reason.take());
    }
    if !done {
        ran.answer.outcome = DeliveryOutcome::Ignored;
    }
    Ok(ran)
}

/// An affiliate's connected account updated; an account unknown to this
/// tenant (or another tenant's) is ignored.
async fn account_updated(
    app: &App,
    tenant: &Tenant,
    update: &AccountUpdate,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    Ok(
        match payout_accounts::account_updated(app, tenant, update, now).await? {
            Updated::Applied | Updated::Unchanged => (None, None),
            Updated::Unknown => (None, Some("unknown connected account".into())),
        },
    )
}

/// What a provider says became of a payout it was asked to pay: PAID,
/// APPROVED again, or noted; a payout unknown to this tenant, PAID already,
/// or of an earlier attempt is left as it is (the reason).
async fn payout_result(
    app: &App,
    tenant: &Tenant,
    r: &PayoutResult,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    let Some(p) = store_payouts::read(&app.store, tenant, &r.payout_id).await? else {
        return Ok((None, Some("unknown payout".into())));
    };
    if let Err(reason) = r.command(&p) {
        return Ok((None, Some(reason)));
    }
    // Decided again on a payout changed meanwhile (a new attempt begun).
    let decide = |now_is: &domain::payout::Payout| {
        r.command(now_is)
            .map_err(|_| Error::state("payout", now_is.status.as_str(), "apply the event"))
    };
    let id = r.payout_id.clone();
    match payout_transitions::transition_from(app, tenant, &id, Some(p), decide, now).await {
        Ok(_) => Ok((None, None)),
        // Moved meanwhile (paid by an earlier delivery, say): left as it is.
        Err(Error::InvalidState { current, .. }) => {
            Ok((None, Some(format!("the payout is {current}"))))
        }
        Err(e) => Err(e),
    }
}

/// What a provider's referral hint names, by its id prefix (a promotion
/// code is said so by the binding).
#[derive(Clone, Copy)]
enum Referral {
    Click,
    Session,
    Code,
    Promotion,
}

impl Referral {
    fn of(hint: &str) -> Referral {
        if ids::is_valid(IdKind::Click, hint) {
            Referral::Click
        } else if ids::is_valid(IdKind::Session, hint) {
            Referral::Session
        } else {
            Referral::Code
        }
    }
}

/// The postback a payment makes, judged by the postback's own rules on its
/// typed facts (an amount or id it would refuse is a reason to ignore the
/// payment): the referral hint is a click id, a session id or an affiliate
/// code; the customer's id and e-mail (hashed) find the customer's
/// referral, and are left out when malformed, as a signal the postback
/// would skip.
fn postback_of(
    integration: &Integration,
    p: &Payment,
    now: DateTime<Utc>,
) -> std::result::Result<Postback, String> {
    let hint = p.referral.clone();
    let (click_id, session_id, code) = match p.referral.as_deref().map(Referral::of) {
        Some(Referral::Click) => (hint, None, None),
        Some(Referral::Session) => (None, hint, None),
        _ => (None, None, hint),
    };
    let mut metadata = domain::metadata::Metadata::new();
    metadata.insert("integrationId".into(), integration.id.clone());
    let sale = Sale {
        amount: p.amount,
        currency: p.currency,
        external_id: p.external_id.clone(),
        keys: Keys {
            campaign_id: code.as_ref().and(integration.campaign_id.clone()),
            affiliate_code: code,
            session_id,
            click_id,
            product_id: p.product.product_id.clone(),
            plan_id: p.product.plan_id.clone(),
        },
        customer_id: p
            .customer_id
            .as_deref()
            .and_then(|c| CustomerKey::from_id(c).ok()),
        email: p
            .customer_email
            .as_deref()
            .and_then(|e| CustomerKey::from_email(e).ok()),
        occurred_at: p.occurred_at.min(now),
        metadata,
        promotion_code: p.promotion_code.clone(),
    };
    Postback::sale(sale).map_err(|e| match e {
        Error::Validation(issues) => {
            let said: Vec<String> = issues.into_iter().map(|i| i.message).collect();
            format!("the postback would refuse the payment: {}", said.join("; "))
        }
        other => other.to_string(),
    })
}

/// What a provider's payment came to.
enum Taken {
    /// Its conversion (recorded now with every id of the payment claimed, or
    /// replayed), and the payment's ids still to claim for it: those of a
    /// payment first recorded under another of its ids (a postback's
    /// `externalId` that was its payment intent or charge), and every id
    /// the payment is known by.
    Recorded {
        id: String,
        unclaimed: Vec<String>,
        ids: Vec<String>,
        /// Recorded now and attributed: its customer is bound as a
        /// payment binds it.
        bound: bool,
    },
    /// Nothing of this tenant's to do, and why.
    Skipped(String),
}

/// Records a payment as the postback would, with the other ids a kept link
/// names when they arrive apart (so a payment intent posted back first
/// replays its conversion instead of counting the payment twice).
async fn record(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    account: &Account,
    p: &Payment,
    read: &Prefetched,
    now: DateTime<Utc>,
) -> Result<Taken> {
    let mut ids = p.ids();
    let linked = read.links.get(&p.external_id).map(|l| l.aliases.clone());
    for alias in linked.unwrap_or_default() {
        if !ids.contains(&alias) {
            ids.push(alias);
        }
    }
    let input = match postback_of(integration, p, now) {
        Ok(input) => Postback {
            aliases: ids[1..].to_vec(),
            ..input
        },
        Err(reason) => return Ok(Taken::Skipped(reason)),
    };
    let recorded = postback::record_for(app, tenant, account, &input, now).await;
    match recorded {
        Ok(postback::Recorded::Created(c)) => Ok(Taken::Recorded {
            bound: c.affiliate_id.is_some(),
            id: c.id,
            unclaimed: Vec::new(),
            ids,
        }),
        Ok(postback::Recorded::Replayed(c)) => Ok(Taken::Recorded {
            unclaimed: match c.external_id == p.external_id {
                true => Vec::new(),
                false => ids
                    .iter()
                    .filter(|i| **i != c.external_id)
                    .cloned()
                    .collect(),
            },
            id: c.id,
            ids,
            bound: false,
        }),
        // Its id is another account's or mode's: nothing here to retry.
        Err(Error::AlreadyExists(_)) => Ok(Taken::Skipped(
            "the payment's id was recorded by another account or mode".into(),
        )),
        Err(e) => Err(e),
    }
}

/// Binds the customer of a checkout to the affiliate its referral names,
/// then attributes the checkout's payment when it was recorded unattributed
/// before (the conversion touched, and a reason when nothing was done).
async fn bind(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    b: &Binding,
    read: &Prefetched,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    let r = b.referral.as_str();
    let kind = match b.by_promotion {
        true => Referral::Promotion,
        false => Referral::of(r),
    };
    let (affiliate_id, campaign_id) = match referral_owner(app, tenant, kind, r, read, now).await? {
        Ok(owner) => owner,
        Err(reason) => return Ok((None, Some(reason.into()))),
    };
    let keys = customer_keys(b.customer_id.as_deref(), b.customer_email.as_deref());
    if keys.is_empty() {
        return Ok((None, Some("the checkout names no customer".into())));
    }
    let binding = referral::Binding {
        affiliate_id: &affiliate_id,
        campaign_id: &campaign_id,
        source: ReferralSource::Checkout,
        session_id: matches!(kind, Referral::Session).then_some(r),
        at: now,
        counted_click: None,
    };
    tracking::bind(app, tenant, &keys, &binding).await?;
    match &b.payment_id {
        Some(payment) => Ok((
            attribute_waiting(app, tenant, integration, b, payment, now).await?,
            None,
        )),
        None => Ok((None, None)),
    }
}

/// The affiliate and campaign a checkout's referral names: a live click
/// (by its id or its session's), an affiliate code or a promotion code;
/// why nothing binds otherwise.
async fn referral_owner(
    app: &App,
    tenant: &Tenant,
    kind: Referral,
    r: &str,
    read: &Prefetched,
    now: DateTime<Utc>,
) -> Result<std::result::Result<(String, String), &'static str>> {
    let click = match kind {
        Referral::Session => clicks::get_live_by_session(&app.store, r, now).await?,
        Referral::Click => clicks::get_live(&app.store, r, now).await?,
        Referral::Code | Referral::Promotion => None,
    };
    // Another tenant's click is as if unknown; a flooded one binds nothing.
    let click = click.and_then(|c| Some((c.binds_for(&tenant.key())?, c)));
    if let Some((false, _)) = click {
        return Ok(Err(
            "the referral's click is beyond its campaign's click limit (CLICK_FLOOD)",
        ));
    }
    let owner = match kind {
        Referral::Session | Referral::Click => click.map(|(_, c)| (c.affiliate_id, c.campaign_id)),
        Referral::Code => app
            .lookups
            .code_owner(&app.store, tenant, r)
            .await?
            .map(|o| (o.affiliate_id, o.campaign_id)),
        Referral::Promotion => read
            .promotions
            .get(r)
            .cloned()
            .flatten()
            .map(|o| (o.affiliate_id, o.campaign_id)),
    };
    Ok(owner.ok_or("the referral names no live session, click or code"))
}

/// The customer's keys a checkout names (its id, its e-mail), the malformed
/// left out.
fn customer_keys(id: Option<&str>, email: Option<&str>) -> Vec<CustomerKey> {
    let by_id = id.and_then(|c| CustomerKey::from_id(c).ok());
    let by_email = email.and_then(|e| CustomerKey::from_email(e).ok());
    by_id.into_iter().chain(by_email).collect()
}

/// Attributes a checkout's payment recorded UNATTRIBUTED before the
/// checkout arrived, as its postback would now: by the customer's referral
/// just bound, or by the checkout's referral when the payment named no
/// customer. The conversion's id when it was attributed.
async fn attribute_waiting(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    b: &Binding,
    payment: &str,
    now: DateTime<Utc>,
) -> Result<Option<String>> {
    let Some(id) = conversions::claimed_by(&app.store, tenant, payment).await? else {
        return Ok(None);
    };
    let c = conversions::get(&app.store, tenant, &id).await?;
    // Nothing to plan for one that no late attribution may take.
    if !c.awaits_attribution() {
        return Ok(None);
    }
    let paid = Payment {
        external_id: c.external_id.clone(),
        amount: c.amount,
        currency: c.currency,
        customer_id: c.customer_id.clone(),
        // The checkout's e-mail: the risk rules judge the payment with it.
        customer_email: b.customer_email.clone(),
        referral: (c.customer_id.is_none() && !b.by_promotion).then(|| b.referral.clone()),
        promotion_code: (c.customer_id.is_none() && b.by_promotion).then(|| b.referral.clone()),
        occurred_at: c.occurred_at,
        aliases: Vec::new(),
        linked_later: false,
        // Late attribution decides by the product the payment was recorded with.
        product: connector::ProductAndPlan {
            product_id: c.product_id.clone(),
            plan_id: c.plan_id.clone(),
        },
    };
    let Ok(mut p) = postback_of(integration, &paid, now) else {
        return Ok(None);
    };
    p.metadata = c.metadata.clone();
    let late = postback::attribute_late(&app.store, &app.lookups, tenant, &c, &p, now).await?;
    Ok(late.map(|c| c.id))
}

/// Reverses the conversion of a refunded payment by what the refund says
/// is due now (a running total is compared with what is reversed already,
/// so a repeated or reordered refund never reverses twice). A refund of a
/// payment not recorded yet is IGNORED ("unknown payment") and kept, to
/// apply when the payment is recorded.
async fn reverse(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    r: &Refund,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    if let Some(conversion_id) = payment_of(app, tenant, r).await? {
        return apply_refund(app, tenant, integration, &conversion_id, r, now).await;
    }
    if !r.keepable() {
        return Ok((None, Some("unknown payment".into())));
    }
    parked_refunds::park(&app.store, tenant, r, now).await?;
    // Kept after the payment's own read of kept refunds, which then missed
    // it: the payment is recorded by now, and this applies it.
    if let Some(conversion_id) = payment_of(app, tenant, r).await? {
        return apply_refund(app, tenant, integration, &conversion_id, r, now).await;
    }
    Ok((None, Some("unknown payment".into())))
}

/// Gives back what a refund or chargeback of a recorded payment took, once
/// per restoral; one of a payment not recorded is IGNORED ("unknown
/// payment").
async fn restore(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    r: &Restore,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    let store = &app.store;
    let Some(id) = conversions::claimed_by_any(store, tenant, &r.payment_ids).await? else {
        return Ok((None, Some("unknown payment".into())));
    };
    if !integrations::claim_once(store, tenant, &r.once_key, now).await? {
        return Ok((Some(id), Some("restoral applied before".into())));
    }
    let reason = format!(
        "{} reversal given back",
        integration.provider.as_str().to_lowercase()
    );
    let reason = match reverse::restore(app, tenant, &id, r, &reason, now).await {
        Ok(Restored::Applied) => None,
        Ok(Restored::NothingDue) => Some("nothing reversed to give back".to_string()),
        Ok(Restored::OtherCurrency(own, payment)) => Some(format!(
            "the restoral is in {}, the payment in {}",
            own.code(),
            payment.code()
        )),
        Err(e) => {
            // Not applied: the provider's retry applies it then.
            integrations::release_once(store, tenant, &r.once_key).await?;
            return Err(e);
        }
    };
    Ok((Some(id), reason))
}

/// The conversion of a refund's payment, by the first of its ids that has
/// one (all read at once).
async fn payment_of(app: &App, tenant: &Tenant, r: &Refund) -> Result<Option<String>> {
    conversions::claimed_by_any(&app.store, tenant, &r.payment_ids).await
}

/// Applies a refund to the conversion of its payment (a Paddle adjustment
/// once per id); the conversion, and a reason when nothing more was due.
async fn apply_refund(
    app: &App,
    tenant: &Tenant,
    integration: &Integration,
    conversion_id: &str,
    r: &Refund,
    now: DateTime<Utc>,
) -> Result<(Option<String>, Option<String>)> {
    let conversion_id = conversion_id.to_string();
    if let Some(key) = &r.once_key {
        if !integrations::claim_once(&app.store, tenant, key, now).await? {
            return Ok((
                Some(conversion_id),
                Some("adjustment applied before".into()),
            ));
        }
    }
    let reason = format!("{} refund", integration.provider.as_str().to_lowercase());
    let done = reverse::refund(app, tenant, &conversion_id, r, &reason, now).await;
    let done = match (done, &r.once_key) {
        (Ok(Refunded::Applied), _) => None,
        (Ok(Refunded::NothingDue), _) => Some("nothing more to reverse".to_string()),
        (Ok(Refunded::OtherCurrency(own, payment)), key) => {
            // Not this payment's: a key claimed for it is given back.
            if let Some(key) = key {
                integrations::release_once(&app.store, tenant, key).await?;
            }
            Some(format!(
                "the refund is in {}, the payment in {}",
                own.code(),
                payment.code()
            ))
        }
        (Err(e), Some(key)) => {
            // Not applied: the provider's retry applies it then.
            integrations::release_once(&app.store, tenant, key).await?;
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    Ok((Some(conversion_id), done))
}

/// A delivery's log row.
fn row(
    mapped: Option<&Mapped>,
    outcome: DeliveryOutcome,
    reason: Option<&str>,
    conversion_id: Option<&str>,
    now: DateTime<Utc>,
) -> DeliveryRow {
    DeliveryRow {
        provider_event_id: mapped.map(|m| m.event_id.clone()),
        event_type: mapped.map(|m| m.event_type.clone()),
        received_at: now,
        outcome,
        reason: reason.map(str::to_string),
        conversion_id: conversion_id.map(str::to_string),
    }
}
