//! vf: dispatch work to coding-agent CLIs and make their output safe to build on.
//!
//! Layers: `cli` (clap definitions) → `commands` (one file per subcommand) →
//! core modules (`engine`, `summary`, `state`, ...).

pub mod binary;
pub mod cli;
pub mod commands;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod frames;
pub mod names;
pub mod state;
pub mod summary;
pub mod version;

pub use error::{Result, VfError};
