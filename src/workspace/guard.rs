//! Post-hoc path guards (`--deny-path`, `--allow-path`, plan `deny_paths`,
//! `allow_paths`): after the engine's run, the files it changed are compared
//! with the globs. This works for every engine, whatever it enforces itself.
//!
//! What "changed" means: every path that differs from the commit the run
//! started on (`git diff --no-renames` against it, so a commit the engine
//! made counts, and a rename is its two paths) plus the untracked files git
//! does not ignore (`git ls-files --others --exclude-standard`), all read
//! NUL-separated. In a plain repository the files already dirty before the
//! run are fingerprinted first (sha-256 of the content or link target) and
//! blamed only when the run changed them again; in a unit's worktree
//! nothing is exempt, since all of it would go into the `vf: <unit>` commit.
//! vf's own state dir is never looked at. Paths are matched relative to the
//! repository's root with `/` separators.
//!
//! An engine can blind git's view ([`hidden`]): what git ignores is judged by
//! the rules as they were when the run started (when the run changed them,
//! every untracked path is listed but those the old rules hid), a tracked
//! file marked `--assume-unchanged` / `--skip-worktree` is compared on disk,
//! a rule file outside the work tree that the run changed (`info/exclude`,
//! shared with the user's repository) and a flag the run set fail the unit.
//! In a worktree run, the user's own checkout is read too: a change there to
//! a guarded path fails the unit. Nothing is restored.

mod hidden;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use sha2::{Digest, Sha256};

use super::git;

/// git's empty tree: the start of a repository without a commit yet.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// How many violating paths an error names (the result lists them all).
const NAMED: usize = 10;

/// The compiled guards of one unit.
#[derive(Debug, Clone)]
pub struct PathGuards {
    deny: GlobSet,
    /// `None`: any path may change (no `--allow-path`).
    allow: Option<GlobSet>,
}

impl PathGuards {
    /// The guards, `None` when both lists are empty; a bad glob is the error.
    pub fn new(deny: &[String], allow: &[String]) -> Result<Option<PathGuards>, String> {
        if deny.is_empty() && allow.is_empty() {
            return Ok(None);
        }
        Ok(Some(PathGuards {
            deny: compile(deny)?,
            allow: match allow.is_empty() {
                true => None,
                false => Some(compile(allow)?),
            },
        }))
    }

    /// The paths of `changed` the guards refuse.
    pub fn violations<'a>(&self, changed: &'a [String]) -> Vec<&'a String> {
        changed
            .iter()
            .filter(|p| {
                self.deny.is_match(p.as_str())
                    || self.allow.as_ref().is_some_and(|a| !a.is_match(p.as_str()))
            })
            .collect()
    }
}

/// Globs as git users read them: `*` stays within one path segment, `**`
/// crosses them, `\` escapes on every OS.
fn compile(globs: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for g in globs {
        if g.trim().is_empty() {
            return Err("an empty path glob matches nothing".into());
        }
        let glob = GlobBuilder::new(g)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("bad path glob {}: {e}", crate::ground::text::shown(g, 80)))?;
        set.add(glob);
    }
    set.build().map_err(|e| e.to_string())
}

/// Refuses guards where they cannot be checked: outside a git work tree
/// (exit 2, before anything is written).
pub fn require_repo(cwd: &Path, what: &str) -> crate::ground::error::Result<()> {
    match git::run(cwd, &["rev-parse", "--show-toplevel"]) {
        Ok(_) => Ok(()),
        Err(e) => Err(crate::ground::error::VfError::usage(format!(
            "{what}: {} is not in a git work tree, so the changed files cannot be checked \
             after the run ({e})",
            crate::ground::text::one_line(&cwd.display().to_string(), 200)
        ))),
    }
}

/// What a file was before the run (`None`: absent).
type Print = Option<[u8; 32]>;

/// The repository as the run found it.
#[derive(Debug, Clone)]
pub struct Baseline {
    root: PathBuf,
    start: String,
    /// `<state dir>/` relative to the root, when it lies inside it.
    skip: Option<String>,
    /// Files dirty before the run, and what they were.
    dirty: BTreeMap<String, (Vec<u8>, Print)>,
    rules: hidden::Rules,
    /// What the rules hid when the run started.
    ignored: Vec<String>,
    flags: hidden::Flags,
    /// For a run in a worktree: the user's own checkout.
    user: Option<Box<Baseline>>,
}

/// What the run changed, as the guards judge it.
#[derive(Debug, Default)]
pub struct Changes {
    pub paths: Vec<String>,
    /// Changed paths in the user's own checkout (a worktree run).
    pub user: Vec<String>,
    /// Changes made to hide others: each one fails the unit.
    pub tampering: Vec<String>,
}

/// Reads the repository `cwd` is in before the engine runs; `exempt_dirty`
/// fingerprints what is already changed (a plain repository).
pub fn baseline(cwd: &Path, state_dir: &Path, exempt_dirty: bool) -> Result<Baseline, String> {
    let err = |e: git::GitError| e.message;
    let top = git::run_bytes(cwd, &["rev-parse", "--show-toplevel"]).map_err(err)?;
    let top = top.strip_suffix(b"\n").unwrap_or(&top);
    let root = crate::sys::path_from_bytes(top);
    let start = git::run(
        &root,
        &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
    )
    .unwrap_or_else(|_| EMPTY_TREE.to_string());
    let skip = inside(&root, state_dir);
    let user = match exempt_dirty {
        true => None,
        false => hidden::user_checkout(&root)
            .map(|u| baseline(&u, state_dir, true).map(Box::new))
            .transpose()?,
    };
    let mut b = Baseline {
        rules: hidden::Rules::read(&root)?,
        ignored: hidden::ignored(&root)?,
        flags: hidden::flags(&root)?,
        root,
        start,
        skip,
        dirty: BTreeMap::new(),
        user,
    };
    if exempt_dirty {
        for (raw, name) in b.changed(false)? {
            let print = fingerprint(&b.root.join(crate::sys::path_from_bytes(&raw)));
            b.dirty.insert(name, (raw, print));
        }
        // A flagged file's hidden edits are the user's, as a dirty one's.
        for (name, (_, raw, print)) in &b.flags {
            b.dirty.insert(name.clone(), (raw.clone(), *print));
        }
    }
    Ok(b)
}

/// `dir` relative to `root` with `/` separators and a trailing `/`.
fn inside(root: &Path, dir: &Path) -> Option<String> {
    let (root, dir) = (root.canonicalize().ok()?, dir.canonicalize().ok()?);
    let rel = dir.strip_prefix(&root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(format!("{}/", parts.join("/")))
}

impl Baseline {
    /// Every path that differs from the start (raw and as text), minus vf's
    /// own; `strict`: the run changed the ignore rules, so every untracked
    /// path counts but those the rules hid when it started.
    fn changed(&self, strict: bool) -> Result<Vec<(Vec<u8>, String)>, String> {
        let err = |e: git::GitError| e.message;
        // No fsmonitor command runs for vf's own look.
        let diff = [
            "-c",
            "core.fsmonitor=false",
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            &self.start,
            "--",
        ];
        let mut out = git::run_bytes(&self.root, &diff).map_err(err)?;
        let others = [
            "-c",
            "core.fsmonitor=false",
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
        ];
        match strict {
            true => {
                for n in hidden::untracked_unruled(&self.root, &self.ignored)? {
                    out.extend_from_slice(&n);
                    out.push(0);
                }
            }
            false => out.extend(git::run_bytes(&self.root, &others).map_err(err)?),
        }
        let mut names: Vec<(Vec<u8>, String)> = out
            .split(|b| *b == 0)
            .filter(|n| !n.is_empty())
            .map(|n| (n.to_vec(), String::from_utf8_lossy(n).into_owned()))
            .filter(|(_, n)| {
                self.skip
                    .as_ref()
                    .is_none_or(|s| !n.starts_with(s.as_str()))
            })
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// What the run changed: the paths ([`Baseline::paths_changed`]), the
    /// user's checkout's for a worktree run, and what it did to hide them.
    pub fn changed_by_run(&self) -> Result<Changes, String> {
        let rules = hidden::Rules::read(&self.root)?;
        let mut c = Changes::default();
        for p in rules.changed_outside(&self.rules) {
            c.tampering
                .push(format!("it changed git's ignore rules in {p:?}"));
        }
        let flags = hidden::flags(&self.root)?;
        let flagged = hidden::flagged_changes(&flags, &self.flags);
        let set: Vec<&String> = flagged.iter().filter(|f| f.2).map(|f| &f.1).collect();
        if !set.is_empty() {
            c.tampering.push(format!(
                "it marked {} tracked path(s) --assume-unchanged or --skip-worktree: {}",
                set.len(),
                shown(&set)
            ));
        }
        let mut now = self.changed(rules != self.rules)?;
        now.extend(flagged.into_iter().map(|(raw, name, _)| (raw, name)));
        now.sort();
        now.dedup();
        c.paths = self.paths_changed(&now);
        if let Some(user) = &self.user {
            let theirs = user.changed_by_run()?;
            c.user = theirs.paths;
            c.tampering.extend(theirs.tampering);
        }
        c.tampering.sort();
        c.tampering.dedup();
        Ok(c)
    }

    /// The paths the run changed: changed now and clean before, or dirty
    /// before and different now (reverted ones included).
    fn paths_changed(&self, now: &[(Vec<u8>, String)]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (raw, name) in now {
            match self.dirty.get(name) {
                Some((_, before)) if *before == fingerprint(&self.path(raw)) => {}
                _ => out.push(name.clone()),
            }
        }
        for (name, (raw, before)) in &self.dirty {
            let listed = now.iter().any(|(_, n)| n == name);
            if !listed && *before != fingerprint(&self.path(raw)) {
                out.push(name.clone());
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn path(&self, raw: &[u8]) -> PathBuf {
        self.root.join(crate::sys::path_from_bytes(raw))
    }
}

/// A file's content (a link's target) hashed; a directory (a submodule) is
/// one fixed value; `None` when it is absent or unreadable.
fn fingerprint(p: &Path) -> Print {
    let meta = std::fs::symlink_metadata(p).ok()?;
    let mut h = Sha256::new();
    if meta.file_type().is_symlink() {
        h.update(b"link\0");
        h.update(std::fs::read_link(p).ok()?.to_string_lossy().as_bytes());
    } else if meta.is_dir() {
        h.update(b"dir\0");
    } else {
        h.update(b"file\0");
        use std::io::Read;
        let mut f = std::fs::File::open(p).ok()?;
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match f.read(&mut buf).ok()? {
                0 => break,
                n => h.update(&buf[..n]),
            }
        }
    }
    Some(h.finalize().into())
}

/// At most [`NAMED`] paths, escaped.
fn shown<S: AsRef<str>>(paths: &[S]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .take(NAMED)
        .map(|p| format!("{:?}", p.as_ref()))
        .collect();
    let more = paths.len().saturating_sub(NAMED);
    match more {
        0 => shown.join(", "),
        _ => format!("{} and {more} more", shown.join(", ")),
    }
}

/// The unit's error for `violations` (at most [`NAMED`] paths, escaped).
pub fn violation_message(violations: &[String]) -> String {
    format!(
        "the run changed {} path(s) its path guards refuse: {}",
        violations.len(),
        shown(violations)
    )
}

/// The unit's error for what the guards refuse in `c`: the paths in the
/// run's tree, those in the user's checkout, what hid them. `None`: nothing.
pub fn refusal(guards: &PathGuards, c: &Changes) -> Option<(Vec<String>, String)> {
    let bad: Vec<String> = guards.violations(&c.paths).into_iter().cloned().collect();
    let theirs: Vec<String> = guards.violations(&c.user).into_iter().cloned().collect();
    let mut parts = Vec::new();
    if !bad.is_empty() {
        parts.push(violation_message(&bad));
    }
    if !theirs.is_empty() {
        parts.push(format!(
            "the run changed {} path(s) its path guards refuse in the user's own checkout \
             (left as they are): {}",
            theirs.len(),
            shown(&theirs)
        ));
    }
    if !c.tampering.is_empty() {
        parts.push(format!(
            "the run hid changes from git (left as they are): {}",
            c.tampering.join("; ")
        ));
    }
    let mut all = bad;
    all.extend(theirs);
    all.sort();
    all.dedup();
    (!parts.is_empty()).then(|| (all, parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guards(deny: &[&str], allow: &[&str]) -> PathGuards {
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        PathGuards::new(&v(deny), &v(allow)).unwrap().unwrap()
    }

    #[test]
    fn deny_and_allow_globs_match_whole_relative_paths() {
        let changed: Vec<String> = [
            "secrets/key.pem",
            "src/secrets/x",
            "src/main.rs",
            "docs/a.md",
            "docs/sub/b.md",
            "README.md",
        ]
        .map(String::from)
        .into();
        let deny = guards(&["secrets/**", "*.md"], &[]);
        assert_eq!(
            deny.violations(&changed),
            ["secrets/key.pem", "README.md"]
                .map(String::from)
                .iter()
                .collect::<Vec<_>>()
        );
        let allow = guards(&[], &["src/**", "docs/*.md"]);
        assert_eq!(
            allow.violations(&changed),
            ["secrets/key.pem", "docs/sub/b.md", "README.md"]
                .map(String::from)
                .iter()
                .collect::<Vec<_>>()
        );
        assert!(PathGuards::new(&[], &[]).unwrap().is_none());
        assert!(
            PathGuards::new(&["a/[".into()], &[])
                .unwrap_err()
                .starts_with("bad path glob")
        );
        assert!(PathGuards::new(&[], &[" ".into()]).is_err());
    }

    #[test]
    fn the_message_names_ten_paths_escaped() {
        let v: Vec<String> = (0..12).map(|i| format!("f{i}\n")).collect();
        let m = violation_message(&v);
        assert!(
            m.starts_with("the run changed 12 path(s) its path guards refuse: \"f0\\n\""),
            "{m}"
        );
        assert!(m.ends_with("\"f9\\n\" and 2 more"), "{m}");
    }
}
