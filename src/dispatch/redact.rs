//! Private ranges echoed back by an engine (copilot's `user.message`,
//! gemini's `role:user`, a tool that reads the prompt file) are redacted from
//! each output line before it is projected or written to the raw log.
//!
//! One line in, one line out, so every `rawRange` stays valid. A line is
//! touched only when it holds the wire header `VF-PRIVATE-FILE-RANGES` or the
//! start of a block's JSON; it is then redacted in three steps, each only if
//! the previous one left the header in place:
//! 1. the delivered block texts, raw and JSON-escaped, are replaced textually
//!    (the rest of the line stays byte-exact);
//! 2. a line that parses as JSON has the header-to-end of every string that
//!    holds it replaced, and is re-serialized on one line;
//! 3. otherwise the text from the header to the end of its JSON string (or of
//!    the line) is replaced.
//!
//! Step 2 and 3 also catch blocks vf did not deliver in this run (a resumed
//! session echoing an earlier turn).

use memchr::memmem::Finder;
use serde_json::Value;

pub const REDACTED: &str = "[private ranges redacted]";
/// The wire header without its version, so `\/` escaping cannot hide it.
pub const MARK: &[u8] = b"VF-PRIVATE-FILE-RANGES";
/// How a block's JSON line starts (`[{"end":...`), raw and escaped: a text
/// echo splits the block over two lines.
const JSON_STARTS: [&[u8]; 2] = [b"[{\"end\":", b"[{\\\"end\\\":"];

pub struct Redactor {
    /// Texts replaced as they are, longest first.
    needles: Vec<Vec<u8>>,
    mark: Finder<'static>,
    json_starts: Vec<Finder<'static>>,
}

impl Redactor {
    /// `blocks`: the exact private-range blocks delivered in this run.
    pub fn new(blocks: &[String]) -> Redactor {
        let mut needles = Vec::new();
        for block in blocks.iter().filter(|b| !b.is_empty()) {
            let mut forms = vec![block.as_str()];
            // The JSON line alone, for an echo that splits the block over lines.
            forms.extend(block.split_once('\n').map(|(_, json)| json));
            for form in forms.into_iter().filter(|f| f.len() >= 8) {
                needles.push(form.as_bytes().to_vec());
                let quoted = serde_json::to_string(form).unwrap_or_default();
                needles.push(quoted.as_bytes()[1..quoted.len() - 1].to_vec());
            }
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        let json_starts = if blocks.is_empty() {
            Vec::new()
        } else {
            JSON_STARTS.iter().map(|s| Finder::new(*s)).collect()
        };
        Redactor {
            needles,
            mark: Finder::new(MARK),
            json_starts,
        }
    }

    /// Where a private block may start in `bytes` (for streamed, over-long
    /// lines that are never held whole).
    pub fn trigger(&self, bytes: &[u8]) -> Option<usize> {
        std::iter::once(&self.mark)
            .chain(&self.json_starts)
            .filter_map(|f| f.find(bytes))
            .min()
    }

    /// The longest trigger, less one: what a stream must hold back.
    pub fn trigger_overlap(&self) -> usize {
        JSON_STARTS
            .iter()
            .map(|s| s.len())
            .chain([MARK.len()])
            .max()
            .unwrap_or(0)
            - 1
    }

    /// The line redacted, or `None` when it holds nothing private.
    pub fn line(&self, line: &[u8]) -> Option<Vec<u8>> {
        self.trigger(line)?;
        let mut out = line.to_vec();
        for n in &self.needles {
            out = replace_all(&out, n, REDACTED.as_bytes());
        }
        if self.mark.find(&out).is_none() {
            return (out != line).then_some(out);
        }
        if let Ok(mut v) = serde_json::from_slice::<Value>(&out) {
            self.redact_value(&mut v);
            if let Ok(s) = serde_json::to_vec(&v) {
                return Some(s);
            }
        }
        Some(self.cut_strings(&out))
    }

    fn redact_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Some(i) = self.mark.find(s.as_bytes()) {
                    s.truncate(i);
                    s.push_str(REDACTED);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.redact_value(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.redact_value(i)),
            _ => {}
        }
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
}
