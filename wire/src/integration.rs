//! What the API shows of an integration (the URL to paste, never a secret or
//! key), and the bodies that create and change one.

use domain::connector::Provider;
use domain::field;
use domain::integration::{Integration, IntegrationChanges, IntegrationDraft, IntegrationStatus};
use domain::patch::Patch;
use domain::provider_format::{ProviderCode, ProviderToken, SigningSecret, StripeKey};
use domain::timestamp::Timestamp;
use serde::{Deserialize, Serialize};

/// An integration as the API shows it (never its signing secret).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Integration)]
pub struct IntegrationView<'a> {
    #[schema(value_type = domain::ids::IntegrationId)]
    pub id: &'a str,
    pub object: &'static str,
    pub provider: Provider,
    pub status: IntegrationStatus,
    /// The default campaign for code attribution.
    pub campaign_id: Option<&'a str>,
    pub description: Option<&'a str>,
    /// Paste this into the provider's webhook settings (Stripe: Developers → Webhooks;
    /// Paddle: Developer tools → Notifications).
    #[schema(example = json!("https://api.example.com/api/v1/integrations/int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F/events"))]
    pub webhook_url: String,
    /// Whether batch-process pays through it (a STRIPE integration with an `apiKey`).
    pub can_pay: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When the last verified event arrived.
    pub last_event_at: Option<Timestamp>,
}

impl<'a> IntegrationView<'a> {
    /// The view of `i`, its webhook URL under the API's `base` URL.
    pub fn of(i: &'a Integration, base: &str) -> Self {
        IntegrationView {
            id: &i.id,
            object: "integration",
            provider: i.provider,
            status: i.status,
            campaign_id: i.campaign_id.as_deref(),
            description: i.description.as_deref(),
            webhook_url: i.webhook_url(base),
            can_pay: i.can_pay(),
            created_at: i.stamps.created_at.into(),
            updated_at: i.stamps.updated_at.into(),
            last_event_at: i.last_event_at.map(Timestamp),
        }
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
    #[schema(value_type = Option<SigningSecret>)]
    pub signing_secret: Option<String>,
    /// STRIPE only: the signing secret of a Connect endpoint pointed at the same `webhookUrl`
    /// (it sends connected accounts' `account.updated`), when it differs from `signingSecret`.
    /// Write-only.
    #[schema(value_type = Option<SigningSecret>)]
    pub connect_signing_secret: Option<String>,
    /// STRIPE only: the secret or restricted key batch-process pays with (`sk_live_…`/`rk_live_…`
    /// on a live integration, `sk_test_…`/`rk_test_…` on a test one). Write-only: never
    /// returned; stored encrypted. One integration per account and mode can pay.
    #[schema(value_type = Option<StripeKey>)]
    pub api_key: Option<String>,
    /// PAYPAL (required): the REST app's client id (PayPal Developer: Apps & Credentials).
    /// Write-only.
    #[schema(value_type = Option<ProviderToken>)]
    pub client_id: Option<String>,
    /// PAYPAL (required): the REST app's secret. Write-only; stored encrypted.
    #[schema(value_type = Option<ProviderToken>)]
    pub client_secret: Option<String>,
    /// PAYPAL (required): the id PayPal shows for the webhook that points at this
    /// integration's `webhookUrl` (its events are verified with it).
    #[schema(value_type = Option<ProviderCode>)]
    pub webhook_id: Option<String>,
    /// A campaign of the key's account and mode: the default for code attribution.
    #[schema(value_type = Option<domain::ids::CampaignId>)]
    pub campaign_id: Option<String>,
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Option<String>,
}

/// The description of `POST /api/v1/integrations`'s body: one object per
/// provider, each with the fields that provider takes (as
/// [`NewIntegration`] states them; each credential is of a provider's
/// format, which [`IntegrationPatch`] names too).
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

/// `property` without its null alternative: `{oneOf: [null, X], ..}`
/// becomes `{..X, ..}`.
fn not_null(property: &serde_json::Value) -> serde_json::Value {
    let mut out = property.clone();
    let alternatives = out.as_object_mut().and_then(|o| o.remove("oneOf"));
    let kept = alternatives
        .as_ref()
        .and_then(|a| a.as_array())
        .and_then(|a| a.iter().find(|s| s["type"] != "null"));
    if let (Some(out), Some(kept)) = (out.as_object_mut(), kept.and_then(|k| k.as_object())) {
        out.extend(kept.clone());
    }
    out
}

fn integration_create_schema() -> serde_json::Value {
    use serde_json::{json, Value};
    let fields = field::keywords::<NewIntegration>();
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
                properties[*name] = not_null(&properties[*name]);
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

domain::described!(
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
    #[schema(value_type = SigningSecret)]
    pub signing_secret: Patch<String>,
    /// STRIPE: a new Connect endpoint signing secret; null removes it.
    #[serde(default)]
    #[schema(value_type = Option<SigningSecret>)]
    pub connect_signing_secret: Patch<String>,
    /// A new Stripe key to pay with (STRIPE only); null removes it, and the integration no
    /// longer pays.
    #[serde(default)]
    #[schema(value_type = Option<StripeKey>)]
    pub api_key: Patch<String>,
    /// PAYPAL: new REST app credentials.
    #[serde(default)]
    #[schema(value_type = ProviderToken)]
    pub client_id: Patch<String>,
    #[serde(default)]
    #[schema(value_type = ProviderToken)]
    pub client_secret: Patch<String>,
    #[serde(default)]
    #[schema(value_type = ProviderCode)]
    pub webhook_id: Patch<String>,
    /// Null removes the default campaign.
    #[serde(default)]
    #[schema(value_type = Option<domain::ids::CampaignId>)]
    pub campaign_id: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<field::ShortText>)]
    pub description: Patch<String>,
    #[serde(default)]
    #[schema(value_type = IntegrationStatus)]
    pub status: Patch<IntegrationStatus>,
}

/// An integration body's fields moved into the domain's input, each
/// credential judged by its format: the create body holds the credentials
/// as values and the PATCH as changes, so one list serves both.
macro_rules! integration_input {
    ($b:ident => $to:ident { $($field:ident),+ }) => {
        moved! { $b => $to {
            $($field),+;
            signing_secret: $b
                .signing_secret
                .map(|v| SigningSecret::judge("signingSecret", v)),
            connect_signing_secret: $b
                .connect_signing_secret
                .map(|v| SigningSecret::judge("connectSigningSecret", v)),
            api_key: $b.api_key.map(|v| StripeKey::judge("apiKey", v)),
            client_id: $b.client_id.map(|v| ProviderToken::judge("clientId", v)),
            client_secret: $b
                .client_secret
                .map(|v| ProviderToken::judge("clientSecret", v)),
            webhook_id: $b
                .webhook_id
                .map(|v| ProviderCode::judge("webhookId", v)),
        } }
    };
}

impl From<NewIntegration> for IntegrationDraft {
    fn from(b: NewIntegration) -> Self {
        integration_input!(b => IntegrationDraft { provider, campaign_id, description })
    }
}

impl From<IntegrationPatch> for IntegrationChanges {
    fn from(b: IntegrationPatch) -> Self {
        integration_input!(b => IntegrationChanges { campaign_id, description, status })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use domain::error::Error;
    use domain::tenant::Mode;

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
        let i = Integration::create(
            new("whsec_5f1a2b3c4d5e6f708192a3b4c5d6").into(),
            Mode::Live,
            now,
        )
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
                    Integration::create(new(bad).into(), Mode::Live, now),
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
        let next = i.apply(patch.into(), Mode::Live, now).unwrap();
        assert_eq!(
            (next.status, next.stamps.version),
            (IntegrationStatus::Disabled, 1)
        );
        assert_eq!(next.signing_secret, "whsec_rolled_0123456789abcdefghij");
        let null_secret = IntegrationPatch {
            signing_secret: Patch::Null,
            ..Default::default()
        };
        assert!(i.apply(null_secret.into(), Mode::Live, now).is_err());
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
            let i = Integration::create(of(provider, secret).into(), Mode::Test, now).unwrap();
            let want = match enabled {
                true => IntegrationStatus::Enabled,
                false => IntegrationStatus::Disabled,
            };
            assert_eq!(i.status, want, "{provider:?} {secret}");
        }
        let held = Integration::create(
            of(Provider::Stripe, "placeholder-secret").into(),
            Mode::Test,
            now,
        )
        .unwrap();
        // ENABLED is refused while the secret lacks the shape...
        let enable = IntegrationPatch {
            status: Patch::Value(IntegrationStatus::Enabled),
            ..Default::default()
        };
        let Err(Error::Validation(issues)) = held.apply(enable.clone().into(), Mode::Test, now)
        else {
            panic!("enabled with a placeholder secret")
        };
        assert_eq!(issues[0].path, vec![serde_json::json!("status")]);
        // ...a shaped one enables it, unless the same PATCH asks DISABLED...
        let shaped = |status| IntegrationPatch {
            signing_secret: Patch::Value(stripe24.into()),
            status,
            ..Default::default()
        };
        let on = held
            .apply(shaped(Patch::Absent).into(), Mode::Test, now)
            .unwrap();
        assert_eq!(on.status, IntegrationStatus::Enabled);
        let off = held
            .apply(
                shaped(Patch::Value(IntegrationStatus::Disabled)).into(),
                Mode::Test,
                now,
            )
            .unwrap();
        assert_eq!(off.status, IntegrationStatus::Disabled);
        // ...and a merchant's own DISABLED stays so when its secret rolls.
        let rolled = off
            .apply(shaped(Patch::Absent).into(), Mode::Test, now)
            .unwrap();
        assert_eq!(rolled.status, IntegrationStatus::Disabled);
        // A placeholder given later disables an enabled one.
        let placeholder = IntegrationPatch {
            signing_secret: Patch::Value("placeholder-secret".into()),
            ..Default::default()
        };
        let back = on.apply(placeholder.into(), Mode::Test, now).unwrap();
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
            Integration::create(input.into(), mode, now)
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
        assert!(!paying
            .apply(removed.into(), Mode::Live, now)
            .unwrap()
            .can_pay());
    }

    /// A Stripe integration with `secret` and, when given, an API key.
    fn stripe(secret: &str, api_key: Option<&str>) -> Integration {
        let input = NewIntegration {
            api_key: api_key.map(Into::into),
            ..new(secret)
        };
        Integration::create(input.into(), Mode::Live, Utc::now()).unwrap()
    }

    #[test]
    fn the_patch_names_the_create_body_s_credential_formats() {
        // The create body's oneOf has no top-level properties for the API's
        // contract test to compare, so the credentials are compared here.
        let format = |body: &serde_json::Value, field: &str| {
            let text = body["properties"][field].to_string();
            let at = text.find("#/components/schemas/").map(|i| i + 21);
            at.map(|i| text[i..].split('"').next().unwrap_or_default().to_string())
        };
        let (patch, create) = (
            field::keywords::<IntegrationPatch>(),
            field::keywords::<NewIntegration>(),
        );
        for field in PROVIDER_FIELDS
            .iter()
            .flat_map(|(_, takes, _)| takes.iter())
        {
            let named = format(&create, field);
            assert!(named.is_some(), "{field}");
            assert_eq!(format(&patch, field), named, "{field}");
        }
    }

    #[test]
    fn the_view_shows_the_url_to_paste_and_no_secret_or_key() {
        let i = stripe("whsec_abcdefghijklmnopqrstuvwxyz012345", None);
        let view =
            serde_json::to_string(&IntegrationView::of(&i, "https://api.example.com/")).unwrap();
        assert!(!view.contains("whsec_"), "{view}");
        assert!(view.contains(&format!(
            "https://api.example.com/api/v1/integrations/{}/events",
            i.id
        )));
        assert!(view.contains("\"canPay\":false"), "{view}");
        let key = "sk_live_51Habc";
        let paying = stripe("whsec_abcdefghijklmnopqrstuvwxyz012345", Some(key));
        let view = serde_json::to_string(&IntegrationView::of(&paying, "https://x")).unwrap();
        assert!(
            !view.contains(key) && view.contains("\"canPay\":true"),
            "{view}"
        );
    }
}
