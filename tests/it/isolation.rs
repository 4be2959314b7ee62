//! The suite against the machine it runs on (issue 25): each test makes a
//! temp dir of its own, refused inside a git work tree, and what lies above
//! that dir changes nothing. Parts of the suite run again here, in a child
//! of this test binary with `TMPDIR` somewhere hostile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// `git ARGS` in `dir`, with none of the machine's git configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    git_env(&mut c);
    let out = run_bounded(c, Duration::from_secs(30));
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository at `dir` on `main` with one commit, and `dir/tmp/` in it.
fn repo_with_tmp(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "init"]);
    dir.join("tmp")
}

/// Every file under `dir` with its contents.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = files_under(dir)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f, bytes)
        })
        .collect();
    v.sort();
    v
}

/// The named tests of this binary, run again in a child with `TMPDIR=tmp`:
/// whether all passed, and what the child printed.
fn suite_part(tmp: &Path, tests: &[&str]) -> (bool, String) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(tests)
        .args(["--exact", "--test-threads", "2"])
        .env("TMPDIR", tmp);
    let out = run_bounded(c, Duration::from_secs(600));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    (out.status.success(), text)
}

#[test]
fn a_temp_dir_inside_a_git_work_tree_is_refused_before_it_is_made() {
    let t = tempdir();
    let root = t.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let tmp = repo_with_tmp(&repo);
    // A worktree's (or a submodule's) `.git` is a file: it counts as well.
    let linked = root.join("linked");
    std::fs::create_dir_all(linked.join("tmp")).unwrap();
    std::fs::write(linked.join(".git"), "gitdir: /elsewhere\n").unwrap();
    for (base, top) in [(tmp.join("deep"), &repo), (linked.join("tmp"), &linked)] {
        std::fs::create_dir_all(&base).unwrap();
        let refused = std::panic::catch_unwind(|| tempdir_in(&base, "x-"));
        let msg = *refused.expect_err("refused").downcast::<String>().unwrap();
        assert!(
            msg.contains(&format!("inside the git work tree {}", top.display())),
            "{msg}"
        );
        assert_eq!(
            std::fs::read_dir(&base).unwrap().count(),
            0,
            "a dir was made"
        );
    }
    assert_eq!(enclosing_work_tree(t.path()), None);
}

/// With `TMPDIR` inside a repository, a test whose vf would find that
/// repository (a `--worktree` dispatch outside any repository: it made
/// `vf/u` in it) fails at its set-up, saying why, and nothing reaches it.
#[test]
fn a_tmpdir_inside_a_repository_is_refused_and_gets_no_vf_branch() {
    let t = tempdir();
    let repo = t.path().join("outer");
    let tmp = repo_with_tmp(&repo);
    let tests = [
        "workspace::worktree_outside_a_git_repository_is_a_usage_error",
        "engine_argv::binary::codex_outside_and_inside_git",
    ];
    let (passed, out) = suite_part(&tmp, &tests);
    assert!(!passed, "{out}");
    assert!(out.contains("0 passed; 2 failed"), "{out}");
    assert!(
        out.contains("is inside the git work tree") && out.contains("Set TMPDIR"),
        "{out}"
    );
    assert_eq!(
        git(&repo, &["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main"
    );
    assert_eq!(
        git(&repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// A `.vibeflow/` above the temp dirs (a stray `/tmp/.vibeflow`) is neither
/// read nor written: every `vf` a test runs has a state dir of its own. Its
/// units and attachments were once listed, and attachments stored in it.
#[test]
fn a_stray_state_dir_above_the_temp_dirs_is_neither_read_nor_written() {
    let t = tempdir();
    let stray = t.path().join(".vibeflow");
    std::fs::create_dir_all(stray.join("units")).unwrap();
    std::fs::create_dir_all(stray.join("attachments")).unwrap();
    std::fs::write(stray.join("units/ghost.json"), "not a marker").unwrap();
    std::fs::write(stray.join("attachments/ghost.md"), "boo\n").unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let before = contents(&stray);
    let tests = [
        "attach::empty_store_lists_nothing",
        "attach::add_list_rm_round_trip",
        "attach::state_dir_flag_and_env",
        "attach::the_nearest_state_dir_above_the_cwd_is_found",
        "dispatch::nonzero_exit_after_good_output_is_failure",
        "orchestrate::dependency_failure_blocks_dependents",
        "engine_argv::binary::codex_outside_and_inside_git",
    ];
    let (passed, out) = suite_part(&tmp, &tests);
    assert!(passed, "{out}");
    assert!(
        out.contains(&format!("{} passed; 0 failed", tests.len())),
        "{out}"
    );
    assert_eq!(contents(&stray), before);
    assert_eq!(std::fs::read_dir(&stray).unwrap().count(), 2);
}
