//! A commission preview: its body, and what it answers.

use crate::number::Number;
use domain::commission::Decision;
use domain::commission_plan::CommissionSource;
use domain::commission_plan::PreviewRequest;
use domain::commission_terms::check_amount;
use domain::commission_terms::CommissionReason;
use domain::commission_terms::ConversionType;
use domain::conversion::Keys;
use domain::error::Error;
use domain::field;
use domain::money::json_number_opt;
use domain::money::Currency;
use domain::validation::Issues;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde::Serialize;

/// What a payment would earn now, and why.
#[derive(utoipa::ToSchema, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(as = CommissionPreview)]
pub struct PreviewView {
    /// In the payment's currency, rounded half-even to its minor unit.
    pub commission: Number,
    pub commission_source: CommissionSource,
    /// Whether the campaign's recurring rules let such a payment earn (always true for a
    /// first payment).
    pub recurring_earns: bool,
    /// Why it earns 0, when a rule says so.
    pub reason: Option<CommissionReason>,
}

impl From<Decision> for PreviewView {
    fn from(d: Decision) -> Self {
        let recurring_earns = !matches!(
            d.reason,
            Some(CommissionReason::NotRecurring | CommissionReason::RecurringWindowEnded)
        );
        PreviewView {
            commission: d.commission.into(),
            commission_source: d.source,
            recurring_earns,
            reason: d.reason,
        }
    }
}

/// Body of `POST /api/v1/campaigns/{id}/commission-preview`: the facts of a
/// payment that has not happened. Unknown fields are rejected.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = CommissionPreviewRequest, example = json!({"amount": 99, "currency": "USD", "planId": "price_pro_yearly", "monthsSinceFirstPayment": 3}))]
pub struct PreviewBody {
    /// SALE: greater than 0 (required), below 10^12, in the currency's minor unit. LEAD: 0 or
    /// left out.
    #[serde(default, with = "json_number_opt")]
    #[schema(value_type = Option<field::AmountOrZero>)]
    pub amount: Option<Decimal>,
    #[schema(value_type = domain::money::Currency)]
    pub currency: String,
    pub conversion_type: Option<ConversionType>,
    #[schema(value_type = Option<field::Key>)]
    pub product_id: Option<String>,
    #[schema(value_type = Option<field::Key>)]
    pub plan_id: Option<String>,
    /// Whole calendar months since the customer's first payment; 0 or absent: the first
    /// payment.
    #[schema(minimum = 0, maximum = 1200)]
    pub months_since_first_payment: Option<u32>,
    /// The customer's n-th attributed payment (1 = the first); default 1, or 2 when
    /// `monthsSinceFirstPayment` is above 0. Ignored for a LEAD.
    #[schema(minimum = 1, maximum = 1000000000)]
    pub payment_number: Option<u32>,
    /// Preview for this affiliate of the campaign: its status, `commissionOverride` and
    /// `customersReferred` count.
    #[schema(value_type = Option<domain::ids::AffiliateId>)]
    pub affiliate_id: Option<String>,
    /// Distinct paying customers referred, this payment's customer included, for the tiers;
    /// default the affiliate's `customersReferred` (plus this customer on a first payment),
    /// else 0.
    #[schema(minimum = 0, maximum = 1000000000)]
    pub customers: Option<u32>,
}

impl PreviewBody {
    /// Checks the facts as the postback checks a payment's.
    pub fn validate(self) -> Result<PreviewRequest, Error> {
        let mut issues = Issues::new();
        let currency = issues.check(Currency::parse("currency", &self.currency));
        let conversion_type = self.conversion_type.unwrap_or_default();
        let amount = self.amount.unwrap_or_default();
        check_amount(conversion_type, amount, currency, &mut issues);
        let keys = Keys {
            product_id: self.product_id,
            plan_id: self.plan_id,
            ..Keys::default()
        };
        keys.check(&mut issues);
        let months = self.months_since_first_payment.map_or(0, |m| {
            ranged!(PreviewBody, "monthsSinceFirstPayment", i64::from(m)).take(&mut issues)
        });
        let payment_number = self
            .payment_number
            .map(|n| ranged!(PreviewBody, "paymentNumber", i64::from(n)).take(&mut issues));
        let customers = self
            .customers
            .map(|n| ranged!(PreviewBody, "customers", i64::from(n)).take(&mut issues));
        let payment_number = match conversion_type {
            ConversionType::Lead => 0,
            ConversionType::Sale => payment_number.unwrap_or(if months > 0 { 2 } else { 1 }),
        };
        issues.finish()?;
        Ok(PreviewRequest {
            amount,
            currency: currency.expect("checked above"),
            conversion_type,
            product_id: keys.product_id,
            plan_id: keys.plan_id,
            months_since_first_payment: months,
            payment_number,
            affiliate_id: self.affiliate_id,
            customers,
        })
    }
}
