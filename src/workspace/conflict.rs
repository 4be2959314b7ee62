//! A dependency merge left in progress for a resolver (plan key
//! `on_conflict = "resolve"`), then settled: committed by vf when the
//! resolver left no unmerged path and no conflict marker line, else aborted.
//! Every git write here is preceded by the proof that the worktree is still
//! the one vf made, on the unit's branch, with the merge vf started (the
//! resolver may have deleted `.git`, switched branch, committed, or aborted
//! the merge itself). The user's checkout and branches are never touched.

use std::path::{Path, PathBuf};

use super::Workspace;
use super::git;

/// A conflicted merge of a dependency's branch, left in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The dependency unit whose branch conflicted.
    pub dependency: String,
    /// The branch merged, as the merge's message names it (`vf/<dep>`, or
    /// `origin/vf/<dep>` for a fetched one).
    pub theirs: String,
    /// The conflicted paths, as git named them (relative to the worktree).
    pub paths: Vec<String>,
    /// The unit's branch's commit before the merge (`HEAD`).
    pub head: String,
    /// The dependency's commit being merged (`MERGE_HEAD`).
    pub merge_head: String,
    /// The worktree's git dir as proven when the merge was left.
    pub git_dir: PathBuf,
}

/// Why a pending merge was not committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsettled {
    /// Not the worktree vf made any more: no git ran in it.
    Broken(String),
    /// The merge is not resolved, or not vf's any more: the paths (or what
    /// changed) are in the message.
    Conflict(String),
}

/// The largest conflicted file read for marker lines: a bigger one is not
/// resolved as far as vf can tell.
const MAX_CHECKED: u64 = 16 << 20;

/// Proves the worktree and that the merge in it is still the one vf left:
/// same branch, same git dir, `HEAD` and `MERGE_HEAD` unmoved.
fn still_ours(ws: &Workspace, p: &Pending) -> Result<(), Unsettled> {
    if let Err(why) = super::prove(&ws.path, Some(&ws.branch), Some(&p.git_dir)) {
        let msg = super::identity::broken(&ws.path, &why, "nothing was committed");
        return Err(Unsettled::Broken(msg));
    }
    let at = |r: &str| git::run(&ws.path, &["rev-parse", "-q", "--verify", r]).ok();
    let (head, merge_head) = (at("HEAD"), at("MERGE_HEAD"));
    if head.as_deref() != Some(&p.head) {
        return Err(Unsettled::Conflict(format!(
            "the resolver moved {} itself (it committed or reset): nothing of it is kept",
            ws.branch
        )));
    }
    if merge_head.as_deref() != Some(&p.merge_head) {
        return Err(Unsettled::Conflict(format!(
            "the resolver ended the merge of {} itself (no merge of it is in progress any more)",
            p.theirs
        )));
    }
    Ok(())
}

/// What is still unresolved after the resolver: the originally conflicted
/// paths that still hold a conflict marker line or that are no regular file
/// (a link, a directory, a device: never followed), then the paths git
/// still reports unmerged. Each entry is `path (why)`.
pub fn unresolved(ws: &Workspace, p: &Pending) -> Result<Vec<String>, Unsettled> {
    still_ours(ws, p)?;
    let mut left: Vec<String> = p
        .paths
        .iter()
        .filter_map(|path| marker_check(&ws.path, path).map(|why| format!("{path} ({why})")))
        .collect();
    for path in unmerged(&ws.path)? {
        if !p.paths.contains(&path) {
            left.push(format!("{path} (unmerged)"));
        }
    }
    Ok(left)
}

/// The paths git reports unmerged in the worktree (`-z`: any byte).
fn unmerged(dir: &Path) -> Result<Vec<String>, Unsettled> {
    let out = git::run_bytes(dir, &["diff", "--name-only", "-z", "--diff-filter=U"])
        .map_err(|e| Unsettled::Conflict(format!("cannot list the unmerged paths: {e}")))?;
    Ok(split_z(&out))
}

pub(super) fn split_z(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// Why `rel` (a path git named) is not resolved, or None when it is: a
/// regular file with no marker line, or a file the resolver deleted. No
/// component is followed through a link.
fn marker_check(root: &Path, rel: &str) -> Option<String> {
    use crate::sys::OpenExt;
    use std::io::Read;
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(format!("cannot be read: {e}")),
        };
        let last = i + 1 == parts.len();
        if meta.file_type().is_symlink() {
            return Some("replaced by a symbolic link".into());
        }
        if !last && !meta.is_dir() {
            return Some("a parent is not a directory".into());
        }
        if last && !meta.is_file() {
            return Some("not a regular file".into());
        }
    }
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .no_follow_no_block()
        .open_checked(&at)
    {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Some("not a regular file".into());
    }
    let mut bytes = Vec::new();
    if let Err(e) = f.take(MAX_CHECKED + 1).read_to_end(&mut bytes) {
        return Some(format!("cannot be read: {e}"));
    }
    if bytes.len() as u64 > MAX_CHECKED {
        return Some(format!(
            "larger than {} MiB, not checked",
            MAX_CHECKED >> 20
        ));
    }
    has_marker_line(&bytes).then(|| "conflict markers left".into())
}

/// A line git writes around a conflict: `<<<<<<< `, `=======` alone, `>>>>>>> `.
pub fn has_marker_line(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        line.starts_with(b"<<<<<<< ") || line == b"=======" || line.starts_with(b">>>>>>> ")
    })
}

/// Commits the resolved merge: stages the originally conflicted paths (and
/// only those: what else the resolver changed stays uncommitted in the
/// worktree, committed with the unit's own work at its end), checks that
/// nothing is left unmerged, and commits with both parents, vf's message
/// and identity, no hooks, no signing, no editor. Returns the merge commit.
pub fn commit(ws: &Workspace, p: &Pending, engine: &str) -> Result<String, Unsettled> {
    let left = unresolved(ws, p)?;
    if !left.is_empty() {
        return Err(Unsettled::Conflict(left.join(", ")));
    }
    let dir = &ws.path;
    let failed = |e: git::GitError| Unsettled::Conflict(format!("cannot commit the merge: {e}"));
    // Literal pathspecs: a conflicted file named `*` or `:(top)` is that file only.
    let mut add = vec!["--literal-pathspecs", "add", "--all", "--"];
    add.extend(p.paths.iter().map(String::as_str));
    git::run(dir, &add).map_err(failed)?;
    let left = unmerged(dir)?;
    if !left.is_empty() {
        return Err(Unsettled::Conflict(format!(
            "unmerged: {}",
            left.join(", ")
        )));
    }
    let msg = format!(
        "vf: merge {} into {} (resolved by {engine})",
        p.theirs, ws.branch
    );
    let args = git::with_identity(
        dir,
        &[
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "--no-edit",
            "-m",
            &msg,
        ],
    );
    git::run(dir, &args).map_err(failed)?;
    let parents = git::run(dir, &["rev-parse", "HEAD^1", "HEAD^2", "HEAD"]).map_err(failed)?;
    match parents.lines().collect::<Vec<_>>()[..] {
        [one, two, made] if one == p.head && two == p.merge_head => Ok(made.to_string()),
        _ => Err(Unsettled::Conflict(format!(
            "the merge commit does not have {} and {} as its parents",
            p.head, p.merge_head
        ))),
    }
}

/// Undoes the merge: the worktree back at the branch's commit before it.
/// Whatever the resolver did to the branch (its own commits, a reset) is
/// undone too; in a worktree that is not vf's any more no git runs.
pub fn abort(ws: &Workspace, p: &Pending) -> Result<(), Unsettled> {
    if let Err(why) = super::prove(&ws.path, Some(&ws.branch), Some(&p.git_dir)) {
        let msg = super::identity::broken(&ws.path, &why, "vf runs no git in it");
        return Err(Unsettled::Broken(msg));
    }
    let dir = &ws.path;
    let failed = |e: git::GitError| Unsettled::Conflict(format!("cannot abort the merge: {e}"));
    if git::succeeds(dir, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]) {
        git::run(dir, &["merge", "--abort"]).map_err(failed)?;
    }
    let head = git::run(dir, &["rev-parse", "HEAD"]).map_err(failed)?;
    if head != p.head {
        git::run(dir, &["reset", "--quiet", "--hard", &p.head]).map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod marker_lines {

    use super::*;

    #[test]
    fn marker_lines_are_whole_lines_as_git_writes_them() {
        assert!(has_marker_line(b"a\n<<<<<<< HEAD\nb\n"));
        assert!(has_marker_line(b"a\r\n=======\r\nb"));
        assert!(has_marker_line(b">>>>>>> vf/dep"));
        assert!(!has_marker_line(b"a\n======== title\n  <<<<<<< x\n"));
        assert!(!has_marker_line(b"<<<<<<<\n==\n"));
    }
}
