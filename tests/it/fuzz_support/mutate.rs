//! Mutations of genuine captures: byte-level damage to lines (flips,
//! truncations, splices, duplicated or shuffled lines, JSON values swapped
//! for other types), and frames turned into unknown kinds that carry secret
//! words, which must never reach the output.

use proptest::prelude::*;
use serde_json::Value;
use vf::engine::OutputTransport;
use vf::engine::frames::manifest::{Manifest, Nested, Rule, lookup};
use vf::engine::frames::manifests::resolve;

use super::Target;
use super::json::{fill_secret, get, nth_node, other_type, set_at};

/// Lines as the reader hands them over (no trailing empty line).
pub fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines
}

pub fn join_lines(lines: &[Vec<u8>], trailing_newline: bool) -> Vec<u8> {
    let mut out = lines.join(&b'\n');
    if trailing_newline && !lines.is_empty() {
        out.push(b'\n');
    }
    out
}

/// One edit of a stream; indices are taken modulo the current sizes.
#[derive(Debug, Clone)]
pub enum Mutation {
    FlipByte {
        line: usize,
        at: usize,
        xor: u8,
    },
    Truncate {
        line: usize,
        at: usize,
    },
    Split {
        line: usize,
        at: usize,
    },
    Join {
        line: usize,
    },
    Splice {
        a: usize,
        b: usize,
        at_a: usize,
        at_b: usize,
    },
    Duplicate {
        line: usize,
    },
    Swap {
        a: usize,
        b: usize,
    },
    Delete {
        line: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    CutStream {
        at: usize,
    },
    SwapType {
        line: usize,
        node: usize,
        choice: u8,
    },
    Retype {
        line: usize,
        kind: String,
    },
    Pretty {
        line: usize,
    },
}

/// Lines no CLI should print but a broken one might: raw bytes (invalid
/// UTF-8, NUL), JSON fragments, lone braces, long runs.
pub fn odd_line() -> impl Strategy<Value = Vec<u8>> {
    let fragments = [
        "{",
        "[",
        "}",
        "]",
        "\"",
        "\\",
        "{\"type\":",
        "{\"type\":\"",
        "[[[[",
        "{}",
        "[]",
        "null",
        "  ",
        "\t",
        "\r",
        "{\"a\":\"\\u00\"}",
        "\u{feff}{}",
        "\x1b[31m{\"type\":1}",
    ];
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..80),
        2 => (0..fragments.len()).prop_map(move |i| fragments[i].as_bytes().to_vec()),
        1 => (any::<u8>(), 1usize..20_000).prop_map(|(b, n)| vec![b; n]),
        2 => super::json::frame().prop_map(|v| v.to_string().into_bytes()),
    ]
    .prop_map(|mut l| {
        l.retain(|b| *b != b'\n');
        l
    })
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let ix = || 0usize..1 << 16;
    prop_oneof![
        3 => (ix(), ix(), 1u8..).prop_map(|(line, at, xor)| Mutation::FlipByte { line, at, xor }),
        2 => (ix(), ix()).prop_map(|(line, at)| Mutation::Truncate { line, at }),
        1 => (ix(), ix()).prop_map(|(line, at)| Mutation::Split { line, at }),
        1 => ix().prop_map(|line| Mutation::Join { line }),
        1 => (ix(), ix(), ix(), ix())
            .prop_map(|(a, b, at_a, at_b)| Mutation::Splice { a, b, at_a, at_b }),
        1 => ix().prop_map(|line| Mutation::Duplicate { line }),
        1 => (ix(), ix()).prop_map(|(a, b)| Mutation::Swap { a, b }),
        1 => ix().prop_map(|line| Mutation::Delete { line }),
        2 => (ix(), odd_line()).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        1 => ix().prop_map(|at| Mutation::CutStream { at }),
        4 => (ix(), ix(), any::<u8>())
            .prop_map(|(line, node, choice)| Mutation::SwapType { line, node, choice }),
        2 => (ix(), any::<String>()).prop_map(|(line, kind)| Mutation::Retype { line, kind }),
        1 => ix().prop_map(|line| Mutation::Pretty { line }),
    ]
}

/// Applies `m` to `lines`; a no-op where it does not fit (no lines, not JSON).
pub fn apply(lines: &mut Vec<Vec<u8>>, m: &Mutation) {
    use Mutation::*;
    if let Insert { at, bytes } = m {
        let at = at % (lines.len() + 1);
        lines.insert(at, bytes.clone());
        return;
    }
    let n = lines.len();
    if n == 0 {
        return;
    }
    match m {
        FlipByte { line, .. }
        | Truncate { line, .. }
        | SwapType { line, .. }
        | Retype { line, .. } => edit_line(&mut lines[line % n], m),
        Split { line, at } => {
            let i = line % n;
            let at = at % (lines[i].len() + 1);
            let tail = lines[i].split_off(at);
            lines.insert(i + 1, tail);
        }
        Join { line } if n > 1 => {
            let i = line % (n - 1);
            let next = lines.remove(i + 1);
            lines[i].extend(next);
        }
        Splice { a, b, at_a, at_b } => {
            let (a, b) = (a % n, b % n);
            let mut out = lines[a][..at_a % (lines[a].len() + 1)].to_vec();
            out.extend_from_slice(&lines[b][at_b % (lines[b].len() + 1)..]);
            lines[a] = out;
        }
        Duplicate { line } => lines.insert(line % n, lines[line % n].clone()),
        Swap { a, b } => lines.swap(a % n, b % n),
        Delete { line } => drop(lines.remove(line % n)),
        CutStream { at } => lines.truncate(at % n),
        Pretty { line } => {
            let i = line % n;
            if let Ok(v) = serde_json::from_slice::<Value>(&lines[i]) {
                let pretty = serde_json::to_vec_pretty(&v).unwrap();
                lines.splice(i..=i, split_lines(&pretty));
            }
        }
        _ => {}
    }
}

/// The mutations that change one line in place.
fn edit_line(l: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::FlipByte { at, xor, .. } if !l.is_empty() => {
            let at = at % l.len();
            l[at] ^= xor;
        }
        Mutation::Truncate { at, .. } => l.truncate(at % (l.len() + 1)),
        Mutation::SwapType { node, choice, .. } => edit_json(l, |v| {
            let target = nth_node(v, *node);
            *target = other_type(target, *choice);
            true
        }),
        Mutation::Retype { kind, .. } => {
            edit_json(l, |v| set_at(v, &["type"], Value::String(kind.clone())))
        }
        _ => {}
    }
}

/// Re-serializes a JSON line after `f` edits it (when `f` says it did).
fn edit_json(line: &mut Vec<u8>, f: impl FnOnce(&mut Value) -> bool) {
    if let Ok(mut v) = serde_json::from_slice::<Value>(line)
        && f(&mut v)
    {
        *line = serde_json::to_vec(&v).unwrap();
    }
}

// ---- frames turned unknown, carrying secrets --------------------------------

/// Marker words that appear in no capture and in no generated kind's first
/// 64 characters: any of them in the output is leaked payload.
pub fn secret(i: usize) -> String {
    format!("zqxsecret{i:03}")
}

/// An unknown kind: short, long (the secret beyond the cut), or odd characters.
pub fn unknown_kind() -> impl Strategy<Value = String> {
    prop_oneof![
        "vfz[a-z_./]{0,12}",
        (61usize..90).prop_map(|n| format!("vfz{}{}", "k".repeat(n), secret(999))),
        "vfz[\\x00-\\x1f\u{202e}\u{200b}é\"\\\\ ]{1,8}",
    ]
}

#[derive(Debug, Clone)]
pub enum Injection {
    /// A new frame of an unknown kind, inserted before frame `at`.
    Unknown {
        at: usize,
        kind: String,
        body: Value,
    },
    /// A genuine frame whose top-level kind becomes unknown.
    Retype { frame: usize, kind: String },
    /// A genuine `type/subtype` frame (claude `system`, `result`) whose
    /// subtype becomes unknown.
    RetypeSubkind { frame: usize, kind: String },
    /// A genuine frame whose nested kind (one block) becomes unknown.
    RetypeNested {
        frame: usize,
        block: usize,
        kind: String,
    },
}

pub fn injection() -> impl Strategy<Value = Injection> {
    let ix = || 0usize..1 << 16;
    prop_oneof![
        (ix(), unknown_kind(), super::json::value())
            .prop_map(|(at, kind, body)| Injection::Unknown { at, kind, body }),
        (ix(), unknown_kind()).prop_map(|(frame, kind)| Injection::Retype { frame, kind }),
        (ix(), unknown_kind()).prop_map(|(frame, kind)| Injection::RetypeSubkind { frame, kind }),
        (ix(), ix(), unknown_kind()).prop_map(|(frame, block, kind)| Injection::RetypeNested {
            frame,
            block,
            kind
        }),
    ]
}

/// The top-level frames of a JSON capture (JSONL or pretty-printed documents).
pub fn frames_of(bytes: &[u8]) -> Option<Vec<Value>> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .ok()
}

/// Applies injection number `i` (its secret is [`secret`]`(i)`).
pub fn inject(frames: &mut Vec<Value>, t: &Target, i: usize, inj: &Injection) {
    let m = resolve(t.cli, t.version.as_ref()).manifest;
    match inj {
        Injection::Unknown { at, kind, body } => {
            let mut v = match body {
                Value::Object(_) => body.clone(),
                other => serde_json::json!({ "payload": other }),
            };
            fill_secret(&mut v, &secret(i));
            set_at(&mut v, m.kind, Value::String(kind.clone()));
            frames.insert(at % (frames.len() + 1), v);
        }
        Injection::Retype { frame, kind } if !frames.is_empty() => {
            let n = frames.len();
            let v = &mut frames[frame % n];
            fill_secret(v, &secret(i));
            set_at(v, m.kind, Value::String(kind.clone()));
        }
        Injection::RetypeSubkind { frame, kind } if !frames.is_empty() => {
            let n = frames.len();
            retype_subkind(&mut frames[frame % n], m, kind, &secret(i));
        }
        Injection::RetypeNested { frame, block, kind } if !frames.is_empty() => {
            let n = frames.len();
            retype_nested(
                &mut frames[frame % n],
                m,
                t.transport,
                *block,
                kind,
                &secret(i),
            );
        }
        _ => {}
    }
}

/// The frame's kind as the manifest reads it (`type`, or `type/subtype`).
fn kind_of(v: &Value, m: &Manifest) -> Option<String> {
    let t = get(v, m.kind)?.as_str()?;
    Some(match m.subkinds.iter().find(|(k, _)| *k == t) {
        Some((_, sub)) => format!("{t}/{}", get(v, sub)?.as_str()?),
        None => t.to_string(),
    })
}

/// For a frame whose kind has a subtype: the subtype becomes unknown, the
/// payload secret, the type stays.
fn retype_subkind(v: &mut Value, m: &Manifest, kind: &str, secret: &str) {
    let Some(t) = get(v, m.kind).and_then(Value::as_str).map(str::to_string) else {
        return;
    };
    let Some((_, sub)) = m.subkinds.iter().find(|(k, _)| *k == t) else {
        return;
    };
    fill_secret(v, secret);
    set_at(v, m.kind, Value::String(t));
    set_at(v, sub, Value::String(kind.to_string()));
}

fn nested_rule(rule: &'static Rule) -> Option<&'static Nested> {
    match rule {
        Rule::Nested(n) => Some(n),
        Rule::All(rules) => rules.iter().find_map(nested_rule),
        _ => None,
    }
}

/// Turns one nested block of a known frame into an unknown kind: the
/// frame's other blocks stay known, the block's payload must not show.
fn retype_nested(
    v: &mut Value,
    m: &'static Manifest,
    transport: OutputTransport,
    block: usize,
    kind: &str,
    secret: &str,
) {
    let Some(frame_kind) = kind_of(v, m) else {
        return;
    };
    let rule = m.table(transport).and_then(|t| lookup(t, &frame_kind));
    let Some(n) = rule.and_then(nested_rule) else {
        return;
    };
    // The frame's own kind fields, restored after the fill (gemini's nested
    // root is the frame itself).
    let mut own: Vec<(&[&str], Value)> = vec![(m.kind, get(v, m.kind).cloned().unwrap())];
    for (_, sub) in m.subkinds {
        if let Some(s) = get(v, sub) {
            own.push((sub, s.clone()));
        }
    }
    let Some(inner) = super::json::at_mut(v, n.root) else {
        return;
    };
    let target = match inner {
        Value::Array(items) if n.many && !items.is_empty() => {
            let len = items.len();
            &mut items[block % len]
        }
        Value::Object(_) if !n.many => inner,
        _ => return,
    };
    if !target.is_object() {
        return;
    }
    fill_secret(target, secret);
    set_at(target, n.key, Value::String(kind.to_string()));
    for (path, val) in own {
        if n.root.is_empty() && path != n.key {
            set_at(v, path, val);
        }
    }
}

/// Frames back to lines: one per frame, or pretty-printed over many.
pub fn frames_to_lines(frames: &[Value], pretty: &[bool]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if pretty.get(i).copied().unwrap_or(false) {
            lines.extend(split_lines(&serde_json::to_vec_pretty(f).unwrap()));
        } else {
            lines.push(serde_json::to_vec(f).unwrap());
        }
    }
    lines
}
