//! Bounded fuzz of marker loading (issue 11; docs/FUZZING.md): arbitrary
//! bytes and damaged valid markers in `<state>/units/<unit>/marker.json` load or
//! fail with one clean state error (exit 5), never panic, never hang, never
//! write. Budget: `VF_FUZZ_CASES=N` runs N cases of each property.

use crate::common;
use crate::fuzz_support;

use std::path::{Path, PathBuf};

use fuzz_support::json::{nth_node, other_type, value};
use fuzz_support::mutate::{Mutation, apply, join_lines, mutation, split_lines};
use fuzz_support::{CASE_LIMIT, bounded, config};
use proptest::prelude::*;
use serde_json::{Value, json};
use vf::VfError;
use vf::engine::EngineId;
use vf::unit::marker::{Marker, MarkerStore, UnitState};

const UNIT: &str = "u1";

/// A marker with every optional field set, as vf writes it.
fn full_marker() -> Value {
    let mut m = Marker::new(UNIT, EngineId::Codex, Path::new("/home/dev/project"));
    m.state = UnitState::Running;
    m.engine_version = Some("0.171.0".into());
    m.engine_session_id = Some("01a229e6-b739-7472-9ac7-c8fe37200f9b".into());
    m.attempts = 2;
    m.exit_code = Some(1);
    m.summary = Some(json!({"confidence": 0.5, "files_changed": ["a.rs"]}));
    m.error = Some("engine failed".into());
    m.reason = Some(vf::ground::error::Reason::Engine);
    // Relative to the state dir, as vf writes them.
    m.stdout_log = Some(PathBuf::from("units/u1/attempt-2.stdout.log"));
    m.stderr_log = Some(PathBuf::from("units/u1/attempt-2.stderr.log"));
    let mut v = serde_json::to_value(&m).unwrap();
    v["owner"] = json!({
        "supervisor": {"pid": 4242, "startTime": 123456, "bootId": "b-1", "host": "h"},
        "cli": {"pid": 4243, "startTime": null, "bootId": null, "host": "h"},
        "pgid": 4243
    });
    // Fails here, not in every case, if the shape above stops being a marker.
    serde_json::from_value::<Marker>(v.clone()).expect("full_marker is a valid marker");
    v
}

/// Values that stress the typed fields: out-of-range numbers, odd strings,
/// paths that leave the state dir, deep nesting.
fn odd_value() -> impl Strategy<Value = Value> {
    let deep = (100usize..200).prop_map(|n| (0..n).fold(Value::Null, |v, _| Value::Array(vec![v])));
    prop_oneof![
        4 => value(),
        1 => prop::sample::select(vec![
            json!(-1), json!(0), json!(2), json!(4_294_967_296u64), json!(i64::MIN),
            json!(1.5), json!(1e308), json!("../../escaped"), json!("/etc/passwd"),
            json!(""), json!("x".repeat(20_000)), json!("a\nb\u{0}\u{202e}"),
            json!("DONE"), json!("done"), json!("interrupted"),
        ]),
        1 => deep,
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    SwapType { node: usize, choice: u8 },
    Remove { key: usize },
    Set { key: usize, value: Value },
    Extra { key: String, value: Value },
}

fn edit() -> impl Strategy<Value = Edit> {
    let ix = || 0usize..1 << 16;
    prop_oneof![
        (ix(), any::<u8>()).prop_map(|(node, choice)| Edit::SwapType { node, choice }),
        ix().prop_map(|key| Edit::Remove { key }),
        (ix(), odd_value()).prop_map(|(key, value)| Edit::Set { key, value }),
        (any::<String>(), odd_value()).prop_map(|(key, value)| Edit::Extra { key, value }),
    ]
}

fn apply_edit(v: &mut Value, e: &Edit) {
    let keys: Vec<String> = v
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let key = |i: usize| keys.get(i % keys.len().max(1)).cloned();
    match e {
        Edit::SwapType { node, choice } => {
            let n = nth_node(v, *node);
            *n = other_type(n, *choice);
        }
        Edit::Remove { key: i } => {
            if let (Some(k), Some(m)) = (key(*i), v.as_object_mut()) {
                m.remove(&k);
            }
        }
        Edit::Set { key: i, value } => {
            if let (Some(k), Some(m)) = (key(*i), v.as_object_mut()) {
                m.insert(k, value.clone());
            }
        }
        Edit::Extra { key, value } => {
            if let Some(m) = v.as_object_mut() {
                m.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Every file under `dir` with its contents: loading must change nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// Writes `bytes` as the unit's marker and loads it: a marker, or one
/// clean state error naming the file. `list` agrees; nothing is written.
fn load_checked(bytes: Vec<u8>) -> Result<Option<Marker>, String> {
    let t = common::tempdir();
    let store = MarkerStore::new(t.path());
    std::fs::create_dir_all(store.logs_dir(UNIT)).unwrap();
    std::fs::write(store.path(UNIT), &bytes).unwrap();
    let before = snapshot(t.path());
    let loaded = store.load(UNIT);
    let listed = store.list().map_err(|e| format!("list failed: {e}"))?;
    if snapshot(t.path()) != before {
        return Err("loading a marker wrote to the state dir".into());
    }
    if listed.len() != 1 || listed[0].is_ok() != loaded.is_ok() {
        return Err(format!(
            "list disagrees with load: {listed:?} vs {loaded:?}"
        ));
    }
    match loaded {
        Ok(Some(m)) => {
            serde_json::to_string(&m)
                .map_err(|e| format!("loaded marker does not serialize: {e}"))?;
            Ok(Some(m))
        }
        Ok(None) => Err("an existing marker loaded as absent".into()),
        Err(VfError::State(msg)) => check_message(&msg, &store.path(UNIT)).map(|_| None),
        Err(other) => Err(format!("not a state error (exit 5): {other:?}")),
    }
}

/// Longest error line accepted (the path, serde's reason, vf's advice).
const MAX_MESSAGE: usize = 1024;

fn check_message(msg: &str, path: &Path) -> Result<(), String> {
    if !msg.contains(&path.display().to_string()) {
        return Err(format!("error does not name the marker: {msg}"));
    }
    // A value from the file is cut and escaped: one short line, no
    // terminal escapes (`marker_errors_are_one_short_line`).
    if msg.contains('\n') || msg.contains('\u{1b}') {
        return Err(format!("error spans lines or carries escapes: {msg:?}"));
    }
    if msg.len() > MAX_MESSAGE {
        return Err(format!("error of {} bytes: {msg:?}", msg.len()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_load_or_error_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let r = bounded(CASE_LIMIT, move || load_checked(bytes));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn damaged_markers_load_or_error_cleanly(
        edits in prop::collection::vec(edit(), 0..5),
        damage in prop::collection::vec(mutation(), 0..3),
        pretty in any::<bool>(),
    ) {
        let mut v = full_marker();
        for e in &edits {
            apply_edit(&mut v, e);
        }
        let text = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) };
        let mut lines = split_lines(&text.unwrap());
        for m in &damage {
            apply(&mut lines, m);
        }
        let bytes = join_lines(&lines, true);
        let r = bounded(CASE_LIMIT, move || load_checked(bytes));
        prop_assert!(r.is_ok(), "{} after {edits:?} {damage:?}", r.unwrap_err());
    }
}

#[test]
fn an_undamaged_marker_loads_as_written() {
    let v = full_marker();
    let m = load_checked(serde_json::to_vec_pretty(&v).unwrap())
        .unwrap()
        .expect("a marker");
    assert_eq!(serde_json::to_value(&m).unwrap(), v);
}

#[test]
fn the_edits_and_damage_change_the_marker() {
    // A check on the harness itself.
    let v = full_marker();
    for e in [
        Edit::SwapType { node: 3, choice: 0 },
        Edit::Remove { key: 0 },
        Edit::Set {
            key: 0,
            value: json!(-1),
        },
        Edit::Extra {
            key: "x".into(),
            value: json!(1),
        },
    ] {
        let mut w = v.clone();
        apply_edit(&mut w, &e);
        assert_ne!(w, v, "{e:?}");
    }
    let lines = split_lines(&serde_json::to_vec_pretty(&v).unwrap());
    let mut damaged = lines.clone();
    apply(&mut damaged, &Mutation::Truncate { line: 3, at: 2 });
    assert_ne!(damaged, lines);
}

/// Fuzz finding 2 (docs/FUZZING.md): serde's message echoed the bad value
/// whole (a 20 KB string where a number belongs gave a 20 KB error) and, for
/// an unknown `engine` or `state`, raw: a marker brought by a cloned
/// repository printed newlines and terminal escapes into the error.
#[test]
fn marker_errors_are_one_short_line() {
    for (key, bad) in [
        ("engine", json!("codex\n\u{1b}[2Jdone")),
        ("state", json!("x".repeat(20_000))),
        ("attempts", json!("x".repeat(20_000))),
    ] {
        let mut v = full_marker();
        v[key] = bad;
        let t = common::tempdir();
        let store = MarkerStore::new(t.path());
        std::fs::create_dir_all(store.logs_dir(UNIT)).unwrap();
        std::fs::write(store.path(UNIT), serde_json::to_vec(&v).unwrap()).unwrap();
        let msg = store.load(UNIT).unwrap_err().to_string();
        assert!(
            !msg.contains('\n') && !msg.contains('\u{1b}'),
            "{key}: {msg:?}"
        );
        assert!(msg.len() <= MAX_MESSAGE, "{key}: {} bytes", msg.len());
    }
}
