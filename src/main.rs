use std::io::Write;

use clap::Parser;

fn main() {
    let code = run();
    // The end of the process, without exit handlers: every task, file and
    // child of this process is already settled, so only stdout's buffer and
    // the spare inodes (parked for the next vf) are left to hand on. Saves
    // the C runtime's and the allocator's teardown on every command.
    vf::fsutil::park_spares();
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` ends the process; nothing runs after it.
    unsafe { libc::_exit(code) }
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

// The C library's malloc, and mimalloc for `vf replay`'s bulk work (vf::alloc).
#[global_allocator]
static GLOBAL: vf::alloc::VfAlloc = vf::alloc::VfAlloc;
