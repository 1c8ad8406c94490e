//! The records as the API shows them: each record's view, the one shape a
//! response and an event's payload share, rendered from the domain's types.
//! The domain decides; this crate only says how a decision reads on the wire.

pub mod event;
