//! A merchant's edit of a record in place: an edit that changes nothing
//! leaves the record as it was (its `updatedAt` and version too), so it is
//! not written and records no event.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::timestamp::serde_ts;

/// What a record edited in place carries beside its fields (flattened into
/// its item and JSON): its version, bumped by every write, so a
/// read-modify-write can tell that somebody else changed it meanwhile; when
/// it was created; and when it last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stamps {
    /// Absent from records written before versions were kept: 0.
    #[serde(default)]
    pub version: u64,
    #[serde(with = "serde_ts")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "serde_ts")]
    pub updated_at: DateTime<Utc>,
}

impl Stamps {
    /// A new record's: version 0, created and changed `now`.
    pub fn new(now: DateTime<Utc>) -> Stamps {
        Stamps {
            version: 0,
            created_at: now,
            updated_at: now,
        }
    }

    /// Marks a write at `now`: one version on, changed `now`.
    pub fn stamp(&mut self, now: DateTime<Utc>) {
        self.updated_at = now;
        self.version += 1;
    }
}

/// A record edited in place, stamped when an edit changes it.
pub trait Stamped: Clone + PartialEq {
    /// Marks the record changed at `now`: its `updatedAt`, and one version
    /// on where it keeps one.
    fn stamp(&mut self, now: DateTime<Utc>);
}

/// `next`, an edit of `old`: stamped `now` when it differs from `old`,
/// equal to `old` when the edit changed nothing.
pub fn stamped<T: Stamped>(old: &T, mut next: T, now: DateTime<Utc>) -> T {
    if next != *old {
        next.stamp(now);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, PartialEq, Debug)]
    struct Note {
        text: String,
        version: u64,
        updated_at: DateTime<Utc>,
    }

    impl Stamped for Note {
        fn stamp(&mut self, now: DateTime<Utc>) {
            self.updated_at = now;
            self.version += 1;
        }
    }

    #[test]
    fn only_a_change_is_stamped() {
        let then = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let old = Note {
            text: "a".into(),
            version: 3,
            updated_at: then,
        };
        assert_eq!(stamped(&old, old.clone(), now), old);
        let edited = stamped(
            &old,
            Note {
                text: "b".into(),
                ..old.clone()
            },
            now,
        );
        assert_eq!((edited.version, edited.updated_at), (4, now));
    }
}
