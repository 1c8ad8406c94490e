//! Prefixed identifiers (`cmp_01J...`): time-sortable ULIDs, or derived from
//! a seed where the record is its own uniqueness claim (a conversion and its
//! `externalId`).

use ulid::Ulid;

/// The kinds of record with an id, and their prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Account,
    Key,
    Campaign,
    Affiliate,
    Application,
    Conversion,
    Payout,
    Adjustment,
    Asset,
    Event,
    WebhookEndpoint,
    Delivery,
    Integration,
    PromotionCode,
    Referral,
    Click,
    Session,
    Request,
}

impl IdKind {
    /// The id prefix, without the underscore.
    pub fn prefix(self) -> &'static str {
        match self {
            IdKind::Account => "acct",
            IdKind::Key => "key",
            IdKind::Campaign => "cmp",
            IdKind::Affiliate => "aff",
            IdKind::Application => "app",
            IdKind::Conversion => "cnv",
            IdKind::Payout => "po",
            IdKind::Adjustment => "adj",
            IdKind::Event => "evt",
            IdKind::WebhookEndpoint => "whe",
            IdKind::Delivery => "dlv",
            IdKind::Integration => "int",
            IdKind::PromotionCode => "prc",
            IdKind::Referral => "ref",
            IdKind::Asset => "ast",
            IdKind::Click => "clk",
            IdKind::Session => "ses",
            IdKind::Request => "req",
        }
    }
}

/// An id's pattern in the description: its kind's prefix, then a ULID.
fn id_pattern(kind: IdKind) -> String {
    format!("^{}_[0-9A-HJKMNP-TV-Z]{{26}}$", kind.prefix())
}

/// One type per kind of id a body or a view names, for its description
/// (`#[schema(value_type = ids::CampaignId)]`): the pattern comes from the
/// kind's prefix, so it is written once.
macro_rules! id_types {
    ($($name:ident: $kind:ident, $example:literal;)*) => {$(
        #[doc = concat!("The description of a `", stringify!($kind), "` id.")]
        pub struct $name;

        crate::described!(
            $name,
            stringify!($name),
            serde_json::json!({
                "type": "string",
                "pattern": id_pattern(IdKind::$kind),
                "example": $example,
            }),
        );
    )*};
}

id_types! {
    AdjustmentId: Adjustment, "adj_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    AffiliateId: Affiliate, "aff_01JD9A7C2E4G6J8M0P2R4T6V8X";
    ApplicationId: Application, "app_01JD9A7C2E4G6J8M0P2R4T6V8Y";
    AssetId: Asset, "ast_01JD9B3D5F7H9K1N3Q5S7T9W1Y";
    CampaignId: Campaign, "cmp_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    ClickId: Click, "clk_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    ConversionId: Conversion, "cnv_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    DeliveryId: Delivery, "dlv_01JD9C8J0M2P4R6T8V0X2Z4B6D";
    EventId: Event, "evt_01JD9C5F7H9K1N3Q5S7T9W1Y3A";
    IntegrationId: Integration, "int_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    PayoutId: Payout, "po_01JD9A7C2E4G6J8M0P2R4T6V8Y";
    PromotionCodeId: PromotionCode, "prc_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    ReferralId: Referral, "ref_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    SessionId: Session, "ses_01JD3Q5W6X7Y8Z9A0B1C2D3E4F";
    WebhookEndpointId: WebhookEndpoint, "whe_01JD9C4E6G8J0M2P4R6T8V0X2Z";
}

/// A new id of the given kind.
pub fn new_id(kind: IdKind) -> String {
    format!("{}_{}", kind.prefix(), Ulid::new())
}

/// How many recent milliseconds [`new_id_at`] keeps its last ULID for.
const RECENT: usize = 16;

/// The last ULID [`new_id_at`] made for each of the recent milliseconds it
/// made one in, the least recently used first.
static LAST_AT: std::sync::Mutex<Vec<Ulid>> = std::sync::Mutex::new(Vec::new());

/// A new id of the given kind whose ULID time is `at` (to the millisecond),
/// for a record keyed by its time and found again from its id alone. Ids
/// this process makes for one of its recent milliseconds increase in the
/// order they are made (the last one's random part plus one), whatever
/// other milliseconds other threads make ids for meanwhile, so records made
/// one after another in a millisecond (a payout's events) list in that
/// order.
pub fn new_id_at(kind: IdKind, at: chrono::DateTime<chrono::Utc>) -> String {
    let ulid = match LAST_AT.lock() {
        Ok(mut recent) => next_at(&mut recent, at),
        // A poisoned lock (a panic elsewhere while holding it) orders nothing.
        Err(_) => next_at(&mut Vec::new(), at),
    };
    format!("{}_{}", kind.prefix(), ulid)
}

/// The ULID of time `at` after those `recent` holds: the last one of its
/// millisecond plus one, a fresh one otherwise (or when the random part
/// would overflow); `recent` then keeps it, and at most [`RECENT`] ULIDs.
fn next_at(recent: &mut Vec<Ulid>, at: chrono::DateTime<chrono::Utc>) -> Ulid {
    let fresh = Ulid::from_datetime(std::time::SystemTime::from(at));
    let ms = fresh.timestamp_ms();
    let next = match recent.iter().position(|u| u.timestamp_ms() == ms) {
        Some(i) => recent.remove(i).increment().unwrap_or(fresh),
        None => fresh,
    };
    recent.push(next);
    if recent.len() > RECENT {
        recent.remove(0);
    }
    next
}

/// The time a ULID id was made at (to the millisecond), when well formed.
pub fn time_of(id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let (_, body) = id.split_once('_')?;
    let ms = Ulid::from_string(body).ok()?.timestamp_ms();
    chrono::DateTime::from_timestamp_millis(i64::try_from(ms).ok()?)
}

/// The id of kind `kind` derived from `seed`: the same seed always gives the
/// same id, so a record keyed by it is the seed's claim (its ULID body is
/// the first 128 bits of the seed's SHA-256, not a time).
pub fn derived_id(kind: IdKind, seed: &str) -> String {
    let digest = <sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes());
    let mut bits = [0u8; 16];
    bits.copy_from_slice(&digest[..16]);
    format!(
        "{}_{}",
        kind.prefix(),
        Ulid::from(u128::from_be_bytes(bits))
    )
}

/// True when `id` has the kind's prefix and a well-formed ULID body.
///
/// Ids that fail this check cannot exist, so callers answer 404 without a read.
pub fn is_valid(kind: IdKind, id: &str) -> bool {
    id.strip_prefix(kind.prefix())
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(is_ulid)
}

/// True when `body` is a ULID in its 26-character form.
pub fn is_ulid(body: &str) -> bool {
    body.len() == 26 && Ulid::from_string(body).is_ok()
}

/// The id of kind `kind` that shares `id`'s ULID (a record made with it,
/// such as an affiliate's application), when `id` is well formed.
pub fn sibling(id: &str, kind: IdKind) -> Option<String> {
    let (_, body) = id.split_once('_')?;
    let sibling = format!("{}_{body}", kind.prefix());
    is_valid(kind, &sibling).then_some(sibling)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_made_in_one_millisecond_increase_and_keep_their_time() {
        let at = crate::timestamp::parse_datetime("2026-11-26T10:00:00.123Z").unwrap();
        let earlier = at - chrono::Duration::seconds(5);
        let mut recent = Vec::new();
        let mut ids = Vec::new();
        for i in 0..50 {
            ids.push(format!("evt_{}", next_at(&mut recent, at)));
            // Other milliseconds between them change nothing.
            let other = earlier + chrono::Duration::milliseconds(i % 5);
            let id = format!("evt_{}", next_at(&mut recent, other));
            assert_eq!(time_of(&id), Some(other), "an earlier time is kept");
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert!(ids.iter().all(|id| time_of(id) == Some(at)));
        // Past RECENT other milliseconds, the least recently used is let go,
        // never the one in use.
        for i in 0..40 {
            let other = earlier - chrono::Duration::milliseconds(100 + i);
            next_at(&mut recent, other);
            assert!(recent.len() <= RECENT);
            let id = format!("evt_{}", next_at(&mut recent, at));
            assert!(ids.last().is_some_and(|last| *last < id), "{id}");
            ids.push(id);
        }
        assert_eq!(recent.len(), RECENT);
        assert_eq!(time_of(&new_id_at(IdKind::Event, at)), Some(at));
    }

    use super::*;

    #[test]
    fn an_id_made_at_a_time_gives_that_time_back() {
        let at = chrono::DateTime::from_timestamp_millis(1_795_000_000_123).unwrap();
        let id = new_id_at(IdKind::Event, at);
        assert!(is_valid(IdKind::Event, &id), "{id}");
        assert_eq!(time_of(&id), Some(at));
        assert_ne!(id, new_id_at(IdKind::Event, at), "random beyond the time");
        assert_eq!(time_of("evt_not-a-ulid"), None);
    }

    #[test]
    fn a_derived_id_is_well_formed_and_the_same_for_the_same_seed() {
        let a = derived_id(IdKind::Conversion, "pi_123");
        assert!(is_valid(IdKind::Conversion, &a), "{a}");
        assert_eq!(a, derived_id(IdKind::Conversion, "pi_123"));
        assert_ne!(a, derived_id(IdKind::Conversion, "pi_124"));
        assert!(a.starts_with("cnv_"));
    }

    #[test]
    fn siblings_share_the_ulid() {
        let a = new_id(IdKind::Affiliate);
        let app = sibling(&a, IdKind::Application).unwrap();
        assert_eq!(&app[4..], &a[4..]);
        assert_eq!(sibling(&app, IdKind::Affiliate), Some(a));
        assert_eq!(sibling("aff_nope", IdKind::Application), None);
        assert_eq!(sibling("nope", IdKind::Application), None);
    }

    #[test]
    fn ids_round_trip_and_sort_by_time() {
        let a = new_id(IdKind::Campaign);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id(IdKind::Campaign);
        assert!(a.starts_with("cmp_"));
        assert!(is_valid(IdKind::Campaign, &a));
        assert!(!is_valid(IdKind::Affiliate, &a));
        assert!(!is_valid(IdKind::Campaign, "cmp_nope"));
        assert!(a < b);
    }
}
