//! What a conversion's changes move in its affiliate's money: an amount
//! netted into the next payout (`Adjustment`) and a change of `earned`
//! (`Earning`).

use super::{
    serde_ts, AffiliateStatus, Conversion, Currency, DateTime, Decimal, Deserialize, Serialize, Utc,
};

/// An amount netted into an affiliate's next payout in its currency: the
/// clawback of a PAID conversion that was reversed (negative; positive when
/// given back), or a merchant's manual adjustment (`domain::adjustment`: a
/// bonus or a manual clawback, with its reason).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Adjustment {
    pub id: String,
    pub affiliate_id: String,
    pub campaign_id: Option<String>,
    pub currency: Currency,
    /// Negative to claw back, positive to pay more.
    pub amount: Decimal,
    /// The reversed conversion it claws back; none for a manual adjustment.
    pub conversion_id: Option<String>,
    /// A manual adjustment's reason, as the merchant gave it.
    pub reason: Option<String>,
    /// A manual adjustment's `externalId`, when the merchant gave one.
    pub external_id: Option<String>,
    /// The payout it was netted into, once it was.
    pub payout_id: Option<String>,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
}

impl Adjustment {
    /// The adjustment netted into payout `payout_id`.
    pub fn claimed(&self, payout_id: &str) -> Adjustment {
        Adjustment {
            payout_id: Some(payout_id.to_string()),
            ..self.clone()
        }
    }

    /// The adjustment back in its pool when its payout is released.
    pub fn released(&self) -> Adjustment {
        Adjustment {
            payout_id: None,
            ..self.clone()
        }
    }

    /// The clawback of a paid conversion's commission (`amount` negative),
    /// or its return (`amount` positive) when its payout is released.
    pub fn clawback(c: &Conversion, amount: Decimal, now: DateTime<Utc>) -> Adjustment {
        Adjustment {
            id: crate::ids::new_id(crate::ids::IdKind::Adjustment),
            affiliate_id: c.affiliate_id.clone().unwrap_or_default(),
            campaign_id: c.campaign_id.clone(),
            currency: c.currency,
            amount,
            conversion_id: Some(c.id.clone()),
            reason: None,
            external_id: None,
            payout_id: None,
            created_at: now,
        }
    }
}

/// A change of an affiliate's `earned` total in one currency.
#[derive(Debug, Clone, PartialEq)]
pub struct Earning {
    pub affiliate_id: String,
    pub currency: Currency,
    /// Negative to give commission back.
    pub amount: Decimal,
    /// Applies only while the affiliate is in this status, when set.
    pub while_status: Option<AffiliateStatus>,
}

impl Earning {
    /// `c`'s affiliate's `earned` moved by `amount`, a cut of its commission
    /// given back (negative) or restored: none without an affiliate, or when
    /// nothing is cut.
    pub fn of_cut(c: &Conversion, amount: Decimal) -> Option<Earning> {
        c.affiliate_id
            .as_ref()
            .filter(|_| !amount.is_zero())
            .map(|aff| Earning {
                affiliate_id: aff.clone(),
                currency: c.currency,
                amount,
                while_status: None,
            })
    }

    /// The earning as committed: its affiliate-status condition is kept only
    /// for an affiliate known from an earlier request (a cache). One read in
    /// this request is as fresh as the condition: a status change committed
    /// between that read and the commit is ordered after the earning either
    /// way, and the condition costs a write.
    pub fn to_commit(&self, affiliate_cached: bool) -> Earning {
        Earning {
            while_status: self.while_status.filter(|_| affiliate_cached),
            ..self.clone()
        }
    }
}
