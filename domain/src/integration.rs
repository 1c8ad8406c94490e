//! Integrations (contract section 11): a payment provider's webhook
//! endpoint, per tenant and mode, whose verified events become conversions,
//! referrals and reversals. The signing secret is write-only: kept to check
//! signatures, never in a view, an event or a log.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::connector::Provider;
use crate::edit::{self, Stamped, Stamps};
use crate::enums::wire_enum;
use crate::error::Error;
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::patch::Patch;
use crate::schema::Judged;
use crate::tenant::Mode;
use crate::timestamp::serde_ts_opt;
use crate::validation::Issues;

wire_enum! {
    /// Whether an integration's events are applied.
    pub enum IntegrationStatus {
        /// Events are verified and applied.
        Enabled = "ENABLED",
        /// Events are answered 409, so the provider retries them later.
        Disabled = "DISABLED",
    }
}

crate::status::statuses!(IntegrationStatus);

wire_enum! {
    /// What a delivery to an integration came to.
    pub enum DeliveryOutcome {
        /// Its commands were applied.
        Applied = "APPLIED",
        /// Nothing to do (see the reason).
        Ignored = "IGNORED",
        /// The event was applied before.
        Duplicate = "DUPLICATE",
        /// The signature was refused; nothing was recorded.
        Rejected = "REJECTED",
    }
}

/// An integration as stored. Its `Debug` form hides the signing secret.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Integration {
    pub id: String,
    pub provider: Provider,
    pub status: IntegrationStatus,
    /// The default campaign for code attribution.
    pub campaign_id: Option<String>,
    pub description: Option<String>,
    /// Private: the secret the provider signs its events with (empty for
    /// PAYPAL, whose events PayPal's API verifies).
    pub signing_secret: String,
    /// Private: STRIPE's second signing secret, of the Connect endpoint that
    /// sends connected accounts' events to the same URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_signing_secret: Option<String>,
    /// Private, sealed at rest: the Stripe secret key that pays payouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// PAYPAL: the REST app's client id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// PAYPAL, private, sealed at rest: the REST app's secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// PAYPAL: the id of the webhook that points at this integration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
    /// Set by DELETE: the integration is hidden and its events are 404.
    #[serde(default)]
    pub deleted: bool,
    /// Its signing secret, when last given, lacked its provider's shape (a
    /// placeholder): DISABLED until a PATCH gives one that has it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret_unshaped: bool,
    /// Its version and times.
    #[serde(flatten)]
    pub stamps: Stamps,
    #[serde(with = "serde_ts_opt", default)]
    pub last_event_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for Integration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Integration")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// A new integration as the merchant asks for it
/// (`wire::integration::NewIntegration` is its body): each credential
/// judged against the body's lengths. No `Debug`: it holds secrets.
#[derive(Clone)]
pub struct IntegrationDraft {
    pub provider: Provider,
    pub signing_secret: Option<Judged<String>>,
    pub connect_signing_secret: Option<Judged<String>>,
    pub api_key: Option<Judged<String>>,
    pub client_id: Option<Judged<String>>,
    pub client_secret: Option<Judged<String>>,
    pub webhook_id: Option<Judged<String>>,
    pub campaign_id: Option<String>,
    pub description: Option<String>,
}

/// An integration's changes: only what is given changes
/// (`wire::integration::IntegrationPatch` is their body). No `Debug`: it
/// holds secrets.
#[derive(Clone, Default)]
pub struct IntegrationChanges {
    pub signing_secret: Patch<Judged<String>>,
    pub connect_signing_secret: Patch<Judged<String>>,
    pub api_key: Patch<Judged<String>>,
    pub client_id: Patch<Judged<String>>,
    pub client_secret: Patch<Judged<String>>,
    pub webhook_id: Patch<Judged<String>>,
    pub campaign_id: Patch<String>,
    pub description: Patch<String>,
    pub status: Patch<IntegrationStatus>,
}

/// The value of a judged credential, when given.
fn value(judged: Option<Judged<String>>) -> Option<String> {
    judged.map(|j| j.value)
}

/// A field its provider does not take.
fn not_taken(field: &str, provider: Provider, issues: &mut Issues) {
    issues.add(
        &[field],
        "not_allowed",
        format!(
            "{field} is not taken by a {} integration",
            provider.as_str()
        ),
    );
}

/// Each of `fields` (name, value) present and checked; missing: 400.
fn check_required(fields: &[(&'static str, Option<&Judged<String>>)], issues: &mut Issues) {
    for (field, value) in fields {
        match value {
            Some(v) => {
                v.judge(issues);
            }
            None => issues.add(&[field], "required", format!("{field} is required")),
        }
    }
}

/// The least a provider's signing secret starts with and holds after it:
/// one that falls short (a placeholder) leaves its integration DISABLED, so
/// no one who learns the URL can post events signed with a guessable secret.
const SHAPES: [(Provider, &str, usize); 2] = [
    (Provider::Stripe, "whsec_", 24),
    (Provider::Paddle, "pdl_ntfset_", 24),
];

/// Whether a signing secret has its provider's shape (PayPal takes none).
fn shaped(provider: Provider, secret: &str) -> bool {
    SHAPES
        .iter()
        .find(|(p, _, _)| *p == provider)
        .is_none_or(|(_, prefix, least)| {
            secret
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.chars().count() >= *least)
        })
}

/// A provider's signing-secret shape, in words.
fn secret_shape(provider: Provider) -> String {
    match SHAPES.iter().find(|(p, _, _)| *p == provider) {
        Some((_, prefix, least)) => format!("{prefix} and at least {least} characters more"),
        None => "none".into(),
    }
}

/// STRIPE's Connect endpoint secret; another provider takes none.
fn check_connect_secret(provider: Provider, secret: &Judged<String>, issues: &mut Issues) {
    match provider {
        Provider::Stripe => {
            secret.judge(issues);
        }
        other => not_taken("connectSigningSecret", other, issues),
    }
}

/// A Stripe key (its format judged where the body was read) of the
/// integration's mode.
fn check_api_key(provider: Provider, mode: Mode, key: &Judged<String>, issues: &mut Issues) {
    if provider != Provider::Stripe {
        issues.add(
            &["apiKey"],
            "not_allowed",
            "apiKey is taken by STRIPE integrations only",
        );
        return;
    }
    let formed = key.issue.is_none();
    let key = key.judge(issues);
    let want = match mode {
        Mode::Live => "live_",
        Mode::Test => "test_",
    };
    // `sk_` or `rk_` (the format), then the mode.
    if formed && key.get(3..).is_some_and(|rest| !rest.starts_with(want)) {
        issues.add(
            &["apiKey"],
            "invalid_string",
            format!(
                "apiKey must be a Stripe secret or restricted key of this mode (sk_{want}… or rk_{want}…)"
            ),
        );
    }
}

/// A new integration's credentials: a signing secret for STRIPE and PADDLE
/// (and STRIPE's optional key), the REST app and webhook for PAYPAL.
fn check_new_credentials(input: &IntegrationDraft, mode: Mode, issues: &mut Issues) {
    let paypal = [
        ("clientId", input.client_id.as_ref()),
        ("clientSecret", input.client_secret.as_ref()),
        ("webhookId", input.webhook_id.as_ref()),
    ];
    if input.provider == Provider::Paypal {
        check_required(&paypal, issues);
        if input.signing_secret.is_some() {
            not_taken("signingSecret", input.provider, issues);
        }
        if input.api_key.is_some() {
            not_taken("apiKey", input.provider, issues);
        }
        return;
    }
    match &input.signing_secret {
        Some(secret) => {
            secret.judge(issues);
        }
        None => issues.add(&["signingSecret"], "required", "signingSecret is required"),
    }
    for (field, value) in paypal {
        if value.is_some() {
            not_taken(field, input.provider, issues);
        }
    }
    if let Some(key) = &input.api_key {
        check_api_key(input.provider, mode, key, issues);
    }
    if let Some(secret) = &input.connect_signing_secret {
        check_connect_secret(input.provider, secret, issues);
    }
}

fn check_description(d: &str, issues: &mut Issues) {
    issues.check(field::ShortText::parse("description", d));
}

impl Stamped for Integration {
    fn stamp(&mut self, now: DateTime<Utc>) {
        self.stamps.stamp(now);
    }
}

impl Integration {
    /// 409 INVALID_STATE unless the integration takes its provider's
    /// events (a DISABLED one: the provider keeps them and retries).
    pub fn check_receiving(&self) -> Result<(), Error> {
        match self.status {
            IntegrationStatus::Enabled => Ok(()),
            other => Err(Error::state(
                "integration",
                other.as_str(),
                "receive events",
            )),
        }
    }

    /// Whether batch-process pays through it (a Stripe key, or PayPal's credentials).
    pub fn can_pay(&self) -> bool {
        let holds = match self.provider {
            Provider::Stripe => self.api_key.is_some(),
            Provider::Paypal => self.client_secret.is_some(),
            Provider::Paddle => false,
        };
        holds && !self.deleted
    }

    /// A new integration of a tenant in `mode`: ENABLED when its signing
    /// secret has its provider's shape (PayPal's has none), else DISABLED
    /// until it has. The campaign, when named, is checked by the caller (it
    /// must be the tenant's).
    pub fn create(
        input: IntegrationDraft,
        mode: Mode,
        now: DateTime<Utc>,
    ) -> Result<Integration, Error> {
        let mut issues = Issues::new();
        check_new_credentials(&input, mode, &mut issues);
        if let Some(d) = &input.description {
            check_description(d, &mut issues);
        }
        issues.finish()?;
        let secret = value(input.signing_secret).unwrap_or_default();
        let unshaped = !shaped(input.provider, &secret);
        Ok(Integration {
            id: new_id(IdKind::Integration),
            provider: input.provider,
            status: match unshaped {
                false => IntegrationStatus::Enabled,
                true => IntegrationStatus::Disabled,
            },
            secret_unshaped: unshaped,
            campaign_id: input.campaign_id,
            description: input.description,
            signing_secret: secret,
            connect_signing_secret: value(input.connect_signing_secret),
            api_key: value(input.api_key),
            client_id: value(input.client_id),
            client_secret: value(input.client_secret),
            webhook_id: value(input.webhook_id),
            deleted: false,
            stamps: Stamps::new(now),
            last_event_at: None,
        })
    }

    /// Applies a PATCH of a tenant in `mode`.
    pub fn apply(
        &self,
        patch: IntegrationChanges,
        mode: Mode,
        now: DateTime<Utc>,
    ) -> Result<Integration, Error> {
        let mut issues = Issues::new();
        let mut next = self.clone();
        if self.provider == Provider::Paypal {
            next.apply_paypal(&patch, &mut issues);
        } else {
            for (field, sent) in [
                ("clientId", patch.client_id.is_present()),
                ("clientSecret", patch.client_secret.is_present()),
                ("webhookId", patch.webhook_id.is_present()),
            ] {
                if sent {
                    not_taken(field, self.provider, &mut issues);
                }
            }
            if let Some(s) = patch
                .signing_secret
                .clone()
                .required("signingSecret", &mut issues)
            {
                s.judge(&mut issues);
                next.secret_unshaped = !shaped(self.provider, &s.value);
                next.signing_secret = s.value;
            }
        }
        if let Patch::Value(key) = &patch.api_key {
            check_api_key(self.provider, mode, key, &mut issues);
        }
        next.api_key = patch.api_key.map(|j| j.value).apply_opt(next.api_key);
        if let Patch::Value(secret) = &patch.connect_signing_secret {
            check_connect_secret(self.provider, secret, &mut issues);
        }
        next.connect_signing_secret = patch
            .connect_signing_secret
            .map(|j| j.value)
            .apply_opt(next.connect_signing_secret);
        next.status = next.status_after(self, patch.status, &mut issues);
        next.campaign_id = patch.campaign_id.apply_opt(next.campaign_id);
        next.description = patch.description.apply_opt(next.description);
        if let Some(d) = &next.description {
            check_description(d, &mut issues);
        }
        issues.finish()?;
        Ok(edit::stamped(self, next, now))
    }

    /// The status after a PATCH that leaves the signing secret as `self`
    /// has it: DISABLED while the secret lacks its provider's shape (ENABLED
    /// is refused then), ENABLED once a PATCH gives it that shape, else as
    /// asked or as it was.
    fn status_after(
        &self,
        before: &Integration,
        status: Patch<IntegrationStatus>,
        issues: &mut Issues,
    ) -> IntegrationStatus {
        let asked = status.required("status", issues);
        if self.secret_unshaped {
            if asked == Some(IntegrationStatus::Enabled) {
                issues.add(
                    &["status"],
                    "invalid_value",
                    format!(
                        "an integration is enabled once its signingSecret has {}'s shape ({})",
                        self.provider.as_str(),
                        secret_shape(self.provider)
                    ),
                );
            }
            return IntegrationStatus::Disabled;
        }
        match (asked, before.secret_unshaped) {
            (Some(s), _) => s,
            (None, true) => IntegrationStatus::Enabled,
            (None, false) => self.status,
        }
    }

    /// A PayPal integration's PATCH of its credentials (none may be removed).
    fn apply_paypal(&mut self, patch: &IntegrationChanges, issues: &mut Issues) {
        if patch.signing_secret.is_present() {
            not_taken("signingSecret", Provider::Paypal, issues);
        }
        let fields = [
            ("clientId", &patch.client_id, &mut self.client_id),
            (
                "clientSecret",
                &patch.client_secret,
                &mut self.client_secret,
            ),
            ("webhookId", &patch.webhook_id, &mut self.webhook_id),
        ];
        for (field, sent, kept) in fields {
            if let Some(v) = sent.clone().required(field, issues) {
                *kept = Some(v.take(issues));
            }
        }
    }

    /// The integration deleted: hidden, and its events are 404.
    pub fn delete(&self, now: DateTime<Utc>) -> Result<Integration, Error> {
        let mut next = self.clone();
        next.deleted = true;
        next.status = IntegrationStatus::Disabled;
        next.stamps.stamp(now);
        Ok(next)
    }

    /// The URL to paste into the provider.
    pub fn webhook_url(&self, base: &str) -> String {
        format!(
            "{}/api/v1/integrations/{}/events",
            base.trim_end_matches('/'),
            self.id
        )
    }
}
