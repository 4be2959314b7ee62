//! Small text helpers shared by the projector, the runtime and the doctor.

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` quoted and escaped for a one-line message (`{:?}`), cut after
/// `max_chars` characters with the full size named, so a 10 KB bad value is
/// not echoed back in full.
pub fn shown(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        None => format!("{s:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes)", &s[..end], s.len()),
    }
}

/// `s` for a one-line message, unquoted: control characters (newlines,
/// terminal escapes) and invisible ones (bidi overrides, zero-width) escaped (`\n`, `\u{1b}`), cut after
/// `max_chars` characters with the full size named. For text that is not
/// vf's own (a value read from a file), so it can neither span lines nor
/// drive the terminal.
pub fn one_line(s: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == max_chars {
            out.push_str(&format!("… ({} bytes)", s.len()));
            return out;
        }
        if matches!(c, '\n' | '\r' | '\t') {
            out.extend(c.escape_debug());
        } else if is_invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` for a multi-line display (a transcript), whole: line breaks and tabs
/// stay, a `\r` before a `\n` goes, and every other control character and
/// every bidi override or isolate is escaped (`\r`, `\u{1b}`, `\u{202e}`),
/// so text that is not vf's own can neither drive the terminal (move the
/// cursor, retitle, clear it) nor show its lines in another order. Joiners
/// and marks that writing needs (ZWJ in emoji, ZWNJ in Persian) stay.
pub fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| matches!(c, '\n' | '\t') || !(c.is_control() || reorders(c));
    if s.chars().all(keep) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\r' if it.peek() == Some(&'\n') => {}
            '\r' => out.push_str("\\r"),
            c if keep(c) => out.push(c),
            c => out.extend(c.escape_unicode()),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A bidi override, embedding or isolate, or a line or paragraph separator:
/// what can show text in another order or on other lines than it is.
fn reorders(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// Control characters plus the Unicode characters that change how text is
/// displayed without being visible (bidi overrides, zero-width marks, BOM).
pub fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}')
}

/// The longest answer vf keeps in memory, for every engine: beyond it only
/// the answer's last bytes are kept (its fenced summary is last), the whole
/// of it stays in the raw log, and the result's `warnings` say so.
pub const ANSWER_MAX: usize = 4 << 20;

/// The last `max` bytes of a text that arrives in pieces, and how many came
/// before them: memory stays under twice `max` however long the text grows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    text: String,
    /// Bytes dropped from the front of `text` so far.
    dropped: u64,
    max: usize,
}

/// The first char boundary of `s` at or after `i`.
fn boundary_from(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl Tail {
    pub fn new(max: usize) -> Tail {
        Tail {
            text: String::new(),
            dropped: 0,
            max,
        }
    }

    /// `s`'s last `max` bytes.
    pub fn of(s: &str, max: usize) -> Tail {
        let mut t = Tail::new(max);
        t.push(s);
        t
    }

    pub fn push(&mut self, s: &str) {
        if s.len() >= self.max {
            // Nothing kept so far can stay: only `s`'s own end.
            let start = boundary_from(s, s.len() - self.max);
            self.dropped += (self.text.len() + start) as u64;
            self.text.clear();
            self.text.push_str(&s[start..]);
            return;
        }
        self.text.push_str(s);
        if self.text.len() > 2 * self.max {
            // Moved once per `max` bytes at most: linear in the text's length.
            let start = self.start();
            self.text.drain(..start);
            self.dropped += start as u64;
        }
    }

    /// Where the kept text begins in `text`.
    fn start(&self) -> usize {
        boundary_from(&self.text, self.text.len().saturating_sub(self.max))
    }

    /// The kept text: the last `max` bytes at most.
    pub fn as_str(&self) -> &str {
        &self.text[self.start()..]
    }

    /// Bytes of the text that are not kept.
    pub fn dropped(&self) -> u64 {
        self.dropped + self.start() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.dropped = 0;
    }

    pub fn into_string(mut self) -> String {
        let start = self.start();
        self.text.drain(..start);
        self.text
    }
}

/// Removes ANSI escape sequences (CSI `ESC [ ... final` and two-byte `ESC x`),
/// which some CLIs print around option names even with `NO_COLOR`.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('[') => {
                for c in it.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            // OSC (hyperlinks): up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = it.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        it.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The SHA-256 of `bytes`, in lower-case hex (answers, generated files, ids).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("abc", 10), "abc");
    }

    #[test]
    fn shown_cuts_long_values() {
        assert_eq!(shown("a\nb", 10), "\"a\\nb\"");
        let long = "x".repeat(10_000);
        assert_eq!(shown(&long, 3), "\"xxx\"… (10000 bytes)");
    }

    #[test]
    fn visible_keeps_lines_and_escapes_what_drives_the_terminal() {
        assert_eq!(visible("a\n\tb"), "a\n\tb");
        assert!(matches!(visible("plain"), std::borrow::Cow::Borrowed(_)));
        let written = "👨\u{200d}👩\u{200d}👧 می\u{200c}خواهم";
        assert_eq!(visible(written), written);
        assert_eq!(
            visible("x\u{1b}]0;t\u{7}\u{1b}[2J\r\ny\rz\u{9b}\u{202e}"),
            "x\\u{1b}]0;t\\u{7}\\u{1b}[2J\ny\\rz\\u{9b}\\u{202e}"
        );
    }

    #[test]
    fn one_line_escapes_controls_and_cuts() {
        assert_eq!(
            one_line("a\nb\u{1b}[2J\u{202e}x \"q\"\u{ad}\u{2028}", 100),
            "a\\nb\\u{1b}[2J\\u{202e}x \"q\"\\u{ad}\\u{2028}"
        );
        assert_eq!(one_line(&"é".repeat(1000), 3), "ééé… (2000 bytes)");
        assert_eq!(one_line("abc", 3), "abc");
    }

    #[test]
    fn a_tail_keeps_the_last_bytes_on_char_boundaries() {
        let mut t = Tail::new(4);
        t.push("ab");
        assert_eq!((t.as_str(), t.dropped()), ("ab", 0));
        // A piece of `max` bytes or more leaves only itself.
        t.push("cdé");
        assert_eq!((t.as_str(), t.dropped()), ("cdé", 2));
        t.push("x");
        assert_eq!((t.as_str(), t.dropped()), ("déx", 3));
        t.push("0123456789");
        assert_eq!((t.as_str(), t.dropped()), ("6789", 13));
        assert_eq!(t.clone().into_string(), "6789");
        t.clear();
        assert!(t.is_empty() && t.dropped() == 0);
        // A cut inside a character moves on to the next boundary.
        let t = Tail::of("aééé", 4);
        assert_eq!((t.as_str(), t.dropped()), ("éé", 3));
        // Many small pieces: the kept text and the count add up.
        let mut t = Tail::new(1000);
        let mut whole = String::new();
        for i in 0..10_000 {
            let piece = format!("{i},");
            t.push(&piece);
            whole.push_str(&piece);
            assert!(t.text.len() <= 2000 + piece.len());
        }
        assert_eq!(whole.len() as u64, t.dropped() + t.as_str().len() as u64);
        assert!(whole.ends_with(t.as_str()) && t.as_str().len() == 1000);
    }

    #[test]
    fn strip_ansi_keeps_plain_text() {
        assert_eq!(strip_ansi("\u{1b}[31;1mred\u{1b}[0m plain"), "red plain");
    }
}
