//! The conversation runtime: several engines in one conversation, each turn
//! delivered as VF-TURN/1 (see docs/CONVERSATIONS.md).
//!
//! - [`model`]: participants, the public transcript, cursors and bindings;
//! - [`envelope`]: which public entries a turn delivers, exact-delta or
//!   full-history with a bounded replay (pure, golden-tested);
//! - [`store`]: the folder `<state>/conversations/<name>/`, its lock, atomic
//!   writes and content-addressed handoff documents;
//! - [`turn`]: one participant's turn as an ordinary dispatch of a unit;
//! - [`canonical_json`]: the canonical JSON text the envelopes carry.

pub mod canonical_json;
pub mod envelope;
pub mod model;
pub mod store;
pub mod turn;

pub use envelope::{DeliveryMode, Turn};
pub use model::{Binding, Conversation, Entry, EntryKind, Participant};
pub use store::ConvStore;
