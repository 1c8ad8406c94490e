//! Integrations (contract section 11): a payment provider's webhook
//! endpoint, per tenant and mode, whose verified events become conversions,
//! referrals and reversals. The signing secret is write-only: kept to check
//! signatures, never in a view, an event or a log.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::connector::Provider;
use crate::edit::{self, Stamped};
use crate::enums::wire_enum;
use crate::error::Error;
use crate::field;
use crate::ids::{new_id, IdKind};
use crate::limits;
use crate::patch::Patch;
use crate::tenant::Mode;
use crate::timestamp::{serde_ts, serde_ts_opt};
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
    /// Bumped by every write, so a read-modify-write sees concurrent changes.
    #[serde(default)]
    pub version: u64,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
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

/// Body of `POST /api/v1/integrations`. Unknown fields are rejected.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = IntegrationFields)]
pub struct NewIntegration {
    pub provider: Provider,
    /// STRIPE and PADDLE (required): the secret the provider shows for the endpoint (Stripe
    /// `whsec_…`, Paddle `pdl_ntfset_…`). Write-only: never returned. One without its
    /// provider's shape (a placeholder; Stripe `whsec_` and Paddle `pdl_ntfset_`, each followed
    /// by at least 24 characters) leaves the integration DISABLED until a PATCH gives one.
    #[serde(default)]
    #[schema(min_length = 8, max_length = 500, pattern = r#"^[!-~]+$"#, example = json!("whsec_5f1a2b3c4d5e6f708192a3b4c5d6e7f8"))]
    pub signing_secret: Option<String>,
    /// STRIPE only: the signing secret of a Connect endpoint pointed at the same `webhookUrl`
    /// (it sends connected accounts' `account.updated`), when it differs from `signingSecret`.
    /// Write-only.
    #[serde(default)]
    #[schema(min_length = 8, max_length = 500, pattern = r#"^[!-~]+$"#)]
    pub connect_signing_secret: Option<String>,
    /// STRIPE only: the secret or restricted key batch-process pays with (`sk_live_…`/`rk_live_…`
    /// on a live integration, `sk_test_…`/`rk_test_…` on a test one). Write-only: never
    /// returned; stored encrypted. One integration per account and mode can pay.
    #[serde(default)]
    #[schema(max_length = 255, pattern = r#"^[sr]k_(live|test)_[A-Za-z0-9]+$"#, example = json!("rk_test_51Habc0123456789"))]
    pub api_key: Option<String>,
    /// PAYPAL (required): the REST app's client id (PayPal Developer: Apps & Credentials).
    /// Write-only.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255, pattern = r#"^[!-~]+$"#)]
    pub client_id: Option<String>,
    /// PAYPAL (required): the REST app's secret. Write-only; stored encrypted.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255, pattern = r#"^[!-~]+$"#)]
    pub client_secret: Option<String>,
    /// PAYPAL (required): the id PayPal shows for the webhook that points at this
    /// integration's `webhookUrl` (its events are verified with it).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 50, pattern = r#"^[A-Za-z0-9]+$"#, example = json!("8PT597110X687430LKGECATA"))]
    pub webhook_id: Option<String>,
    /// A campaign of the key's account and mode: the default for code attribution.
    #[serde(default)]
    #[schema(pattern = "^cmp_[0-9A-HJKMNP-TV-Z]{26}$")]
    pub campaign_id: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Option<String>,
}

/// The description of `POST /api/v1/integrations`'s body: one object per
/// provider, each with the fields that provider takes (the limits are
/// [`NewIntegration`]'s, stated once there).
pub struct IntegrationCreate;

/// The fields each provider takes, and those it requires.
const PROVIDER_FIELDS: [(Provider, &[&str], &[&str]); 3] = [
    (
        Provider::Stripe,
        &["signingSecret", "connectSigningSecret", "apiKey"],
        &["signingSecret"],
    ),
    (Provider::Paddle, &["signingSecret"], &["signingSecret"]),
    (
        Provider::Paypal,
        &["clientId", "clientSecret", "webhookId"],
        &["clientId", "clientSecret", "webhookId"],
    ),
];

fn integration_create_schema() -> serde_json::Value {
    use serde_json::{json, Value};
    let fields = serde_json::to_value(<NewIntegration as utoipa::PartialSchema>::schema())
        .unwrap_or(Value::Null);
    let all = fields["properties"].clone();
    let variants: Vec<Value> = PROVIDER_FIELDS
        .iter()
        .map(|(provider, takes, required)| {
            let mut properties =
                json!({"provider": {"type": "string", "enum": [provider.as_str()]}});
            for name in takes.iter().chain(&["campaignId", "description"]) {
                properties[*name] = all[*name].clone();
            }
            // A required field takes no null either.
            for name in required.iter() {
                properties[*name]["type"] = json!("string");
            }
            let mut required: Vec<&str> = required.to_vec();
            required.insert(0, "provider");
            json!({"type": "object", "title": provider.as_str(), "properties": properties,
                "required": required, "additionalProperties": false})
        })
        .collect();
    json!({"oneOf": variants, "discriminator": {"propertyName": "provider"}, "required": ["provider"],
        "description": "Body of `POST /api/v1/integrations`: the fields of its provider. Unknown fields are rejected."})
}

crate::described!(
    IntegrationCreate,
    "IntegrationCreate",
    integration_create_schema(),
);

/// Body of `PATCH /api/v1/integrations/{id}`: only the fields sent change.
#[derive(utoipa::ToSchema, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = IntegrationUpdate)]
pub struct IntegrationPatch {
    /// A new signing secret (after the provider rolled it).
    #[serde(default)]
    #[schema(value_type = String, min_length = 8, max_length = 500, pattern = r#"^[!-~]+$"#)]
    pub signing_secret: Patch<String>,
    /// STRIPE: a new Connect endpoint signing secret; null removes it.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 8, max_length = 500, pattern = r#"^[!-~]+$"#)]
    pub connect_signing_secret: Patch<String>,
    /// A new Stripe key to pay with (STRIPE only); null removes it, and the integration no
    /// longer pays.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 255, pattern = r#"^[sr]k_(live|test)_[A-Za-z0-9]+$"#)]
    pub api_key: Patch<String>,
    /// PAYPAL: new REST app credentials.
    #[serde(default)]
    #[schema(value_type = String, min_length = 1, max_length = 255, pattern = r#"^[!-~]+$"#)]
    pub client_id: Patch<String>,
    #[serde(default)]
    #[schema(value_type = String, min_length = 1, max_length = 255, pattern = r#"^[!-~]+$"#)]
    pub client_secret: Patch<String>,
    #[serde(default)]
    #[schema(value_type = String, min_length = 1, max_length = 50, pattern = r#"^[A-Za-z0-9]+$"#)]
    pub webhook_id: Patch<String>,
    /// Null removes the default campaign.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^cmp_[0-9A-HJKMNP-TV-Z]{26}$")]
    pub campaign_id: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(value_type = IntegrationStatus)]
    pub status: Patch<IntegrationStatus>,
}

/// A PayPal credential: printable ASCII without spaces (`webhookId`: letters
/// and digits), within its limits.
fn check_paypal(field: &'static str, value: &str, issues: &mut Issues) {
    let limits = match field {
        "clientId" => limits!(NewIntegration, "clientId"),
        "clientSecret" => limits!(NewIntegration, "clientSecret"),
        _ => limits!(NewIntegration, "webhookId"),
    };
    issues.check(limits.check_len(field, value));
    let allowed = |b: u8| match field {
        "webhookId" => b.is_ascii_alphanumeric(),
        _ => (b'!'..=b'~').contains(&b),
    };
    if !value.bytes().all(allowed) {
        issues.add(
            &[field],
            "invalid_string",
            format!("{field} has a character PayPal never uses"),
        );
    }
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
fn check_required(fields: &[(&'static str, Option<&String>)], issues: &mut Issues) {
    for (field, value) in fields {
        match value {
            Some(v) => check_paypal(field, v, issues),
            None => issues.add(&[field], "required", format!("{field} is required")),
        }
    }
}

fn check_secret(secret: &str, issues: &mut Issues) {
    check_signing_secret("signingSecret", secret, issues);
}

/// A signing secret (`signingSecret`, `connectSigningSecret`): printable
/// ASCII without spaces, within the limits of `signingSecret`.
fn check_signing_secret(field: &str, secret: &str, issues: &mut Issues) {
    issues.check(limits!(NewIntegration, "signingSecret").check_len(field, secret));
    if secret.bytes().any(|b| !(b'!'..=b'~').contains(&b)) {
        issues.add(
            &[field],
            "invalid_string",
            format!("{field} must be printable ASCII without spaces"),
        );
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
fn check_connect_secret(provider: Provider, secret: &str, issues: &mut Issues) {
    match provider {
        Provider::Stripe => check_signing_secret("connectSigningSecret", secret, issues),
        other => not_taken("connectSigningSecret", other, issues),
    }
}

/// A Stripe key of the integration's mode: `sk_` or `rk_`, then `live_` or
/// `test_`, then letters and digits.
fn check_api_key(provider: Provider, mode: Mode, key: &str, issues: &mut Issues) {
    if provider != Provider::Stripe {
        issues.add(
            &["apiKey"],
            "not_allowed",
            "apiKey is taken by STRIPE integrations only",
        );
        return;
    }
    issues.check(limits!(NewIntegration, "apiKey").check_len("apiKey", key));
    let want = match mode {
        Mode::Live => "live_",
        Mode::Test => "test_",
    };
    let rest = key
        .strip_prefix("sk_")
        .or_else(|| key.strip_prefix("rk_"))
        .and_then(|r| r.strip_prefix(want));
    let shaped =
        rest.is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_alphanumeric()));
    if !shaped {
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
fn check_new_credentials(input: &NewIntegration, mode: Mode, issues: &mut Issues) {
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
        Some(secret) => check_secret(secret, issues),
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
        self.updated_at = now;
        self.version += 1;
    }
}

impl Integration {
    /// 409 INVALID_STATE unless the integration takes its provider's
    /// events (a DISABLED one: the provider keeps them and retries).
    pub fn check_receiving(&self) -> Result<(), Error> {
        match self.status {
            IntegrationStatus::Enabled => Ok(()),
            other => Err(Error::InvalidState {
                resource: "integration",
                current: other.as_str().to_string(),
                action: "receive events",
            }),
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
        input: NewIntegration,
        mode: Mode,
        now: DateTime<Utc>,
    ) -> Result<Integration, Error> {
        let mut issues = Issues::new();
        check_new_credentials(&input, mode, &mut issues);
        if let Some(d) = &input.description {
            check_description(d, &mut issues);
        }
        issues.finish()?;
        let secret = input.signing_secret.as_deref().unwrap_or_default();
        let unshaped = !shaped(input.provider, secret);
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
            signing_secret: input.signing_secret.unwrap_or_default(),
            connect_signing_secret: input.connect_signing_secret,
            api_key: input.api_key,
            client_id: input.client_id,
            client_secret: input.client_secret,
            webhook_id: input.webhook_id,
            deleted: false,
            version: 0,
            created_at: now,
            updated_at: now,
            last_event_at: None,
        })
    }

    /// Applies a PATCH of a tenant in `mode`.
    pub fn apply(
        &self,
        patch: IntegrationPatch,
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
                check_secret(&s, &mut issues);
                next.secret_unshaped = !shaped(self.provider, &s);
                next.signing_secret = s;
            }
        }
        if let Patch::Value(key) = &patch.api_key {
            check_api_key(self.provider, mode, key, &mut issues);
        }
        next.api_key = patch.api_key.apply_opt(next.api_key);
        if let Patch::Value(secret) = &patch.connect_signing_secret {
            check_connect_secret(self.provider, secret, &mut issues);
        }
        next.connect_signing_secret = patch
            .connect_signing_secret
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
    fn apply_paypal(&mut self, patch: &IntegrationPatch, issues: &mut Issues) {
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
                check_paypal(field, &v, issues);
                *kept = Some(v);
            }
        }
    }

    /// The integration deleted: hidden, and its events are 404.
    pub fn delete(&self, now: DateTime<Utc>) -> Result<Integration, Error> {
        let mut next = self.clone();
        next.deleted = true;
        next.status = IntegrationStatus::Disabled;
        next.version += 1;
        next.updated_at = now;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn new(secret: &str) -> NewIntegration {
        NewIntegration {
            provider: Provider::Stripe,
            signing_secret: Some(secret.into()),
            connect_signing_secret: None,
            api_key: None,
            client_id: None,
            client_secret: None,
            webhook_id: None,
            campaign_id: None,
            description: Some("Stripe live".into()),
        }
    }

    #[test]
    fn the_secret_is_checked_kept_and_never_shown() {
        let now = Utc::now();
        let i = Integration::create(new("whsec_5f1a2b3c4d5e6f708192a3b4c5d6"), Mode::Live, now)
            .unwrap();
        assert!(i.id.starts_with("int_"));
        assert_eq!(i.status, IntegrationStatus::Enabled);
        assert!(i.check_receiving().is_ok());
        let off = Integration {
            status: IntegrationStatus::Disabled,
            ..i.clone()
        };
        assert!(matches!(
            off.check_receiving(),
            Err(Error::InvalidState { .. })
        ));
        assert!(!format!("{i:?}").contains("whsec_"));
        for bad in ["short", "has space here", "whsec_\u{e9}\u{e9}\u{e9}\u{e9}"] {
            assert!(
                matches!(
                    Integration::create(new(bad), Mode::Live, now),
                    Err(Error::Validation(_))
                ),
                "{bad}"
            );
        }
        let patch = IntegrationPatch {
            status: Patch::Value(IntegrationStatus::Disabled),
            signing_secret: Patch::Value("whsec_rolled_0123456789abcdefghij".into()),
            ..Default::default()
        };
        let next = i.apply(patch, Mode::Live, now).unwrap();
        assert_eq!(
            (next.status, next.version),
            (IntegrationStatus::Disabled, 1)
        );
        assert_eq!(next.signing_secret, "whsec_rolled_0123456789abcdefghij");
        let null_secret = IntegrationPatch {
            signing_secret: Patch::Null,
            ..Default::default()
        };
        assert!(i.apply(null_secret, Mode::Live, now).is_err());
        assert!(i.delete(now).unwrap().deleted);
    }

    #[test]
    fn a_secret_without_its_provider_s_shape_leaves_the_integration_disabled() {
        let now = Utc::now();
        let of = |provider, secret: &str| NewIntegration {
            provider,
            ..new(secret)
        };
        let stripe24 = "whsec_0123456789abcdefghijklmn";
        let paddle24 = "pdl_ntfset_0123456789abcdefghijklmn";
        // (provider, secret, enabled at creation)
        let cases = [
            (Provider::Stripe, stripe24, true),
            (Provider::Stripe, &stripe24[..stripe24.len() - 1], false),
            (Provider::Stripe, "placeholder-secret", false),
            (Provider::Stripe, paddle24, false),
            (Provider::Paddle, paddle24, true),
            (Provider::Paddle, &paddle24[..paddle24.len() - 1], false),
            (Provider::Paddle, stripe24, false),
        ];
        for (provider, secret, enabled) in cases {
            let i = Integration::create(of(provider, secret), Mode::Test, now).unwrap();
            let want = match enabled {
                true => IntegrationStatus::Enabled,
                false => IntegrationStatus::Disabled,
            };
            assert_eq!(i.status, want, "{provider:?} {secret}");
        }
        let held = Integration::create(of(Provider::Stripe, "placeholder-secret"), Mode::Test, now)
            .unwrap();
        // ENABLED is refused while the secret lacks the shape...
        let enable = IntegrationPatch {
            status: Patch::Value(IntegrationStatus::Enabled),
            ..Default::default()
        };
        let Err(Error::Validation(issues)) = held.apply(enable.clone(), Mode::Test, now) else {
            panic!("enabled with a placeholder secret")
        };
        assert_eq!(issues[0].path, vec![serde_json::json!("status")]);
        // ...a shaped one enables it, unless the same PATCH asks DISABLED...
        let shaped = |status| IntegrationPatch {
            signing_secret: Patch::Value(stripe24.into()),
            status,
            ..Default::default()
        };
        let on = held.apply(shaped(Patch::Absent), Mode::Test, now).unwrap();
        assert_eq!(on.status, IntegrationStatus::Enabled);
        let off = held
            .apply(
                shaped(Patch::Value(IntegrationStatus::Disabled)),
                Mode::Test,
                now,
            )
            .unwrap();
        assert_eq!(off.status, IntegrationStatus::Disabled);
        // ...and a merchant's own DISABLED stays so when its secret rolls.
        let rolled = off.apply(shaped(Patch::Absent), Mode::Test, now).unwrap();
        assert_eq!(rolled.status, IntegrationStatus::Disabled);
        // A placeholder given later disables an enabled one.
        let placeholder = IntegrationPatch {
            signing_secret: Patch::Value("placeholder-secret".into()),
            ..Default::default()
        };
        let back = on.apply(placeholder, Mode::Test, now).unwrap();
        assert_eq!(back.status, IntegrationStatus::Disabled);
    }

    #[test]
    fn a_stripe_key_must_be_of_the_integration_s_mode_and_shape() {
        let now = Utc::now();
        let with = |provider, key: &str, mode| {
            let input = NewIntegration {
                provider,
                api_key: Some(key.into()),
                ..new("whsec_5f1a2b3c4d5e6f708192a3b4c5d6")
            };
            Integration::create(input, mode, now)
        };
        // (provider, key, mode, accepted)
        let cases = [
            (Provider::Stripe, "sk_live_51Habc", Mode::Live, true),
            (Provider::Stripe, "rk_live_51Habc", Mode::Live, true),
            (Provider::Stripe, "sk_test_51Habc", Mode::Test, true),
            (Provider::Stripe, "rk_test_51Habc", Mode::Test, true),
            (Provider::Stripe, "sk_test_51Habc", Mode::Live, false),
            (Provider::Stripe, "sk_live_51Habc", Mode::Test, false),
            (Provider::Stripe, "pk_live_51Habc", Mode::Live, false),
            (Provider::Stripe, "sk_live_", Mode::Live, false),
            (Provider::Stripe, "sk_live_51H abc", Mode::Live, false),
            (Provider::Paddle, "sk_live_51Habc", Mode::Live, false),
        ];
        for (provider, key, mode, ok) in cases {
            let got = with(provider, key, mode);
            assert_eq!(got.is_ok(), ok, "{provider:?} {key} {mode:?}");
            if let Ok(i) = got {
                assert!(i.can_pay());
                assert!(!format!("{i:?}").contains(key), "never in Debug");
                assert!(!i.delete(now).unwrap().can_pay());
            }
        }
        let paying = with(Provider::Stripe, "sk_live_51Habc", Mode::Live).unwrap();
        let removed = IntegrationPatch {
            api_key: Patch::Null,
            ..Default::default()
        };
        assert!(!paying.apply(removed, Mode::Live, now).unwrap().can_pay());
    }
}
