//! vf: dispatch work to coding-agent CLIs and make their output safe to build on.
//!
//! Layers: `cli` (clap definitions) → `commands` (one thin file per
//! subcommand) → core modules (no terminal knowledge) → the ground floor
//! (`error`, `fsutil`, `names`, `procinfo`, `summary`, `text`, `version`).
//! docs/ARCHITECTURE.md says who owns what and the path of one dispatch.

pub mod cli;
pub mod commands;
pub mod conv;
pub mod dispatch;
pub mod engine;
pub mod ground;
pub mod plan;
pub mod process;
pub mod project;
pub mod quota;
pub mod readiness;
pub mod report;
pub mod server;
pub mod sys;
pub mod unit;
pub mod workspace;

pub use crate::ground::error::{Result, VfError};
