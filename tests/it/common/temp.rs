//! The tests' temporary dirs: each test's its own, and never inside a git
//! work tree.
//!
//! vf finds the repository and the state dir above its working dir, as git
//! finds `.git`. So a temp dir inside a repository would have vf (and git)
//! work on that repository: a `--worktree` run would make its `vf/*` branch
//! there. Such a dir is refused before anything is written in it. A stray
//! `.vibeflow/` above it is harmless: every `vf` a test runs names its state
//! dir (`VF_STATE_DIR`, or one the test makes below its own dir).

use std::path::{Path, PathBuf};

pub use tempfile::TempDir;

/// A new dir of the calling test's own, `$TMPDIR/vf-test-XXXXXX`, removed
/// when dropped. Panics when `$TMPDIR` is inside a git work tree.
pub fn tempdir() -> TempDir {
    tempdir_named("vf-test-")
}

/// [`tempdir`] named `<prefix>XXXXXX`.
pub fn tempdir_named(prefix: &str) -> TempDir {
    tempdir_in(&std::env::temp_dir(), prefix)
}

/// [`tempdir_named`] in `base` rather than `$TMPDIR`: refused, with nothing
/// made, when `base` is inside a git work tree.
pub fn tempdir_in(base: &Path, prefix: &str) -> TempDir {
    refuse_a_work_tree(base);
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(base)
        .unwrap_or_else(|e| panic!("cannot make a temp dir in {}: {e}", base.display()))
}

/// Panics when `base` is inside a git work tree: tests check it before
/// anything else where a panic inside the test would be taken for the
/// failure under test (a proptest case, which would be saved as one).
pub fn refuse_a_work_tree(base: &Path) {
    if let Some(repo) = enclosing_work_tree(base) {
        panic!(
            "the tests' temp dir {} is inside the git work tree {}: vf would \
             work on that repository (and make vf/* branches in it). Set \
             TMPDIR to a directory outside any repository.",
            base.display(),
            repo.display()
        );
    }
}

/// The nearest dir at or above `dir` holding a `.git` (a repository's dir,
/// or a worktree's or submodule's link file), as git and vf look for one.
pub fn enclosing_work_tree(dir: &Path) -> Option<PathBuf> {
    let dir = std::path::absolute(dir).ok()?;
    let dir = dir.canonicalize().unwrap_or(dir);
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}
