//! Locating vf's state directory and the git work tree.

use std::path::{Path, PathBuf};

use crate::ground::error::{Result, VfError};

pub const STATE_DIR_NAME: &str = ".vibeflow";

/// The state dir: an explicit one (flag or `VF_STATE_DIR`), else the nearest
/// `.vibeflow/` above `cwd` (like git finds `.git`), else `cwd/.vibeflow`.
/// Nothing is created here.
pub fn resolve_state_dir(explicit: Option<&Path>, cwd: &Path) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return absolute(p);
    }
    let cwd = absolute(cwd)?;
    for dir in cwd.ancestors() {
        let candidate = dir.join(STATE_DIR_NAME);
        if candidate.is_dir() {
            return Ok(candidate);
        }
    }
    Ok(cwd.join(STATE_DIR_NAME))
}

/// True when `dir` is inside a git work tree (a `.git` dir or file above it).
pub fn in_git_work_tree(dir: &Path) -> bool {
    let Ok(dir) = absolute(dir) else { return false };
    dir.ancestors().any(|d| d.join(".git").exists())
}

pub fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p)
        .map_err(|e| VfError::usage(format!("cannot resolve path {}: {e}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nearest_state_dir() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        // None in the temp dir: `deep/.vibeflow`, unless the machine has one
        // above the temp dir (a stray `/tmp/.vibeflow`), the nearest then.
        let mut above = t.path().ancestors().map(|d| d.join(STATE_DIR_NAME));
        let want = above.find(|d| d.is_dir());
        assert_eq!(
            resolve_state_dir(None, &deep).unwrap(),
            want.unwrap_or_else(|| deep.join(STATE_DIR_NAME))
        );
        std::fs::create_dir(t.path().join("a").join(STATE_DIR_NAME)).unwrap();
        assert_eq!(
            resolve_state_dir(None, &deep).unwrap(),
            t.path().join("a").join(STATE_DIR_NAME)
        );
        let explicit = t.path().join("elsewhere");
        assert_eq!(resolve_state_dir(Some(&explicit), &deep).unwrap(), explicit);
    }

    #[test]
    fn git_detection() {
        let t = tempfile::tempdir().unwrap();
        let sub = t.path().join("x");
        std::fs::create_dir_all(&sub).unwrap();
        // Not in one, unless the machine's temp dir is inside a repository.
        let machine = t.path().ancestors().any(|d| d.join(".git").exists());
        assert_eq!(in_git_work_tree(&sub), machine);
        std::fs::create_dir(t.path().join(".git")).unwrap();
        assert!(in_git_work_tree(&sub));
    }
}
