//! What a run could hide from git's view of the work tree, read before and
//! after it: the ignore rules (an engine that adds `secrets/` to
//! `info/exclude` or a `.gitignore` makes its denied file untracked *and*
//! ignored), and the index flags `--assume-unchanged` / `--skip-worktree`
//! (a tracked file so marked is never compared with the disk).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Print, fingerprint, git};

const NO_FSMONITOR: [&str; 2] = ["-c", "core.fsmonitor=false"];

fn run(root: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let mut all: Vec<&str> = NO_FSMONITOR.to_vec();
    all.extend_from_slice(args);
    git::run_bytes(root, &all).map_err(|e| e.message)
}

fn names(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|n| !n.is_empty())
}

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

/// The ignore rules as they stand: each rule file outside the work tree
/// (`info/exclude`, `core.excludesFile` or git's default for it) by its
/// path and content, and every `.gitignore` in the tree, ignored or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// Outside the work tree: a change there stays in the user's repository.
    outside: Vec<(PathBuf, Print)>,
    inside: Vec<(String, Print)>,
}

impl Rules {
    pub fn read(root: &Path) -> Result<Rules, String> {
        let exclude = run(root, &["rev-parse", "--git-path", "info/exclude"])?;
        let exclude = text(&exclude).trim().to_string();
        let mut outside = vec![root.join(exclude)];
        outside.extend(excludes_file(root));
        let outside = outside
            .into_iter()
            .map(|p| {
                let print = fingerprint(&p);
                (p, print)
            })
            .collect();
        let list = [
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--",
            ":(glob)**/.gitignore",
        ];
        let out = run(root, &list)?;
        let mut inside: Vec<(String, Print)> = names(&out)
            .map(|n| {
                (
                    text(n),
                    fingerprint(&root.join(crate::sys::path_from_bytes(n))),
                )
            })
            .collect();
        inside.sort();
        inside.dedup();
        Ok(Rules { outside, inside })
    }

    /// The rule files outside the work tree that differ from `before`.
    pub fn changed_outside(&self, before: &Rules) -> Vec<String> {
        let mut out = Vec::new();
        for (p, print) in &self.outside {
            let was = before.outside.iter().find(|(q, _)| q == p).map(|(_, w)| w);
            if was != Some(print) {
                out.push(p.display().to_string());
            }
        }
        out
    }
}

/// `core.excludesFile` (as git reads it, `~` expanded), or git's default
/// `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).
fn excludes_file(root: &Path) -> Option<PathBuf> {
    let set = run(root, &["config", "--path", "core.excludesFile"]).ok();
    if let Some(p) = set.map(|p| text(&p).trim().to_string())
        && !p.is_empty()
    {
        return Some(root.join(p));
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(xdg.join("git/ignore"))
}

/// What the ignore rules hid when the run started (`--directory`: a wholly
/// ignored directory is one entry, `name/`).
pub fn ignored(root: &Path) -> Result<Vec<String>, String> {
    let args = [
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ];
    Ok(names(&run(root, &args)?).map(text).collect())
}

/// Every untracked path, ignored or not, but those `before` (the ignored
/// entries when the run started) covers.
pub fn untracked_unruled(root: &Path, before: &[String]) -> Result<Vec<Vec<u8>>, String> {
    let out = run(root, &["ls-files", "-z", "--others"])?;
    let covered = |n: &str| {
        before
            .iter()
            .any(|b| b == n || (b.ends_with('/') && n.starts_with(b.as_str())))
    };
    Ok(names(&out)
        .filter(|n| !covered(&text(n)))
        .map(<[u8]>::to_vec)
        .collect())
}

/// The tracked paths git does not compare with the disk: marked
/// `--assume-unchanged` (a lowercase tag of `ls-files -v`) or
/// `--skip-worktree` (`S`), each with its tag and what is on disk.
pub type Flags = BTreeMap<String, (u8, Vec<u8>, Print)>;

pub fn flags(root: &Path) -> Result<Flags, String> {
    let out = run(root, &["ls-files", "-z", "-v"])?;
    let mut flags = Flags::new();
    for entry in names(&out) {
        let (tag, raw) = match entry.split_first() {
            Some((&tag, rest)) if rest.first() == Some(&b' ') => (tag, &rest[1..]),
            _ => continue,
        };
        if tag == b'S' || tag.is_ascii_lowercase() {
            let print = fingerprint(&root.join(crate::sys::path_from_bytes(raw)));
            flags.insert(text(raw), (tag, raw.to_vec(), print));
        }
    }
    Ok(flags)
}

/// The paths flagged now that were not flagged so when the run started, or
/// whose content changed under the flag.
pub fn flagged_changes(now: &Flags, before: &Flags) -> Vec<(Vec<u8>, String, bool)> {
    let mut out = Vec::new();
    for (name, (tag, raw, print)) in now {
        match before.get(name) {
            Some((t, _, p)) if t == tag && p == print => {}
            Some((t, _, _)) if t == tag => out.push((raw.clone(), name.clone(), false)),
            _ => out.push((raw.clone(), name.clone(), true)),
        }
    }
    out
}

/// The user's own checkout, for a run in one of its worktrees: the main
/// worktree (`git worktree list`'s first), unless it is `root` or bare.
pub fn user_checkout(root: &Path) -> Option<PathBuf> {
    let out = run(root, &["worktree", "list", "--porcelain", "-z"]).ok()?;
    let mut fields = names(&out);
    let main = fields.next()?.strip_prefix(b"worktree ")?;
    if fields.next() == Some(b"bare".as_slice()) {
        return None;
    }
    let main = crate::sys::path_from_bytes(main);
    let same = match (main.canonicalize(), root.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => true,
    };
    (!same).then_some(main)
}
