//! `vf attach add|list|rm`: the attachment store.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::{AttachArgs, AttachCommand, StateDirArg};
use crate::dispatch::attach::Store;
use crate::ground::error::Result;

fn store(arg: &StateDirArg) -> Result<Store> {
    let cwd = std::env::current_dir()?;
    let dir: PathBuf = super::config::state_dir(arg.state_dir.as_deref(), &cwd)?;
    Ok(Store::new(&dir))
}

pub fn run(args: &AttachArgs) -> Result<i32> {
    match &args.command {
        AttachCommand::Add(a) => {
            let e = store(&a.state)?.add(&a.file, a.name.as_deref(), a.force)?;
            writeln!(
                super::stdio::out(),
                "attached {} ({}, {} bytes) at {}",
                e.name,
                e.kind.as_str(),
                e.bytes,
                e.path.display()
            )?;
        }
        AttachCommand::List(a) => {
            let entries = store(&a.state)?.list()?;
            if a.json {
                super::print_json(&entries)?;
                return Ok(0);
            }
            let mut out = super::stdio::out();
            if entries.is_empty() {
                writeln!(out, "no attachments (add one with `vf attach add FILE`)")?;
                return Ok(0);
            }
            writeln!(out, "{:<40} {:<9} {:>12}", "NAME", "KIND", "BYTES")?;
            for e in entries {
                writeln!(out, "{:<40} {:<9} {:>12}", e.name, e.kind.as_str(), e.bytes)?;
            }
        }
        AttachCommand::Rm(a) => {
            let e = store(&a.state)?.remove(&a.name)?;
            writeln!(super::stdio::out(), "removed {}", e.name)?;
        }
    }
    Ok(0)
}
