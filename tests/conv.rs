//! `vf conv`: golden envelopes (tests/conv/envelope.rs) and conversations run
//! on the fake engine.
#![cfg(unix)] // POSIX sh fakes, signals or process groups (docs/PLATFORMS.md)

mod common;

#[path = "conv/envelope.rs"]
mod envelope;
#[path = "conv/three_turns.rs"]
mod three_turns;
