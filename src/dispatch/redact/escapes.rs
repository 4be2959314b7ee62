//! JSON string literals in one output line, found and decoded without parsing
//! the line (it may be a whole frame, one line of a pretty-printed document,
//! or no JSON at all), and text encoded back into one; and a loose reading
//! of `\uXXXX` escapes at any depth, for the redactor's cheap triggers.

use std::borrow::Cow;

use memchr::{memchr, memchr2};

/// One string literal: the byte range of its content (between the quotes;
/// an unterminated one runs to the end of the line), and whether it is an
/// object key (a `:` follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Literal {
    pub start: usize,
    pub end: usize,
    pub key: bool,
}

/// Every string literal of `line`, in order.
pub fn literals(line: &[u8]) -> Vec<Literal> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(q) = memchr(b'"', &line[from..]) {
        let start = from + q + 1;
        let end = closing_quote(line, start);
        let after = line.get(end + 1..).unwrap_or_default();
        let key = after.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
        out.push(Literal { start, end, key });
        from = end + 1;
        if from >= line.len() {
            break;
        }
    }
    out
}

/// The offset of the `"` that closes a string whose content starts at
/// `from`, or the line's length.
fn closing_quote(s: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(j) = memchr2(b'"', b'\\', s.get(i..).unwrap_or_default()) {
        let at = i + j;
        if s[at] == b'"' {
            return at;
        }
        i = at + 2;
    }
    s.len()
}

/// A string literal's content, unescaped. An escape JSON does not know is
/// kept as written; a lone surrogate becomes U+FFFD.
pub fn decode(s: &[u8]) -> Cow<'_, [u8]> {
    if memchr(b'\\', s).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(j) = memchr(b'\\', &s[i..]) {
        out.extend_from_slice(&s[i..i + j]);
        i += j;
        i += unescape(s, i, &mut out);
    }
    out.extend_from_slice(&s[i..]);
    Cow::Owned(out)
}

/// Appends what the escape at `s[i]` (a backslash) stands for; returns how
/// many bytes it took.
fn unescape(s: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let simple = match s.get(i + 1) {
        Some(b'"') => b'"',
        Some(b'\\') => b'\\',
        Some(b'/') => b'/',
        Some(b'b') => 0x08,
        Some(b'f') => 0x0c,
        Some(b'n') => b'\n',
        Some(b'r') => b'\r',
        Some(b't') => b'\t',
        Some(b'u') => return unicode(s, i, out),
        _ => {
            out.push(b'\\');
            return 1;
        }
    };
    out.push(simple);
    2
}

/// `\uXXXX`, or a surrogate pair of two.
fn unicode(s: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(hi) = hex4(s, i + 2) else {
        out.push(b'\\');
        return 1;
    };
    let (c, used) = match hi {
        0xD800..=0xDBFF => match (s.get(i + 6..i + 8), hex4(s, i + 8)) {
            (Some(b"\\u"), Some(lo @ 0xDC00..=0xDFFF)) => {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                (char::from_u32(c), 12)
            }
            _ => (None, 6),
        },
        _ => (char::from_u32(hi), 6),
    };
    let mut buf = [0u8; 4];
    let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    used
}

fn hex4(s: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(s.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

/// `text` as the content of a JSON string literal, escaped as serde_json
/// escapes (so a string re-encoded unchanged keeps its bytes).
pub fn encode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 2);
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out
}

/// At most this many bytes spell one character in a loose reading: `\u0056`
/// behind up to two more backslashes (JSON text inside a JSON string).
pub const MAX_SPELLING: usize = 8;

/// `s` with every run of backslashes before `uXXXX` (an ASCII character)
/// read as that character, and before `"` as `"`: the ASCII text an escaped
/// echo spells, at any depth of quoting. Only for finding triggers: the
/// offsets in it map back with [`raw_offset`].
pub fn loosen(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(j) = memchr(b'\\', &s[i..]) {
        out.extend_from_slice(&s[i..i + j]);
        i += j;
        let (spelled, used) = spelling(s, i);
        match spelled {
            Some(b) => out.push(b),
            None => out.extend_from_slice(&s[i..i + used]),
        }
        i += used;
    }
    out.extend_from_slice(&s[i..]);
    out
}

/// The character a run of backslashes at `s[i]` spells, and the run's length
/// with what it spells (without a character: the run alone).
fn spelling(s: &[u8], i: usize) -> (Option<u8>, usize) {
    let run = s[i..].iter().take_while(|&&b| b == b'\\').count();
    let at = i + run;
    match s.get(at) {
        Some(b'"') => (Some(b'"'), run + 1),
        Some(b'u') => match hex4(s, at + 1) {
            Some(c) if c < 0x80 => (Some(c as u8), run + 5),
            _ => (None, run),
        },
        _ => (None, run),
    }
}

/// The offset in `s` of the byte at `pos` of `loosen(s)`.
pub fn raw_offset(s: &[u8], pos: usize) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < s.len() && n < pos {
        if s[i] != b'\\' {
            i += 1;
            n += 1;
            continue;
        }
        match spelling(s, i) {
            (Some(_), used) => {
                i += used;
                n += 1;
            }
            (None, used) => {
                let take = used.min(pos - n);
                i += take;
                n += take;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_know_keys_values_and_escaped_quotes() {
        let line = br#"{"a" : "x\"y", "b":["c"]} "open"#;
        let got: Vec<(&[u8], bool)> = literals(line)
            .iter()
            .map(|l| (&line[l.start..l.end], l.key))
            .collect();
        let want: Vec<(&[u8], bool)> = vec![
            (b"a", true),
            (br#"x\"y"#, false),
            (b"b", true),
            (b"c", false),
            (b"open", false),
        ];
        assert_eq!(got, want);
        assert!(literals(b"no strings").is_empty());
        assert_eq!(literals(b"\"\"").len(), 1);
    }

    #[test]
    fn decoding_reads_every_escape() {
        let s = br#"\u0053\u0045C\"\\\/\n\t\ud83d\ude00\ud800x\q"#;
        let want = "SEC\"\\/\n\t\u{1F600}\u{FFFD}x\\q";
        assert_eq!(&*decode(s), want.as_bytes());
        assert!(matches!(decode(b"plain"), Cow::Borrowed(_)));
        // Encoding and decoding round-trip, control characters included.
        let text = "a\"b\\c\nd\u{1}é";
        assert_eq!(&*decode(&encode(text.as_bytes())), text.as_bytes());
        let quoted = format!(
            "\"{}\"",
            String::from_utf8(encode(text.as_bytes())).unwrap()
        );
        assert_eq!(serde_json::from_str::<String>(&quoted).unwrap(), text);
    }

    #[test]
    fn a_loose_reading_spells_escapes_at_any_depth() {
        let s = br#"x \u0056F\\u002d\\\"end\u00e9"#;
        let loose = loosen(s);
        assert_eq!(loose, br#"x VF-"end\u00e9"#);
        for (pos, &b) in loose.iter().enumerate() {
            let raw = raw_offset(s, pos);
            assert!(raw < s.len(), "{pos}");
            if b != b'\\' && s[raw] != b'\\' {
                assert_eq!(s[raw], b, "{pos}");
            }
        }
        assert_eq!(raw_offset(s, 2), 2);
        assert_eq!(raw_offset(s, 3), 8);
        assert_eq!(raw_offset(s, loose.len()), s.len());
    }
}
