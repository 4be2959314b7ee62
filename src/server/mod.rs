//! `vf mcp` (docs/MCP.md): vf as an MCP server on stdio, a protocol front for
//! the CLI. Each tool runs as a `vf` subprocess of vf's own binary, so a
//! tool's JSON is exactly the CLI's and a crash of the server never touches
//! a unit (each unit has its own vf, lock and marker).
//!
//! - `schemas`: the tools' names and input JSON Schemas, the strict check.
//! - `request`: a checked call to a typed request, then to the `vf` argv,
//!   under the server's settings (a call may only tighten them).
//! - `run`: one `vf` subprocess: its output read (jsonl rows to progress,
//!   the last row the result), its exit to a tool result or tool error.
//! - `progress`: progress notifications, rate-limited (the last always sent).
//! - `tools`: each tool; the calls in flight (cancel, EOF).
//! - `handler`: the rmcp `ServerHandler` (`tools/list`, `tools/call`).
//! - `stdio`: the server's stdin, watched for its EOF.

mod handler;
mod progress;
mod request;
mod run;
pub mod schemas;
mod stdio;
mod tools;

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::engine::EngineId;
use crate::readiness::doctor::cache::LazyReadiness;

pub use handler::Server;

/// The server's own settings (`vf mcp`'s flags, resolved): every call runs
/// under them.
pub struct Settings {
    /// The state dir every call uses.
    pub state_dir: PathBuf,
    /// The workspace the units run in (canonical); a plan path lies inside.
    pub cwd: PathBuf,
    /// `--allow-engines`; empty: every engine the doctor finds ready.
    pub allow_engines: BTreeSet<EngineId>,
    pub allow_skip_permissions: bool,
    pub max_depth: u32,
    pub read_only: bool,
    pub sandbox: Option<String>,
    pub worktree: bool,
    pub max_cost: Option<f64>,
    pub timeout: Option<u64>,
    /// vf's own binary, which runs every tool.
    pub vf: PathBuf,
    /// Asked at the first `dispatch` that needs it, not at start.
    pub readiness: LazyReadiness,
}

impl Settings {
    /// Whether a call may dispatch to `e`.
    pub fn allows(&self, e: EngineId) -> bool {
        if self.allow_engines.is_empty() {
            EngineId::ALL.contains(&e) && self.readiness.get(e)
        } else {
            self.allow_engines.contains(&e)
        }
    }

    /// The allow-list as the error shows it.
    pub fn allowed_names(&self) -> String {
        if self.allow_engines.is_empty() {
            return "not given: every engine vf doctor finds ready".into();
        }
        let v: Vec<&str> = self.allow_engines.iter().map(|e| e.as_str()).collect();
        v.join(",")
    }
}
