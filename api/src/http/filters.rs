//! How each list's query reads into the store's filter: the names it
//! accepts (those it reads) and the rules of each (enums in any letter case, `from` not after
//! `to`, amounts as exact decimals).

use crate::domain::affiliate::{AffiliateStatus, PayoutMethod};
use crate::domain::application::ApplicationStatus;
use crate::domain::asset::{AssetStatus, AssetType};
use crate::domain::conversion::ConversionStatus;
use crate::domain::email::Email;
use crate::domain::event::EventType;
use crate::domain::payout::PayoutStatus;
use crate::domain::risk::RiskLevel;
use crate::domain::tax_form::TaxFormFilter;
use crate::domain::webhook::DeliveryStatus;
use crate::http::query::{FromQuery, Query};
use crate::store::affiliates::AffiliateFilter;
use crate::store::applications::ApplicationFilter;
use crate::store::assets::AssetFilter;
use crate::store::conversions::ConversionFilter;
use crate::store::events::EventFilter;
use crate::store::payouts::PayoutFilter;
use crate::store::referrals::ReferralFilter;
use crate::store::webhooks::AttemptFilter;
use ::domain::money::Currency;
use ::domain::validation::Issue;

impl FromQuery for AffiliateFilter {
    fn read(q: &mut Query<'_>) -> Self {
        let status = q.variant::<AffiliateStatus>("status");
        let email = match q.str("email").map(|e| Email::parse("email", e)) {
            Some(Ok(e)) => Some(e.lower()),
            Some(Err(issue)) => {
                q.issue(issue);
                None
            }
            None => None,
        };
        AffiliateFilter {
            campaign_id: q.str("campaign_id").map(str::to_string),
            status,
            email,
            tax_form_missing: q.one_of("tax_form", &TaxFormFilter::NAMES).is_some(),
        }
    }
}

impl FromQuery for ReferralFilter {
    fn read(q: &mut Query<'_>) -> Self {
        ReferralFilter {
            affiliate_id: q.str("affiliate_id").map(str::to_string),
            campaign_id: q.str("campaign_id").map(str::to_string),
        }
    }
}

impl FromQuery for ApplicationFilter {
    fn read(q: &mut Query<'_>) -> Self {
        ApplicationFilter {
            status: q.variant::<ApplicationStatus>("status"),
            campaign_id: q.str("campaign_id").map(str::to_string),
            risk_level: q.variant::<RiskLevel>("risk_level"),
        }
    }
}

impl FromQuery for AssetFilter {
    fn read(q: &mut Query<'_>) -> Self {
        AssetFilter {
            status: q.variant::<AssetStatus>("status"),
            campaign_id: q.str("campaign_id").map(str::to_string),
            kind: q.variant::<AssetType>("type"),
        }
    }
}

impl FromQuery for ConversionFilter {
    fn read(q: &mut Query<'_>) -> Self {
        let status = q.variant::<ConversionStatus>("status");
        let risk_level = q.variant::<RiskLevel>("risk_level");
        let currency = match q.str("currency").map(|c| Currency::parse("currency", c)) {
            Some(Ok(c)) => Some(c),
            Some(Err(issue)) => {
                q.issue(issue);
                None
            }
            None => None,
        };
        let (from, to) = q.range();
        let min_amount = q.amount("min_amount");
        let max_amount = q.amount("max_amount");
        if let (Some(lo), Some(hi)) = (min_amount, max_amount) {
            if lo > hi {
                q.issue(Issue::new(
                    &["min_amount"],
                    "invalid_range",
                    "min_amount must not be greater than max_amount",
                ));
            }
        }
        ConversionFilter {
            payout_id: q.str("payout_id").map(str::to_string),
            affiliate_id: q.str("affiliate_id").map(str::to_string),
            campaign_id: q.str("campaign_id").map(str::to_string),
            status,
            currency,
            from: from.map(|b| b.start()),
            to: to.map(|b| b.end()),
            min_amount,
            max_amount,
            risk_level,
        }
    }
}

impl FromQuery for PayoutFilter {
    fn read(q: &mut Query<'_>) -> Self {
        let status = q.variant::<PayoutStatus>("status");
        let method = q.variant::<PayoutMethod>("method");
        // `from`/`to` bound `requestedAt`, with the conversion list's rules.
        let (from, to) = q.range();
        PayoutFilter {
            affiliate_id: q.str("affiliate_id").map(str::to_string),
            status,
            method,
            from: from.map(|b| b.start()),
            to: to.map(|b| b.end()),
        }
    }
}

impl FromQuery for EventFilter {
    fn read(q: &mut Query<'_>) -> Self {
        let event_type = q.variant::<EventType>("type");
        let (from, to) = q.range();
        EventFilter {
            event_type,
            from: from.map(|b| b.start()),
            to: to.map(|b| b.end()),
        }
    }
}

impl FromQuery for AttemptFilter {
    fn read(q: &mut Query<'_>) -> Self {
        AttemptFilter {
            event_id: q.str("event_id").map(str::to_string),
            status: q.variant::<DeliveryStatus>("status"),
        }
    }
}
