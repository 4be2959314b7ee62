//! `--summary-schema FILE`: a JSON Schema (draft 2020-12) the summary must
//! satisfy, checked by the maintained `jsonschema` crate. vf's check is the
//! authority even where the engine got a native schema flag too: such flags
//! have let placeholder or blank output through.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Summary;
use crate::ground::text::one_line;

/// Schema files larger than this are refused (a schema is a short document).
pub const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;
/// `summaryError` names at most this many violations (and how many more).
const MAX_MESSAGES: usize = 20;
/// Each violation's message is cut to this many characters.
const MESSAGE_CHARS: usize = 200;

/// A loaded, compiled schema. Built only from a file that is valid JSON and a
/// valid draft 2020-12 schema: anything else is refused before a run starts.
pub struct SummarySchema {
    path: PathBuf,
    value: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for SummarySchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummarySchema")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SummarySchema {
    /// Reads and compiles `path` (absolute). `Err` is the one-line reason,
    /// naming the file; the caller makes it a usage error.
    pub fn load(path: &Path) -> Result<SummarySchema, String> {
        let shown = one_line(&path.display().to_string(), 200);
        let value = read_json(path).map_err(|why| format!("summary schema {shown}: {why}"))?;
        let validator = jsonschema::draft202012::new(&value).map_err(|e| {
            format!(
                "summary schema {shown}: not a valid JSON Schema (draft 2020-12): {}",
                one_line(&e.to_string(), MESSAGE_CHARS)
            )
        })?;
        Ok(SummarySchema {
            path: path.to_path_buf(),
            value,
            validator,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema as compact JSON (for native flags that take it inline).
    pub fn compact_json(&self) -> String {
        self.value.to_string()
    }

    /// Judges a run's answer. `Ok`: the summary, valid. `Err`: every
    /// violation, `<instance path>: <reason>` joined by `; `. A missing
    /// summary is a violation. An answer that is, whole, one JSON document
    /// counts as the summary: native schema flags make engines answer so.
    pub fn check(&self, answer: Option<&str>) -> Result<Value, String> {
        let value = match answer.map(super::extract) {
            None => return Err("no summary: the engine gave no answer".into()),
            Some(Summary::Valid { value }) => value,
            Some(Summary::Invalid { error }) => return Err(error),
            Some(Summary::Absent) => answer
                .and_then(|a| serde_json::from_str::<Value>(a.trim()).ok())
                .ok_or("no summary: the answer has no ```json block")?,
        };
        let messages: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".into() } else { at };
                one_line(&format!("{at}: {e}"), MESSAGE_CHARS)
            })
            .collect();
        if messages.is_empty() {
            return Ok(value);
        }
        let more = messages.len().saturating_sub(MAX_MESSAGES);
        let mut text = messages[..messages.len() - more].join("; ");
        if more > 0 {
            text.push_str(&format!("; ... ({more} more)"));
        }
        Err(format!("the summary does not match the schema: {text}"))
    }
}

/// A regular file of at most [`MAX_SCHEMA_BYTES`], parsed as JSON. A FIFO or
/// a device is refused without being read (it could block or never end).
fn read_json(path: &Path) -> Result<Value, String> {
    use crate::ground::fsutil::{CappedReadError, read_regular_capped};
    let bytes = read_regular_capped(path, MAX_SCHEMA_BYTES).map_err(|e| match e {
        CappedReadError::Io(e) => format!("cannot read it: {e}"),
        CappedReadError::NotRegular => "not a regular file".into(),
        CappedReadError::TooLarge => format!("over {MAX_SCHEMA_BYTES} bytes"),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: &Value) -> (tempfile::TempDir, SummarySchema) {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.json");
        std::fs::write(&p, v.to_string()).unwrap();
        let s = SummarySchema::load(&p).unwrap();
        (t, s)
    }

    #[test]
    fn violations_name_the_instance_path_and_the_reason() {
        let (_t, s) = schema(&json!({
            "type": "object",
            "required": ["files", "ok"],
            "properties": {"files": {"type": "array", "items": {"type": "string"}}}
        }));
        let fenced = |v: &Value| format!("done\n```json\n{v}\n```\n");
        let good = json!({"files": ["a.rs"], "ok": true});
        assert_eq!(s.check(Some(&fenced(&good))), Ok(good.clone()));
        // The whole answer as one JSON document (what native flags produce).
        assert_eq!(s.check(Some(&good.to_string())), Ok(good));
        assert_eq!(
            s.check(Some(&fenced(&json!({"files": [3]})))),
            Err(
                "the summary does not match the schema: /: \"ok\" is a required property; \
                 /files/0: 3 is not of type \"string\""
                    .into()
            )
        );
        assert_eq!(
            s.check(Some("no block here")),
            Err("no summary: the answer has no ```json block".into())
        );
        assert_eq!(
            s.check(None),
            Err("no summary: the engine gave no answer".into())
        );
        assert!(
            s.check(Some("```json\n{\n```"))
                .unwrap_err()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn bad_schema_files_are_refused_with_the_reason() {
        let t = tempfile::tempdir().unwrap();
        let load = |name: &str, text: Option<&str>| {
            let p = t.path().join(name);
            if let Some(text) = text {
                std::fs::write(&p, text).unwrap();
            }
            SummarySchema::load(&p).unwrap_err()
        };
        assert!(load("missing.json", None).contains("cannot read it"));
        assert!(load("a.json", Some("{not json")).contains("not JSON"));
        let e = load("b.json", Some(r#"{"type": "nonsense"}"#));
        assert!(e.contains("not a valid JSON Schema (draft 2020-12)"), "{e}");
        // Self-contained only: nothing is fetched or read for an external `$ref`.
        for (name, r) in [
            ("h.json", "https://example.com/s.json"),
            ("f.json", "file:///etc/passwd"),
        ] {
            let e = load(name, Some(&format!(r#"{{"$ref": "{r}"}}"#)));
            assert!(
                e.contains("not a valid JSON Schema") && e.contains(r),
                "{e}"
            );
        }
        #[cfg(unix)]
        assert!(
            SummarySchema::load(Path::new("/dev/zero"))
                .unwrap_err()
                .contains("not a regular file")
        );
    }
}
