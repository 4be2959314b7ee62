//! `vf clean`: worktrees of done units go, others need --force, branches
//! stay unless --branches; git's own worktree list agrees.

use super::*;

fn worktree_list(r: &Repo) -> String {
    r.git(&["worktree", "list", "--porcelain"])
}

#[test]
fn clean_removes_done_worktrees_and_refuses_the_rest_unless_forced() {
    let r = Repo::new();
    assert_eq!(r.dispatch("ok", &[]).status.code(), Some(0));
    let failed = r.dispatch("bad", &["--setup", "exit 1"]);
    assert_eq!(failed.status.code(), Some(1));
    // Nothing is cleaned when one named unit is refused.
    let out = r.run(&["clean", "ok", "bad"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "vf: unit \"bad\" is failed, not done; --force cleans it anyway (nothing was cleaned)"
    );
    assert!(r.worktree("ok").exists() && r.worktree("bad").exists());
    let out = r.run(&["clean", "--done", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_json_eq(
        &stdout_json(&out),
        &json!([{"unit": "ok", "worktree": r.worktree("ok"), "branch": null}]),
    );
    assert!(!r.worktree("ok").exists());
    assert!(!worktree_list(&r).contains("/worktrees/ok"));
    assert_eq!(r.files_of("vf/ok"), ["README.md", "ok.txt"]);
    let out = r.run(&["clean", "bad", "--force", "--branches", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_json_eq(
        &stdout_json(&out),
        &json!([{"unit": "bad", "worktree": r.worktree("bad"), "branch": "vf/bad"}]),
    );
    assert!(!worktree_list(&r).contains("/worktrees/bad"));
    assert_eq!(r.git(&["branch", "--list", "vf/bad"]), "");
    assert_eq!(r.run(&["clean"]).status.code(), Some(2));
}

#[test]
fn a_running_unit_is_never_cleaned() {
    let r = Repo::new();
    let gate = r.env.path().join("gate");
    let mut c = r.vf(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "live",
        "--prompt",
        "go",
        "--json",
        "--worktree",
    ]);
    c.env("FAKE_WAIT_FILE", &gate)
        .stdout(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    r.env.wait_running("live", false);
    let out = r.run(&["clean", "live", "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "vf: unit \"live\" is running; nothing was cleaned"
    );
    assert!(r.worktree("live").exists());
    std::fs::write(&gate, "").unwrap();
    assert_eq!(wait_exit(&mut child).code(), Some(0));
}

#[test]
fn branches_go_after_their_worktree_is_gone_but_only_where_vf_left_them() {
    let r = Repo::new();
    for u in ["ok", "rm", "moved"] {
        assert_eq!(r.dispatch(u, &[]).status.code(), Some(0));
    }
    // A first clean keeps the branches; the user deletes one worktree by hand.
    assert_eq!(r.run(&["clean", "ok", "moved"]).status.code(), Some(0));
    std::fs::remove_dir_all(r.worktree("rm")).unwrap();
    // The user moves vf/moved elsewhere: it is no longer what vf made.
    r.git(&["branch", "-f", "vf/moved", "main"]);
    let out = r.run(&["clean", "--done", "--branches", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_json_eq(
        &stdout_json(&out),
        &json!([
            {"unit": "moved", "worktree": null, "branch": null},
            {"unit": "ok", "worktree": null, "branch": "vf/ok"},
            {"unit": "rm", "worktree": null, "branch": "vf/rm"},
        ]),
    );
    assert_eq!(r.git(&["branch", "--list", "vf/*"]), "vf/moved");
    assert!(!worktree_list(&r).contains("/worktrees/"));
}
