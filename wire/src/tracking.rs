//! The browser script's bodies: a click as it reports it, converted into
//! the domain's `ClickDraft`, and an identify call, judged into the
//! customer keys it binds.

use domain::error::Error;
use domain::field;
use domain::referral::CustomerKey;
use domain::tracking::ClickDraft;
use domain::validation::Issues;
use serde::Deserialize;

/// Body of `POST /api/v1/track/click`. Unknown fields are rejected (VALIDATION_FAILED, code
/// `unrecognized_keys`).
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = TrackClickRequest)]
pub struct ClickRequest {
    /// A public campaign (`cmp_…`).
    #[schema(value_type = field::ClickKey)]
    pub campaign_id: String,
    /// The affiliate code from the link, any letter case. Codes are `[A-Za-z0-9_-]{3,32}`;
    /// anything else is answered 404 like an unknown code.
    #[serde(rename = "ref")]
    #[schema(value_type = field::ClickKey)]
    pub code: String,
    /// The landing page URL (stored as `landingUrl`).
    #[schema(value_type = Option<field::PageUrl>)]
    pub url: Option<String>,
    /// `document.referrer` of the landing page.
    #[schema(value_type = Option<field::PageUrl>)]
    pub referrer: Option<String>,
    /// A session the browser already holds; kept on the new click for reference (a new click
    /// always starts a new session).
    #[schema(value_type = Option<domain::ids::SessionId>)]
    pub session_id: Option<String>,
}

impl From<ClickRequest> for ClickDraft {
    fn from(b: ClickRequest) -> Self {
        moved! { b => ClickDraft {
            campaign_id, code, url, referrer, session_id,
        } }
    }
}

/// Body of `POST /api/v1/track/identify`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdentifyRequest {
    pub session_id: String,
    pub customer_email: Option<String>,
    pub customer_email_hash: Option<String>,
    pub customer_id: Option<String>,
}

/// The description of the identify body: one of three forms (a customer
/// id alone, or an e-mail address or its hash, each with a customer id or
/// not), as `customer_keys` accepts them.
impl utoipa::PartialSchema for IdentifyRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let forms: Vec<serde_json::Value> = IDENTIFY_FORMS
            .iter()
            .map(|(name, _)| serde_json::json!({"$ref": format!("#/components/schemas/{name}")}))
            .collect();
        domain::schema::from_json(serde_json::json!({
            "description": "Body of `POST /api/v1/track/identify`: a session and at least one customer identity. When both `customerEmail` and `customerEmailHash` are sent they must denote the same address. Exactly one of the three forms: a customer id alone, or an e-mail address or its hash (with a customer id or not). Fields sent as null count as absent. The API also takes `customerEmail` and `customerEmailHash` together when they denote the same address (400 VALIDATION_FAILED, `invalid_combination`, otherwise); the schema lists one e-mail form at a time.",
            "oneOf": forms,
        }))
    }
}

impl utoipa::ToSchema for IdentifyRequest {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("TrackIdentifyRequest")
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        for (name, form) in IDENTIFY_FORMS {
            schemas.push((name.to_string(), domain::schema::from_json(form())));
        }
    }
}

/// The three forms of the identify body, by name.
type IdentifyForm = (&'static str, fn() -> serde_json::Value);
const IDENTIFY_FORMS: [IdentifyForm; 3] = [
    ("IdentifyByCustomerId", || {
        identify_form(
            "Binds the session to the merchant's customer id.",
            "customerId",
            serde_json::json!({"customerId": customer_id(false), "customerEmail": {"type": "null"}, "customerEmailHash": {"type": "null"}}),
        )
    }),
    ("IdentifyByEmail", || {
        identify_form("Binds the session to an e-mail address (hashed at once, never stored), and to a customer id when one is given.", "customerEmail", serde_json::json!({"customerEmail": described::<domain::email::Email>("Validated and hashed; never stored.", false), "customerId": customer_id(true), "customerEmailHash": {"type": "null"}}))
    }),
    ("IdentifyByEmailHash", || {
        identify_form("Binds the session to the hash of an e-mail address, and to a customer id when one is given.", "customerEmailHash", serde_json::json!({"customerEmailHash": described::<field::EmailHash>("Hex SHA-256 (either letter case; stored lowercase) of the trimmed, lowercased e-mail (what the browser script sends when the page can hash).", false), "customerId": customer_id(true), "customerEmail": {"type": "null"}}))
    }),
];

/// An identify form: the session, the identity it is named by
/// (`required`), and the other identities (`identities`, in order).
fn identify_form(
    description: &str,
    required: &str,
    identities: serde_json::Value,
) -> serde_json::Value {
    let session = described::<domain::ids::SessionId>(
        "A live session from `POST /api/v1/track/click`.",
        false,
    );
    let mut properties = serde_json::json!({ "sessionId": session });
    if let (Some(all), Some(more)) = (properties.as_object_mut(), identities.as_object()) {
        all.extend(more.clone());
    }
    serde_json::json!({"type": "object", "additionalProperties": false, "description": description, "required": ["sessionId", required], "properties": properties})
}

/// `T`'s rule as a property with its own description (null allowed too
/// when `nullable`).
fn described<T: utoipa::PartialSchema>(description: &str, nullable: bool) -> serde_json::Value {
    let mut property = field::keywords::<T>();
    property["description"] = serde_json::json!(description);
    if nullable {
        property["type"] = serde_json::json!(["string", "null"]);
    }
    property
}

/// The `customerId` of an identify form.
fn customer_id(nullable: bool) -> serde_json::Value {
    described::<field::CustomerRef>(
        "The merchant's own customer id (case-sensitive, not blank, no control characters).",
        nullable,
    )
}

impl IdentifyRequest {
    /// The customer identities named, validated: the customer id first, then
    /// the e-mail hash (from `customerEmail` or `customerEmailHash`; when both
    /// are sent they must denote the same address). At least one is required.
    pub fn customer_keys(&self) -> Result<Vec<CustomerKey>, Error> {
        let mut issues = Issues::new();
        let mut keys = Vec::new();
        if let Some(id) = &self.customer_id {
            keys.extend(issues.check(CustomerKey::from_id(id)));
        }
        keys.extend(crate::conversion::email_identity(
            self.customer_email.as_deref(),
            self.customer_email_hash.as_deref(),
            &mut issues,
        ));
        if issues.is_empty() && keys.is_empty() {
            issues.add(
                &[],
                "required",
                "one of customerEmail, customerEmailHash or customerId is required",
            );
        }
        issues.finish()?;
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body read and judged as the route does.
    fn click(v: serde_json::Value) -> Result<ClickDraft, Error> {
        let r: ClickRequest =
            serde_json::from_value(v).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let draft = ClickDraft::from(r);
        draft.validate()?;
        Ok(draft)
    }

    #[test]
    fn click_bodies() {
        let ok = click(serde_json::json!({"campaignId": "cmp_1", "ref": "alice-01"})).unwrap();
        assert!(ok.code_is_well_formed());
        let odd = click(serde_json::json!({"campaignId": "cmp_1", "ref": "a b"})).unwrap();
        assert!(!odd.code_is_well_formed());
        assert!(click(serde_json::json!({"campaignId": "cmp_1", "ref": "abc", "x": 1})).is_err());
        assert!(click(
            serde_json::json!({"campaignId": "cmp_1", "ref": "abc", "url": "u".repeat(2049)})
        )
        .is_err());
        assert!(click(
            serde_json::json!({"campaignId": "cmp_1", "ref": "abc", "referrer": "u".repeat(2048)})
        )
        .is_ok());
        assert!(click(
            serde_json::json!({"campaignId": "cmp_1", "ref": "abc", "sessionId": "ses_bad"})
        )
        .is_err());
    }

    fn keys(v: serde_json::Value) -> Result<Vec<String>, Error> {
        let r: IdentifyRequest =
            serde_json::from_value(v).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        Ok(r.customer_keys()?.iter().map(|k| k.to_string()).collect())
    }

    #[test]
    fn identify_needs_one_valid_identity() {
        let s = "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
        assert!(matches!(
            keys(serde_json::json!({"sessionId": s})),
            Err(Error::Validation(_))
        ));
        let hash = domain::referral::email_hash("Ann@Example.com");
        assert_eq!(
            keys(serde_json::json!({"sessionId": s, "customerId": "u1", "customerEmail": " ann@example.COM "})).unwrap(),
            vec!["cid:u1".to_string(), format!("email:{hash}")]
        );
        assert_eq!(
            keys(serde_json::json!({"sessionId": s, "customerEmail": "ann@example.com", "customerEmailHash": hash})).unwrap(),
            vec![format!("email:{hash}")]
        );
        assert!(keys(serde_json::json!({"sessionId": s, "customerEmail": "bob@example.com", "customerEmailHash": hash})).is_err());
        assert!(
            keys(serde_json::json!({"sessionId": s, "customerEmail": "not-an-email"})).is_err()
        );
        // A hash in capitals is the same hash, as the postback reads it.
        assert_eq!(
            keys(serde_json::json!({"sessionId": s, "customerEmailHash": hash.to_uppercase()}))
                .unwrap(),
            keys(serde_json::json!({"sessionId": s, "customerEmailHash": hash})).unwrap()
        );
        assert!(keys(serde_json::json!({"sessionId": s, "customerEmailHash": "xyz"})).is_err());
        assert!(keys(serde_json::json!({"sessionId": s, "customerId": ""})).is_err());
    }
}
