use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match vf::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help / --version are successes; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    init_tracing(cli.verbose);
    match vf::commands::run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(err) => {
            // A closed pipe downstream (`vf ... | head`) is not an error.
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "vf: {err:#}");
            ExitCode::from(err.exit_code() as u8)
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

// The projector builds a JSON value per frame: allocation dominates its hot path.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
