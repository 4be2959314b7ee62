//! Private file ranges (`--private-range FILE:START-END`): exact line windows
//! of a text attachment or of a file below the working dir, delivered with
//! the prompt and persisted nowhere by vf.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use crate::dispatch::attach::{Store, article, check_text, kind_hint};
use crate::engine::{AttachmentKind, Invocation};
use crate::ground::names;
use crate::ground::{Result, VfError};

/// The first line of the wire form; the canonical JSON follows on the next.
pub const PRIVATE_RANGES_HEADER: &str = "VF-PRIVATE-FILE-RANGES/1";

/// `FILE:START-END` as given on the command line (syntax only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSpec {
    pub file: String,
    /// 1-based, inclusive.
    pub start: usize,
    pub end: usize,
}

impl FromStr for RangeSpec {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let syntax = || format!("{s:?} is not FILE:START-END (1-based inclusive line numbers)");
        let (file, range) = s.rsplit_once(':').ok_or_else(syntax)?;
        let (a, b) = range.split_once('-').ok_or_else(syntax)?;
        let num = |t: &str| -> std::result::Result<usize, String> {
            if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
                return Err(syntax());
            }
            t.parse::<usize>()
                .map_err(|_| format!("line number {t} in {s:?} is too large"))
        };
        let (start, end) = (num(a)?, num(b)?);
        if file.is_empty() {
            return Err(format!("{s:?} names no file"));
        }
        if start == 0 {
            return Err(format!("{s:?}: line numbers start at 1"));
        }
        if start > end {
            return Err(format!("{s:?}: START {start} is after END {end}"));
        }
        Ok(RangeSpec {
            file: file.to_string(),
            start,
            end,
        })
    }
}

impl fmt::Display for RangeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}-{}", self.file, self.start, self.end)
    }
}

/// A staged line window. Deliberately neither `Serialize` nor a `Debug` that
/// shows the text: the text must not reach markers, events or logs.
pub struct PrivateRange {
    file: String,
    start: usize,
    end: usize,
    text: String,
}

impl fmt::Debug for PrivateRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateRange")
            .field("file", &self.file)
            .field("start", &self.start)
            .field("end", &self.end)
            .field("bytes", &self.text.len())
            .finish_non_exhaustive()
    }
}

/// What may be shown about a staged range: everything but the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeSummary {
    pub file: String,
    pub start: usize,
    pub end: usize,
    pub bytes: usize,
}

/// The ranges staged for one dispatch.
#[derive(Default)]
pub struct PrivateRanges {
    ranges: Vec<PrivateRange>,
}

impl fmt::Debug for PrivateRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.ranges).finish()
    }
}

impl PrivateRanges {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn summaries(&self) -> Vec<RangeSummary> {
        self.ranges
            .iter()
            .map(|r| RangeSummary {
                file: r.file.clone(),
                start: r.start,
                end: r.end,
                bytes: r.text.len(),
            })
            .collect()
    }

    /// `VF-PRIVATE-FILE-RANGES/1`, a newline, then canonical JSON: an array
    /// (in the order given) of objects with sorted keys `end`, `file`,
    /// `start`, `text`, without insignificant whitespace. Empty when no
    /// range is staged.
    pub fn wire(&self) -> String {
        if self.ranges.is_empty() {
            return String::new();
        }
        // BTreeMap keeps keys sorted whatever serde_json's map features are.
        let items: Vec<BTreeMap<&str, Value>> = self
            .ranges
            .iter()
            .map(|r| {
                BTreeMap::from([
                    ("end", Value::from(r.end)),
                    ("file", Value::from(r.file.as_str())),
                    ("start", Value::from(r.start)),
                    ("text", Value::from(r.text.as_str())),
                ])
            })
            .collect();
        let json = serde_json::to_string(&items).expect("strings and integers always serialize");
        format!("{PRIVATE_RANGES_HEADER}\n{json}")
    }

    /// What stands in for the wire form wherever it would be shown.
    pub fn placeholder(&self) -> String {
        let bytes: usize = self.ranges.iter().map(|r| r.text.len()).sum();
        format!(
            "{PRIVATE_RANGES_HEADER}\n<private: {} range(s), {bytes} bytes of file text withheld>",
            self.ranges.len()
        )
    }
}

/// The prompt with the staged ranges appended after a blank line (the
/// prompt itself is never altered). No ranges: the prompt unchanged.
pub fn apply_private_ranges(prompt: &str, ranges: &PrivateRanges) -> String {
    if ranges.is_empty() {
        return prompt.to_string();
    }
    let sep = if prompt.ends_with("\n\n") {
        ""
    } else if prompt.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{prompt}{sep}{}", ranges.wire())
}

/// Replaces the private text in an invocation (argv, stdin, prompt file)
/// by [`PrivateRanges::placeholder`], for display or for anything persisted.
pub fn redact_invocation(inv: &mut Invocation, ranges: &PrivateRanges) {
    if ranges.is_empty() {
        return;
    }
    let wire = ranges.wire();
    let placeholder = ranges.placeholder();
    let redact = |s: &mut String| {
        if s.contains(&wire) {
            *s = s.replace(&wire, &placeholder);
        }
    };
    inv.args.iter_mut().for_each(redact);
    if let Some(s) = inv.stdin.as_mut() {
        redact(s);
    }
    if let Some(s) = inv.prompt_file_contents.as_mut() {
        redact(s);
    }
}

/// Lines `start..=end` (1-based) of `text`, byte-exact including their line
/// endings; `None` when the window is outside the text. A final newline does
/// not start another line.
pub fn line_window(text: &str, start: usize, end: usize) -> Option<&str> {
    if start == 0 || start > end {
        return None;
    }
    let mut offset = 0;
    let mut from = None;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if n == start {
            from = Some(offset);
        }
        offset += line.len();
        if n == end {
            return from.map(|f| &text[f..offset]);
        }
    }
    None
}

fn line_count(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// Reads each range's file and stages the exact window. FILE is a text
/// attachment name when the store holds one by that name, else a path
/// relative to `cwd` (absolute paths and `..` are refused, and so is a path
/// whose symbolic links lead out of `cwd`).
pub fn stage_private_ranges(
    specs: &[RangeSpec],
    state_dir: &Path,
    cwd: &Path,
) -> Result<PrivateRanges> {
    let store = Store::new(state_dir);
    let mut ranges = Vec::with_capacity(specs.len());
    for spec in specs {
        let (path, what) = match stored_text(spec, &store)? {
            Some(found) => found,
            None => relative_text(spec, cwd)?,
        };
        // A canonical path: no link to refuse, but a FIFO is refused at once.
        let bytes = crate::ground::read_no_follow(&path).map_err(|e| {
            VfError::usage(format!(
                "--private-range {spec}: cannot read {}: {e}",
                path.display()
            ))
        })?;
        let text = check_text(&bytes, &format!("--private-range {spec}: {what}"))?;
        let window = line_window(text, spec.start, spec.end).ok_or_else(|| {
            VfError::usage(format!(
                "--private-range {spec}: lines {}-{} are outside {what}, which has {} line(s)",
                spec.start,
                spec.end,
                line_count(text)
            ))
        })?;
        ranges.push(PrivateRange {
            file: spec.file.clone(),
            start: spec.start,
            end: spec.end,
            text: window.to_string(),
        });
    }
    Ok(PrivateRanges { ranges })
}

/// The text attachment named FILE (its canonical path and how to name it),
/// `None` when the store holds no attachment by that name.
fn stored_text(spec: &RangeSpec, store: &Store) -> Result<Option<(PathBuf, String)>> {
    if names::check("attachment name", &spec.file).is_err() {
        return Ok(None);
    }
    let e = match store.get(&spec.file) {
        Ok(e) => e,
        Err(VfError::Usage(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    if e.kind != AttachmentKind::Text {
        return Err(VfError::usage(format!(
            "--private-range {spec}: attachment {:?} is {}, not text",
            e.name,
            article(e.kind)
        )));
    }
    let path = confine(spec, &e.path, store.dir(), "the attachment store")?;
    Ok(Some((path, format!("attachment {:?}", e.name))))
}

/// FILE as a path below `cwd`: its canonical path and how to name it.
fn relative_text(spec: &RangeSpec, cwd: &Path) -> Result<(PathBuf, String)> {
    let rel = Path::new(&spec.file);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(VfError::usage(format!(
            "--private-range {spec}: FILE must be a text attachment or a path \
             inside the working directory (no absolute path, no `..`)"
        )));
    }
    if let Some(k) = rel
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(kind_hint)
        .filter(|k| *k != AttachmentKind::Text)
    {
        return Err(VfError::usage(format!(
            "--private-range {spec}: {} is {} by its extension, not text",
            spec.file,
            article(k)
        )));
    }
    let path = cwd.join(rel);
    if !path.is_file() {
        return Err(VfError::usage(format!(
            "--private-range {spec}: no text attachment and no file named {:?} in {}",
            spec.file,
            cwd.display()
        )));
    }
    Ok((
        confine(spec, &path, cwd, "the working directory")?,
        spec.file.clone(),
    ))
}

/// `path` with every symbolic link resolved, refused unless it stays below
/// `root` (also resolved): a link must not carry a private range out of it.
fn confine(spec: &RangeSpec, path: &Path, root: &Path, root_name: &str) -> Result<PathBuf> {
    let canonical = |p: &Path| {
        p.canonicalize().map_err(|e| {
            VfError::usage(format!(
                "--private-range {spec}: cannot resolve {}: {e}",
                p.display()
            ))
        })
    };
    let (target, root_real) = (canonical(path)?, canonical(root)?);
    if !target.starts_with(&root_real) {
        return Err(VfError::usage(format!(
            "--private-range {spec}: {} leads through a symbolic link to {}, outside {root_name} {}",
            path.display(),
            target.display(),
            root_real.display()
        )));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_spec_parsing() {
        let r: RangeSpec = "src/a.rs:3-7".parse().unwrap();
        assert_eq!((r.file.as_str(), r.start, r.end), ("src/a.rs", 3, 7));
        let r: RangeSpec = "odd:name.md:1-1".parse().unwrap();
        assert_eq!(r.file, "odd:name.md");
        for bad in [
            "a.rs",
            "a.rs:3",
            "a.rs:-3",
            "a.rs:3-",
            ":1-2",
            "a.rs:0-2",
            "a.rs:5-4",
            "a.rs:+1-2",
            "a.rs: 1-2",
            "a.rs:1-99999999999999999999999",
        ] {
            assert!(bad.parse::<RangeSpec>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn line_windows_are_exact() {
        let t = "one\ntwo\r\nthree\n";
        assert_eq!(line_window(t, 1, 1), Some("one\n"));
        assert_eq!(line_window(t, 2, 3), Some("two\r\nthree\n"));
        assert_eq!(line_window(t, 3, 4), None);
        assert_eq!(line_window("a\nb", 2, 2), Some("b"));
        assert_eq!(line_window("", 1, 1), None);
        assert_eq!(line_window(t, 0, 1), None);
        assert_eq!(line_count(t), 3);
    }

    proptest::proptest! {
        #[test]
        fn line_window_matches_split_lines(
            mut lines in proptest::collection::vec("[a-z\r é]{0,6}", 1..8),
            mut trailing in proptest::bool::ANY,
            a in 1usize..10,
            len in 0usize..10,
        ) {
            let mut text = lines.join("\n");
            if trailing {
                text.push('\n');
            }
            // An empty last piece after a newline is not a line ("a\n" has one).
            if !trailing && lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
                trailing = true;
            }
            let b = a + len;
            let got = line_window(&text, a, b);
            if b <= lines.len() {
                let mut want: String = lines[a - 1..b].join("\n");
                if b < lines.len() || trailing {
                    want.push('\n');
                }
                proptest::prop_assert_eq!(got, Some(want.as_str()));
            } else {
                proptest::prop_assert_eq!(got, None);
            }
        }

        #[test]
        fn range_specs_round_trip(file in "[a-z/._:-]{1,12}", a in 1usize..1000, len in 0usize..1000) {
            let s = format!("{file}:{a}-{}", a + len);
            let r: RangeSpec = s.parse().unwrap();
            proptest::prop_assert_eq!(r.to_string(), s);
        }
    }

    fn staged(pairs: &[(&str, usize, usize, &str)]) -> PrivateRanges {
        PrivateRanges {
            ranges: pairs
                .iter()
                .map(|(f, s, e, t)| PrivateRange {
                    file: f.to_string(),
                    start: *s,
                    end: *e,
                    text: t.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn wire_form_is_canonical() {
        let r = staged(&[("b.rs", 2, 3, "x \"q\"\n\ty\n"), ("a.md", 1, 1, "é\n")]);
        assert_eq!(
            r.wire(),
            "VF-PRIVATE-FILE-RANGES/1\n\
             [{\"end\":3,\"file\":\"b.rs\",\"start\":2,\"text\":\"x \\\"q\\\"\\n\\ty\\n\"},\
             {\"end\":1,\"file\":\"a.md\",\"start\":1,\"text\":\"é\\n\"}]"
        );
        assert_eq!(
            apply_private_ranges("do it", &r),
            format!("do it\n\n{}", r.wire())
        );
        assert_eq!(
            apply_private_ranges("do it\n", &r),
            format!("do it\n\n{}", r.wire())
        );
        assert_eq!(
            apply_private_ranges("do it", &PrivateRanges::default()),
            "do it"
        );
    }

    #[test]
    fn debug_never_shows_the_text() {
        let r = staged(&[("a.md", 1, 1, "SECRET-LINE\n")]);
        let d = format!("{r:?} {:?}", r.ranges[0]);
        assert!(!d.contains("SECRET"), "{d}");
        assert!(d.contains("bytes: 12"), "{d}");
        assert!(!r.placeholder().contains("SECRET"));
    }

    #[test]
    fn redaction_covers_argv_stdin_and_prompt_file() {
        let r = staged(&[("a.md", 1, 1, "SECRET-LINE\n")]);
        let prompt = apply_private_ranges("p", &r);
        let mut inv = Invocation {
            program: "x".into(),
            args: vec!["-p".into(), prompt.clone()],
            stdin: Some(prompt.clone()),
            cwd: PathBuf::from("/"),
            prompt_file: None,
            prompt_file_contents: Some(prompt),
            env: vec![],
            warnings: vec![],
            policy: crate::engine::PolicyStatus::OFF,
            config_file: None,
            mcp: vec![],
        };
        redact_invocation(&mut inv, &r);
        let all = format!(
            "{:?} {:?} {:?}",
            inv.args, inv.stdin, inv.prompt_file_contents
        );
        assert!(!all.contains("SECRET"), "{all}");
        assert!(all.contains("12 bytes"), "{all}");
    }

    #[test]
    fn staging_resolves_attachments_then_paths() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("repo");
        let state = cwd.join(".vibeflow");
        std::fs::create_dir_all(cwd.join("src")).unwrap();
        std::fs::write(cwd.join("src/lib.rs"), "a\nb\nc\n").unwrap();
        std::fs::write(cwd.join("pic.png"), "not really\n").unwrap();
        std::fs::write(cwd.join("bin.txt"), b"a\0b\n").unwrap();
        let store = Store::new(&state);
        let src = t.path().join("notes.md");
        std::fs::write(&src, "n1\nn2\n").unwrap();
        store.add(&src, None, false).unwrap();
        let spec = |s: &str| s.parse::<RangeSpec>().unwrap();
        let r = stage_private_ranges(
            &[spec("src/lib.rs:2-3"), spec("notes.md:2-2")],
            &state,
            &cwd,
        )
        .unwrap();
        assert_eq!(
            r.summaries(),
            [
                RangeSummary {
                    file: "src/lib.rs".into(),
                    start: 2,
                    end: 3,
                    bytes: 4
                },
                RangeSummary {
                    file: "notes.md".into(),
                    start: 2,
                    end: 2,
                    bytes: 3
                }
            ]
        );
        assert!(r.wire().contains("\"text\":\"b\\nc\\n\""));
        assert!(r.wire().contains("\"text\":\"n2\\n\""));
        for (bad, why) in [
            ("src/lib.rs:3-4", "3 line(s)"),
            ("pic.png:1-1", "image"),
            ("bin.txt:1-1", "NUL"),
            ("../x.md:1-1", "`..`"),
            ("/etc/hostname:1-1", "absolute"),
            ("missing.md:1-1", "no text attachment"),
        ] {
            let e = stage_private_ranges(&[spec(bad)], &state, &cwd)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let png = t.path().join("s.png");
        std::fs::write(&png, "x").unwrap();
        store.add(&png, None, false).unwrap();
        let e = stage_private_ranges(&[spec("s.png:1-1")], &state, &cwd)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not text"), "{e}");
    }
}
