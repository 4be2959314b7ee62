//! `vf mcp`: vf as an MCP server on stdio (docs/MCP.md); `vf mcp install`
//! is `mcp_install.rs`.

use crate::cli::{McpArgs, McpCommand};
use crate::ground::error::{Result, VfError};

pub fn run(a: &McpArgs) -> Result<i32> {
    match &a.command {
        Some(McpCommand::Install(i)) => super::mcp_install::run(i),
        None => Err(VfError::usage("vf mcp: not built yet")),
    }
}
