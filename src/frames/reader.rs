//! Line splitting with a length cap: memory stays bounded whatever the input.

use std::io::{self, BufRead};

/// One line of input, without its newline.
pub enum Line<'a> {
    Text(&'a [u8]),
    /// A line longer than the cap; this many bytes were skipped.
    Oversized(u64),
}

pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    cap: usize,
    /// Bytes of the line last returned straight from `inner`'s buffer,
    /// consumed on the next call (saves copying whole lines).
    deferred: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R, cap: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            cap,
            deferred: 0,
        }
    }

    /// The next line; a last line without a newline is still returned.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.inner.consume(std::mem::take(&mut self.deferred));
        self.buf.clear();
        // Give back the memory of an earlier long line.
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        // Fast path: the whole line is already buffered.
        let direct = match self.inner.fill_buf() {
            Ok(avail) => memchr::memchr(b'\n', avail).filter(|&i| i <= self.cap),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            Err(e) => return Err(e),
        };
        if let Some(i) = direct {
            self.deferred = i + 1;
            let avail = self.inner.fill_buf()?;
            return Ok(Some(Line::Text(&avail[..i])));
        }
        let mut skipped: u64 = 0;
        let mut over = false;
        let mut any = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (chunk, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (&avail[..i], true),
                None => (avail, false),
            };
            if over {
                skipped += chunk.len() as u64;
            } else if self.buf.len() + chunk.len() > self.cap {
                over = true;
                skipped = (self.buf.len() + chunk.len()) as u64;
                self.buf = Vec::new();
            } else {
                // Grow by doubling, never past the cap; past 1 MiB jump straight
                // to the cap, so a huge line does not leave a trail of copies
                // (each one resident) on its way there.
                let need = self.buf.len() + chunk.len();
                if need > self.buf.capacity() {
                    let want = if need > 1 << 20 {
                        self.cap
                    } else {
                        (self.buf.capacity() * 2).max(need).min(self.cap)
                    };
                    self.buf.reserve_exact(want - self.buf.len());
                }
                self.buf.extend_from_slice(chunk);
            }
            let used = chunk.len() + usize::from(done);
            self.inner.consume(used);
            if done {
                break;
            }
        }
        Ok(Some(if over {
            Line::Oversized(skipped)
        } else {
            Line::Text(&self.buf)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<String> {
        let mut r = LineReader::new(io::BufReader::with_capacity(4, input), cap);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push(match l {
                Line::Text(b) => String::from_utf8_lossy(b).into_owned(),
                Line::Oversized(n) => format!("<{n}>"),
            });
        }
        out
    }

    #[test]
    fn splits_and_caps() {
        assert_eq!(lines(b"a\nbb\n\nccc", 10), ["a", "bb", "", "ccc"]);
        assert_eq!(lines(b"a\n0123456789AB\nz\n", 10), ["a", "<12>", "z"]);
        assert_eq!(lines(b"0123456789AB", 10), ["<12>"]);
        assert!(lines(b"", 10).is_empty());
    }
}
