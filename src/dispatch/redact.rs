//! Private ranges echoed back by an engine (copilot's `user.message`,
//! gemini's `role:user`, a tool that reads the prompt file) are redacted from
//! each output line before it is projected or written to the raw log.
//!
//! One line in, one line out, so every `rawRange` stays valid. A line is
//! looked at only when it holds a trigger: the wire header
//! `VF-PRIVATE-FILE-RANGES` (or either half of it, for an echo split across
//! fields), or the start of a block's JSON, written out or spelled with
//! `\uXXXX` escapes. It is then redacted in three steps:
//! 1. the delivered block texts as written are replaced textually (a text
//!    line holding a block outside any string);
//! 2. its JSON strings are decoded, whatever their escapes. In the values read
//!    one after another (an echo split across adjacent fields), every
//!    delivered block text and every header to the end of the string that
//!    holds it is replaced, and so it is in each key. In each string, a piece
//!    of a delivered block as a split leaves it (the string lies within the
//!    block, ends with its beginning or begins with its end; at least
//!    `PIECE` bytes) is replaced too, in fields apart or not; and a string
//!    whose decoded text still spells a header (JSON inside a JSON string) is
//!    cut there. Only the strings that change are written anew, the rest of
//!    the line stays byte-exact;
//! 3. the block texts JSON-escaped are replaced textually, and a header still
//!    left (outside any string) is cut to the end of its JSON string, or of
//!    the line.
//!
//! Steps 2 and 3 also catch blocks vf did not deliver in this run (a resumed
//! session echoing an earlier turn).
//!
//! The secrets of the unit's MCP servers (their `env` and `headers` values,
//! at least [`MIN_SECRET`] bytes) are redacted the same way: each is a form
//! and a trigger of its own. A secret split across lines (frames, text
//! lines) is the [`stream`] redactor's.

mod escapes;
pub mod stream;

use std::borrow::Cow;
use std::ops::Range;

use memchr::memmem::Finder;

use escapes::Literal;

pub const REDACTED: &str = "[private ranges redacted]";
/// The wire header without its version, so `\/` escaping cannot hide it.
pub const MARK: &[u8] = b"VF-PRIVATE-FILE-RANGES";
/// The header's halves: one of them is whole in an echo that splits the
/// header across two fields.
const MARK_HALVES: [&[u8]; 2] = [b"VF-PRIVATE-", b"FILE-RANGES"];
/// How a block's JSON line starts (`[{"end":...`), raw and escaped: a text
/// echo splits the block over two lines.
const JSON_STARTS: [&[u8]; 2] = [b"[{\"end\":", b"[{\\\"end\\\":"];

/// The shortest MCP secret redacted: a shorter value (`1`, `on`) cannot be
/// told from other text.
pub const MIN_SECRET: usize = 4;

pub struct Redactor {
    /// The delivered block texts (and their JSON lines), longest first: as
    /// written in a text line, and what a decoded string may hold.
    forms: Vec<Vec<u8>>,
    /// The same JSON-escaped, replaced as they are, longest first.
    escaped: Vec<Vec<u8>>,
    mark: Finder<'static>,
    /// What makes a line worth a look.
    triggers: Vec<Finder<'static>>,
    /// The longest trigger's length.
    longest_trigger: usize,
    /// `\u`: the line may spell a trigger with escapes.
    escape: Finder<'static>,
}

impl Redactor {
    /// `blocks`: the exact private-range blocks delivered in this run.
    #[cfg(test)]
    pub fn new(blocks: &[String]) -> Redactor {
        Redactor::with_secrets(blocks, &[])
    }

    /// `secrets`: the unit's MCP `env` and `headers` values as well.
    pub fn with_secrets(blocks: &[String], secrets: &[String]) -> Redactor {
        let mut forms = Vec::new();
        for block in blocks.iter().filter(|b| !b.is_empty()) {
            forms.push(block.as_str());
            // The JSON line alone, for an echo that splits the block over lines.
            forms.extend(block.split_once('\n').map(|(_, json)| json));
        }
        forms.retain(|f| f.len() >= PIECE);
        let secrets: Vec<&str> = secrets
            .iter()
            .map(String::as_str)
            .filter(|s| s.len() >= MIN_SECRET)
            .collect();
        forms.extend(&secrets);
        let mut escaped = Vec::new();
        for form in &forms {
            let quoted = serde_json::to_string(form).unwrap_or_default();
            escaped.push(quoted.as_bytes()[1..quoted.len() - 1].to_vec());
        }
        let mut forms: Vec<Vec<u8>> = forms.iter().map(|f| f.as_bytes().to_vec()).collect();
        for list in [&mut escaped, &mut forms] {
            list.sort_by_key(|n| std::cmp::Reverse(n.len()));
            list.dedup();
        }
        let starts: &[&[u8]] = if blocks.is_empty() { &[] } else { &JSON_STARTS };
        let mut words: Vec<Vec<u8>> = MARK_HALVES
            .iter()
            .chain(starts)
            .map(|s| s.to_vec())
            .collect();
        // A secret is its own trigger, as written and JSON-escaped.
        for secret in secrets {
            let quoted = serde_json::to_string(secret).unwrap_or_default();
            words.push(secret.as_bytes().to_vec());
            words.push(quoted.as_bytes()[1..quoted.len() - 1].to_vec());
        }
        words.dedup();
        let longest_trigger = words.iter().map(Vec::len).max().unwrap_or(0);
        Redactor {
            forms,
            escaped,
            mark: Finder::new(MARK),
            triggers: words.iter().map(|w| Finder::new(w).into_owned()).collect(),
            longest_trigger,
            escape: Finder::new(b"\\u"),
        }
    }

    /// Where a private block may start in `bytes`, written out or spelled
    /// with escapes (for streamed, over-long lines that are never held whole).
    pub fn trigger(&self, bytes: &[u8]) -> Option<usize> {
        let written = self.written_trigger(bytes);
        let spelled = self.spelled_trigger(bytes);
        written.into_iter().chain(spelled).min()
    }

    fn written_trigger(&self, bytes: &[u8]) -> Option<usize> {
        self.triggers.iter().filter_map(|f| f.find(bytes)).min()
    }

    /// A trigger that only escapes spell; the common line holds no `\u`
    /// and costs one search.
    fn spelled_trigger(&self, bytes: &[u8]) -> Option<usize> {
        self.escape.find(bytes)?;
        let loose = escapes::loosen(bytes);
        let at = self.written_trigger(&loose)?;
        Some(escapes::raw_offset(bytes, at))
    }

    /// The longest trigger in its longest spelling, less one: what a stream
    /// must hold back.
    pub fn trigger_overlap(&self) -> usize {
        self.longest_trigger * escapes::MAX_SPELLING - 1
    }

    /// The line redacted, or `None` when it holds nothing private.
    pub fn line(&self, line: &[u8]) -> Option<Vec<u8>> {
        if self.written_trigger(line).is_none() && self.spelled_trigger(line).is_none() {
            return None;
        }
        // A block written out is outside any JSON string (a text line): it
        // goes first, before its own quotes are read as strings.
        let mut out = line.to_vec();
        for f in &self.forms {
            out = replace_all(&out, f, REDACTED.as_bytes());
        }
        if let Some(decoded) = self.redact_strings(&out) {
            out = decoded;
        }
        for n in &self.escaped {
            out = replace_all(&out, n, REDACTED.as_bytes());
        }
        if self.mark.find(&out).is_some() {
            out = self.cut_strings(&out);
        }
        (out != line).then_some(out)
    }

    /// Step 2: each JSON string decoded and searched; the line with the
    /// strings that hold private text written anew, or `None`.
    fn redact_strings(&self, line: &[u8]) -> Option<Vec<u8>> {
        let lits = escapes::literals(line);
        let texts: Vec<Cow<[u8]>> = lits
            .iter()
            .map(|l| escapes::decode(&line[l.start..l.end]))
            .collect();
        let mut cuts: Vec<Vec<Range<usize>>> = vec![Vec::new(); lits.len()];
        let values: Vec<usize> = (0..lits.len()).filter(|&i| !lits[i].key).collect();
        self.find_across(&values, &texts, &mut cuts);
        for key in (0..lits.len()).filter(|&i| lits[i].key) {
            self.find_across(&[key], &texts, &mut cuts);
        }
        for (text, cut) in texts.iter().zip(&mut cuts) {
            if let Some(at) = self.spelled_mark(text) {
                cut.push(at..text.len());
            }
            for form in &self.forms {
                cut.extend(pieces(text, form));
            }
        }
        if cuts.iter().all(Vec::is_empty) {
            return None;
        }
        Some(splice(line, &lits, &texts, cuts))
    }

    /// Private text in the strings `seq` read one after another: each
    /// delivered form, and each header to the end of the string its last
    /// byte is in. Adds each string's part to `cuts`.
    fn find_across(&self, seq: &[usize], texts: &[Cow<[u8]>], cuts: &mut [Vec<Range<usize>>]) {
        let mut joined = Vec::new();
        let mut starts = Vec::with_capacity(seq.len() + 1);
        for &i in seq {
            starts.push(joined.len());
            joined.extend_from_slice(&texts[i]);
        }
        starts.push(joined.len());
        let mut spans = Vec::new();
        for form in &self.forms {
            spans.extend(memchr::memmem::find_iter(&joined, form).map(|a| a..a + form.len()));
        }
        for a in self.mark.find_iter(&joined) {
            let last = a + MARK.len() - 1;
            let k = starts.partition_point(|&s| s <= last) - 1;
            spans.push(a..starts[k + 1]);
        }
        for span in spans {
            for (k, &i) in seq.iter().enumerate() {
                let (s, e) = (starts[k], starts[k + 1]);
                if span.start < e && span.end > s {
                    cuts[i].push(span.start.max(s) - s..span.end.min(e) - s);
                }
            }
        }
    }

    /// Where a decoded string still spells a header with escapes.
    fn spelled_mark(&self, text: &[u8]) -> Option<usize> {
        self.escape.find(text)?;
        let loose = escapes::loosen(text);
        let at = self.mark.find(&loose)?;
        Some(escapes::raw_offset(text, at))
    }

    /// Replaces each header to the end of its JSON string (the next unescaped
    /// quote), or to the end of the line.
    fn cut_strings(&self, line: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(line.len());
        let mut rest = line;
        while let Some(i) = self.mark.find(rest) {
            out.extend_from_slice(&rest[..i]);
            out.extend_from_slice(REDACTED.as_bytes());
            let tail = &rest[i..];
            rest = &tail[string_end(tail)..];
        }
        out.extend_from_slice(rest);
        out
    }
}

/// The shortest piece of a block text that is looked for on its own.
const PIECE: usize = 8;

/// Where `s` holds a piece of `form` at least [`PIECE`] bytes long as a
/// split echo leaves it (in any field, adjacent or not): `s` lies within
/// `form`, ends with its beginning, or begins with its end.
fn pieces(s: &[u8], form: &[u8]) -> Vec<Range<usize>> {
    use memchr::memmem::{find, find_iter};
    if s.len() < PIECE || form.len() < PIECE {
        return Vec::new();
    }
    let mut out = Vec::new();
    if find(form, s).is_some() {
        out.push(0..s.len());
        return out;
    }
    // The first start whose rest begins the form is the longest piece.
    if let Some(q) = find_iter(s, &form[..PIECE]).find(|&q| form.starts_with(&s[q..])) {
        out.push(q..s.len());
    }
    if let Some(p) = find_iter(form, &s[..PIECE]).find(|&p| s.starts_with(&form[p..])) {
        out.push(0..form.len() - p);
    }
    out
}

/// `line` with each string that has cuts written anew: its decoded text, each
/// run of cut bytes replaced by [`REDACTED`], encoded again.
pub(super) fn splice(
    line: &[u8],
    lits: &[Literal],
    texts: &[Cow<[u8]>],
    mut cuts: Vec<Vec<Range<usize>>>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut last = 0;
    for (i, l) in lits.iter().enumerate() {
        if cuts[i].is_empty() {
            continue;
        }
        cuts[i].sort_by_key(|r| r.start);
        let mut text = Vec::with_capacity(texts[i].len());
        let mut at = 0;
        for r in &cuts[i] {
            if r.end <= at {
                continue;
            }
            if r.start >= at {
                text.extend_from_slice(&texts[i][at..r.start]);
                text.extend_from_slice(REDACTED.as_bytes());
            }
            at = r.end;
        }
        text.extend_from_slice(&texts[i][at..]);
        out.extend_from_slice(&line[last..l.start]);
        out.extend_from_slice(&escapes::encode(&text));
        last = l.end;
    }
    out.extend_from_slice(&line[last..]);
    out
}

/// The offset of the first unescaped `"` in `s`, or its length.
fn string_end(s: &[u8]) -> usize {
    let mut escaped = false;
    for (i, &b) in s.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return i,
            _ => {}
        }
    }
    s.len()
}

fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    for i in memchr::memmem::find_iter(hay, needle) {
        // Overlapping matches after a replaced one are skipped.
        if i < last {
            continue;
        }
        out.extend_from_slice(&hay[last..i]);
        out.extend_from_slice(with);
        last = i + needle.len();
    }
    out.extend_from_slice(&hay[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const BLOCK: &str = "VF-PRIVATE-FILE-RANGES/1\n[{\"end\":6,\"file\":\"config.rs\",\"start\":4,\"text\":\"let key = \\\"S3CRET\\\";\\n\"}]";

    fn red(line: &str) -> String {
        let r = Redactor::new(&[BLOCK.to_string()]);
        String::from_utf8(
            r.line(line.as_bytes())
                .unwrap_or_else(|| line.as_bytes().to_vec()),
        )
        .unwrap()
    }

    #[test]
    fn echoed_frames_keep_everything_but_the_block() {
        let prompt = format!("review it\n\n{BLOCK}");
        let frame = serde_json::json!({"type":"user.message","data":{"content": prompt, "transformedContent": format!("<t>x</t>\n\n{prompt}")}});
        let line = serde_json::to_string(&frame).unwrap();
        let got: Value = serde_json::from_str(&red(&line)).unwrap();
        assert_eq!(got["data"]["content"], format!("review it\n\n{REDACTED}"));
        assert_eq!(
            got["data"]["transformedContent"],
            format!("<t>x</t>\n\nreview it\n\n{REDACTED}")
        );
        // Textual replacement: the frame's own bytes are untouched elsewhere.
        let escaped = serde_json::to_string(BLOCK).unwrap();
        assert_eq!(
            red(&line),
            line.replace(&escaped[1..escaped.len() - 1], REDACTED)
        );
    }

    #[test]
    fn unknown_escaping_and_other_blocks_are_still_cut() {
        // ASCII-escaped (Python's json.dumps) and a block from an earlier turn.
        let odd = "{\"role\":\"user\",\"content\":\"hi VF-PRIVATE-FILE-RANGES/1\\n[{\\\"text\\\":\\\"\\u00e9 other\\\"}]\"}";
        let got: Value = serde_json::from_str(&red(odd)).unwrap();
        assert_eq!(
            got,
            serde_json::json!({"role":"user","content": format!("hi {REDACTED}")})
        );
        // A pretty-printed document line (not JSON on its own).
        let pretty = "  \"response\": \"see VF-PRIVATE-FILE-RANGES/1\\n[{\\\"x\\\":1}] done\",";
        assert_eq!(red(pretty), format!("  \"response\": \"see {REDACTED}\","));
        // Text mode: the block arrives as two lines.
        let (head, json) = BLOCK.split_once('\n').unwrap();
        assert_eq!(red(head), REDACTED);
        assert_eq!(red(json), REDACTED);
    }

    #[test]
    fn ordinary_lines_are_left_alone() {
        let r = Redactor::new(&[BLOCK.to_string()]);
        assert!(
            r.line(b"{\"type\":\"assistant.message\",\"data\":{\"end\":3}}")
                .is_none()
        );
        assert!(Redactor::new(&[]).line(b"[{\"end\":1}]").is_none());
    }

    const PROMPT_HEAD: &str = "review it\n\n";

    /// `text` as JSON string content with every character (`every` = 1) or
    /// every other one (2) spelled `\uXXXX`, the rest escaped as usual.
    fn spelled(text: &str, every: usize) -> String {
        let mut out = String::new();
        for (i, c) in text.chars().enumerate() {
            if i % every == 0 {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            } else {
                let q = serde_json::to_string(&c.to_string()).unwrap();
                out.push_str(&q[1..q.len() - 1]);
            }
        }
        out
    }

    #[test]
    fn escaped_and_mixed_echoes_are_redacted_on_their_decoded_text() {
        let prompt = format!("{PROMPT_HEAD}{BLOCK}");
        for every in [1, 2, 3] {
            let echo = spelled(&prompt, every);
            let line = format!(
                "{{\"type\":\"user.message\",\"data\":{{\"content\":\"{echo}\",\"n\":1}}}}"
            );
            assert!(!line.contains("VF-PRIVATE"), "{line}");
            let got = red(&line);
            let v: Value = serde_json::from_str(&got).unwrap();
            assert_eq!(
                v,
                json!({"type":"user.message","data":{"content": format!("{PROMPT_HEAD}{REDACTED}"),"n":1}}),
                "every {every}"
            );
            // Only the string that held the echo is written anew.
            assert!(got.starts_with("{\"type\":\"user.message\",\"data\":{\"content\":"));
        }
    }

    #[test]
    fn an_echo_split_across_fields_is_redacted_in_each() {
        let prompt = format!("{PROMPT_HEAD}{BLOCK}");
        let cuts = prompt.char_indices().map(|(i, _)| i).chain([prompt.len()]);
        for k in cuts {
            for every in [0, 1] {
                let (a, b) = prompt.split_at(k);
                let enc = |t: &str| match every {
                    0 => serde_json::to_string(t).unwrap(),
                    _ => format!("\"{}\"", spelled(t, every)),
                };
                let line = format!("{{\"content\":{},\"id\":7,\"more\":{}}}", enc(a), enc(b));
                let got = red(&line);
                let v: Value = serde_json::from_str(&got).unwrap();
                let joined = format!(
                    "{}{}",
                    v["content"].as_str().unwrap(),
                    v["more"].as_str().unwrap()
                );
                let twice = format!("{REDACTED}{REDACTED}");
                assert_eq!(
                    joined.replace(&twice, REDACTED),
                    format!("{PROMPT_HEAD}{REDACTED}"),
                    "split at {k}: {got}"
                );
                if k <= PROMPT_HEAD.len() {
                    assert_eq!(v["content"], a, "split at {k}");
                }
            }
        }
    }

    #[test]
    fn the_pieces_of_an_echo_are_found_in_fields_apart() {
        let prompt = format!("{PROMPT_HEAD}{BLOCK}");
        let secret = prompt.find("S3CRET").unwrap();
        for k in [secret, secret + 3, prompt.len() - 9, PROMPT_HEAD.len() + 30] {
            let (a, b) = prompt.split_at(k);
            let v = json!({"a": a, "other": "kept as it is", "n": [1], "z": b});
            let got: Value = serde_json::from_str(&red(&v.to_string())).unwrap();
            assert_eq!(got["a"], format!("{PROMPT_HEAD}{REDACTED}"), "at {k}");
            assert_eq!(got["z"], REDACTED, "at {k}");
            assert_eq!(got["other"], "kept as it is");
        }
        // A piece shorter than PIECE is too short to tell from other text.
        assert!(pieces(b"abc", BLOCK.as_bytes()).is_empty());
        assert_eq!(
            pieces(b"x config.rs", BLOCK.as_bytes()),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(
            pieces(b",\"file\":\"config.rs", BLOCK.as_bytes()),
            vec![0..18]
        );
    }

    #[test]
    fn an_echo_inside_json_text_inside_a_string_is_cut() {
        // A tool printed a JSON document holding the escaped echo: the frame
        // holds it escaped twice.
        let prompt = format!("{PROMPT_HEAD}{BLOCK}");
        let inner = format!("{{\"c\":\"{}\"}}", spelled(&prompt, 1));
        let line = serde_json::to_string(&json!({"type":"tool","output": inner})).unwrap();
        let v: Value = serde_json::from_str(&red(&line)).unwrap();
        // Printed again by serde_json: decoded once, no escape left to hide in.
        assert!(!v.to_string().contains("S3CRET"), "{v}");
        assert_eq!(
            v["output"],
            format!("{{\"c\":\"{}{REDACTED}", spelled(PROMPT_HEAD, 1))
        );
    }

    #[test]
    fn escapes_without_a_trigger_leave_the_line_alone() {
        let r = Redactor::new(&[BLOCK.to_string()]);
        assert!(r.line(br#"{"a":"caf\u00e9 \u0041 [{\"x\":1}]"}"#).is_none());
        assert_eq!(r.trigger(br#"x \u0046ILE-RANGES"#), Some(2));
        // JSON text quoted twice, one character spelled.
        assert_eq!(r.trigger(br#"x [{\\\"end\\\":\u0031}]"#), Some(2));
        assert_eq!(r.trigger(b"nothing here"), None);
    }
}
