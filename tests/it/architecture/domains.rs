//! The domains (issue 40): `src/` is a folder per domain, the folders are
//! the layers, and no two files reach each other round about.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::source::{code_of, file_graph, find_cycle, lib_modules, module_graph};
use crate::common::*;

/// The domains, bottom to top: each imports only the ones before it.
pub const DOMAINS: &[&str] = &[
    "sys",
    "ground",
    "engine",
    "quota",
    "process",
    "workspace",
    "unit",
    "dispatch",
    "conv",
    "plan",
    "report",
    "readiness",
    "project",
    "server",
    "cli",
    "commands",
];

fn src() -> std::path::PathBuf {
    root().join("src")
}

#[test]
fn src_is_a_folder_per_domain() {
    let mut entries: Vec<String> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    let mut want: Vec<String> = DOMAINS.iter().map(|d| d.to_string()).collect();
    want.extend(["lib.rs".to_string(), "main.rs".to_string()]);
    want.sort();
    assert_eq!(entries, want);
    assert!(entries.len() <= 18, "{entries:?}");
    let mut modules = lib_modules(&read_text(&src().join("lib.rs")));
    modules.sort();
    let mut domains: Vec<String> = DOMAINS.iter().map(|d| d.to_string()).collect();
    domains.sort();
    assert_eq!(modules, domains);
    for d in DOMAINS {
        assert!(src().join(d).join("mod.rs").is_file(), "src/{d}/mod.rs");
    }
}

/// The imports of each domain that do not go down the list.
fn upward(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, d) in DOMAINS.iter().enumerate() {
        for to in &g[*d] {
            if !DOMAINS[..i].contains(&to.as_str()) {
                out.push(format!("{d} imports {to}"));
            }
        }
    }
    out
}

#[test]
fn each_domain_imports_only_the_domains_below_it() {
    let g = module_graph(&src());
    assert!(g["commands"].len() >= 10, "{g:?}");
    assert_eq!(upward(&g), Vec::<String>::new());
    // cli: clap definitions over the engine types (and the variables' names);
    // only the commands read it, and nothing reads the commands.
    assert!(
        g["cli"]
            .iter()
            .all(|m| ["engine", "ground"].contains(&m.as_str())),
        "{:?}",
        g["cli"]
    );
    let readers = |m: &str| {
        g.iter()
            .filter(|(_, to)| to.contains(m))
            .map(|(f, _)| f.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(readers("cli"), ["commands"]);
    assert_eq!(readers("commands"), Vec::<&str>::new());
    // The check can fail: a ground floor that named the unit would be caught.
    let mut bad = g.clone();
    bad.get_mut("ground").unwrap().insert("unit".to_string());
    assert_eq!(upward(&bad), ["ground imports unit"]);
}

#[test]
fn no_two_files_import_each_other_round_about() {
    let g = file_graph(&src());
    assert!(g.len() >= 150, "{}", g.len());
    assert!(
        g["dispatch/mod.rs"].len() >= 5,
        "{:?}",
        g["dispatch/mod.rs"]
    );
    assert_eq!(find_cycle(&g), None);
}

#[test]
fn the_file_graph_sees_a_circle() {
    let env = Env::new();
    let src = env.path().join("src");
    for (f, text) in [
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a/mod.rs", "pub mod x;\nuse crate::b::{self, y::Z};\n"),
        (
            "a/x.rs",
            "use super::super::c;\nuse crate::b::y::Z;\nfn f() { super::g(); }\n",
        ),
        ("b/mod.rs", "pub mod y;\n"),
        ("b/y.rs", "pub struct Z;\nfn f() { crate::a::x::h(); }\n"),
    ] {
        let p = src.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let g = file_graph(&src);
    assert_eq!(
        g["a/mod.rs"],
        BTreeSet::from(["b/mod.rs".to_string(), "b/y.rs".to_string()])
    );
    // A child naming its parent (`super::g`) is no edge; a missing module none.
    assert_eq!(g["a/x.rs"], BTreeSet::from(["b/y.rs".to_string()]));
    assert_eq!(g["b/y.rs"], BTreeSet::from(["a/x.rs".to_string()]));
    assert_eq!(find_cycle(&g).unwrap(), ["b/y.rs", "a/x.rs", "b/y.rs"]);
    let mut cut = g.clone();
    cut.get_mut("b/y.rs").unwrap().clear();
    assert_eq!(find_cycle(&cut), None);
}

/// Each domain's `mod.rs` opens with a `//!` map that names each of its
/// files and folders.
#[test]
fn each_domain_opens_with_a_map_of_its_files() {
    let mut missing = Vec::new();
    for d in DOMAINS {
        let dir = src().join(d);
        let text = read_text(&dir.join("mod.rs"));
        let map: String = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        for e in std::fs::read_dir(&dir).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let Some(stem) = name
                .strip_suffix(".rs")
                .or((!name.contains('.')).then_some(&*name))
            else {
                continue; // page.css, page.js
            };
            if !["mod", "tests"].contains(&stem)
                && !stem.ends_with("_tests")
                && !map.contains(&format!("`{stem}`"))
            {
                missing.push(format!("src/{d}/mod.rs's map omits `{stem}`"));
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new());
}

/// No two modules share a name with different meanings. A name may repeat
/// where the meaning is one: a command's file is named after the domain
/// code it drives (`commands/clean.rs`, `unit/clean.rs`), an engine's
/// description and its manifest carry the engine's name, and the ACP
/// client's `mcp` and `usage` are the engine's MCP servers and usage as ACP
/// carries them.
#[test]
fn module_names_do_not_collide() {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files_under(&src()) {
        let rel = f
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        if rel.ends_with(".rs") && !["mod", "tests"].contains(&&*name) && !name.ends_with("_tests")
        {
            by_name.entry(name).or_default().push(rel);
        }
    }
    let engines = [
        "agy", "bridge", "claude", "codex", "copilot", "gemini", "opencode",
    ];
    let mut collide = Vec::new();
    for (name, files) in &by_name {
        let core: Vec<&String> = files
            .iter()
            .filter(|f| !f.starts_with("commands/") && !f.starts_with("cli/"))
            .collect();
        let one_meaning = core.len() <= 1
            || engines.contains(&name.as_str())
            || (["mcp", "usage"].contains(&name.as_str())
                && core.iter().all(|f| f.starts_with("engine/")));
        if !one_meaning {
            collide.push(format!("{name}: {core:?}"));
        }
    }
    assert_eq!(collide, Vec::<String>::new());
}

/// Issue 40: every `VF_` variable is named once, in `ground/env.rs`, and
/// docs/CLI.md's table lists exactly those.
#[test]
fn environment_variables_are_listed_once() {
    let env_rs = read_text(&src().join("ground/env.rs"));
    let listed: BTreeSet<String> = env_rs
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split(':').next())
        .map(str::to_string)
        .chain(["VF_<ENGINE>_BIN".to_string()])
        .collect();
    assert!(listed.len() >= 15, "{listed:?}");
    let doc = read_text(&root().join("docs/CLI.md"));
    let table = doc
        .split("## Environment variables")
        .nth(1)
        .expect("docs/CLI.md's table");
    let documented: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert_eq!(documented, listed);
    let mut spelled = Vec::new();
    for f in files_under(&src()) {
        let rel = f
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.ends_with(".rs")
            && rel != "ground/env.rs"
            && code_of(&read_text(&f)).contains("\"VF_")
        {
            spelled.push(rel);
        }
    }
    assert_eq!(spelled, Vec::<String>::new());
}
