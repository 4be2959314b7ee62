//! A dependency merge that a killed vf left unfinished (issue 38: the
//! orphaned `git merge` left `MERGE_HEAD`, and the next `--resume` took
//! git's refusal for a conflict): the resume redoes it.

use super::*;

/// `git -C <wt> ARGS` with the test's identity; panics on failure.
fn git_in(wt: &Path, args: &[&str]) -> String {
    let mut c = Command::new("git");
    c.arg("-C").arg(wt).args(args);
    git_env(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_resume_redoes_a_merge_vf_left_unfinished() {
    let r = Repo::new();
    let plan = [unit_toml("b", &[], ""), unit_toml("c", &["b"], "")].concat();
    // c fails while `fail-c` exists: it is then resumed, its worktree reused.
    let flag = r.env.path().join("fail-c");
    std::fs::write(&flag, "").unwrap();
    r.fake_env(&format!(
        "[ \"$(basename \"$PWD\")\" = c ] && [ -e '{}' ] && FAKE_EXIT=1",
        flag.display()
    ));
    r.env.write("repo/.plan/plan.toml", &plan);
    let before = r.checkout();
    let out = r.plan(&plan);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(unit_of(&last_json(&out), "c")["state"], "failed");

    // What a kill during the merge leaves: c's worktree back before b's
    // merge, and vf's merge of vf/b begun but not concluded (no conflict).
    let wt = r.worktree("c");
    git_in(&wt, &["reset", "-q", "--hard", "HEAD^1"]);
    git_in(
        &wt,
        &[
            "merge",
            "--no-ff",
            "--no-commit",
            "-m",
            "vf: merge vf/b into vf/c",
            "vf/b",
        ],
    );
    assert!(git_dir_has(&wt, "MERGE_HEAD"));

    std::fs::remove_file(&flag).unwrap();
    let again = r.run(&["orchestrate", ".plan/plan.toml", "--resume", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let c = unit_of(&last_json(&again), "c").clone();
    assert_eq!(c["state"], "done", "{c}");
    assert!(!git_dir_has(&wt, "MERGE_HEAD"));
    assert_eq!(r.files_of("vf/c"), ["README.md", "b.txt", "c.txt"]);
    // b's merge is in c's branch once, as a merge commit of vf/b.
    let merges = git_in(&wt, &["log", "--merges", "--format=%s", "vf/c"]);
    assert_eq!(merges, "vf: merge vf/b into vf/c");
    assert_eq!(r.checkout(), before, "the user's checkout changed");
}

/// A merge in conflict is not one vf can redo: it is reported as before
/// (the engine's own, or a real conflict), never committed.
#[test]
fn an_unfinished_merge_with_a_conflict_is_left_to_report() {
    let r = Repo::new();
    let plan = [unit_toml("b", &[], ""), unit_toml("c", &["b"], "")].concat();
    let flag = r.env.path().join("fail-c");
    std::fs::write(&flag, "").unwrap();
    r.fake_env(&format!(
        "[ \"$(basename \"$PWD\")\" = c ] && [ -e '{}' ] && FAKE_EXIT=1",
        flag.display()
    ));
    r.env.write("repo/.plan/plan.toml", &plan);
    let out = r.plan(&plan);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let wt = r.worktree("c");
    git_in(&wt, &["reset", "-q", "--hard", "HEAD^1"]);
    // c's own b.txt, committed, then vf's merge of vf/b: a conflict.
    std::fs::write(wt.join("b.txt"), "not b\n").unwrap();
    git_in(&wt, &["add", "b.txt"]);
    git_in(&wt, &["commit", "-q", "-m", "c's b"]);
    let mut m = Command::new("git");
    m.arg("-C")
        .arg(&wt)
        .args(["merge", "--no-ff", "-m", "vf: merge vf/b into vf/c", "vf/b"]);
    git_env(&mut m);
    assert!(!m.output().unwrap().status.success(), "the merge conflicts");
    assert!(git_dir_has(&wt, "MERGE_HEAD"));

    std::fs::remove_file(&flag).unwrap();
    let again = r.run(&["orchestrate", ".plan/plan.toml", "--resume", "--json"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    let c = unit_of(&last_json(&again), "c").clone();
    assert_eq!(
        (&c["state"], &c["reason"]),
        (&json!("blocked"), &json!("merge-conflict")),
        "{c}"
    );
}
