//! Redaction across lines. [`Redactor::line`] sees one line; an agent that
//! streams its text in chunks can split a private block or an MCP secret
//! across two frames (or a text-mode engine across two lines), and no one
//! line then holds enough of it to be recognised.
//!
//! The stream reads each line's text as the engine meant it: every JSON
//! string value decoded (a frame), or the line itself and its newline (text).
//! A line whose value ends with the beginning of a secret (a form of the
//! redactor, any length) is held back; the next line that follows the
//! stream either goes on with the secret (a value that begins with its rest,
//! or lies wholly within it) or does not. When the secret is completed, every
//! piece of it is cut, in the held lines and in this one; when it is not,
//! the held lines go on as they are. Only the lines a live match needs are
//! held, and never longer than until the next line: the latency a live event
//! pays is one line, and only when its text ends like a secret begins. Every
//! line then goes through [`Redactor::line`] as before, so the per-line
//! rules still apply. Lines that do not follow the stream (vf's own, on an
//! ACP agent's log) keep their place in the order, without taking part.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use memchr::memchr_iter;

use super::{REDACTED, Redactor, escapes, splice};

/// A piece of a secret in one line: in the decoded text of its string
/// literal `lit`, or in the line's own bytes (a line that is not JSON).
#[derive(Debug, Clone, PartialEq)]
struct Spot {
    lit: Option<usize>,
    range: Range<usize>,
}

/// One line's text as the stream matches it.
#[derive(Clone)]
struct Text {
    lit: Option<usize>,
    /// The key the value is under (`None`: a text line, or no key): a
    /// secret goes on only in a value under the same key.
    key: Option<Vec<u8>>,
    text: Vec<u8>,
    /// How much of `text` is in the line (a text line's newline is not).
    len: usize,
}

impl Text {
    fn spot(&self, range: Range<usize>) -> Spot {
        Spot {
            lit: self.lit,
            range: range.start.min(self.len)..range.end.min(self.len),
        }
    }
}

/// A secret begun in held lines: `matched` bytes of form `form` seen so far.
struct Chain {
    form: usize,
    key: Option<Vec<u8>>,
    matched: usize,
    /// Each piece: the line (its sequence number) and where in it.
    spots: Vec<(u64, Spot)>,
}

struct Held<T> {
    line: Vec<u8>,
    tag: T,
    cuts: Vec<Spot>,
}

/// The redactor of one output stream; `T` travels with each line.
pub struct Stream<T> {
    redactor: Arc<Redactor>,
    held: VecDeque<Held<T>>,
    /// The sequence number of `held[0]`.
    first: u64,
    chains: Vec<Chain>,
}

impl<T> Stream<T> {
    pub fn new(redactor: Arc<Redactor>) -> Stream<T> {
        Stream {
            redactor,
            held: VecDeque::new(),
            first: 0,
            chains: Vec::new(),
        }
    }

    /// One line in (no newline); the lines now safe to write out, in order,
    /// redacted. `follows`: the line is the engine's, part of its stream.
    pub fn push(&mut self, line: Vec<u8>, tag: T, follows: bool) -> Vec<(Vec<u8>, T)> {
        if self.redactor.forms.is_empty() || (!follows && self.held.is_empty()) {
            let out = self.redactor.line(&line).unwrap_or(line);
            return vec![(out, tag)];
        }
        let seq = self.first + self.held.len() as u64;
        self.held.push_back(Held {
            line,
            tag,
            cuts: Vec::new(),
        });
        if follows {
            let texts = texts(&self.held.back().expect("just pushed").line);
            self.follow(seq, &texts);
        }
        // Lines no live match reaches are safe now.
        let keep = self
            .chains
            .iter()
            .filter_map(|c| c.spots.first().map(|s| s.0))
            .min();
        self.release(keep.unwrap_or(seq + 1))
    }

    /// The end of the stream: every held line, as it is.
    pub fn finish(&mut self) -> Vec<(Vec<u8>, T)> {
        self.chains.clear();
        self.release(u64::MAX)
    }

    /// Goes on with the live matches in line `seq`, cuts the completed ones,
    /// and starts those its texts' ends begin.
    fn follow(&mut self, seq: u64, texts: &[Text]) {
        let forms = &self.redactor.forms;
        let mut alive = Vec::new();
        for mut c in std::mem::take(&mut self.chains) {
            let rest = &forms[c.form][c.matched..];
            let texts = || texts.iter().filter(|t| t.key == c.key);
            if let Some(t) = texts().find(|t| t.text.starts_with(rest)) {
                c.spots.push((seq, t.spot(0..rest.len())));
                for (s, spot) in c.spots {
                    self.held[(s - self.first) as usize].cuts.push(spot);
                }
            } else if let Some(t) =
                texts().find(|t| !t.text.is_empty() && rest.starts_with(&t.text))
            {
                c.spots.push((seq, t.spot(0..t.text.len())));
                c.matched += t.text.len();
                alive.push(c);
            }
        }
        for t in texts {
            for (form, f) in forms.iter().enumerate() {
                for k in begun(&t.text, f) {
                    let spot = t.spot(t.text.len() - k..t.text.len());
                    alive.push(Chain {
                        form,
                        key: t.key.clone(),
                        matched: k,
                        spots: vec![(seq, spot)],
                    });
                }
            }
        }
        self.chains = alive;
    }

    /// The held lines before sequence number `upto`, cut and redacted.
    fn release(&mut self, upto: u64) -> Vec<(Vec<u8>, T)> {
        let mut out = Vec::new();
        while self.first < upto {
            let Some(h) = self.held.pop_front() else {
                break;
            };
            self.first += 1;
            let line = match h.cuts.is_empty() {
                true => h.line,
                false => cut(&h.line, h.cuts),
            };
            let line = self.redactor.line(&line).unwrap_or(line);
            out.push((line, h.tag));
        }
        out
    }
}

/// The texts a line holds: its JSON string values decoded, or, when it does
/// not read as JSON, the line twice: as it is (a secret wrapped over lines)
/// and with its newline (a secret that holds one).
fn texts(line: &[u8]) -> Vec<Text> {
    let json = line
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'[' | b'"'));
    if !json {
        let mut text = line.to_vec();
        text.push(b'\n');
        let plain = Text {
            lit: None,
            key: None,
            text: line.to_vec(),
            len: line.len(),
        };
        let lined = Text {
            text,
            ..plain.clone()
        };
        return vec![plain, lined];
    }
    let lits = escapes::literals(line);
    let decode = |i: usize| escapes::decode(&line[lits[i].start..lits[i].end]).into_owned();
    let values = (0..lits.len()).filter(|&i| !lits[i].key);
    values
        .map(|i| {
            let text = decode(i);
            Text {
                lit: Some(i),
                key: i.checked_sub(1).filter(|&k| lits[k].key).map(decode),
                len: text.len(),
                text,
            }
        })
        .collect()
}

/// The lengths `k` (shorter than `form`) for which `text` ends with the
/// first `k` bytes of `form`.
fn begun(text: &[u8], form: &[u8]) -> Vec<usize> {
    let Some(&first) = form.first() else {
        return Vec::new();
    };
    let from = text.len().saturating_sub(form.len() - 1);
    memchr_iter(first, &text[from..])
        .map(|i| from + i)
        .filter(|&i| form.starts_with(&text[i..]))
        .map(|i| text.len() - i)
        .collect()
}

/// `line` with each spot replaced by [`REDACTED`].
fn cut(line: &[u8], spots: Vec<Spot>) -> Vec<u8> {
    let mut raw: Vec<Range<usize>> = Vec::new();
    let lits = escapes::literals(line);
    let mut cuts: Vec<Vec<Range<usize>>> = vec![Vec::new(); lits.len()];
    for s in spots.into_iter().filter(|s| !s.range.is_empty()) {
        match s.lit {
            Some(i) if i < cuts.len() => cuts[i].push(s.range),
            Some(_) => {}
            None => raw.push(s.range),
        }
    }
    if raw.is_empty() {
        let texts: Vec<_> = lits
            .iter()
            .map(|l| escapes::decode(&line[l.start..l.end]))
            .collect();
        return splice(line, &lits, &texts, cuts);
    }
    raw.sort_by_key(|r| r.start);
    let mut out = Vec::with_capacity(line.len());
    let mut at = 0;
    for r in raw {
        if r.end <= at {
            continue;
        }
        if r.start >= at {
            out.extend_from_slice(&line[at..r.start]);
            out.extend_from_slice(REDACTED.as_bytes());
        }
        at = r.end;
    }
    out.extend_from_slice(&line[at..]);
    out
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
