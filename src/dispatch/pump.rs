//! Reading the engine's stdout and stderr as they arrive: split into capped
//! lines (the splitter `vf replay` uses), redact private ranges, write the
//! raw log, and only then hand stdout's lines to the supervisor. A line
//! reaches the projector only once it is in the log, so no `rawRange` can
//! point past the log's end, even when the log cannot be written.

use std::sync::Arc;

use std::io::Write;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use super::redact::{REDACTED, Redactor};
use crate::frames::reader::{Found, Line, LineSink, MAX_LINE_BYTES, Splitter};

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

/// Copies one stream to its log, line by line, until it closes.
pub async fn pump(
    mut r: impl AsyncRead + Unpin,
    mut log: std::fs::File,
    log_name: String,
    redactor: Arc<Redactor>,
    stream: Stream,
    tx: mpsc::Sender<Msg>,
) {
    let mut split = Splitter::new(MAX_LINE_BYTES);
    let mut batch = Batch::new(&redactor, stream == Stream::Stdout);
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    let mut failed = false;
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // After a failed write the stream is still drained (so the engine
        // never blocks on a full pipe), but nothing more is kept.
        if failed {
            continue;
        }
        split.feed(&buf[..n], &mut batch);
        failed = !flush(&mut batch, &mut log, &log_name, &mut tail, &tx).await;
    }
    if !failed {
        match split.finish() {
            Found::Buffered => batch.text(split.line(), false),
            Found::Oversized(n) => batch.oversized(n, false),
            Found::Nothing | Found::Direct(_) => {}
        }
        flush(&mut batch, &mut log, &log_name, &mut tail, &tx).await;
    }
    let _ = tx
        .send(match stream {
            Stream::Stdout => Msg::StdoutEof,
            Stream::Stderr => Msg::StderrEof(tail),
        })
        .await;
}

/// Writes the batch's log bytes, then sends its lines; false once the log failed.
async fn flush(
    batch: &mut Batch<'_>,
    log: &mut std::fs::File,
    log_name: &str,
    tail: &mut Vec<u8>,
    tx: &mpsc::Sender<Msg>,
) -> bool {
    let bytes = std::mem::take(&mut batch.log);
    // A plain write into the page cache, on this thread: a hop to tokio's
    // blocking pool per chunk costs more than the write (and, on a loaded
    // machine, a wake-up each way). Its error is this chunk's own.
    if let Err(e) = log.write_all(&bytes) {
        let _ = tx
            .send(Msg::LogFailed(format!(
                "cannot write the raw log {log_name}: {e}"
            )))
            .await;
        return false;
    }
    if batch.keep_lines {
        if !batch.lines.is_empty() {
            let _ = tx.send(Msg::Lines(std::mem::take(&mut batch.lines))).await;
        }
    } else if !bytes.is_empty() {
        tail.extend_from_slice(&bytes);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
        // Activity only matters for stall detection; never block on it.
        let _ = tx.try_send(Msg::StderrActivity);
    }
    true
}

/// What one chunk of a stream adds to its log and to the projector.
struct Batch<'r> {
    redactor: &'r Redactor,
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

impl<'r> Batch<'r> {
    fn new(redactor: &'r Redactor, keep_lines: bool) -> Self {
        Batch {
            redactor,
            keep_lines,
            log: Vec::new(),
            lines: Vec::new(),
            held: Vec::new(),
            withholding: false,
        }
    }

    fn text(&mut self, line: &[u8], newline: bool) {
        let redacted = self.redactor.line(line);
        let line = redacted.as_deref().unwrap_or(line);
        self.log.extend_from_slice(line);
        if newline {
            self.log.push(b'\n');
        }
        if self.keep_lines {
            self.lines.push(Piece::Text(line.to_vec()));
        }
    }

    fn oversized(&mut self, n: u64, newline: bool) {
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

impl LineSink for Batch<'_> {
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
        let redactor = Redactor::new(blocks);
        let mut split = Splitter::new(cap);
        let mut batch = Batch::new(&redactor, true);
        for chunk in input.chunks(step) {
            split.feed(chunk, &mut batch);
        }
        match split.finish() {
            Found::Buffered => batch.text(split.line(), false),
            Found::Oversized(n) => batch.oversized(n, false),
            _ => {}
        }
        batch.log
    }

    #[test]
    fn plain_output_is_logged_byte_for_byte() {
        let input = b"{\"a\":1}\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\nend";
        for step in 1..input.len() {
            assert_eq!(logged(input, 16, step, &[]), input, "step {step}");
        }
    }

    #[test]
    fn a_private_block_in_an_over_long_line_never_reaches_the_log() {
        let input = b"ok\nhead VF-PRIVATE-FILE-RANGES/1 secret secret secret\nnext\n";
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
