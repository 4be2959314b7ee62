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
        if is_test_file(rel) {
            continue;
        }
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

/// A file's module path below `src` (`unit/life.rs` → `unit::life`,
/// `engine/mod.rs` → `engine`, `lib.rs` → the crate root, ``).
pub fn module_of(rel: &str) -> String {
    let stem = rel.trim_end_matches(".rs");
    let parts: Vec<&str> = stem
        .split('/')
        .filter(|p| !["mod", "lib", "main"].contains(p))
        .collect();
    parts.join("::")
}

/// Every path a file's code names from `crate::`, `super::` or `self::`,
/// with `use` trees expanded (`crate::{a::{B, c}, d}` names `a::B`, `a::c`
/// and `d`), each as segments.
pub fn crate_paths(code: &str) -> Vec<Vec<String>> {
    fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        let Some(open) = tree.find('{') else {
            out.push(format!("{prefix}{tree}"));
            return;
        };
        let head = &tree[..open];
        let close = tree.rfind('}').filter(|c| *c > open).unwrap_or(tree.len());
        let body = &tree[open + 1..close];
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    expand(&format!("{prefix}{head}"), &body[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if !body[start..].trim().is_empty() {
            expand(&format!("{prefix}{head}"), &body[start..], out);
        }
    }
    let mut texts = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let tail = &rest[i + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        let tree: String = tail[..end].split_whitespace().collect();
        let ours = ["crate::", "super::", "self::"]
            .iter()
            .any(|r| tree.starts_with(r));
        if ours && before.is_none_or(|c| !(c.is_alphanumeric() || c == '_')) {
            expand("", &tree, &mut texts);
        }
        rest = &tail[end..];
    }
    for root in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(root) {
            let ok = code[..i]
                .chars()
                .last()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
            let path: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if ok {
                texts.push(path);
            }
        }
    }
    texts
        .iter()
        .filter(|t| {
            ["crate::", "super::", "self::"]
                .iter()
                .any(|r| t.starts_with(r))
        })
        .map(|t| {
            t.split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// Each file of `src` (its path below `src`) → the files its non-test code
/// names (the deepest module file of each path), leaving out a file's own
/// ancestors and descendants: a child naming `super::` is Rust's normal shape.
pub fn file_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<String> = super::files_under(src)
        .iter()
        .map(|f| {
            f.strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|r| r.ends_with(".rs") && !is_test_file(Path::new(r)))
        .collect();
    let by_module: BTreeMap<String, String> =
        files.iter().map(|f| (module_of(f), f.clone())).collect();
    let related = |a: &str, b: &str| {
        let (a, b) = (format!("{a}::"), format!("{b}::"));
        a.starts_with(&b) || b.starts_with(&a) || a == "::" || b == "::"
    };
    let mut graph = BTreeMap::new();
    for f in &files {
        let me = module_of(f);
        let code = code_of(&std::fs::read_to_string(src.join(f)).unwrap());
        let mut to = BTreeSet::new();
        for segs in crate_paths(&code).into_iter().filter(|s| !s.is_empty()) {
            let mut cur: Vec<&str> = if me.is_empty() {
                vec![]
            } else {
                me.split("::").collect()
            };
            let mut rest = &segs[..];
            match segs[0].as_str() {
                "crate" => {
                    cur.clear();
                    rest = &segs[1..];
                }
                _ => {
                    while let Some(s) = rest.first().filter(|s| *s == "super" || *s == "self") {
                        if s == "super" {
                            cur.pop();
                        }
                        rest = &rest[1..];
                    }
                }
            }
            let full: Vec<&str> = cur
                .into_iter()
                .chain(rest.iter().map(String::as_str))
                .collect();
            let target = (1..=full.len())
                .rev()
                .find_map(|n| by_module.get(&full[..n].join("::")));
            if let Some(t) = target.filter(|t| !related(&me, &module_of(t))) {
                to.insert(t.clone());
            }
        }
        graph.insert(f.clone(), to);
    }
    graph
}

/// A file that is a `#[cfg(test)]` module of its own (`life_tests.rs`,
/// `unit/tests.rs`, `runs/tests.rs`): test code, which may reach anywhere.
pub fn is_test_file(rel: &Path) -> bool {
    let stem = rel.file_stem().unwrap_or_default().to_string_lossy();
    stem == "tests" || stem.ends_with("_tests")
}
