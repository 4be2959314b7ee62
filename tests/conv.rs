//! `vf conv`: golden envelopes (tests/conv/envelope.rs) and conversations run
//! on the fake engine.

mod common;

#[path = "conv/envelope.rs"]
mod envelope;
