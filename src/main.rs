//! vf's entry point: parse, run the command, map the outcome to the exit
//! code table (docs/CLI.md, "Exit codes"). std's start-up reopens closed standard
//! descriptors on the null device and ignores `SIGPIPE` (a closed pipe is an
//! error to handle, not a silent death; engines still start with the
//! default), which vf relies on.

use std::process::ExitCode;

use clap::Parser;
use vf::commands::stdio;

fn main() -> ExitCode {
    let code = run();
    // Codes outside a byte never occur (the table's largest is 143).
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn run() -> i32 {
    let outcome = match vf::cli::Cli::try_parse() {
        Ok(cli) => {
            init_tracing(cli.verbose);
            vf::commands::run(cli)
        }
        Err(e) => Ok(print_clap(&e)),
    };
    // What stdout still holds goes out now; a write of the command's that
    // failed (live output included) is its failure.
    let flushed = stdio::finish();
    match outcome.and_then(|code| flushed.map(|()| code)) {
        Ok(code) => code,
        // A closed pipe downstream (`vf ... | head`) is not an error.
        Err(err) if stdio::is_closed_pipe(&err) => 0,
        Err(err) => {
            stdio::eprint_line(format_args!("vf: {err:#}"));
            err.exit_code()
        }
    }
}

/// clap's own output: --help / --version are successes on stdout (their
/// failed write is remembered for `stdio::finish`); usage errors exit 2.
fn print_clap(e: &clap::Error) -> i32 {
    let printed = e.print();
    if e.use_stderr() {
        return vf::ground::error::exit::USAGE;
    }
    if let Err(failed) = printed {
        stdio::note(failed);
    }
    vf::ground::error::exit::OK
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env(vf::ground::env::EnvVars::VF_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("vf={level}")));
    // A failed write to stderr is dropped: with internal errors logged,
    // tracing would report it with `eprintln!`, which panics.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .log_internal_errors(false)
        .try_init();
}
