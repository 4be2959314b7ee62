//! vf: dispatch work to coding-agent CLIs and make their output safe to build on.
//!
//! Layers: `cli` (clap definitions) → `commands` (one thin file per
//! subcommand) → core modules (no terminal knowledge) → the ground floor
//! (`error`, `fsutil`, `names`, `procinfo`, `summary`, `text`, `version`).
//! docs/ARCHITECTURE.md says who owns what and the path of one dispatch.

pub mod acp;
pub mod attach;
pub mod binary;
pub mod canonical_json;
pub mod child;
pub mod clean;
pub mod cli;
pub mod commands;
pub mod config;
pub mod conv;
pub mod dispatch;
pub mod doctor;
pub mod engine;
pub mod error;
pub mod frames;
pub mod fsutil;
pub mod history;
pub mod hook;
pub mod judge;
pub mod layout;
pub mod marker;
pub mod names;
pub mod notify;
pub mod offload;
pub mod orphans;
pub mod owned;
pub mod plan;
pub mod private;
pub mod probe;
pub mod process;
pub mod procinfo;
pub mod ratelimit;
pub mod report;
pub mod rerun;
pub mod scaffold;
pub mod scheduler;
pub mod skill;
pub mod state;
pub mod steps;
pub mod summary;
pub mod sys;
#[cfg(feature = "temporal")]
pub mod temporal;
pub mod text;
pub mod unit;
pub mod unit_lock;
pub mod usage;
pub mod version;
pub mod workspace;
pub mod workspace_files;

pub use error::{Result, VfError};
