//! Reading vf's output, and comparing whole results and markers: a test
//! states the entire expected object, so a new field cannot slip past.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

/// vf's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The whole of stdout as one JSON document.
pub fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

/// The last line of stdout as JSON: the result of `--output json`/`jsonl`.
pub fn last_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no output; stderr: {}", stderr(out)));
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"))
}

/// Every line of `bytes` as JSON.
pub fn jsonl(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// What differs from run to run, by key, with the JSON type it must have:
/// (key, placeholder, a string rather than a number).
const VOLATILE: &[(&str, &str, bool)] = &[
    ("createdAt", "<time>", true),
    ("updatedAt", "<time>", true),
    ("startedAt", "<time>", true),
    ("finishedAt", "<time>", true),
    ("bootId", "<boot>", true),
    ("host", "<host>", true),
    ("durationMs", "<ms>", false),
    ("pid", "<pid>", false),
    ("pgid", "<pgid>", false),
    ("startTime", "<start>", false),
];

/// `v` with `tmp` written `<tmp>` in every string, and every [`VOLATILE`]
/// field of the right type replaced by its placeholder. A field of another
/// type (or `null`) is kept as it is, so the comparison still catches it.
pub fn normalized(v: &Value, tmp: &Path) -> Value {
    let tmp = tmp.display().to_string();
    normalize(v, &tmp)
}

fn normalize(v: &Value, tmp: &str) -> Value {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, x)| {
                let typed = |string: bool| if string { x.is_string() } else { x.is_number() };
                let x = match VOLATILE.iter().find(|(key, _, s)| key == k && typed(*s)) {
                    Some((_, placeholder, _)) => Value::String(placeholder.to_string()),
                    None => normalize(x, tmp),
                };
                (k.clone(), x)
            })
            .collect(),
        Value::Array(a) => a.iter().map(|x| normalize(x, tmp)).collect(),
        Value::String(s) => Value::String(s.replace(tmp, "<tmp>")),
        other => other.clone(),
    }
}

/// Equal, or a failure that prints both sides whole and the differing keys.
#[track_caller]
pub fn assert_json_eq(actual: &Value, expected: &Value) {
    if actual == expected {
        return;
    }
    let mut diffs = Vec::new();
    diff("", actual, expected, &mut diffs);
    panic!(
        "JSON differs at {}\n--- actual\n{}\n--- expected\n{}",
        diffs.join(", "),
        serde_json::to_string_pretty(actual).unwrap(),
        serde_json::to_string_pretty(expected).unwrap()
    );
}

/// The paths (`a.b[2]`) where `a` and `b` differ.
fn diff(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = Value::Null;
                let (p, q) = (x.get(k), y.get(k));
                if p.is_none() != q.is_none() {
                    out.push(format!("{at}.{k} (present on one side only)"));
                } else {
                    diff(
                        &format!("{at}.{k}"),
                        p.unwrap_or(&null),
                        q.unwrap_or(&null),
                        out,
                    );
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{at}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push(if at.is_empty() {
            "the root".into()
        } else {
            at.into()
        }),
        _ => {}
    }
}
