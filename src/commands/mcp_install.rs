//! `vf mcp install`: the entry that starts `vf mcp` in an engine's own MCP
//! configuration, printed or written (`project::mcp_install`; ENGINES.md,
//! "vf as an MCP server").

use std::io::Write;

use serde_json::json;

use crate::cli::{Cli, Command, McpArgs, McpCommand, McpInstallArgs};
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::project::mcp_install::{self, Entry, Outcome};

pub fn run(a: &McpInstallArgs) -> Result<i32> {
    check_server_flags(&a.server_args)?;
    let engine = EngineId::parse(&a.engine)
        .ok_or_else(|| VfError::usage(format!("vf mcp install: unknown engine {:?}", a.engine)))?;
    let dir = match &a.dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_dir()?,
    };
    let var = |k: &str| std::env::var(k).ok();
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    let target = mcp_install::target(engine, &dir, &var, home.as_deref())?;
    let vf = std::env::current_exe()?;
    let entry = Entry::new(&vf, &a.server_args);
    let outcome = match a.write {
        true => {
            let old = mcp_install::read(&target)?;
            let (text, outcome) = mcp_install::merge(old.as_deref(), &entry, &target, a.force)?;
            if outcome != Outcome::Unchanged {
                mcp_install::write(&target, &text)?;
            }
            Some(outcome)
        }
        false => None,
    };
    let pass = Entry::passed_vars(target.format);
    if a.json {
        return super::print_json(&json!({
            "engine": engine.as_str(),
            "path": target.path,
            "action": outcome.map_or("printed", |o| o.as_str()),
            "server": mcp_install::SERVER,
            "entry": entry.json(target.format),
            "passEnv": pass,
        }))
        .map(|()| 0);
    }
    let mut out = super::stdio::out();
    match outcome {
        Some(o) => writeln!(out, "{:<18} {}", o.as_str(), target.path.display())?,
        None => {
            writeln!(out, "# {}", target.path.display())?;
            out.write_all(entry.snippet(target.format).as_bytes())?;
        }
    }
    Ok(0)
}

/// The server's flags, parsed as `vf mcp` would parse them: a bad flag is
/// refused here, not when the engine starts the server.
fn check_server_flags(flags: &[String]) -> Result<()> {
    let argv = ["vf", "mcp"]
        .into_iter()
        .map(String::from)
        .chain(flags.iter().cloned());
    let cli = <Cli as clap::Parser>::try_parse_from(argv).map_err(|e| {
        let first = e.to_string();
        let first = first
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        VfError::usage(format!("vf mcp install: the server's flags: {first}"))
    })?;
    match cli.command {
        Command::Mcp(m) if m.command.is_none() => Ok(()),
        Command::Mcp(McpArgs {
            command: Some(McpCommand::Install(_)),
            ..
        }) => Err(VfError::usage(
            "vf mcp install: the server's flags: `install` is not a flag of `vf mcp`",
        )),
        _ => Err(VfError::usage(
            "vf mcp install: the server's flags: not `vf mcp` flags",
        )),
    }
}
