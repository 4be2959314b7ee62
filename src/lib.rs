//! vf: dispatch work to coding-agent CLIs and make their output safe to build on.
//!
//! Layers: `cli` (clap definitions) → `commands` (one file per subcommand) →
//! core modules (`engine`, `summary`, `state`, ...).

pub mod attach;
pub mod binary;
pub mod child;
pub mod cli;
pub mod commands;
pub mod dispatch;
pub mod doctor;
pub mod doctor_cache;
pub mod engine;
pub mod error;
pub mod frames;
pub mod fsutil;
pub mod history;
pub mod marker;
pub mod names;
pub mod orphans;
pub mod owned;
pub mod plan;
pub mod private;
pub mod probe;
pub mod procinfo;
pub mod scheduler;
pub mod state;
pub mod summary;
pub mod text;
pub mod unit_lock;
pub mod version;

pub use error::{Result, VfError};
