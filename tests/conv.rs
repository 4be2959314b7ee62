//! `vf conv`: golden envelopes (tests/conv/envelope.rs) and conversations run
//! on the fake engine.

mod common;

#[path = "conv/envelope.rs"]
mod envelope;
#[path = "conv/three_turns.rs"]
mod three_turns;
