//! Tax forms (W-9, W-8BEN, W-8BEN-E): the campaign's setting, the form an
//! affiliate uploaded, and the rule that holds one payment while a required
//! form is missing (over several payouts: `domain::tax_hold`): a payout is
//! not approved or processed when the campaign requires a form, the
//! affiliate has none, and what it was paid in the payout's calendar year
//! plus this payout reaches `fromAmount` (in the payout's currency; each
//! currency counts on its own).

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::enums::wire_enum;
use crate::error::Error;
use crate::money::json_number;
use crate::tenant::Tenant;
use crate::timestamp::serde_ts;
use crate::validation::Issues;

/// The largest tax-form file (bytes).
pub const MAX_BYTES: usize = 4 * 1024 * 1024;

wire_enum! {
    /// The kind of tax form.
    pub enum TaxFormType [ignore_case] {
        /// US persons.
        W9 = "W-9",
        /// Foreign individuals.
        W8Ben = "W-8BEN",
        /// Foreign entities.
        W8BenE = "W-8BEN-E",
    }
}

wire_enum! {
    /// The affiliates list's tax-form filter.
    pub enum TaxFormFilter [ignore_case] {
        /// No form sent.
        Missing = "missing",
    }
}

/// A campaign's tax-form setting.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = TaxFormSetting, example = json!({"required": true, "fromAmount": 600}))]
pub struct TaxFormSetting {
    /// Whether a form is required before payment.
    pub required: bool,
    /// The yearly paid total (per currency) from which the form is required; 0: always.
    #[serde(with = "json_number")]
    #[schema(value_type = crate::field::AmountOrZero)]
    pub from_amount: Decimal,
}

impl TaxFormSetting {
    /// `fromAmount` is not negative, below 10^12.
    pub fn check(&self, issues: &mut Issues) {
        let path = "taxForm.fromAmount";
        if let Err(mut issue) = crate::field::AmountOrZero::parse(path, self.from_amount) {
            issue.path = vec!["taxForm".into(), "fromAmount".into()];
            issues.push(issue);
        }
    }
}

/// The form an affiliate uploaded (its file is private, at `key`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TaxForm {
    pub form_type: TaxFormType,
    #[serde(with = "serde_ts")]
    pub uploaded_at: DateTime<Utc>,
    /// The storage key of the file: never shown.
    pub key: String,
}

/// The prefix of every tax-form file's storage key.
pub const PREFIX: &str = "tax-forms/";

/// The storage key of one upload of an affiliate's form:
/// `tax-forms/<account id>/<live|test>/<affiliate id>/<upload id>.pdf`.
pub fn key(tenant: &Tenant, affiliate_id: &str, upload_id: &str) -> String {
    format!(
        "{PREFIX}{}/{}/{affiliate_id}/{upload_id}.pdf",
        tenant.account_id,
        tenant.mode.as_str()
    )
}

/// The form's file: a PDF (by its first bytes, whatever the request
/// claimed), 1 byte to [`MAX_BYTES`]; 400 otherwise.
pub fn check_file(bytes: &[u8]) -> Result<(), Error> {
    if bytes.is_empty() || bytes.len() > MAX_BYTES {
        return Err(Error::InvalidRequest(format!(
            "a tax form is 1 byte to {MAX_BYTES} bytes"
        )));
    }
    if !bytes.starts_with(b"%PDF-") {
        return Err(Error::InvalidRequest(
            "a tax form must be a PDF file".into(),
        ));
    }
    Ok(())
}

/// What the rule reads about one payment.
#[derive(Debug, Clone, Copy)]
pub struct Payment<'a> {
    pub setting: Option<&'a TaxFormSetting>,
    pub form: Option<&'a TaxForm>,
    /// What the affiliate was paid (or will be, approved or in flight) in
    /// the payout's currency and calendar year.
    pub paid_this_year: Decimal,
    pub amount: Decimal,
}

/// Whether the payment needs the affiliate's form, which it lacks.
pub fn missing(p: &Payment<'_>) -> bool {
    match p.setting {
        Some(s) if s.required && p.form.is_none() => p.paid_this_year + p.amount >= s.from_amount,
        _ => false,
    }
}

/// The refusal of a payout that waits for the tax form: 409 INVALID_STATE.
pub fn refusal(current: &str) -> Error {
    Error::state(
        "payout",
        current,
        "pay without the affiliate's tax form (tax form missing)",
    )
}

/// Whether the rule may apply at all (a campaign that requires no form
/// needs nothing more read).
pub fn may_apply(setting: Option<&TaxFormSetting>) -> bool {
    setting.is_some_and(|s| s.required)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_form_holds_payment_from_the_yearly_amount() {
        let setting = TaxFormSetting {
            required: true,
            from_amount: Decimal::from(600),
        };
        let form = TaxForm {
            form_type: TaxFormType::W9,
            uploaded_at: Utc::now(),
            key: "k".into(),
        };
        let pay = |setting, form, paid: i64, amount: i64| Payment {
            setting,
            form,
            paid_this_year: Decimal::from(paid),
            amount: Decimal::from(amount),
        };
        let cases = [
            (pay(Some(&setting), None, 0, 599), false),
            (pay(Some(&setting), None, 0, 600), true),
            (pay(Some(&setting), None, 500, 100), true),
            (pay(Some(&setting), Some(&form), 500, 100), false),
            (pay(None, None, 10_000, 100), false),
        ];
        for (i, (p, want)) in cases.iter().enumerate() {
            assert_eq!(missing(p), *want, "case {i}");
        }
        let off = TaxFormSetting {
            required: false,
            ..setting.clone()
        };
        assert!(!missing(&pay(Some(&off), None, 10_000, 100)));
        assert!(!may_apply(Some(&off)) && may_apply(Some(&setting)) && !may_apply(None));
        assert_eq!(TaxFormType::parse("w-8ben-e"), Some(TaxFormType::W8BenE));
    }
}
