//! One file per subcommand. Each returns the process exit code.

use crate::cli::{Cli, Command};
use crate::error::Result;

pub mod completions;
pub mod dispatch;
pub mod engines;
pub mod prompt;
pub mod replay;

pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Engines(a) => engines::run(&a),
        Command::Dispatch(a) => dispatch::run(&a),
        Command::Replay(a) => replay::run(&a),
        Command::Completions(a) => completions::run(&a),
        Command::Man => completions::man(),
    }
}

/// Writes `value` as one line of compact JSON to stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value).map_err(anyhow::Error::from)?;
    writeln!(out)?;
    Ok(())
}
