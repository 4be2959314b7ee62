//! vf's integration tests: one test crate, linked once (as cargo and uv do),
//! one module per area. The shared harness is `common`; the fuzz tier's
//! generators are `fuzz_support`; the real-engine tier's sandbox is
//! `tests/real-engines/sandbox.rs`.

mod common;
mod fuzz_support;
#[cfg(target_os = "linux")]
#[path = "../real-engines/sandbox.rs"]
mod sandbox;

mod architecture;
mod attach;
mod binary_shape;
mod budget_hard;
mod claude_root;
mod cli;
mod conv;
mod dispatch;
mod doctor;
mod engine_argv;
mod engine_captures;
mod fuzz_marker;
mod fuzz_plan;
mod fuzz_projector;
mod fuzz_replay;
mod model_choice;
mod orchestrate;
mod plan_defaults;
mod process_start;
mod projector;
mod projector_edges;
mod ratelimit;
mod readers;
mod real_conv;
mod real_engines;
mod real_options;
mod real_usage;
mod real_workspace;
mod replay_cli;
mod rerun;
mod state;
mod summary_props;
mod summary_schema;
mod usage;
mod workspace;
