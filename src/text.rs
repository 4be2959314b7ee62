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
    fn strip_ansi_keeps_plain_text() {
        assert_eq!(strip_ansi("\u{1b}[31;1mred\u{1b}[0m plain"), "red plain");
    }
}
