//! stdout and stderr as vf writes them. `println!` and `eprintln!` are never
//! used: they panic on a failed write, and vf ignores `SIGPIPE`, so a closed
//! pipe is one.
//!
//! A failed write to stdout is the command's failure: exit 74
//! ([`crate::ground::error::exit::OUTPUT`]), with a message on stderr. A closed pipe
//! (`vf … | head`) is not: that is success, as in ripgrep. The first failure
//! is remembered for the whole process, so nothing is written after a torn
//! line, and [`finish`] (run by `main` after every command) reports it even
//! when the writer was live output that must not stop the work (a unit's
//! events: the unit still completes and keeps its marker).

use std::io::{self, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ground::error::{Result, VfError, output_error};

/// The first failed write to stdout.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);
/// Whether `FAILED` holds one: a table's many small writes check this, not
/// the lock.
static ANY_FAILED: AtomicBool = AtomicBool::new(false);

/// stdout, locked; every error it returns is an output error
/// ([`VfError::Output`] through `?`).
pub struct Stdout(io::StdoutLock<'static>);

pub fn out() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        failed()?;
        self.0.write(buf).map_err(note)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        failed()?;
        self.0.write_all(buf).map_err(note)
    }

    fn flush(&mut self) -> io::Result<()> {
        failed()?;
        self.0.flush().map_err(note)
    }
}

/// Remembers `e`, a failed write to stdout made elsewhere (clap's help),
/// as [`Stdout`] remembers its own; returns it marked as an output error.
pub fn note(e: io::Error) -> io::Error {
    let e = output_error(e);
    // An interrupted write is retried by its caller, not a failure.
    if e.kind() != io::ErrorKind::Interrupted {
        let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert_with(|| output_error(io::Error::new(e.kind(), e.to_string())));
        ANY_FAILED.store(true, Ordering::Release);
    }
    e
}

/// The remembered failure, as a fresh error of the same kind and text.
fn failed() -> io::Result<()> {
    if !ANY_FAILED.load(Ordering::Acquire) {
        return Ok(());
    }
    let failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
    match failed.as_ref() {
        Some(e) => Err(output_error(io::Error::new(e.kind(), e.to_string()))),
        None => Ok(()),
    }
}

/// Flushes stdout; then any failed write of the command is its error,
/// except a closed pipe.
pub fn finish() -> Result<()> {
    let _ = out().flush();
    match failed() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(VfError::from(e)),
        _ => Ok(()),
    }
}

/// Whether `err` is a closed stdout: the command ends quietly with 0.
pub fn is_closed_pipe(err: &VfError) -> bool {
    matches!(err, VfError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
}

/// Live output (a unit's events, a plan's rows): written and flushed at
/// once, and a failure does not stop the work; [`finish`] reports it.
pub fn live(bytes: &[u8]) {
    let mut stdout = out();
    let _ = stdout.write_all(bytes).and_then(|_| stdout.flush());
}

/// `value` as one JSON line of live output, serialized straight into stdout:
/// neither its text nor a tree of it is held whole (a plan's result grows
/// with the plan).
pub fn live_json(value: &impl serde::Serialize) {
    let mut out = io::BufWriter::new(out());
    let _ = serde_json::to_writer(&mut out, value)
        .map_err(io::Error::from)
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush());
}

/// One line on stderr. A failure to write there has nowhere to be reported
/// and is ignored (never a panic). A message may quote an engine (its last
/// stderr line, a frame): what could drive the terminal is shown escaped.
pub fn eprint_line(line: std::fmt::Arguments) {
    let line = line.to_string();
    let _ = writeln!(io::stderr(), "{}", crate::ground::text::visible(&line));
}
