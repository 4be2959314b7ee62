//! The crate's shape, as docs/ARCHITECTURE.md states it, checked on the
//! source: imports go down the layers (cli → commands → core → ground
//! floor), the module graph has no cycle, core code knows no terminal, the
//! doc names every module, files and functions stay small, and the
//! integration tests are one crate that shares one harness.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use crate::common;
use common::source::{code_of, crate_modules, find_cycle, lib_modules};
use common::*;

#[path = "architecture/domains.rs"]
mod domains;

/// Inside the projector's folder too: manifest.rs and manifests/ once
/// imported each other (the file graph of `domains` sees that now; this
/// keeps the direction).
#[test]
fn the_projector_reads_its_manifests_not_the_reverse() {
    let g = common::source::file_graph(&root().join("src"));
    let p = "engine/frames/projector.rs";
    assert!(
        g[p].iter()
            .any(|f| f.starts_with("engine/frames/manifests/")),
        "{:?}",
        g[p]
    );
    let m = "engine/frames/manifest.rs";
    assert!(
        !g[m]
            .iter()
            .any(|f| f.starts_with("engine/frames/manifests/")),
        "{:?}",
        g[m]
    );
}

/// Every file of `src/` as (its path below `src/`, its code without
/// comments and tests).
fn source_code() -> Vec<(String, String)> {
    let src = root().join("src");
    files_under(&src)
        .iter()
        .map(|f| {
            // `/`-separated on every OS: the checks name files as `unit/life.rs`.
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy();
            (rel.replace('\\', "/"), code_of(&read_text(f)))
        })
        .collect()
}

#[test]
fn core_code_knows_no_terminal() {
    for (rel, code) in source_code() {
        if rel.starts_with("commands/") || rel.starts_with("cli/") || rel == "main.rs" {
            continue;
        }
        for word in ["IsTerminal", "is_terminal", "println!", "print!(", "eprint"] {
            assert!(!code.contains(word), "{rel} uses {word}");
        }
    }
}

/// stdout and stderr are written through `commands/stdio.rs` only (issue
/// 25): `println!` and `eprintln!` panic on a failed write (vf ignores
/// `SIGPIPE`, so a closed pipe is one), and a write around `stdio::Stdout`
/// fails as an internal error (70) instead of an output error (74).
#[test]
fn every_print_goes_through_stdio() {
    for (rel, code) in source_code() {
        if rel == "commands/stdio.rs" {
            continue;
        }
        for word in [
            "print!(",
            "println!",
            "dbg!(",
            "stdout().lock",
            "stdout().write",
            "stdout().flush",
        ] {
            assert!(!code.contains(word), "{rel} uses {word}");
        }
    }
}

/// Only the platform layer (`src/sys/`) knows which OS vf runs on: no other
/// file names an OS, an OS extension trait, or a raw system call crate.
#[test]
fn only_the_platform_layer_knows_the_os() {
    let mut checked = 0;
    for (rel, code) in source_code() {
        if rel.starts_with("sys/") {
            continue;
        }
        for word in [
            "std::os::",
            "libc::",
            "nix::",
            "windows_sys::",
            "target_os",
            "cfg(unix)",
            "cfg(windows)",
            "/proc/",
            "/bin/sh",
        ] {
            assert!(
                !code.contains(word),
                "{rel} uses {word}: it belongs in src/sys/"
            );
        }
        checked += 1;
    }
    assert!(checked >= 80, "{checked}");
}

#[test]
fn the_architecture_doc_names_every_domain() {
    let doc = read_text(&root().join("docs/ARCHITECTURE.md"));
    let new_things = doc
        .split("## Where new things go")
        .nth(1)
        .expect("the section");
    for m in lib_modules(&read_text(&root().join("src/lib.rs"))) {
        assert!(
            doc.contains(&format!("`{m}/`")),
            "docs/ARCHITECTURE.md omits `{m}/`"
        );
    }
    for d in [
        "engine/",
        "unit/",
        "dispatch/",
        "plan/",
        "commands/",
        "process/",
        "sys/",
    ] {
        assert!(
            new_things.contains(&format!("`{d}")),
            "\"Where new things go\" names no `{d}`"
        );
    }
}

/// `s` without string and char literals and without its `//` comment: what
/// is left of a line for counting braces.
fn bare(line: &str) -> String {
    let (mut out, mut chars) = (String::new(), line.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' if matches!(chars.clone().nth(1), Some('\'')) => {
                chars.nth(1);
            }
            '/' if chars.peek() == Some(&'/') => break,
            c => out.push(c),
        }
    }
    out
}

/// The name of the `fn` a line starts, after its visibility and qualifiers.
fn fn_name(line: &str) -> Option<String> {
    let mut head = line.trim_start();
    let quals = [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ];
    while let Some(rest) = quals.iter().find_map(|q| head.strip_prefix(q)) {
        head = rest;
    }
    let rest = head.strip_prefix("fn ")?;
    Some(
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// `(name, first line, lines)` of every `fn` with a body in `src`.
fn function_lengths(src: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = fn_name(&bare(lines[i])) else {
            i += 1;
            continue;
        };
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            let b = bare(lines[j]);
            if !started && b.trim_end().ends_with(';') && !b.contains('{') {
                break; // a declaration without a body
            }
            depth += b.matches('{').count() as i64 - b.matches('}').count() as i64;
            started |= b.contains('{');
            if started && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
            j += 1;
        }
        i = j.max(i) + 1;
    }
    out
}

/// Issue 12's bounds: no file in src/ or tests/ of 800 lines or more, no
/// function in src/ over 120 lines.
#[test]
fn files_and_functions_stay_small() {
    let mut checked = 0;
    for dir in ["src", "tests"] {
        for f in files_under(&root().join(dir)) {
            if f.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = read_text(&f);
            let rel = f.strip_prefix(root()).unwrap().display().to_string();
            assert!(
                text.lines().count() < 800,
                "{rel} has {} lines",
                text.lines().count()
            );
            if dir == "src" {
                for (name, line, len) in function_lengths(&text) {
                    checked += 1;
                    assert!(len <= 120, "{rel}:{line}: fn {name} is {len} lines");
                }
            }
        }
    }
    assert!(checked > 300, "{checked} functions measured");
    // The measure itself: nested braces, braces in strings and comments.
    let sample =
        "pub fn a() {\n    let s = \"}\"; // }\n    if x { y() }\n}\nfn b();\nasync fn c() {}\n";
    assert_eq!(
        function_lengths(sample),
        [("a".to_string(), 1, 4), ("c".to_string(), 6, 1)]
    );
}

/// Issue 30's owner rule: a marker's state is assigned and the marker
/// saved by `unit/life.rs` alone (and by the marker module's own store
/// code, `unit/marker.rs` and `unit/marker/`). The lines of `code` that break it: an
/// assignment of a `.state` on a marker (`m`, `marker`, or a `UnitState`
/// value) or a call of the marker store's `save(&mut marker)`.
fn marker_owner_breaches(code: &str) -> Vec<String> {
    let assigns = |l: &str| {
        l.match_indices(".state =").any(|(i, _)| {
            let after = &l[i + ".state =".len()..];
            let receiver = l[..i].rsplit(|c: char| !(c.is_alphanumeric() || c == '_'));
            !after.starts_with('=')
                && (after.contains("UnitState")
                    || receiver.take(1).any(|r| r == "m" || r.ends_with("marker")))
        })
    };
    let saves = |l: &str| l.contains(".save(&mut ") || l.contains("MarkerStore::save");
    code.lines()
        .filter(|l| assigns(l) || saves(l))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn only_the_units_life_writes_its_marker() {
    let mut breaches = Vec::new();
    for (rel, code) in source_code() {
        let owner = rel == "unit/life.rs"
            || rel.starts_with("unit/marker")
            // The locked unit's one write (issue 40's unit folder).
            || rel == "unit/writes.rs";
        // A `#[cfg(test)]` module of its own file (`#[path = "life_tests.rs"]`).
        let tests = rel.ends_with("_tests.rs");
        if !owner && !tests {
            breaches.extend(
                marker_owner_breaches(&code)
                    .into_iter()
                    .map(|l| format!("{rel}: {l}")),
            );
        }
    }
    assert_eq!(breaches, Vec::<String>::new());
    // The check finds what it looks for, and leaves the plan's reports alone.
    let sample = "m.state = to;\nself.marker.state = UnitState::Done;\n\
                  u.report.state = RunState::Done;\nrow.state = report.state;\n\
                  if m.state == UnitState::Done {}\nx.state = UnitState::Failed;\n\
                  store.save(&mut m)?;\nrecord.save(&path)?;\nstore.save(&conv)?;";
    assert_eq!(
        marker_owner_breaches(sample),
        [
            "m.state = to;",
            "self.marker.state = UnitState::Done;",
            "x.state = UnitState::Failed;",
            "store.save(&mut m)?;"
        ]
    );
}

/// Issue 40: the lines of `code` that write a `UnitSpec { .. }` struct
/// literal (not its definition, an `impl`, or a function returning one).
fn spec_literals(code: &str) -> Vec<String> {
    let literal = |l: &str| {
        l.match_indices("UnitSpec {").any(|(i, _)| {
            let before = l[..i].trim_end();
            let named_longer = l[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
            !named_longer
                && !["struct", "impl", "for", "->"]
                    .iter()
                    .any(|w| before.ends_with(w))
        })
    };
    code.lines()
        .filter(|l| literal(l))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn one_resolution_builds_a_units_spec() {
    let mut literals = Vec::new();
    for (rel, code) in source_code() {
        // A `#[cfg(test)]` module of its own file may build specs as it likes.
        if !rel.ends_with("_tests.rs") {
            literals.extend(
                spec_literals(&code)
                    .into_iter()
                    .map(|l| format!("{rel}: {l}")),
            );
        }
    }
    assert_eq!(literals, ["dispatch/resolve.rs: UnitSpec {"]);
    let sample = "pub struct UnitSpec {\nimpl UnitSpec {\nfn f() -> UnitSpec {\n\
                  let s = UnitSpec {\nlet t = dispatch::UnitSpec { ..s };\nstruct MyUnitSpec {";
    assert_eq!(
        spec_literals(sample),
        ["let s = UnitSpec {", "let t = dispatch::UnitSpec { ..s };"]
    );
}

/// Issue 40's owner rule: a plan unit's row (`RunState`) is assigned by
/// `plan/scheduler/row.rs` alone. The lines of `code` that break it: an
/// assignment of `.state = RunState::…` or a struct literal's
/// `state: RunState::…`.
fn row_owner_breaches(code: &str) -> Vec<String> {
    let squeezed = |l: &str| l.split_whitespace().collect::<String>();
    code.lines()
        .filter(|l| {
            let l = squeezed(l);
            l.contains(".state=RunState::") || l.contains("state:RunState::")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn only_the_row_owner_assigns_a_run_state() {
    const OWNER: &str = "plan/scheduler/row.rs";
    let mut breaches = Vec::new();
    for (rel, code) in source_code() {
        if rel != OWNER {
            let found = row_owner_breaches(&code);
            breaches.extend(found.into_iter().map(|l| format!("{rel}: {l}")));
        }
    }
    assert_eq!(
        breaches,
        Vec::<String>::new(),
        "only {OWNER} assigns a RunState"
    );
    let sample = "u.report.state = RunState::Done;\nrow.state =RunState::Failed;\n\
                  UnitReport { state: RunState::Running, ..w }\n\
                  if u.report.state == RunState::Waiting {}\nx.state != RunState::Done;\n\
                  m.state = UnitState::Done;\nlet s: RunState = RunState::Done;";
    assert_eq!(
        row_owner_breaches(sample),
        [
            "u.report.state = RunState::Done;",
            "row.state =RunState::Failed;",
            "UnitReport { state: RunState::Running, ..w }"
        ]
    );
}

/// Issue 40's unit folder: only `src/unit/` builds paths inside `<state>/units/`.
///
/// The lines of `code` that build a path inside the units directory: a
/// call into `layout`, its `UNITS_DIR`, or a literal `units` path.
fn unit_path_breaches(code: &str) -> Vec<String> {
    let builds = |l: &str| {
        l.contains("layout::")
            || l.contains("UNITS_DIR")
            || l.contains("join(\"units\")")
            || l.contains("\"units/")
    };
    code.lines()
        .filter(|l| builds(l))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn only_the_unit_folder_builds_paths_inside_units() {
    let mut breaches = Vec::new();
    for (rel, code) in source_code() {
        if !rel.starts_with("unit/") {
            breaches.extend(
                unit_path_breaches(&code)
                    .into_iter()
                    .map(|l| format!("{rel}: {l}")),
            );
        }
    }
    assert_eq!(breaches, Vec::<String>::new());
    let sample = "let p = crate::layout::unit_dir(s, u).join(\"x\");\n\
                  let d = state.join(\"units\").join(u);\n\
                  let f = format!(\"units/{u}/lock\");\n\
                  let ok = unit.dir().path();\n\
                  #[arg(long, conflicts_with = \"units\")]";
    assert_eq!(
        unit_path_breaches(sample),
        [
            "let p = crate::layout::unit_dir(s, u).join(\"x\");",
            "let d = state.join(\"units\").join(u);",
            "let f = format!(\"units/{u}/lock\");"
        ]
    );
}

/// The integration tests are one crate, tests/it. Cargo makes a test binary
/// of every tests/*.rs and tests/*/main.rs, each linking the whole crate
/// again: one of its own is declared in Cargo.toml after a comment giving
/// its reason. And no file of tests/it is left out of the crate.
#[test]
fn the_integration_tests_are_one_crate() {
    let cargo = read_text(&root().join("Cargo.toml"));
    let sections: Vec<&str> = cargo.split("[[test]]").collect();
    let mut declared = BTreeSet::new();
    for (i, t) in sections.iter().enumerate().skip(1) {
        let path = t.lines().find_map(|l| l.strip_prefix("path = \""));
        let path = path
            .expect("a [[test]] names its path")
            .trim_end_matches('"');
        let before = sections[i - 1].trim_end().lines().last().unwrap_or("");
        assert!(
            path == "tests/it/main.rs" || before.starts_with('#'),
            "Cargo.toml: the [[test]] {path} has no comment giving its reason"
        );
        declared.insert(path.to_string());
    }
    let mut found = BTreeSet::new();
    for e in std::fs::read_dir(root().join("tests")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.join("main.rs").is_file() {
            found.insert(format!("tests/{name}/main.rs"));
        } else if name.ends_with(".rs") {
            found.insert(format!("tests/{name}"));
        }
    }
    assert_eq!(
        found, declared,
        "a test binary of its own: make it a module of tests/it (mod in \
         tests/it/main.rs), or declare it in Cargo.toml with its reason"
    );
    assert!(declared.len() <= 3, "{declared:?}");

    // Every file of tests/it is a module: `mod x;` in the file above it
    // (main.rs, `d.rs` or `d/mod.rs` for a file in `d/`).
    let it = root().join("tests/it");
    for f in files_under(&it) {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        if f.extension().is_none_or(|e| e != "rs") || stem == "main" || stem == "mod" {
            continue;
        }
        let dir = f.parent().unwrap();
        let above = if dir == it {
            it.join("main.rs")
        } else if dir.join("mod.rs").is_file() {
            dir.join("mod.rs")
        } else {
            dir.with_extension("rs")
        };
        let decl = format!("mod {stem};");
        let declared = read_text(&above).lines().any(|l| {
            let l = l.trim();
            l == decl || l.strip_suffix(&decl).is_some_and(|v| v.starts_with("pub"))
        });
        assert!(
            declared,
            "{} is in no module: declare `{decl}` in {}",
            f.display(),
            above.display()
        );
    }
}

/// Every file under tests/ makes its temp dirs and finds `vf` through
/// tests/it/common: each test's own temp dir, refused inside a repository.
/// And the tests of tests/it share one process: none of them changes what is
/// process-wide (a child's environment or cwd is set on its `Command`).
#[test]
fn the_integration_tests_share_one_harness() {
    let tests = root().join("tests");
    let mut checked = 0;
    for f in files_under(&tests) {
        let rel = f.strip_prefix(&tests).unwrap().to_string_lossy();
        let rel = rel.replace('\\', "/");
        if !rel.ends_with(".rs") || rel.starts_with("it/common/") || rel == "it/architecture.rs" {
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
                "{rel} has its own {own}: use tests/it/common"
            );
        }
        let shared = rel.starts_with("it/") || rel.starts_with("real-engines/");
        for global in [
            "set_var(",
            "remove_var(",
            "set_current_dir(",
            "global_allocator",
        ] {
            assert!(
                !shared || !code.contains(global),
                "{rel} uses {global} in the process all of tests/it shares: set it \
                 on the child's Command, or make a test binary of its own (Cargo.toml)"
            );
        }
    }
    assert!(checked >= 40, "{checked}");
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
