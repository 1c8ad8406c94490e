//! Request bodies of the payout routes, validated into the commands of
//! `domain::payout::Payout::apply`.

use serde::Deserialize;

use domain::error::Error;
use domain::field;

use domain::payout_command::Command;
use domain::validation::{distinct_ids, Issues};

/// Body of approve: an empty object (or no body). Any field is rejected.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = PayoutApprove)]
pub struct ApprovePayout {}

/// Body of `POST /api/v1/payouts/{id}/reject`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = PayoutReject)]
pub struct RejectPayout {
    /// Required; trimmed, then 1-1000 characters, no control characters.
    #[schema(value_type = field::Reason)]
    pub reason: String,
}

impl RejectPayout {
    /// `Command::Reject` with the trimmed reason (required, 1-1000 characters).
    pub fn into_command(self) -> Result<Command, Error> {
        let mut issues = Issues::new();
        let reason = reason(&self.reason, &mut issues);
        issues.finish()?;
        Ok(Command::Reject { reason })
    }
}

/// Body of `POST /api/v1/payouts/{id}/mark-paid`: paid outside the platform.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PayoutMarkPaid)]
pub struct MarkPaid {
    /// The day it was paid.
    #[schema(value_type = field::CalendarDate)]
    pub payment_date: String,
    /// How it was paid; trimmed, 1-100 characters.
    #[schema(value_type = field::Label)]
    pub payment_method: String,
}

impl MarkPaid {
    /// `Command::MarkPaid`: a `YYYY-MM-DD` date and a 1-100 character method.
    pub fn into_command(self) -> Result<Command, Error> {
        let mut issues = Issues::new();
        let payment_date = issues.check(field::CalendarDate::parse(
            "paymentDate",
            &self.payment_date,
        ));
        let method = self.payment_method.trim();
        issues.check(field::Label::parse("paymentMethod", method));
        issues.finish()?;
        Ok(Command::MarkPaid {
            payment_date: payment_date.unwrap_or_default(),
            payment_method: method.to_string(),
        })
    }
}

/// Body of `PUT /api/v1/payouts/{id}/mark-paid`: settled outside the platform.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = PayoutSettle)]
pub struct SettlePayout {
    /// Optional; blank counts as none.
    #[schema(value_type = Option<field::PaymentReference>)]
    pub payment_reference: Option<String>,
    /// Optional; blank counts as none; may hold line breaks.
    #[schema(value_type = Option<field::Note>)]
    pub note: Option<String>,
}

impl SettlePayout {
    /// `Command::Settle`; a blank reference or note counts as none.
    pub fn into_command(self) -> Result<Command, Error> {
        let mut issues = Issues::new();
        let reference = non_blank(self.payment_reference);
        if let Some(r) = &reference {
            issues.check(field::PaymentReference::parse("paymentReference", r));
        }
        let note = non_blank(self.note);
        if let Some(n) = &note {
            issues.check(field::Note::parse("note", n));
        }
        issues.finish()?;
        Ok(Command::Settle {
            payment_reference: reference,
            note,
        })
    }
}

/// Body of `POST /api/v1/payouts/batch-process`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = BatchProcessRequest)]
pub struct BatchProcess {
    /// 1-100 payout ids (counted as sent); duplicates are handled once.
    #[schema(min_items = 1, max_items = 100)]
    pub payout_ids: Vec<String>,
}

impl BatchProcess {
    /// 1-100 ids as sent, each kept once in first-seen order.
    pub fn ids(self) -> Result<Vec<String>, Error> {
        distinct_ids(
            "payoutIds",
            self.payout_ids,
            domain::limits!(BatchProcess, "payoutIds").max_items,
        )
        .map_err(|issue| Error::Validation(vec![issue]))
    }
}

/// Body of `POST /api/v1/payouts/bulk-cancel`.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = BulkCancelRequest)]
pub struct BulkCancel {
    /// 1-100 payout ids (counted as sent); duplicates are handled once.
    #[schema(min_items = 1, max_items = 100)]
    pub payout_ids: Vec<String>,
    /// Required; trimmed, 1-1000 characters.
    #[schema(value_type = field::Reason)]
    pub reason: String,
}

impl BulkCancel {
    /// The distinct ids and the `Command::Cancel` each of them gets.
    pub fn into_parts(self) -> Result<(Vec<String>, Command), Error> {
        let mut issues = Issues::new();
        let ids = issues.check(distinct_ids(
            "payoutIds",
            self.payout_ids,
            domain::limits!(BulkCancel, "payoutIds").max_items,
        ));
        let reason = reason(&self.reason, &mut issues);
        issues.finish()?;
        Ok((ids.unwrap_or_default(), Command::Cancel { reason }))
    }
}

/// A required reason: trimmed, then [`field::Reason`] (so an empty one is
/// too short, not blank).
fn reason(raw: &str, issues: &mut Issues) -> String {
    let reason = raw.trim();
    issues.check(field::Reason::parse("reason", reason));
    reason.to_string()
}

fn non_blank(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn issue_paths(e: Error) -> Vec<String> {
        match e {
            Error::Validation(issues) => issues.iter().map(|i| i.path[0].to_string()).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reasons_are_required_trimmed_and_bounded() {
        let r = |s: &str| RejectPayout { reason: s.into() }.into_command();
        assert_eq!(
            r("  too early \n").unwrap(),
            Command::Reject {
                reason: "too early".into()
            }
        );
        for bad in ["", "   ", "a\u{0}b", &"x".repeat(1001)] {
            assert!(r(bad).is_err(), "{bad:?}");
        }
        assert!(r(&format!(" {} ", "x".repeat(1000))).is_ok());
    }

    #[test]
    fn mark_paid_needs_a_real_date_and_a_method() {
        let m = |d: &str, pm: &str| {
            MarkPaid {
                payment_date: d.into(),
                payment_method: pm.into(),
            }
            .into_command()
        };
        assert_eq!(
            m("2026-02-28", " wire ").unwrap(),
            Command::MarkPaid {
                payment_date: NaiveDate::from_ymd_opt(2026, 2, 28).unwrap(),
                payment_method: "wire".into()
            }
        );
        for bad in [
            "2026-02-30",
            "2026-2-28",
            "26-02-28",
            "2026-02-28T00:00:00Z",
            "+2026-02-2",
            "0000-01-01",
            "1969-12-31",
        ] {
            assert_eq!(
                issue_paths(m(bad, "wire").unwrap_err()),
                ["\"paymentDate\""],
                "{bad}"
            );
        }
        let both = m("nope", &"x".repeat(101)).unwrap_err();
        assert_eq!(issue_paths(both), ["\"paymentDate\"", "\"paymentMethod\""]);
    }

    #[test]
    fn settle_fields_are_optional_and_bounded() {
        assert_eq!(
            SettlePayout::default().into_command().unwrap(),
            Command::Settle {
                payment_reference: None,
                note: None
            }
        );
        let s = SettlePayout {
            payment_reference: Some(" ".into()),
            note: Some("line one\nline two".into()),
        };
        assert_eq!(
            s.into_command().unwrap(),
            Command::Settle {
                payment_reference: None,
                note: Some("line one\nline two".into())
            }
        );
        let long = SettlePayout {
            payment_reference: Some("r".repeat(201)),
            note: Some("n".repeat(1001)),
        };
        assert_eq!(issue_paths(long.into_command().unwrap_err()).len(), 2);
    }

    #[test]
    fn bulk_ids_are_bounded_and_deduplicated() {
        let ids = |n: usize| (0..n).map(|i| format!("po_{}", i % 3)).collect::<Vec<_>>();
        assert!(BatchProcess { payout_ids: ids(0) }.ids().is_err());
        assert!(BatchProcess {
            payout_ids: ids(101)
        }
        .ids()
        .is_err());
        assert_eq!(
            BatchProcess {
                payout_ids: ids(100)
            }
            .ids()
            .unwrap(),
            ["po_0", "po_1", "po_2"]
        );
        let bad = BulkCancel {
            payout_ids: ids(0),
            reason: " ".into(),
        };
        assert_eq!(
            issue_paths(bad.into_parts().unwrap_err()),
            ["\"payoutIds\"", "\"reason\""]
        );
    }
}
