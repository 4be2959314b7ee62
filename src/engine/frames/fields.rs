//! Reading frames: field access by manifest paths, conditions, summaries of
//! tool input and output, and detail templates.

use std::borrow::Cow;

use serde_json::Value;

use super::manifest::{Cond, Path, Src, StatusSrc};
use crate::ground::text::cut;

const SUMMARY_CHARS: usize = 120;
const DETAIL_CHARS: usize = 2000;
const KIND_CHARS: usize = 64;

/// The value at `path` (the root itself for an empty path).
pub(super) fn at(v: &Value, path: Path) -> Option<&Value> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object()?.get(*k)?;
    }
    Some(cur)
}

/// Like [`at`], but an empty path means "no such field".
pub(super) fn field(v: &Value, path: Path) -> Option<&Value> {
    if path.is_empty() { None } else { at(v, path) }
}

pub(super) fn nonempty(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

pub(super) fn id_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

pub(super) fn src(s: Src, root: &Value) -> String {
    match s {
        Src::Const(c) => c.to_string(),
        Src::Path(p) => nonempty(field(root, p)).map_or_else(|| "?".into(), |n| cut(n, 80).into()),
    }
}

/// A tool result's status, and whether it says the tool failed.
pub(super) fn status_of(s: &StatusSrc, root: &Value) -> (String, bool) {
    let done = || ("completed".to_string(), false);
    match s {
        StatusSrc::Path(p) => match nonempty(field(root, p)) {
            Some("success") | None => done(),
            Some(st) => (cut(st, 40).to_string(), st == "error"),
        },
        StatusSrc::ErrorFlag(p) => {
            if field(root, p).and_then(Value::as_bool) == Some(true) {
                ("error".into(), true)
            } else {
                done()
            }
        }
        StatusSrc::SuccessFlag { flag, code } => {
            if field(root, flag).and_then(Value::as_bool) == Some(false) {
                let st = nonempty(field(root, code))
                    .map_or_else(|| "error".into(), |c| cut(c, 40).into());
                (st, true)
            } else {
                done()
            }
        }
    }
}

/// The first of `paths` that holds a non-empty string.
pub(super) fn first_text(root: &Value, paths: &[Path]) -> Option<String> {
    paths
        .iter()
        .find_map(|p| nonempty(field(root, p)))
        .map(str::to_string)
}

pub(super) fn cond(c: &Cond, root: &Value) -> bool {
    match c {
        Cond::True(p) => field(root, p).and_then(Value::as_bool) == Some(true),
        Cond::StrEq(p, s) => field(root, p).and_then(Value::as_str) == Some(*s),
        Cond::StrNe(p, s) => field(root, p).and_then(Value::as_str) != Some(*s),
        Cond::NonZero(p) => field(root, p)
            .and_then(Value::as_i64)
            .is_some_and(|n| n != 0),
        Cond::Exists(p) => field(root, p).is_some_and(|v| !v.is_null()),
        Cond::NumEq(p, n) => field(root, p).and_then(Value::as_i64) == Some(*n),
        Cond::Contains(p, s) => field(root, p)
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains(s)),
    }
}

pub(super) fn one_line(s: &str, max: usize) -> String {
    let s = s.trim();
    let mut lines = s.lines();
    let first = lines.next().unwrap_or("");
    let more = lines.count();
    let mut out = cut(first, max).to_string();
    if out.len() < first.len() {
        out.push('…');
    }
    if more > 0 {
        out.push_str(&format!(" (+{more} lines)"));
    }
    out
}

/// Frame kinds come from the payload: keep them short and printable.
pub(super) fn sanitize_kind(k: &str) -> String {
    let mut s: String = k
        .chars()
        .take(KIND_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-/:()=".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect();
    if k.chars().count() > KIND_CHARS {
        s.push('…');
    }
    s
}

const INPUT_KEYS: &[&str] = &[
    "command",
    "cmd",
    "file_path",
    "filePath",
    "path",
    "pattern",
    "query",
    "url",
    "prompt",
    "description",
];

pub(super) fn summarize_input(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => {
            // Some CLIs pass arguments as a JSON string.
            if s.starts_with('{')
                && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s)
            {
                return summarize_input(Some(&inner));
            }
            one_line(s, SUMMARY_CHARS)
        }
        Some(Value::Object(m)) => INPUT_KEYS
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(|s| one_line(s, SUMMARY_CHARS))
            .unwrap_or_else(|| one_line(&Value::Object(m.clone()).to_string(), SUMMARY_CHARS)),
        Some(Value::Array(items)) => {
            let paths: Vec<&str> = items
                .iter()
                .filter_map(|i| i.get("path").and_then(Value::as_str))
                .collect();
            if paths.is_empty() {
                format!("{} items", items.len())
            } else {
                one_line(&paths.join(", "), SUMMARY_CHARS)
            }
        }
        Some(other) => one_line(&other.to_string(), SUMMARY_CHARS),
    }
}

pub(super) fn summarize_output(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        // Content blocks: the text of each.
        Value::Array(items) => Cow::Owned(
            items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str).or_else(|| i.as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Value::Null => return None,
        other => Cow::Owned(other.to_string()),
    };
    let s = s.trim();
    (!s.is_empty()).then(|| one_line(s, SUMMARY_CHARS))
}

/// Fills a detail template; `None` when nothing but literal text remains.
pub(super) fn fill(tpl: &str, root: &Value) -> Option<String> {
    if tpl.is_empty() {
        return None;
    }
    let mut out = String::new();
    let mut filled = false;
    let mut rest = tpl;
    let has_fields = tpl.contains('{');
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let path = &rest[open + 1..open + close];
        let mut cur = Some(root);
        for k in path.split('.') {
            cur = cur.and_then(|c| c.as_object()).and_then(|o| o.get(k));
        }
        match cur {
            Some(Value::String(s)) if !s.is_empty() => {
                out.push_str(s);
                filled = true;
            }
            Some(Value::Number(n)) => {
                out.push_str(&n.to_string());
                filled = true;
            }
            Some(Value::Bool(b)) => {
                out.push_str(if *b { "true" } else { "false" });
                filled = true;
            }
            Some(Value::Array(a)) => {
                out.push_str(&format!("{} items", a.len()));
                filled = true;
            }
            _ => out.push('?'),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    if has_fields && !filled {
        return None;
    }
    let out = out.trim();
    let capped = cut(out, DETAIL_CHARS);
    let mut s = capped.to_string();
    if capped.len() < out.len() {
        s.push('…');
    }
    Some(s)
}
