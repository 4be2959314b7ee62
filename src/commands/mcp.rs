//! `vf mcp`: vf as an MCP server on stdio (docs/MCP.md); `vf mcp install`
//! is `mcp_install.rs`. stdout is the protocol: nothing else writes to it
//! (logs go to stderr).

use std::collections::BTreeSet;

use rmcp::ServiceExt;

use crate::cli::{McpArgs, McpCommand, McpServeArgs};
use crate::ground::error::{Result, VfError};
use crate::server::{Server, Settings};

pub fn run(a: &McpArgs) -> Result<i32> {
    match &a.command {
        Some(McpCommand::Install(i)) => super::mcp_install::run(i),
        None => serve(&a.serve),
    }
}

/// The server's settings from its flags (the state dir and workspace
/// resolved once, so every call uses the same).
fn settings(a: &McpServeArgs) -> Result<Settings> {
    let cwd = match &a.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| VfError::usage(format!("current dir: {e}")))?,
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| VfError::usage(format!("--cwd {}: {e}", cwd.display())))?;
    if !cwd.is_dir() {
        return Err(VfError::usage(format!(
            "--cwd {}: not a directory",
            cwd.display()
        )));
    }
    let state_dir = super::config::state_dir(a.state.state_dir.as_deref(), &cwd)?;
    if let Some(c) = a.max_cost
        && !(c.is_finite() && c > 0.0)
    {
        return Err(VfError::usage(format!(
            "--max-cost must be above 0, not {c}"
        )));
    }
    if a.timeout == Some(0) {
        return Err(VfError::usage("--timeout must be above 0"));
    }
    let vf =
        std::env::current_exe().map_err(|e| VfError::state(format!("vf's own binary: {e}")))?;
    Ok(Settings {
        state_dir,
        cwd,
        allow_engines: a.allow_engines.iter().copied().collect::<BTreeSet<_>>(),
        allow_skip_permissions: a.allow_skip_permissions,
        max_depth: a.max_depth,
        read_only: a.read_only,
        sandbox: a.sandbox.clone(),
        worktree: a.worktree,
        max_cost: a.max_cost,
        timeout: a.timeout,
        vf,
        readiness: crate::readiness::doctor::cache::LazyReadiness::new(
            crate::readiness::doctor::Options::default(),
        ),
    })
}

fn serve(a: &McpServeArgs) -> Result<i32> {
    if a.allow_engines
        .iter()
        .any(|e| !crate::engine::EngineId::ALL.contains(e))
    {
        return Err(VfError::usage(
            "--allow-engines names only CLIs (the bridge and acp take a command no caller may give)",
        ));
    }
    let server = Server::new(settings(a)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| VfError::state(format!("runtime: {e}")))?;
    rt.block_on(async move {
        let running = server
            .clone()
            .serve(server.stdio())
            .await
            .map_err(|e| VfError::usage(format!("MCP handshake: {e}")))?;
        // stdin's EOF (or a broken stdout) ends the service.
        let _ = running.waiting().await;
        server.shut_down().await;
        Ok(0)
    })
}
