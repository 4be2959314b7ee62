//! Proof that a unit's worktree is still the one vf made, asked before every
//! git write vf makes there. The engine runs inside the worktree and may
//! delete its `.git` (git would then find the repository above it: the
//! user's checkout), replace it with a file, directory or link pointing
//! elsewhere, or switch branch.

use std::path::{Path, PathBuf};

use super::git;

/// What git says of a worktree that passed the proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    /// `<repository's git dir>/worktrees/<name>`.
    pub git_dir: PathBuf,
    /// The repository's own git dir (`--git-common-dir`).
    pub common_dir: PathBuf,
}

/// Proves that `path` is a linked worktree of a repository: a real directory
/// whose `.git` is a file, which git reads as a worktree whose top level is
/// `path`, whose git dir is `<common dir>/worktrees/<name>` and points back
/// to `path`, on `branch` (None: any), and, when `expected` is given, whose
/// git dir is that one. The error says what differs, as one sentence.
pub fn prove(path: &Path, branch: Option<&str>, expected: Option<&Path>) -> Result<Proven, String> {
    entries(path)?;
    let asked = [
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "--git-common-dir",
        "--show-toplevel",
        "--symbolic-full-name",
        "HEAD",
    ];
    let out = git::run(path, &asked).map_err(|e| format!("git does not read it ({e})"))?;
    let lines: Vec<&str> = out.lines().collect();
    let [git_dir, common, top, head] = lines[..] else {
        return Err(format!("git does not read it as a worktree ({out:?})"));
    };
    let (git_dir, common_dir) = (real(Path::new(git_dir)), real(Path::new(common)));
    let here = real(path);
    if real(Path::new(top)) != here {
        return Err(format!("git puts its top level at {top}"));
    }
    if git_dir.parent() != Some(common_dir.join("worktrees").as_path()) {
        return Err(format!(
            "its .git points at {}, not at a worktree of the repository {}",
            git_dir.display(),
            common_dir.display()
        ));
    }
    if back_link(&git_dir) != Some(here.join(".git")) {
        return Err(format!(
            "its git dir {} belongs to another worktree",
            git_dir.display()
        ));
    }
    if let Some(want) = expected.filter(|e| real(e) != git_dir) {
        return Err(format!(
            "its git dir is {}, not {}",
            git_dir.display(),
            want.display()
        ));
    }
    if let Some(b) = branch.filter(|b| head != format!("refs/heads/{b}")) {
        let on = head.strip_prefix("refs/heads/").unwrap_or(head);
        let on = if on == "HEAD" { "a detached HEAD" } else { on };
        return Err(format!("it is on {on}, not {b}"));
    }
    Ok(Proven {
        git_dir,
        common_dir,
    })
}

/// The worktree and its `.git` as the file system has them: no link, and a
/// `.git` file (a directory is a repository of its own).
fn entries(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err("it is no longer a directory".into()),
        Err(e) => return Err(format!("it cannot be read ({e})")),
    }
    match std::fs::symlink_metadata(path.join(".git")) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.is_dir() => Err("its .git is a directory, a repository of its own".into()),
        Ok(_) => Err("its .git is a symbolic link".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("its .git is gone".into()),
        Err(e) => Err(format!("its .git cannot be read ({e})")),
    }
}

/// The worktree's `.git` that git's record of it names (its `gitdir` file,
/// relative to the git dir when git wrote it so).
fn back_link(git_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_dir.join("gitdir")).ok()?;
    Some(real(&git_dir.join(text.trim_end_matches(['\r', '\n']))))
}

/// `p` with its links resolved, as git reports paths (itself when it cannot be).
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The error of a worktree that failed [`prove`]; `then` says what vf did about it.
pub(super) fn broken(path: &Path, why: &str, then: &str) -> String {
    format!(
        "the worktree {} is no longer the one vf made: {why}; {then}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `git -C dir ARGS` through vf's own runner, with the test's identity.
    fn git_in(dir: &Path, args: &[&str]) {
        let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
        all.extend_from_slice(&["-c", "commit.gpgsign=false"]);
        all.extend_from_slice(args);
        if let Err(e) = git::run(dir, &all) {
            panic!("{e}");
        }
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "needs git on PATH; the wine runner CI uses has none"
    )]
    fn a_worktree_is_proven_only_as_made_on_its_branch_and_git_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (repo, wt) = (root.join("repo"), root.join("wt"));
        std::fs::create_dir_all(&repo).unwrap();
        git_in(&repo, &["init", "-q", "-b", "main"]);
        git_in(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
        let p = wt.to_str().unwrap();
        git_in(&repo, &["worktree", "add", "-q", "-b", "vf/u", p]);
        let git_dir = repo.join(".git/worktrees/wt");
        let proven = prove(&wt, Some("vf/u"), Some(&git_dir)).unwrap();
        let want = Proven {
            git_dir: git_dir.clone(),
            common_dir: repo.join(".git"),
        };
        assert_eq!(proven, want);
        // Another git dir than the one proven before the engine ran.
        let elsewhere = root.join("elsewhere");
        let err = prove(&wt, Some("vf/u"), Some(&elsewhere)).unwrap_err();
        let want = format!(
            "its git dir is {}, not {}",
            git_dir.display(),
            elsewhere.display()
        );
        assert_eq!(err, want);
        assert_eq!(
            prove(&wt, Some("vf/v"), None).unwrap_err(),
            "it is on vf/u, not vf/v"
        );
        assert_eq!(prove(&wt, None, None), Ok(proven));
        // The repository's own checkout is no worktree of it.
        let err = prove(&repo, None, None).unwrap_err();
        assert_eq!(err, "its .git is a directory, a repository of its own");
        let err = prove(&root.join("nothing"), None, None).unwrap_err();
        assert!(err.starts_with("it cannot be read ("), "{err}");
    }
}
