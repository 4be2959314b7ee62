//! Readiness: what `vf doctor` and `vf doctor --probe` tell about each
//! engine before a run. Nothing here runs in a dispatch: the runtime reads
//! versions through `process`'s cache, never through the doctor.
//!
//! - `doctor`: gathers facts (binary, version, help, auth, the optional `bun`),
//!   then judges them (`doctor/auxiliary.rs`, `doctor/cache.rs` the help runs
//!   remembered per executable identity); `doctor/acp_check.rs` an ACP agent
//!   command judged, `doctor/acp_handshake.rs` its `initialize` handshake;
//! - `probe`: the live canary, one real dispatch per engine.

pub mod doctor;
pub mod probe;
