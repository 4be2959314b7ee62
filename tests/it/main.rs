//! vf's integration tests: one test crate, so the whole crate is linked once
//! for all of them (as cargo and uv do), one module per area. The shared
//! harness is `common`; the fuzz tier's generators are `fuzz_support`; the
//! real-engine tier's sandbox is `tests/real-engines/sandbox.rs`, beside its
//! scripts.
//!
//! The tests share one process: a test that must change process-wide state
//! (the environment, the cwd, a signal disposition, the allocator) is not one
//! of them. Only Cargo.toml's other `[[test]]` targets may, each with its
//! reason. `cargo test --test it MODULE::` runs one area.

mod common;
mod fuzz_support;
#[cfg(target_os = "linux")]
#[path = "../real-engines/sandbox.rs"]
mod sandbox;

// Everywhere vf runs.
mod acp_captures;
mod agy_workspace;
mod architecture;
mod cli;
#[cfg(unix)]
mod config;
#[cfg(unix)]
mod confined;
mod demo;
mod engine_argv;
mod engine_captures;
mod fuzz_marker;
mod fuzz_plan;
mod fuzz_projector;
mod fuzz_replay;
mod judge;
#[cfg(unix)]
mod loop_keys;
#[cfg(unix)]
mod loops;
// vf's TLS crypto (graviola) exists for x86_64 and aarch64 only.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod judge_tls;
#[cfg(unix)]
mod lineage;
mod platform_skips;
mod projector;
mod projector_edges;
// The fake engine is a bash script (platform_skips names it).
#[cfg(unix)]
mod readers;
mod replay_cli;
mod skill;
mod summary_props;

// POSIX sh fakes, signals or process groups (docs/PLATFORMS.md).
#[cfg(unix)]
mod acp;
#[cfg(unix)]
mod acp_dispatch;
#[cfg(unix)]
mod acp_faults;
#[cfg(unix)]
mod acp_limits;
#[cfg(unix)]
mod attach;
#[cfg(unix)]
mod bridge;
#[cfg(unix)]
mod budget_hard;
#[cfg(unix)]
mod claude_root;
#[cfg(unix)]
mod conv;
#[cfg(unix)]
mod dispatch;
#[cfg(unix)]
mod doctor;
#[cfg(unix)]
mod isolation;
#[cfg(unix)]
mod mcp_install;
#[cfg(unix)]
mod mcp_server;
#[cfg(unix)]
mod model_choice;
#[cfg(unix)]
mod orchestrate;
#[cfg(unix)]
mod plan_defaults;
#[cfg(unix)]
mod process_start;
#[cfg(unix)]
mod quota_fleet;
#[cfg(unix)]
mod quota_frames;
#[cfg(unix)]
mod quota_keys;
#[cfg(unix)]
mod quota_plan;
#[cfg(unix)]
mod quota_show;
#[cfg(unix)]
mod ratelimit;
#[cfg(unix)]
mod report;
#[cfg(unix)]
mod report_paths;
#[cfg(unix)]
mod rerun;
#[cfg(unix)]
mod state;
#[cfg(unix)]
mod summary_schema;
#[cfg(all(target_os = "linux", feature = "temporal"))]
mod temporal;
#[cfg(unix)]
mod usage;
#[cfg(unix)]
mod workspace;

// Linux: the ELF the toolchain links.
#[cfg(target_os = "linux")]
mod binary_shape;

// The real-engine tier (VF_REAL_ENGINES=1, tests/real-engines/README.md):
// Linux only, its sandbox is a network namespace (`unshare -n`).
#[cfg(target_os = "linux")]
mod real_acp;
#[cfg(target_os = "linux")]
mod real_acp_dispatch;
#[cfg(target_os = "linux")]
mod real_conv;
#[cfg(target_os = "linux")]
mod real_engines;
#[cfg(target_os = "linux")]
mod real_loops;
#[cfg(target_os = "linux")]
mod real_mcp;
#[cfg(target_os = "linux")]
mod real_mcp_server;
#[cfg(target_os = "linux")]
mod real_options;
#[cfg(target_os = "linux")]
mod real_policy;
#[cfg(target_os = "linux")]
mod real_quota;
#[cfg(target_os = "linux")]
mod real_sandbox;
#[cfg(target_os = "linux")]
mod real_usage;
#[cfg(target_os = "linux")]
mod real_workspace;
