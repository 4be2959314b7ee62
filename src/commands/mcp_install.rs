//! `vf mcp install`: the entry that starts `vf mcp` in an engine's own MCP
//! configuration, printed or written (docs/MCP.md, "Wiring it up").

use crate::cli::McpInstallArgs;
use crate::ground::error::{Result, VfError};

pub fn run(_a: &McpInstallArgs) -> Result<i32> {
    Err(VfError::usage("vf mcp install: not built yet"))
}
