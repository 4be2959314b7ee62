//! vf's entry point: parse, run the command, map the outcome to the exit
//! code table (README, "Exit codes"). std's start-up reopens closed standard
//! descriptors on the null device and ignores `SIGPIPE` (a closed pipe is an
//! error to handle, not a silent death; engines still start with the
//! default), which vf relies on.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let code = run();
    let _ = std::io::stdout().flush();
    // Codes outside a byte never occur (the table's largest is 143).
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn run() -> i32 {
    let cli = match vf::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help / --version are successes; usage errors exit 2.
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    init_tracing(cli.verbose);
    match vf::commands::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe downstream (`vf ... | head`) is not an error.
            if is_broken_pipe(&err) {
                return 0;
            }
            let _ = writeln!(std::io::stderr(), "vf: {err:#}");
            err.exit_code()
        }
    }
}

fn is_broken_pipe(err: &vf::VfError) -> bool {
    match err {
        vf::VfError::Other(e) => e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }),
        _ => false,
    }
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VF_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("vf={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
