//! Plan key `push = "REMOTE"` (issue 28): a done worktree unit's branch
//! pushed to a bare repository, a failed push failing the unit, a dependent
//! fetching a dependency's pushed branch that this clone no longer has, and
//! remote names refused before anything starts.

use super::*;

/// `git init --bare PATH`.
fn init_bare(path: &Path) {
    let mut c = Command::new("git");
    c.args(["init", "-q", "--bare"]).arg(path);
    git_env(&mut c);
    assert!(c.status().unwrap().success());
}

/// A bare repository at `<dir>/remote.git`, the repository's `origin`.
fn with_origin(r: &Repo) -> PathBuf {
    let bare = r.env.path().join("remote.git");
    init_bare(&bare);
    r.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    bare
}

/// `git -C <bare> rev-parse REF`, `None` when it has no such ref.
fn remote_ref(bare: &Path, reference: &str) -> Option<String> {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(bare)
        .args(["rev-parse", "--verify", "--quiet", reference]);
    git_env(&mut c);
    let out = c.output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn orchestrate(r: &Repo, text: &str, extra: &[&str]) -> Output {
    let plan = r.env.write("repo/.plan/plan.toml", text);
    let mut args = vec!["orchestrate", plan.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    r.run(&args)
}

#[test]
fn a_done_unit_pushes_its_branch_and_its_workspace_says_so() {
    let r = Repo::new();
    let bare = with_origin(&r);
    let base = r.git(&["rev-parse", "HEAD"]);
    let plan = [
        unit_toml("a", &[], "push = \"origin\""),
        unit_toml("c", &[], ""),
    ]
    .concat();
    let out = orchestrate(&r, &plan, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = last_json(&out);
    let mut want = expected_workspace(&r, "a", &base, &["a.txt"]);
    want["pushed"] = json!("origin");
    assert_json_eq(&unit_of(&res, "a")["workspace"], &want);
    assert_json_eq(&r.env.marker("a")["workspace"], &want);
    // The remote has the branch at the unit's commit, and nothing else.
    let head = r.git(&["rev-parse", "vf/a"]);
    assert_eq!(remote_ref(&bare, "refs/heads/vf/a"), Some(head));
    assert_eq!(remote_ref(&bare, "refs/heads/vf/c"), None);
    // A unit without `push` shows no `pushed`.
    let c = &unit_of(&res, "c")["workspace"];
    assert_json_eq(c, &expected_workspace(&r, "c", &base, &["c.txt"]));
}

#[test]
fn a_failed_push_fails_the_unit_keeps_its_worktree_and_blocks_its_dependent() {
    let r = Repo::new();
    let gone = r.env.path().join("gone.git");
    r.git(&["remote", "add", "backup", gone.to_str().unwrap()]);
    let plan = [
        unit_toml("a", &[], "push = \"backup\""),
        unit_toml("b", &["a"], ""),
    ]
    .concat();
    let out = orchestrate(&r, &plan, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = last_json(&out);
    let a = unit_of(&res, "a");
    let error = format!(
        "cannot push vf/a to the remote \"backup\": git push --quiet --no-verify backup -- \
         refs/heads/vf/a:refs/heads/vf/a: fatal: '{}' does not appear to be a git repository | \
         fatal: Could not read from remote repository. | \
         Please make sure you have the correct access rights | and the repository exists.",
        gone.display()
    );
    assert_eq!(
        (&a["state"], &a["reason"], &a["error"]),
        (&json!("failed"), &json!("remote"), &json!(error))
    );
    // The commit was made and kept, the worktree too; nothing says pushed.
    assert_eq!(r.git(&["show", "vf/a:a.txt"]), "a");
    assert!(r.worktree("a").join("a.txt").is_file());
    assert!(a["workspace"].get("pushed").is_none(), "{a}");
    let m = r.env.marker("a");
    assert_eq!(
        (&m["state"], &m["reason"]),
        (&json!("failed"), &json!("remote"))
    );
    let b = unit_of(&res, "b");
    assert_eq!(
        (&b["state"], &b["reason"]),
        (&json!("blocked"), &json!("dependency"))
    );
    // Once the remote is there, `--resume` runs the unit again, and it pushes.
    init_bare(&gone);
    let out = orchestrate(&r, &plan, &["--resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = last_json(&out);
    assert_eq!(unit_of(&res, "a")["workspace"]["pushed"], "backup");
    let head = r.git(&["rev-parse", "vf/a"]);
    assert_eq!(remote_ref(&gone, "refs/heads/vf/a"), Some(head));
    assert_eq!(unit_of(&res, "b")["state"], "done");
}

#[test]
fn a_dependent_fetches_a_pushed_branch_this_clone_no_longer_has() {
    let r = Repo::new();
    let bare = with_origin(&r);
    let a = unit_toml("a", &[], "push = \"origin\"");
    let out = orchestrate(&r, &a, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pushed = r.git(&["rev-parse", "vf/a"]);
    // As if `a` had run on another machine: this clone has neither its
    // worktree nor its branch, only its done marker.
    let wt = r.worktree("a");
    r.git(&["worktree", "remove", "--force", wt.to_str().unwrap()]);
    r.git(&["branch", "-D", "vf/a"]);
    let plan = [a, unit_toml("b", &["a"], "")].concat();
    let out = orchestrate(&r, &plan, &["--resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = last_json(&out);
    assert_eq!(unit_of(&res, "b")["state"], "done", "{res}");
    // b's branch: the merge of origin/vf/a, then b's own commit.
    assert_eq!(r.files_of("vf/b"), ["README.md", "a.txt", "b.txt"]);
    assert_eq!(
        r.git(&["log", "--topo-order", "--format=%s", "vf/b"]),
        "vf: b\nvf: merge origin/vf/a into vf/b\nvf: a\ninit"
    );
    assert_eq!(r.git(&["rev-parse", "vf/b~1^2"]), pushed);
    assert_eq!(
        r.git(&["rev-parse", "refs/remotes/origin/vf/a"]),
        pushed,
        "the remote-tracking ref"
    );
    assert_eq!(
        r.git(&["branch", "--list", "vf/a"]),
        "",
        "no local vf/a again"
    );
    // The dependent did not push: it has no `push`.
    assert_eq!(remote_ref(&bare, "refs/heads/vf/b"), None);
}

#[test]
fn a_dependent_whose_fetch_fails_is_failed_with_the_remote_named() {
    let r = Repo::new();
    let bare = with_origin(&r);
    let a = unit_toml("a", &[], "push = \"origin\"");
    let out = orchestrate(&r, &a, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::remove_dir_all(&bare).unwrap();
    let plan = [a, unit_toml("b", &["a"], "")].concat();
    let out = orchestrate(&r, &plan, &["--resume"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let b = unit_of(&last_json(&out), "b").clone();
    assert_eq!(
        (&b["state"], &b["reason"]),
        (&json!("failed"), &json!("remote"))
    );
    let error = b["error"].as_str().unwrap();
    let want = format!(
        "cannot fetch vf/a from the remote \"origin\": git fetch --quiet --no-tags origin -- \
         +refs/heads/vf/a:refs/remotes/origin/vf/a: fatal: '{}' does not appear to be a git repository",
        bare.display()
    );
    assert!(error.starts_with(&want), "{error}");
    // Nothing of a was merged, and b's engine never ran.
    assert_eq!(r.files_of("vf/b"), ["README.md"]);
}

#[test]
fn push_is_checked_before_anything_starts() {
    let r = Repo::new();
    with_origin(&r);
    let unit = "[[unit]]\nname = \"x\"\nengine = \"codex\"\nprompt = \"p\"\n";
    let cases = [
        (
            "worktree = true\npush = \"--receive-pack=touch pwned\"\n",
            "line 1: unit \"x\": `push`: \"--receive-pack=touch pwned\" is not a plain git remote name: it starts with `-`",
        ),
        (
            "worktree = true\npush = \"ext::sh -c touch% pwned\"\n",
            "is not a plain git remote name: it holds whitespace or a control character",
        ),
        (
            "worktree = true\npush = \"../../elsewhere\"\n",
            "is not a plain git remote name: it holds `..`",
        ),
        (
            "worktree = true\npush = \"host:repo\"\n",
            "is not a plain git remote name: it holds `:`",
        ),
        (
            "push = \"origin\"\n",
            "unit \"x\": `push` needs `worktree = true`",
        ),
        (
            "worktree = true\npush = \"upstream\"\n",
            "unit \"x\": push: the repository",
        ),
        (
            "worktree = true\nretries = 11\n",
            "line 1: unit \"x\": `retries` must be a whole number from 0 to 10, not 11",
        ),
    ];
    for (extra, want) in cases {
        let out = orchestrate(&r, &format!("{unit}{extra}"), &[]);
        assert_eq!(out.status.code(), Some(2), "{extra}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{extra}: {}", stderr(&out));
        assert!(r.env.marker_opt("x").is_none());
        assert_eq!(r.git(&["branch", "--list", "vf/*"]), "");
    }
    assert!(!r.repo().join("pwned").exists());
    assert!(!r.env.path().join("pwned").exists());
}
