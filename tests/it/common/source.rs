//! Reading vf's own source for the shape checks (tests/it/architecture.rs,
//! tests/it/cli.rs): which crate modules and which crates a file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `src` without comments and without its tests (everything from the first
/// `#[cfg(test)]` on: test code may reach anywhere).
pub fn code_of(src: &str) -> String {
    let body = src.split("#[cfg(test)]").next().unwrap_or("");
    body.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first identifier of `s`, if it starts with one.
fn ident(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The top-level modules named right after each `crate::` in `code`, in `use`
/// trees (`crate::{a::X, b}` names `a` and `b`) and in inline paths alike.
pub fn crate_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = code[i + "crate::".len()..].trim_start();
        match rest.strip_prefix('{') {
            Some(group) => out.extend(group_heads(group).into_iter().map(str::to_string)),
            None => out.extend(ident(rest).map(str::to_string)),
        }
    }
    out
}

/// The first identifier of each top-level item of a `{...}` group (`group`
/// starts after the `{`).
fn group_heads(group: &str) -> Vec<&str> {
    let (mut depth, mut start, mut heads) = (0usize, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.extend(ident(group[start..i].trim_start()));
                return heads;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.extend(ident(group[start..i].trim_start()));
                start = i + 1;
            }
            _ => {}
        }
    }
    heads
}

/// The crates (from `names`) that `code` names as `name::` anywhere.
pub fn crates_named<'a>(code: &str, names: &'a [String]) -> BTreeSet<&'a str> {
    names
        .iter()
        .filter(|n| {
            code.match_indices(&format!("{n}::")).any(|(i, _)| {
                let before = code[..i].chars().next_back();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            })
        })
        .map(String::as_str)
        .collect()
}

/// The `[dependencies]` of Cargo.toml, as Rust names (`-` written `_`).
pub fn dependencies(cargo_toml: &str) -> Vec<String> {
    cargo_toml
        .split("\n[dependencies]\n")
        .nth(1)
        .unwrap_or("")
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split('=').next())
        .map(|n| n.trim().replace('-', "_"))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect()
}

/// The crate's top-level modules (`pub mod x;` in `lib`).
pub fn lib_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .collect()
}

/// Each top-level module of the crate under `src` → the other top-level
/// modules its non-test code names (all its files together).
pub fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = lib_modules(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in super::files_under(src) {
        let rel = file.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        let Some(edges) = graph.get_mut(&top) else {
            continue; // lib.rs, main.rs
        };
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        edges.extend(
            crate_modules(&code)
                .into_iter()
                .filter(|m| *m != top && modules.contains(m)),
        );
    }
    graph
}

/// A cycle of `graph`, as the nodes along it (first repeated at the end).
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}
