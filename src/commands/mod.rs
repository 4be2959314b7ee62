//! One file per subcommand. Each returns the process exit code.
//!
//! The domain's map: a file per subcommand (`attach`, `clean`, `completions`,
//! `config`, `conv`, `demo`, `dispatch`, `doctor`, `engines`, `hook`, `judge`, `mcp` (+ `mcp_install`),
//! `orchestrate` (+ `orchestrate_temporal`), `play`, `quota`, `replay`, `report`,
//! `resume`, `skill`, `status`, `worker`, `workspace`); and what they share:
//! `output` (the dispatch renderers), `stdio` (the only writer of stdout and
//! stderr), `prompt` (`--prompt`, `--prompt-file`, stdin), `run_options`
//! (`--model`, `--effort`, `--summary-schema`, `--mcp` resolved).

use crate::cli::{Cli, Command};
use crate::ground::error::Result;

pub mod attach;
pub mod clean;
pub mod completions;
pub mod config;
pub mod conv;
pub mod demo;
pub mod dispatch;
pub mod doctor;
pub mod engines;
pub mod hook;
pub mod judge;
pub mod mcp;
pub mod mcp_install;
pub mod orchestrate;
#[cfg(feature = "temporal")]
pub mod orchestrate_temporal;
pub mod output;
pub mod play;
pub mod prompt;
pub mod quota;
pub mod replay;
pub mod report;
pub mod resume;
pub mod run_options;
pub mod skill;
pub mod status;
pub mod stdio;
#[cfg(feature = "temporal")]
pub mod worker;
pub mod workspace;

pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Engines(a) => engines::run(&a),
        Command::Dispatch(a) => dispatch::run(&a),
        Command::Resume(a) => resume::run(&a),
        Command::Status(a) => status::run(&a),
        Command::Attach(a) => attach::run(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Orchestrate(a) => orchestrate(&a),
        #[cfg(feature = "temporal")]
        Command::Worker(a) => worker::run(&a),
        Command::Replay(a) => replay::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Clean(a) => clean::run(&a),
        Command::Conv(a) => conv::run(a),
        Command::Completions(a) => completions::run(&a),
        Command::Man => completions::man(),
        Command::Judge(a) => judge::run(&a),
        Command::Skill(a) => skill::run(&a),
        Command::Mcp(a) => mcp::run(&a),
        Command::Workspace(a) => workspace::run(&a),
        Command::Hook(a) => hook::run(&a),
        Command::Config(a) => config::run(&a),
        Command::Quota(a) => quota::run(&a),
        Command::Demo(a) => demo::run(&a),
        Command::Play(a) => play::run(&a),
    }
}

/// `vf orchestrate`: on a Temporal service with `--temporal`, else here.
fn orchestrate(a: &crate::cli::OrchestrateArgs) -> Result<i32> {
    #[cfg(feature = "temporal")]
    if a.temporal.target.temporal.is_some() {
        return orchestrate_temporal::run(a, &crate::plan::config::load()?);
    }
    orchestrate::run(a)
}

/// Writes `value` as one line of compact JSON to stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    use std::io::Write;
    // One write: stdout is line-buffered, and serde_json writes in tiny
    // pieces, each then scanned for a newline (`vf status --json` over many markers).
    let mut buf = serde_json::to_vec(value).map_err(anyhow::Error::from)?;
    buf.push(b'\n');
    stdio::out().write_all(&buf)?;
    Ok(())
}

/// Runs a future on a fresh runtime (only commands that spawn engines need one).
pub fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let out = rt.block_on(fut);
    // Every task it ran has finished; idle blocking-pool threads are not
    // waited for (joining them costs each command a few hundred microseconds).
    rt.shutdown_background();
    Ok(out)
}
