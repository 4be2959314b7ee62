//! vf's entry point. `main` is the C runtime's, not std's: std's start-up
//! reads `/proc/self/maps` to find the main thread's stack guard and sets up
//! a signal stack, ~0.1 ms of every command, for a message on a stack
//! overflow that serde's recursion limit already keeps away. What else std's
//! start-up did, [`start`] does.
#![no_main]

use std::io::Write;

use clap::Parser;

/// Called by the C runtime with the arguments std already holds. (This file
/// has no test build: `test = false` in Cargo.toml.)
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    start();
    // A panic is reported by the hook and ends with std's exit code for one.
    let code = std::panic::catch_unwind(run).unwrap_or(101);
    // The end of the process, without exit handlers: every task, file and
    // child of this process is already settled, so only stdout's buffer and
    // the spare inodes (parked for the next vf) are left to hand on. Saves
    // the C runtime's and the allocator's teardown on every command.
    vf::fsutil::park_spares();
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` ends the process; nothing runs after it.
    unsafe { libc::_exit(code) }
}

/// What std's own start-up does besides the stack guard: the standard
/// descriptors open (a closed one would be taken by the first file vf opens,
/// and output meant for it would land there), and `SIGPIPE` ignored so a
/// closed pipe is an error to handle, not a silent death. Children still
/// start with `SIGPIPE` at its default: std's spawn resets it.
fn start() {
    for fd in 0..3 {
        // SAFETY: F_GETFD on a small integer only asks whether it is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // SAFETY: a constant path; the result lands on the lowest free
            // descriptor, which is `fd`.
            let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if null != fd {
                // SAFETY: nothing to clean up; vf cannot run safely like this.
                unsafe { libc::abort() };
            }
        }
    }
    // SAFETY: ignoring a signal installs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
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
