//! Reading the engine's stdout and stderr as they arrive: split into capped
//! lines (the splitter `vf replay` uses), redact private ranges, write the
//! raw log, and only then hand stdout's lines to the supervisor. A line
//! reaches the projector only once it is in the log, so no `rawRange` can
//! point past the log's end, even when the log cannot be written.
//!
//! Each stream is read on a thread of its own, with blocking reads and
//! writes: a raw-log write that waits on the disk (write-back throttling, a
//! page under write-back) holds up only its own stream, never the one thread
//! that runs every unit of a plan and shows their events.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::redact::stream::Stream as Redacting;
use super::redact::{REDACTED, Redactor};
use crate::engine::{Found, Line, LineSink, MAX_LINE_BYTES, Splitter};
use crate::sys::{ChildPipe, Got, StoppableReader};

pub enum Msg {
    /// stdout lines, already in the raw log.
    Lines(Vec<Piece>),
    StdoutEof,
    StderrActivity,
    /// stderr closed; carries its last bytes (for a failure's one-line reason).
    StderrEof(Vec<u8>),
    /// A raw log could not be written; nothing more of that stream is projected.
    LogFailed(String),
}

pub enum Piece {
    Text(Vec<u8>),
    Oversized(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How much of stderr's end is kept for a failure's reason.
const STDERR_TAIL: usize = 4096;
/// A pump thread's stack: a few small frames (its buffers are on the heap).
const PUMP_STACK: usize = 256 << 10;

/// Copies one stream to its log, line by line, until it closes, on a thread
/// of its own; this future ends with it. Dropped (the supervisor aborts a
/// pump whose pipe a stray process holds open), it stops the thread, which
/// then reads and reports nothing more.
pub async fn pump(
    r: impl ChildPipe,
    log: File,
    log_name: String,
    redactor: Arc<Redactor>,
    stream: Stream,
    tx: mpsc::Sender<Msg>,
) {
    let (src, _stop) = match crate::sys::stoppable(r) {
        Ok(pair) => pair,
        Err(e) => return no_reader(&tx, stream, &log_name, e).await,
    };
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let (fail_tx, name) = (tx.clone(), log_name.clone());
    let p = Pump {
        log,
        log_name,
        redactor,
        stream,
        tx,
    };
    let spawned = std::thread::Builder::new()
        .name("vf-pump".into())
        .stack_size(PUMP_STACK)
        .spawn(move || {
            p.run(src);
            let _ = done_tx.send(());
        });
    match spawned {
        // `_stop` is held until then: dropped early, it stops the thread.
        Ok(_) => drop(done_rx.await),
        Err(e) => no_reader(&fail_tx, stream, &name, e).await,
    }
}

/// A stream vf cannot read as it should: reported as a raw log that cannot
/// be written (the engine is ended), then closed.
async fn no_reader(tx: &mpsc::Sender<Msg>, stream: Stream, log_name: &str, e: std::io::Error) {
    let why = format!("cannot read the engine's output for the raw log {log_name}: {e}");
    let _ = tx.send(Msg::LogFailed(why)).await;
    let _ = tx.send(eof(stream, Vec::new())).await;
}

fn eof(stream: Stream, tail: Vec<u8>) -> Msg {
    match stream {
        Stream::Stdout => Msg::StdoutEof,
        Stream::Stderr => Msg::StderrEof(tail),
    }
}

/// One stream's pump: where it logs and reports.
struct Pump {
    log: File,
    log_name: String,
    redactor: Arc<Redactor>,
    stream: Stream,
    tx: mpsc::Sender<Msg>,
}

impl Pump {
    fn run(mut self, mut src: StoppableReader) {
        let mut split = Splitter::new(MAX_LINE_BYTES);
        let mut batch = Batch::new(self.redactor.clone(), self.stream == Stream::Stdout);
        let mut buf = vec![0u8; 64 * 1024];
        let mut tail: Vec<u8> = Vec::new();
        let mut failed = false;
        loop {
            let n = match src.read(&mut buf) {
                Got::Bytes(n) => n,
                Got::End => break,
                Got::Stopped => return,
            };
            // After a failed write the stream is still drained (so the engine
            // never blocks on a full pipe), but nothing more is kept.
            if failed {
                continue;
            }
            split.feed(&buf[..n], &mut batch);
            failed = !self.flush(&mut batch, &mut tail);
        }
        if !failed {
            match split.finish() {
                Found::Buffered => batch.text(split.line(), false),
                Found::Oversized(n) => batch.oversized(n, false),
                Found::Nothing | Found::Direct(_) => {}
            }
            batch.release_all();
            self.flush(&mut batch, &mut tail);
        }
        let _ = self.tx.blocking_send(eof(self.stream, tail));
    }

    /// Writes the batch's log bytes, then sends its lines; false once the log failed.
    fn flush(&mut self, batch: &mut Batch, tail: &mut Vec<u8>) -> bool {
        let bytes = std::mem::take(&mut batch.log);
        // Its error is this chunk's own.
        if let Err(e) = self.log.write_all(&bytes) {
            let why = format!("cannot write the raw log {}: {e}", self.log_name);
            let _ = self.tx.blocking_send(Msg::LogFailed(why));
            return false;
        }
        if batch.keep_lines {
            if !batch.lines.is_empty() {
                let lines = std::mem::take(&mut batch.lines);
                let _ = self.tx.blocking_send(Msg::Lines(lines));
            }
        } else if !bytes.is_empty() {
            tail.extend_from_slice(&bytes);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
            // Activity only matters for stall detection; never block on it.
            let _ = self.tx.try_send(Msg::StderrActivity);
        }
        true
    }
}

/// What one chunk of a stream adds to its log and to the projector.
struct Batch {
    redactor: Arc<Redactor>,
    /// Lines, redacted across lines (a line whose end may begin a secret
    /// waits for the next); `true`: it ended with a newline.
    lines_in: Redacting<bool>,
    /// stdout: the lines go on to the projector; stderr: only the log.
    keep_lines: bool,
    log: Vec<u8>,
    lines: Vec<Piece>,
    /// An over-long line is streamed to the log as it passes: its last bytes
    /// are held back in case a private block's start spans two chunks.
    held: Vec<u8>,
    /// The rest of the current over-long line is private: dropped.
    withholding: bool,
}

impl Batch {
    fn new(redactor: Arc<Redactor>, keep_lines: bool) -> Self {
        Batch {
            lines_in: Redacting::new(redactor.clone()),
            redactor,
            keep_lines,
            log: Vec::new(),
            lines: Vec::new(),
            held: Vec::new(),
            withholding: false,
        }
    }

    fn text(&mut self, line: &[u8], newline: bool) {
        let out = self.lines_in.push(line.to_vec(), newline, true);
        self.put(out);
    }

    fn put(&mut self, lines: Vec<(Vec<u8>, bool)>) {
        for (line, newline) in lines {
            self.log.extend_from_slice(&line);
            if newline {
                self.log.push(b'\n');
            }
            if self.keep_lines {
                self.lines.push(Piece::Text(line));
            }
        }
    }

    /// The held lines go out as they are: the stream ends, or an over-long
    /// line (never held) comes next.
    fn release_all(&mut self) {
        let out = self.lines_in.finish();
        self.put(out);
    }

    fn oversized(&mut self, n: u64, newline: bool) {
        self.release_all();
        if !std::mem::take(&mut self.withholding) {
            self.log.append(&mut self.held);
        }
        self.held.clear();
        if newline {
            self.log.push(b'\n');
        }
        if self.keep_lines {
            self.lines.push(Piece::Oversized(n));
        }
    }
}

impl LineSink for Batch {
    fn line(&mut self, line: Line<'_>) {
        match line {
            Line::Text(b) => self.text(b, true),
            Line::Oversized(n) => self.oversized(n, true),
        }
    }

    fn spill(&mut self, bytes: &[u8]) {
        if self.withholding {
            return;
        }
        self.release_all();
        let overlap = self.redactor.trigger_overlap();
        let held = std::mem::take(&mut self.held);
        // A trigger that spans the held bytes and the new ones, then one inside the new ones.
        let mut window = held.clone();
        window.extend_from_slice(&bytes[..overlap.min(bytes.len())]);
        let hit = self
            .redactor
            .trigger(&window)
            .or_else(|| self.redactor.trigger(bytes).map(|j| held.len() + j));
        let (from_held, from_new, keep) = match hit {
            Some(i) => (i.min(held.len()), i.saturating_sub(held.len()), false),
            None => {
                let cut = (held.len() + bytes.len()).saturating_sub(overlap);
                (cut.min(held.len()), cut.saturating_sub(held.len()), true)
            }
        };
        self.log.extend_from_slice(&held[..from_held]);
        self.log.extend_from_slice(&bytes[..from_new]);
        if keep {
            self.held.extend_from_slice(&held[from_held..]);
            self.held.extend_from_slice(&bytes[from_new..]);
        } else {
            self.log.extend_from_slice(REDACTED.as_bytes());
            self.withholding = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log bytes of `input` pushed in chunks of `step`.
    fn logged(input: &[u8], cap: usize, step: usize, blocks: &[String]) -> Vec<u8> {
        let redactor = Arc::new(Redactor::new(blocks));
        let mut split = Splitter::new(cap);
        let mut batch = Batch::new(redactor, true);
        for chunk in input.chunks(step) {
            split.feed(chunk, &mut batch);
        }
        match split.finish() {
            Found::Buffered => batch.text(split.line(), false),
            Found::Oversized(n) => batch.oversized(n, false),
            _ => {}
        }
        batch.release_all();
        batch.log
    }

    #[test]
    fn plain_output_is_logged_byte_for_byte() {
        let input = b"{\"a\":1}\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\nend";
        for step in 1..input.len() {
            assert_eq!(logged(input, 16, step, &[]), input, "step {step}");
        }
    }

    /// Written out, or spelled with `\uXXXX` escapes (issue 25).
    #[test]
    fn a_private_block_in_an_over_long_line_never_reaches_the_log() {
        let inputs: [&[u8]; 2] = [
            b"ok\nhead VF-PRIVATE-FILE-RANGES/1 secret secret secret\nnext\n",
            b"ok\nhead \\u0056\\u0046-PRIVATE-FILE-RANGES/1 secret secret secret\nnext\n",
        ];
        for input in inputs {
            for step in 1..input.len() {
                let log = logged(input, 16, step, &[]);
                assert_eq!(
                    String::from_utf8(log).unwrap(),
                    format!("ok\nhead {REDACTED}\nnext\n"),
                    "step {step}"
                );
            }
        }
    }
}
