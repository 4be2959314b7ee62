//! A worktree unit resumed (its worktree and base reused), a plan's `cwd`
//! inside the worktree, and the plan keys' own errors.

use super::*;

const CODEX_FAIL: &str = "codex/0.171.0/d_error500.stdout.jsonl";

#[test]
fn a_resumed_unit_continues_in_its_own_worktree() {
    resumed_in_worktree(&[]);
}

#[test]
fn a_resumed_unit_keeps_no_commit() {
    resumed_in_worktree(&["--no-commit"]);
}

/// A unit fails, HEAD moves on, `vf resume` finishes it in the same worktree
/// on the recorded base, committing unless the first run said `--no-commit`.
fn resumed_in_worktree(extra: &[&str]) {
    let commit = extra.is_empty();
    let r = Repo::new();
    let base = r.git(&["rev-parse", "HEAD"]);
    let fail = fixture(CODEX_FAIL).display().to_string();
    r.fake_env(&format!("FAKE_STDOUT={fail}\nFAKE_WRITE=first.txt"));
    let out = r.dispatch("u", extra);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let failed = stdout_json(&out);
    // Failed: nothing committed, the engine's file waits in the worktree.
    let mut want = expected_workspace(&r, "u", &base, &[]);
    if !commit {
        want["commit"] = false.into();
    }
    assert_json_eq(&failed["workspace"], &want);
    // The user's HEAD moves on; the unit keeps its recorded base.
    r.env.write("repo/later.md", "later\n");
    r.git(&["add", "later.md"]);
    r.git(&["commit", "-q", "-m", "later"]);
    // The resumed engine answers on the same session.
    let same = read_text(&fixture(CODEX))
        .replace(&capture_session_id(CODEX), &capture_session_id(CODEX_FAIL));
    let same = r.env.write("resumed.jsonl", same);
    r.fake_env(&format!(
        "FAKE_STDOUT={}\nFAKE_WRITE=second.txt",
        same.display()
    ));
    let out = r.run(&["resume", "u", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["state"], "done", "{res}");
    let files: &[&str] = if commit {
        &["first.txt", "second.txt"]
    } else {
        &[]
    };
    let mut want = expected_workspace(&r, "u", &base, files);
    if !commit {
        want["commit"] = false.into();
    }
    assert_json_eq(&res["workspace"], &want);
    assert_eq!(r.env.marker("u")["cwd"], json!(r.worktree("u")));
}

#[test]
fn a_plan_cwd_is_taken_inside_the_worktree() {
    let r = Repo::new();
    r.env.write("repo/sub/keep.md", "k\n");
    r.git(&["add", "sub/keep.md"]);
    r.git(&["commit", "-q", "-m", "sub"]);
    let base = r.git(&["rev-parse", "HEAD"]);
    let out = r.plan(
        "[[unit]]\nname = \"s\"\nengine = \"codex\"\nprompt = \"p\"\nworktree = true\ncwd = \"sub\"\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The fake names its file after its working directory: `sub`.
    let want = expected_workspace(&r, "s", &base, &["sub/sub.txt"]);
    assert_json_eq(&unit_of(&last_json(&out), "s")["workspace"], &want);
    assert_eq!(r.env.marker("s")["cwd"], json!(r.worktree("s").join("sub")));
}

#[test]
fn plan_worktree_keys_are_checked_before_anything_starts() {
    let r = Repo::new();
    let unit = "[[unit]]\nname = \"x\"\nengine = \"codex\"\nprompt = \"p\"\n";
    let cases = [
        (
            "base = \"main\"\n",
            "`base` and `commit` need `worktree = true`",
        ),
        (
            "worktree = true\ncwd = \"../up\"\n",
            "must be relative to the worktree's root",
        ),
        (
            "worktree = true\nbase = \"nope\"\n",
            "base \"nope\" is not a commit",
        ),
    ];
    for (extra, want) in cases {
        let out = r.plan(&format!("{unit}{extra}"));
        assert_eq!(out.status.code(), Some(2), "{extra}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{extra}: {}", stderr(&out));
        assert!(r.env.marker_opt("x").is_none());
    }
    let outside = Env::new();
    outside.fake_for("codex");
    let plan = outside.write("plan.toml", format!("{unit}worktree = true\n"));
    let out = outside.run(&["orchestrate", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unit \"x\": worktree = true needs a git repository"),
        "{}",
        stderr(&out)
    );
}
