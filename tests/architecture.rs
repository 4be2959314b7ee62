//! The crate's shape, as docs/ARCHITECTURE.md states it, checked on the
//! source: imports go down the layers (cli → commands → core → ground
//! floor), the module graph has no cycle, core code knows no terminal, the
//! doc names every module, and the integration tests share one harness.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

mod common;
use common::source::{code_of, crate_modules, find_cycle, lib_modules, module_graph};
use common::*;

/// Pure helpers with no vf state: they import nothing above themselves.
const GROUND_FLOOR: &[&str] = &[
    "error", "fsutil", "names", "procinfo", "summary", "text", "version",
];

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    module_graph(&root().join("src"))
}

/// Who imports `module`.
fn importers(graph: &BTreeMap<String, BTreeSet<String>>, module: &str) -> BTreeSet<String> {
    graph
        .iter()
        .filter(|(_, to)| to.contains(module))
        .map(|(from, _)| from.clone())
        .collect()
}

#[test]
fn imports_only_go_down_the_layers() {
    let g = graph();
    assert!(g.len() >= 20 && g["commands"].len() >= 10, "{g:?}");
    // cli: clap definitions over the engine types; only the commands read it.
    assert_eq!(g["cli"], BTreeSet::from(["engine".to_string()]));
    assert_eq!(
        importers(&g, "cli"),
        BTreeSet::from(["commands".to_string()])
    );
    // Nothing below the commands reaches back up to them.
    assert_eq!(importers(&g, "commands"), BTreeSet::new());
    for m in GROUND_FLOOR {
        let above: Vec<&String> = g[*m]
            .iter()
            .filter(|to| !GROUND_FLOOR.contains(&to.as_str()))
            .collect();
        assert!(above.is_empty(), "ground-floor {m} imports {above:?}");
    }
}

#[test]
fn the_module_graph_has_no_cycle() {
    assert_eq!(find_cycle(&graph()), None);
    // Inside frames too: manifest.rs and manifests/ once imported each other.
    let frames = root().join("src/frames");
    let files = files_under(&frames);
    let name = |p: &std::path::Path| match p.file_stem().unwrap().to_str().unwrap() {
        "mod" => p
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
        stem => stem.to_string(),
    };
    let names: BTreeSet<String> = files.iter().map(|p| name(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let code = code_of(&read_text(f)).replace("crate::frames::", "super::");
        let to = g.entry(name(f)).or_default();
        for (i, _) in code.match_indices("super::") {
            let rest = &code[i + "super::".len()..];
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'));
            let m = &rest[..end.unwrap_or(rest.len())];
            if names.contains(m) && m != name(f) {
                to.insert(m.to_string());
            }
        }
    }
    assert!(g["projector"].contains("manifests"), "{g:?}");
    assert!(!g["manifest"].contains("manifests"), "{g:?}");
    assert_eq!(find_cycle(&g), None, "{g:?}");
}

#[test]
fn core_code_knows_no_terminal() {
    let src = root().join("src");
    for f in files_under(&src) {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel.starts_with("commands/") || ["cli.rs", "main.rs"].contains(&rel.as_str()) {
            continue;
        }
        let code = code_of(&read_text(&f));
        for word in ["IsTerminal", "is_terminal", "println!", "print!(", "eprint"] {
            assert!(!code.contains(word), "{rel} uses {word}");
        }
    }
}

#[test]
fn the_architecture_doc_names_every_module() {
    let doc = read_text(&root().join("docs/ARCHITECTURE.md"));
    for m in lib_modules(&read_text(&root().join("src/lib.rs"))) {
        assert!(
            doc.contains(&format!("`{m}`")),
            "docs/ARCHITECTURE.md omits `{m}`"
        );
    }
}

/// Files under tests/ that keep their own helpers: the fuzz suite has its own
/// harness (tests/fuzz_support), the real-engine tier its loopback sandbox,
/// and state.rs is still to be folded in.
const OWN_HARNESS: &[&str] = &["fuzz_", "real-engines/", "state.rs"];

#[test]
fn the_integration_tests_share_one_harness() {
    let tests = root().join("tests");
    let mut checked = 0;
    for f in files_under(&tests) {
        let rel = f
            .strip_prefix(&tests)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !rel.ends_with(".rs")
            || rel.starts_with("common/")
            || rel == "architecture.rs"
            || OWN_HARNESS.iter().any(|o| rel.starts_with(o))
        {
            continue;
        }
        checked += 1;
        let code = code_of(&read_text(&f));
        for own in [
            "CARGO_MANIFEST_DIR",
            "CARGO_BIN_EXE",
            "cargo_bin(",
            "tempfile::",
            "struct Env",
        ] {
            assert!(
                !code.contains(own),
                "{rel} has its own {own}: use tests/common"
            );
        }
    }
    assert!(checked >= 15, "{checked}");
}

/// The checkers above find what they look for.
#[test]
fn the_source_checks_can_fail() {
    let code = code_of(
        "use crate::{\n    engine::{EngineId, Spec},\n    error,\n};\n// crate::text\n\
         fn f(x: crate::doctor::Options) {}\n#[cfg(test)]\nmod tests { use crate::probe; }",
    );
    let want: BTreeSet<String> = ["doctor", "engine", "error"].map(String::from).into();
    assert_eq!(crate_modules(&code), want);
    let deps = common::source::dependencies("[package]\n\n[dependencies]\nserde-json = \"1\"\n");
    assert_eq!(deps, ["serde_json"]);
    let named = common::source::crates_named("let v: serde_json::Value; my_serde_json::x", &deps);
    assert_eq!(named, BTreeSet::from(["serde_json"]));
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
}

/// The comparison helpers: volatile fields normalised by key and type, the
/// temp dir written `<tmp>`, and every other difference caught.
#[test]
fn whole_object_comparison_can_fail() {
    let env = Env::new();
    let raw = json!({
        "pid": 7, "host": "vm", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": null,
        "durationMs": "not a number", "log": format!("{}/state/x.log", env.path().display()),
        "nested": [{"pgid": 9}],
    });
    let want = json!({
        "pid": "<pid>", "host": "<host>", "startedAt": "<time>", "finishedAt": null,
        "durationMs": "not a number", "log": "<tmp>/state/x.log", "nested": [{"pgid": "<pgid>"}],
    });
    assert_json_eq(&env.normalized(&raw), &want);
    let mut extra = raw.clone();
    extra["newField"] = 1.into();
    let caught = std::panic::catch_unwind(|| assert_json_eq(&env.normalized(&extra), &want));
    assert!(caught.is_err(), "a new field slipped past");
}
