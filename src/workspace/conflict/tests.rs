//! A conflicting dependency merge left for a resolver, on a real repository:
//! the resolvers are played by the test (files written, git run as an
//! engine would), then vf's check, commit or abort.

use std::path::{Path, PathBuf};

use super::*;
use crate::workspace::{OpenError, WorkspaceSpec, open};

/// `git -C dir ARGS` with the test's identity; its trimmed stdout.
fn git_in(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    all.extend_from_slice(&["-c", "commit.gpgsign=false"]);
    all.extend_from_slice(args);
    git::run(dir, &all).unwrap_or_else(|e| panic!("{e}"))
}

/// A repository whose branches `vf/a` and `vf/b` both change `f.txt`'s line,
/// the state dir beside it.
struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    state: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (repo, state) = (root.join("repo"), root.join("state"));
        std::fs::create_dir_all(&repo).unwrap();
        git_in(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("f.txt"), "base\n").unwrap();
        git_in(&repo, &["add", "f.txt"]);
        git_in(&repo, &["commit", "-q", "-m", "init"]);
        for dep in ["a", "b"] {
            git_in(
                &repo,
                &["checkout", "-q", "-b", &format!("vf/{dep}"), "main"],
            );
            std::fs::write(repo.join("f.txt"), format!("{dep}\n")).unwrap();
            git_in(&repo, &["commit", "-q", "-am", dep]);
        }
        git_in(&repo, &["checkout", "-q", "main"]);
        Fixture {
            _tmp: tmp,
            repo,
            state,
        }
    }

    fn spec(&self, keep: bool) -> WorkspaceSpec {
        let mut spec = crate::workspace::resolve(&self.repo, "u", None, None, "t").unwrap();
        spec.merge = vec!["a".into(), "b".into()];
        spec.keep_conflicts = keep;
        spec
    }

    /// The user's checkout and every branch but `vf/u`.
    fn user_side(&self) -> (String, String, String) {
        let refs = git_in(
            &self.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        );
        let others: Vec<&str> = refs
            .lines()
            .filter(|l| !l.starts_with("refs/heads/vf/u "))
            .collect();
        (
            git_in(
                &self.repo,
                &["status", "--porcelain", "--untracked-files=all"],
            ),
            git_in(&self.repo, &["rev-parse", "HEAD"]),
            others.join("\n"),
        )
    }

    /// Opens `u` in keep mode: `vf/a` merges, `vf/b` conflicts.
    fn conflicted(&self) -> (Workspace, Pending) {
        match open(&self.state, "u", &self.spec(true), None) {
            Err(OpenError::Unmerged { workspace, pending }) => (*workspace, *pending),
            other => panic!("not left in progress: {other:?}"),
        }
    }
}

fn head(ws: &Workspace) -> String {
    git_in(&ws.path, &["rev-parse", "HEAD"])
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn a_resolved_merge_is_committed_with_both_parents_and_vfs_message() {
    let fx = Fixture::new();
    let user = fx.user_side();
    let (ws, p) = fx.conflicted();
    assert_eq!((p.dependency.as_str(), p.theirs.as_str()), ("b", "vf/b"));
    assert_eq!(p.paths, ["f.txt"]);
    let text = std::fs::read_to_string(ws.path.join("f.txt")).unwrap();
    assert!(has_marker_line(text.as_bytes()), "{text}");
    // The resolver edits the file, and does not stage it.
    std::fs::write(ws.path.join("f.txt"), "a and b\n").unwrap();
    assert_eq!(unresolved(&ws, &p), Ok(Vec::new()));
    let made = commit(&ws, &p, "claude").unwrap();
    assert_eq!(head(&ws), made);
    let parents = git_in(&ws.path, &["rev-parse", "HEAD^1", "HEAD^2"]);
    assert_eq!(parents, format!("{}\n{}", p.head, p.merge_head));
    let msg = git_in(&ws.path, &["log", "-1", "--format=%s"]);
    assert_eq!(msg, "vf: merge vf/b into vf/u (resolved by claude)");
    assert_eq!(git_in(&ws.path, &["status", "--porcelain"]), "");
    // Opened again, every dependency is in: nothing more to merge.
    let again = open(&fx.state, "u", &fx.spec(true), Some(&ws)).unwrap();
    assert_eq!(head(&again.workspace), made);
    assert_eq!(fx.user_side(), user);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn markers_left_are_found_and_the_merge_aborted_to_where_it_was() {
    let fx = Fixture::new();
    let user = fx.user_side();
    let (ws, p) = fx.conflicted();
    // The resolver stages the file with its markers in it.
    git_in(&ws.path, &["add", "f.txt"]);
    let left = unresolved(&ws, &p).unwrap();
    assert_eq!(left, ["f.txt (conflict markers left)"]);
    let err = commit(&ws, &p, "claude").unwrap_err();
    assert_eq!(
        err,
        Unsettled::Conflict("f.txt (conflict markers left)".into())
    );
    abort(&ws, &p).unwrap();
    assert_eq!(head(&ws), p.head);
    assert!(!git::succeeds(
        &ws.path,
        &["rev-parse", "-q", "--verify", "MERGE_HEAD"]
    ));
    assert_eq!(git_in(&ws.path, &["status", "--porcelain"]), "");
    assert_eq!(fx.user_side(), user);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn a_resolver_that_aborts_or_commits_itself_is_never_committed_over() {
    let fx = Fixture::new();
    let user = fx.user_side();
    let (ws, p) = fx.conflicted();
    git_in(&ws.path, &["merge", "--abort"]);
    let err = commit(&ws, &p, "claude").unwrap_err();
    assert!(
        matches!(&err, Unsettled::Conflict(m) if m.contains("ended the merge of vf/b itself")),
        "{err:?}"
    );
    abort(&ws, &p).unwrap();
    assert_eq!(head(&ws), p.head);

    // A second conflict, which the resolver commits itself (markers and all).
    let (ws, p) = fx.conflicted();
    git_in(&ws.path, &["commit", "-q", "-am", "mine"]);
    let err = commit(&ws, &p, "claude").unwrap_err();
    assert!(
        matches!(&err, Unsettled::Conflict(m) if m.contains("moved vf/u itself")),
        "{err:?}"
    );
    abort(&ws, &p).unwrap();
    assert_eq!(head(&ws), p.head, "its commit is not left on the branch");
    assert_eq!(git_in(&ws.path, &["status", "--porcelain"]), "");
    assert_eq!(fx.user_side(), user);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git and a shell on PATH; the wine runner CI uses has none"
)]
fn a_conflicted_file_replaced_by_a_link_is_not_followed_nor_committed() {
    let fx = Fixture::new();
    let (ws, p) = fx.conflicted();
    let outside = fx.state.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "no markers here\n").unwrap();
    std::fs::remove_file(ws.path.join("f.txt")).unwrap();
    // `ln -s`: only the platform layer names the OS.
    let ln = std::process::Command::new("ln")
        .arg("-s")
        .arg(&outside)
        .arg(ws.path.join("f.txt"))
        .status()
        .unwrap();
    assert!(ln.success());
    let left = unresolved(&ws, &p).unwrap();
    assert_eq!(left, ["f.txt (replaced by a symbolic link)"]);
    assert!(commit(&ws, &p, "claude").is_err());
    abort(&ws, &p).unwrap();
    assert_eq!(head(&ws), p.head);
    let meta = std::fs::symlink_metadata(ws.path.join("f.txt")).unwrap();
    assert!(meta.is_file(), "git put the file back");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "no markers here\n"
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn a_resolver_that_deletes_git_gets_no_git_run_in_the_worktree() {
    let fx = Fixture::new();
    let user = fx.user_side();
    let (ws, p) = fx.conflicted();
    std::fs::remove_file(ws.path.join(".git")).unwrap();
    std::fs::write(ws.path.join("f.txt"), "resolved\n").unwrap();
    let err = commit(&ws, &p, "claude").unwrap_err();
    assert!(
        matches!(&err, Unsettled::Broken(m) if m.contains("its .git is gone")),
        "{err:?}"
    );
    assert!(matches!(abort(&ws, &p), Err(Unsettled::Broken(_))));
    // git above the worktree (the user's repository) saw nothing of it.
    assert_eq!(fx.user_side(), user);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn a_merge_left_in_progress_is_found_again_in_keep_mode_and_aborted_in_fail_mode() {
    let fx = Fixture::new();
    let (ws, p) = fx.conflicted();
    // vf killed while the resolver ran: the next open finds the same merge.
    let (again_ws, again) = fx.conflicted();
    assert_eq!((again_ws, again), (ws.clone(), p.clone()));
    match open(&fx.state, "u", &fx.spec(false), Some(&ws)) {
        Err(OpenError::Conflict { message, .. }) => assert!(message.contains("f.txt"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(!git::succeeds(
        &ws.path,
        &["rev-parse", "-q", "--verify", "MERGE_HEAD"]
    ));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git on PATH; the wine runner CI uses has none"
)]
fn a_merge_in_progress_that_is_not_vfs_is_never_handed_to_a_resolver() {
    let fx = Fixture::new();
    let (ws, _) = fx.conflicted();
    // The engine ends vf's merge and starts one of its own that conflicts.
    git_in(&ws.path, &["merge", "--abort"]);
    git_in(&fx.repo, &["checkout", "-q", "-b", "other", "main"]);
    std::fs::write(fx.repo.join("f.txt"), "other\n").unwrap();
    git_in(&fx.repo, &["commit", "-q", "-am", "other"]);
    git_in(&fx.repo, &["checkout", "-q", "main"]);
    let foreign = git::run(&ws.path, &["merge", "--no-edit", "other"]);
    assert!(foreign.is_err(), "it conflicts");
    match open(&fx.state, "u", &fx.spec(true), Some(&ws)) {
        Err(OpenError::Conflict { message, .. }) => assert!(message.contains("f.txt"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(!git::succeeds(
        &ws.path,
        &["rev-parse", "-q", "--verify", "MERGE_HEAD"]
    ));
}
