//! JSON helpers for the fuzz tests: generated values shaped like the CLIs'
//! frames, and in-place edits of parsed frames (pick a node, swap its type,
//! fill strings with marker words).

use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::{captures, known_kinds};

/// Every object key seen in the genuine captures: generated frames use them,
/// so the manifests' field paths are hit with values of every type.
pub fn capture_keys() -> &'static [String] {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = Vec::new();
        for c in captures() {
            let stream = serde_json::Deserializer::from_slice(&c.bytes).into_iter::<Value>();
            for v in stream.map_while(Result::ok) {
                collect_keys(&v, &mut keys);
            }
        }
        keys.sort();
        keys.dedup();
        keys
    })
}

fn collect_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, inner) in m {
                out.push(k.clone());
                collect_keys(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_keys(i, out)),
        _ => {}
    }
}

fn pick(words: &'static [String]) -> impl Strategy<Value = String> {
    (0..words.len()).prop_map(move |i| words[i].clone())
}

/// Strings: known kinds (to reach nested rules), keys, or anything.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => pick(known_kinds()),
        1 => pick(capture_keys()),
        2 => any::<String>(),
        1 => Just(String::new()),
        1 => "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN/inf become null
        string().prop_map(Value::String),
    ]
}

/// Any JSON value whose object keys mostly come from the captures.
pub fn value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![4 => pick(capture_keys()), 1 => any::<String>()];
    leaf().prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A frame-like object: a known kind under `type` (and often a second one
/// under `subtype`/`role`), the rest generated.
pub fn frame() -> impl Strategy<Value = Value> {
    (pick(known_kinds()), pick(known_kinds()), value()).prop_map(|(kind, sub, rest)| {
        let mut m = match rest {
            Value::Object(m) => m,
            other => Map::from_iter([("item".to_string(), other)]),
        };
        m.insert("type".into(), Value::String(kind));
        for k in ["subtype", "role"] {
            m.entry(k).or_insert_with(|| Value::String(sub.clone()));
        }
        Value::Object(m)
    })
}

/// Number of nodes of `v` (pre-order), for picking one with an index.
pub fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(m) => m.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The `i`-th node of `v` in pre-order (`i` below [`count_nodes`]).
pub fn nth_node(v: &mut Value, mut i: usize) -> &mut Value {
    fn walk<'v>(v: &'v mut Value, i: &mut usize) -> Option<&'v mut Value> {
        if *i == 0 {
            return Some(v);
        }
        *i -= 1;
        let children: Vec<&mut Value> = match v {
            Value::Array(a) => a.iter_mut().collect(),
            Value::Object(m) => m.values_mut().collect(),
            _ => return None,
        };
        children.into_iter().find_map(|c| walk(c, i))
    }
    i %= count_nodes(v);
    walk(v, &mut i).expect("an index below count_nodes")
}

/// The value at an object-key path.
pub fn at_mut<'v>(v: &'v mut Value, path: &[&str]) -> Option<&'v mut Value> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object_mut()?.get_mut(*k)?;
    }
    Some(cur)
}

pub fn get<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object()?.get(*k)?;
    }
    Some(cur)
}

/// Sets the value at a path, creating objects on the way; false when a
/// non-object is in the way.
pub fn set_at(v: &mut Value, path: &[&str], new: Value) -> bool {
    let Some((last, parents)) = path.split_last() else {
        *v = new;
        return true;
    };
    let mut cur = v;
    for k in parents {
        let Some(m) = cur.as_object_mut() else {
            return false;
        };
        cur = m.entry(*k).or_insert_with(|| Value::Object(Map::new()));
    }
    match cur.as_object_mut() {
        Some(m) => {
            m.insert(last.to_string(), new);
            true
        }
        None => false,
    }
}

/// Replaces every string value inside `v` with `secret` (keys stay, so the
/// manifests' field paths still find them) and adds a key named `secret` to
/// every object.
pub fn fill_secret(v: &mut Value, secret: &str) {
    match v {
        Value::String(s) => *s = format!("{secret} {secret}"),
        Value::Array(a) => a.iter_mut().for_each(|x| fill_secret(x, secret)),
        Value::Object(m) => {
            m.values_mut().for_each(|x| fill_secret(x, secret));
            m.insert(secret.to_string(), Value::String(secret.to_string()));
        }
        _ => {}
    }
}

/// A value of another JSON type than `v` (the "swap the type" mutation).
pub fn other_type(v: &Value, choice: u8) -> Value {
    let options = [
        Value::Null,
        Value::Bool(true),
        Value::from(-1),
        Value::from(u64::MAX),
        Value::from(1.5e300),
        Value::String(String::new()),
        Value::String("x".repeat(3000)),
        Value::Array(vec![Value::Null]),
        Value::Object(Map::new()),
    ];
    let same = |o: &Value| std::mem::discriminant(o) == std::mem::discriminant(v);
    let others: Vec<&Value> = options.iter().filter(|o| !same(o)).collect();
    others[choice as usize % others.len()].clone()
}
