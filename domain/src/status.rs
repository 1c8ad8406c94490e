//! A record's status as the condition of a write. The domain decides the
//! status a change applies from (the one it decided on, or a transition's
//! `from`); the store writes that typed value as the write's condition and
//! never compares or sets a status of its own.

/// A status enum a record keeps in its `status` attribute.
pub trait Status: Copy {
    /// The stored name.
    fn name(self) -> &'static str;
}

/// Implements [`Status`] for status enums by their wire names; invoked
/// where each enum is declared, so this module names none of them.
macro_rules! statuses {
    ($($t:ty),+) => {
        $(impl $crate::status::Status for $t {
            fn name(self) -> &'static str {
                self.as_str()
            }
        })+
    };
}
pub(crate) use statuses;

/// A status change the domain decided: the record moves to `to`, and only
/// while it is still in `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition<S> {
    pub from: S,
    pub to: S,
}
