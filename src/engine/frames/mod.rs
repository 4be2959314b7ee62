//! The frame projector: raw output lines of a CLI in, typed
//! [`ConversationEvent`]s out, each pointing back to its raw lines.
//!
//! What each CLI version family emits lives in data tables under
//! [`manifests`] (see [`manifest`] for the vocabulary); this module
//! interprets them generically. The unknown-frame contract: a valid frame
//! whose kind (or nested kind) is not in the manifest of the exact
//! `{cli, version family, transport}` becomes one `system.unknownFrame`,
//! which carries the kind and never any payload.

pub mod event;
mod fields;
mod figures;
mod keep;
pub mod manifest;
pub mod manifests;
mod projector;
pub mod quota_signal;
pub mod reader;
pub mod render;
mod rules;
mod tracker;

pub use event::{ConversationEvent, EventSink, Level, RawRange, RoundNote, ToolCall};
pub use projector::Projector;
pub use quota_signal::Signal as QuotaSignal;
pub use tracker::Tracker;
