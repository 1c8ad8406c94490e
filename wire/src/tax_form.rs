//! What the API and the portal show of an affiliate's tax form.

use domain::tax_form::{TaxForm, TaxFormType};
use domain::timestamp::Timestamp;
use serde::Serialize;

/// The form as the affiliate's view shows it.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = TaxForm)]
pub struct TaxFormView {
    pub form_type: TaxFormType,
    pub uploaded_at: Timestamp,
}

impl From<&TaxForm> for TaxFormView {
    fn from(t: &TaxForm) -> Self {
        TaxFormView {
            form_type: t.form_type,
            uploaded_at: t.uploaded_at.into(),
        }
    }
}
