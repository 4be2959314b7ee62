//! Line splitting with a length cap: memory stays bounded whatever the input.
//!
//! One splitter serves live dispatch (bytes pushed as the engine writes them)
//! and `vf replay` (a `BufRead` pulled line by line), so a replay of a raw log
//! sees exactly the lines the live run projected.

use std::io::{self, BufRead};

/// Lines longer than this are reported as oversized instead of projected
/// (live dispatch still keeps their bytes in the raw log).
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// One line of input, without its newline.
pub enum Line<'a> {
    Text(&'a [u8]),
    /// A line longer than the cap; this many bytes were skipped.
    Oversized(u64),
}

/// What one [`Splitter::scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No line ended yet: every byte offered was taken.
    Nothing,
    /// A line ended; it is the first `n` bytes offered (nothing was copied).
    Direct(usize),
    /// A line ended; it was assembled inside the splitter: [`Splitter::line`].
    Buffered,
    /// A line over the cap ended; this many bytes of it were skipped.
    Oversized(u64),
}

/// Receives what [`Splitter::feed`] finds in a chunk.
pub trait LineSink {
    /// A whole line (`Oversized` when it passed the cap).
    fn line(&mut self, line: Line<'_>);
    /// Bytes of an oversized line, as they are dropped (for a caller that
    /// keeps them elsewhere, such as the raw log).
    fn spill(&mut self, _bytes: &[u8]) {}
}

/// The sans-IO core: offered bytes in, whole capped lines out.
pub struct Splitter {
    cap: usize,
    /// The current line when it spans chunks.
    buf: Vec<u8>,
    /// Length so far of the current line once it passed the cap.
    over: Option<u64>,
    /// The last scan ended a buffered line: clear `buf` before the next one.
    ended: bool,
}

impl Splitter {
    pub fn new(cap: usize) -> Splitter {
        Splitter {
            cap,
            buf: Vec::new(),
            over: None,
            ended: false,
        }
    }

    /// The line of the last `Found::Buffered`.
    pub fn line(&self) -> &[u8] {
        &self.buf
    }

    fn start_line(&mut self) {
        if std::mem::take(&mut self.ended) {
            self.buf.clear();
            // Give back the memory of an earlier long line.
            if self.buf.capacity() > 1 << 20 {
                self.buf = Vec::new();
            }
        }
    }

    /// Takes bytes from the front of `avail`, up to and including the next
    /// newline; returns how many it took and what ended. Bytes of an
    /// oversized line go to `spill` as they are dropped.
    pub fn scan(&mut self, avail: &[u8], spill: &mut impl FnMut(&[u8])) -> (usize, Found) {
        self.start_line();
        let (piece, newline) = match memchr::memchr(b'\n', avail) {
            Some(i) => (&avail[..i], true),
            None => (avail, false),
        };
        let used = piece.len() + usize::from(newline);
        // Fast path: the whole line is in `avail`.
        if newline && self.buf.is_empty() && self.over.is_none() && piece.len() <= self.cap {
            return (used, Found::Direct(piece.len()));
        }
        match self.over.as_mut() {
            Some(n) => {
                *n += piece.len() as u64;
                spill(piece);
            }
            // Checked before growing: the buffer never passes the cap.
            None if self.buf.len() + piece.len() > self.cap => {
                self.over = Some((self.buf.len() + piece.len()) as u64);
                spill(&self.buf);
                spill(piece);
                self.buf = Vec::new();
            }
            None => self.append(piece),
        }
        if !newline {
            return (used, Found::Nothing);
        }
        self.ended = true;
        let found = match self.over.take() {
            Some(n) => Found::Oversized(n),
            None => Found::Buffered,
        };
        (used, found)
    }

    /// Grows by doubling, never past the cap; past 1 MiB jumps straight to
    /// the cap, so a huge line does not leave a trail of resident copies.
    fn append(&mut self, piece: &[u8]) {
        let need = self.buf.len() + piece.len();
        if need > self.buf.capacity() {
            let want = if need > 1 << 20 {
                self.cap
            } else {
                (self.buf.capacity() * 2).max(need).min(self.cap)
            };
            self.buf.reserve_exact(want - self.buf.len());
        }
        self.buf.extend_from_slice(piece);
    }

    /// At the end of the input: a last line without its newline is still a line.
    pub fn finish(&mut self) -> Found {
        self.start_line();
        if let Some(n) = self.over.take() {
            return Found::Oversized(n);
        }
        if self.buf.is_empty() {
            return Found::Nothing;
        }
        self.ended = true;
        Found::Buffered
    }

    /// Splits a whole chunk, handing every line that ends in it to `sink`.
    pub fn feed(&mut self, mut chunk: &[u8], sink: &mut impl LineSink) {
        while !chunk.is_empty() {
            let (used, found) = self.scan(chunk, &mut |b| sink.spill(b));
            match found {
                Found::Nothing => {}
                Found::Direct(n) => sink.line(Line::Text(&chunk[..n])),
                Found::Buffered => sink.line(Line::Text(&self.buf)),
                Found::Oversized(n) => sink.line(Line::Oversized(n)),
            }
            chunk = &chunk[used..];
        }
    }
}

/// Pulls capped lines from a `BufRead` (for `vf replay`).
pub struct LineReader<R> {
    inner: R,
    split: Splitter,
    /// Bytes of the line last returned straight from `inner`'s buffer,
    /// consumed on the next call (saves copying whole lines).
    deferred: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, cap: usize) -> Self {
        LineReader {
            inner,
            split: Splitter::new(cap),
            deferred: 0,
        }
    }

    /// The next line; a last line without a newline is still returned.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.inner.consume(std::mem::take(&mut self.deferred));
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(match self.split.finish() {
                    Found::Oversized(n) => Some(Line::Oversized(n)),
                    Found::Buffered => Some(Line::Text(self.split.line())),
                    Found::Nothing | Found::Direct(_) => None,
                });
            }
            let (used, found) = self.split.scan(avail, &mut |_| {});
            match found {
                Found::Nothing => self.inner.consume(used),
                Found::Direct(n) => {
                    self.deferred = used;
                    // The same buffered bytes: fill_buf does not read again.
                    let avail = self.inner.fill_buf()?;
                    return Ok(Some(Line::Text(&avail[..n])));
                }
                Found::Buffered => {
                    self.inner.consume(used);
                    return Ok(Some(Line::Text(self.split.line())));
                }
                Found::Oversized(n) => {
                    self.inner.consume(used);
                    return Ok(Some(Line::Oversized(n)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(l: Line<'_>) -> String {
        match l {
            Line::Text(b) => String::from_utf8_lossy(b).into_owned(),
            Line::Oversized(n) => format!("<{n}>"),
        }
    }

    fn pulled(input: &[u8], cap: usize) -> Vec<String> {
        let mut r = LineReader::new(io::BufReader::with_capacity(4, input), cap);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(show(l));
        }
        out
    }

    #[derive(Default)]
    struct Collect {
        lines: Vec<String>,
        spilled: Vec<u8>,
    }

    impl LineSink for Collect {
        fn line(&mut self, line: Line<'_>) {
            self.lines.push(show(line));
        }
        fn spill(&mut self, bytes: &[u8]) {
            self.spilled.extend_from_slice(bytes);
        }
    }

    /// Pushed in chunks of `step` bytes, as a live pipe delivers them.
    fn pushed(input: &[u8], cap: usize, step: usize) -> Collect {
        let mut s = Splitter::new(cap);
        let mut c = Collect::default();
        for chunk in input.chunks(step) {
            s.feed(chunk, &mut c);
        }
        match s.finish() {
            Found::Oversized(n) => c.line(Line::Oversized(n)),
            Found::Buffered => c.lines.push(show(Line::Text(s.line()))),
            _ => {}
        }
        c
    }

    #[test]
    fn splits_and_caps() {
        assert_eq!(pulled(b"a\nbb\n\nccc", 10), ["a", "bb", "", "ccc"]);
        assert_eq!(pulled(b"a\n0123456789AB\nz\n", 10), ["a", "<12>", "z"]);
        assert_eq!(pulled(b"0123456789AB", 10), ["<12>"]);
        assert!(pulled(b"", 10).is_empty());
    }

    #[test]
    fn pushing_in_any_chunks_equals_pulling() {
        let input = b"a\n0123456789AB\nz\n\nlast-one-long-xx";
        for step in 1..input.len() {
            let c = pushed(input, 10, step);
            assert_eq!(c.lines, pulled(input, 10), "step {step}");
            // Every byte of the oversized lines reaches `spill`, nothing else does.
            assert_eq!(c.spilled, b"0123456789ABlast-one-long-xx", "step {step}");
        }
    }
}
