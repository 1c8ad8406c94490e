//! What the API shows of an integration: the URL to paste, never a secret or key.

use chrono::{DateTime, Utc};
use domain::connector::Provider;
use domain::integration::{Integration, IntegrationStatus};
use domain::timestamp::{serde_ts, serde_ts_opt};
use serde::Serialize;

/// An integration as the API shows it (never its signing secret).
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = Integration)]
pub struct IntegrationView<'a> {
    #[schema(pattern = "^int_[0-9A-HJKMNP-TV-Z]{26}$", example = json!("int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F"))]
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
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: DateTime<Utc>,
    /// When the last verified event arrived.
    #[serde(with = "serde_ts_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_event_at: Option<DateTime<Utc>>,
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
            created_at: i.created_at,
            updated_at: i.updated_at,
            last_event_at: i.last_event_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::connector::Provider;
    use domain::integration::NewIntegration;
    use domain::tenant::Mode;

    /// A Stripe integration with `secret` and, when given, an API key.
    fn stripe(secret: &str, api_key: Option<&str>) -> Integration {
        let input = NewIntegration {
            provider: Provider::Stripe,
            signing_secret: Some(secret.into()),
            connect_signing_secret: None,
            api_key: api_key.map(Into::into),
            client_id: None,
            client_secret: None,
            webhook_id: None,
            campaign_id: None,
            description: Some("Stripe live".into()),
        };
        Integration::create(input, Mode::Live, domain::timestamp::now()).unwrap()
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
