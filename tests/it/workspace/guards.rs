//! Post-hoc path guards (`--deny-path`, `--allow-path`, plan `deny_paths`):
//! a violation fails the unit (reason `policy`) with nothing committed, in a
//! worktree and in a plain repository, renames count twice, files dirty
//! before the run are not blamed, and a violating plan unit blocks its dependent.

use super::*;

/// `vf dispatch` in the repository itself (no worktree), JSON result.
fn plain(r: &Repo, unit: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "dispatch", "--engine", "codex", "--unit", unit, "--prompt", "go", "--json",
    ];
    args.extend_from_slice(extra);
    r.run(&args)
}

/// What a unit refused for one changed path says.
pub(super) fn refused(path: &str) -> Value {
    json!({
        "state": "failed",
        "reason": "policy",
        "error": format!("the run changed 1 path(s) its path guards refuse: \"{path}\""),
        "pathViolations": [path],
    })
}

/// Shell lines for the fake's env file that run only when it runs as the
/// engine (vf also runs it for `--version`, before the run starts).
pub(super) fn engine_only(lines: &str) -> String {
    format!("case \"$*\" in *--version*) ;; *) {lines} ;; esac")
}

pub(super) fn outcome(res: &Value) -> Value {
    json!({
        "state": res["state"],
        "reason": res["reason"],
        "error": res["error"],
        "pathViolations": res["pathViolations"],
    })
}

#[test]
fn a_denied_path_fails_the_worktree_unit_and_nothing_is_committed() {
    let r = Repo::new();
    let base = r.git(&["rev-parse", "HEAD"]);
    let out = r.dispatch("w1", &["--deny-path", "secrets/**", "--deny-path", "*.txt"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_json_eq(&outcome(&res), &refused("w1.txt"));
    // No `vf: w1` commit: the branch is still at its base, the change waits
    // in the worktree for inspection.
    assert_eq!(r.git(&["rev-parse", "vf/w1"]), base);
    assert_eq!(read_text(&r.worktree("w1").join("w1.txt")), "w1\n");
    let m = r.env.marker("w1");
    assert_eq!(
        (&m["state"], &m["reason"]),
        (&json!("failed"), &json!("policy"))
    );
    // A resume is checked the same way: the leftover would go into its commit.
    let out = r.run(&["resume", "w1", "--json", "--deny-path", "*.txt"]);
    assert_json_eq(&outcome(&stdout_json(&out)), &refused("w1.txt"));
    assert_eq!(r.git(&["rev-parse", "vf/w1"]), base);
    // A resume keeps the guards it had (the last given: `*.txt`)...
    let out = r.run(&["resume", "w1", "--json"]);
    assert_json_eq(&outcome(&stdout_json(&out)), &refused("w1.txt"));
    // ...until they are dropped on purpose: the unit finishes, its change committed.
    let out = r.run(&["resume", "w1", "--json", "--clear", "paths"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.files_of("vf/w1"), ["README.md", "w1.txt"]);
}

#[test]
fn an_allowed_change_passes_and_is_committed_and_allow_is_the_inverse() {
    let r = Repo::new();
    let ok = r.dispatch(
        "w2",
        &["--deny-path", "secrets/**", "--allow-path", "*.txt"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let res = stdout_json(&ok);
    assert_eq!(res["state"], "done", "{res}");
    assert!(res.get("pathViolations").is_none(), "{res}");
    assert_eq!(r.files_of("vf/w2"), ["README.md", "w2.txt"]);
    // Only `src/**` may change: the unit's file is outside it.
    let out = r.dispatch("w3", &["--allow-path", "src/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(outcome(&res)["pathViolations"], json!(["w3.txt"]));
    assert_eq!(r.files_of("vf/w3"), ["README.md"]);
}

#[test]
fn a_rename_in_a_plain_repository_counts_as_both_paths() {
    let r = Repo::new();
    r.fake_env(&engine_only("FAKE_WRITE=; mv README.md MOVED.md"));
    let out = plain(&r, "p1", &["--allow-path", "docs/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        res["pathViolations"],
        json!(["MOVED.md", "README.md"]),
        "{res}"
    );
    // A staged rename (`git mv`) too.
    r.git(&["checkout", "--", "README.md"]);
    std::fs::remove_file(r.repo().join("MOVED.md")).unwrap();
    r.fake_env(&engine_only("FAKE_WRITE=; git mv README.md STAGED.md"));
    let out = plain(&r, "p2", &["--deny-path", "README.md"]);
    assert_eq!(stdout_json(&out)["pathViolations"], json!(["README.md"]));
}

#[test]
fn hostile_file_names_are_checked_as_they_are() {
    let r = Repo::new();
    // A newline, a leading space, dots; on Linux also a name that is not UTF-8.
    let mut names = vec!["evil\\nname.txt", " lead.txt", "..dots"];
    if cfg!(target_os = "linux") {
        names.push("\\377.txt");
    }
    let make: Vec<String> = names
        .iter()
        .map(|n| format!("printf x > \"$(printf '{n}')\""))
        .collect();
    r.fake_env(&engine_only(&format!("FAKE_WRITE=; {}", make.join("; "))));
    let out = plain(&r, "n1", &["--allow-path", "docs/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let mut want = vec![" lead.txt", "..dots", "evil\nname.txt"];
    if cfg!(target_os = "linux") {
        want.push("\u{FFFD}.txt");
    }
    assert_eq!(stdout_json(&out)["pathViolations"], json!(want));
}

#[test]
fn files_dirty_before_the_run_are_not_blamed_unless_the_run_changes_them() {
    let r = Repo::new();
    r.env.write("repo/README.md", "edited by the user\n");
    r.env.write("repo/notes.md", "mine\n");
    r.env.write("repo/odd\nname.md", "hostile\n");
    let before = r.checkout().0;
    // The engine writes repo.txt and appends to notes.md.
    r.fake_env(&engine_only("echo more >> notes.md"));
    let out = plain(&r, "d1", &["--deny-path", "*.md"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_json_eq(&outcome(&res), &refused("notes.md"));
    // Without the append, the same dirty tree passes.
    r.fake_env("");
    let out = plain(&r, "d2", &["--deny-path", "*.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(before.contains("README.md"), "{before}");
}

#[test]
fn guards_outside_a_git_repository_are_refused_before_anything_is_written() {
    let env = Env::new();
    env.fake_for("codex");
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "o1",
        "--prompt",
        "go",
        "--json",
        "--deny-path",
        "*.txt",
    ]);
    c.env("VF_CODEX_BIN", env.fake_for("codex"));
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not in a git work tree"),
        "{}",
        stderr(&out)
    );
    assert!(!env.state().join("units/o1").exists());
    let bad = r_glob_refusal();
    assert!(bad.contains("bad path glob"), "{bad}");
}

/// A bad glob is refused with exit 2 too.
fn r_glob_refusal() -> String {
    let r = Repo::new();
    let out = r.dispatch("g1", &["--deny-path", "a/["]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!r.env.state().join("units/g1").exists());
    stderr(&out)
}

#[test]
fn a_violating_plan_unit_blocks_its_dependent_and_the_hooks_run() {
    let r = Repo::new();
    let hooks = r.env.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let h = hooks.display();
    let c_keys = format!("allow_paths = [\"*.txt\"]\non_finish = \"cat > {h}/finish-c.json\"");
    let plan = format!(
        "on_plan_finish = \"cat > {h}/plan.json\"\n[defaults]\non_fail = \"cat > {h}/fail-$VF_UNIT.json\"\n{}{}{}",
        unit_toml("a", &[], "deny_paths = [\"a.txt\"]"),
        unit_toml("b", &["a"], ""),
        unit_toml("c", &[], &c_keys),
    );
    let out = r.plan(&plan);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = last_json(&out);
    let a = unit_of(&res, "a");
    assert_eq!(
        (&a["state"], &a["reason"]),
        (&json!("failed"), &json!("policy"))
    );
    let b = unit_of(&res, "b");
    assert_eq!(
        (&b["state"], &b["reason"]),
        (&json!("blocked"), &json!("dependency"))
    );
    assert_eq!(unit_of(&res, "c")["state"], "done");
    assert_eq!(r.files_of("vf/a"), ["README.md"]);
    assert_eq!(r.files_of("vf/c"), ["README.md", "c.txt"]);
    // on_plan_finish got the exact text printed; on_fail ran for the failed
    // and the blocked unit, not for the one that finished.
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        read_text(&hooks.join("plan.json")),
        printed.lines().last().unwrap().to_string() + "\n"
    );
    let fail_a: Value = serde_json::from_str(&read_text(&hooks.join("fail-a.json"))).unwrap();
    assert_eq!(
        (&fail_a["unit"], &fail_a["pathViolations"]),
        (&json!("a"), &json!(["a.txt"]))
    );
    let fail_b: Value = serde_json::from_str(&read_text(&hooks.join("fail-b.json"))).unwrap();
    assert_eq!(
        (&fail_b["unit"], &fail_b["state"]),
        (&json!("b"), &json!("blocked"))
    );
    assert!(!hooks.join("fail-c.json").exists());
    let finish_c: Value = serde_json::from_str(&read_text(&hooks.join("finish-c.json"))).unwrap();
    assert_eq!(
        (&finish_c["unit"], &finish_c["state"]),
        (&json!("c"), &json!("done"))
    );
}

/// Issue 38, section 5: an engine adds `secrets/` to the shared
/// `info/exclude` (a worktree run) or to a new `.gitignore` (a plain run),
/// then writes a denied file: the file is still seen, the unit fails, and
/// the rule it added stays where it put it (vf restores nothing).
#[test]
fn an_ignore_rule_the_run_adds_does_not_hide_a_denied_file() {
    let r = Repo::new();
    let exclude =
        "echo 'secrets/' >> \"$(git rev-parse --path-format=absolute --git-path info/exclude)\"";
    r.fake_env(&engine_only(&format!(
        "{exclude}; mkdir -p secrets; echo k > secrets/key"
    )));
    let out = r.dispatch("x1", &["--deny-path", "secrets/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["pathViolations"]),
        (&json!("failed"), &json!("policy"), &json!(["secrets/key"])),
        "{res}"
    );
    let error = res["error"].as_str().unwrap();
    assert!(error.contains("changed git's ignore rules in"), "{error}");
    assert!(error.contains("info/exclude"), "{error}");
    let rules = read_text(&r.repo().join(".git/info/exclude"));
    assert!(rules.ends_with("secrets/\n"), "{rules}");
    // A `.gitignore` of its own, in a plain run.
    std::fs::write(r.repo().join(".git/info/exclude"), "").unwrap();
    r.fake_env(&engine_only(
        "mkdir -p secrets; printf '*\\n' > secrets/.gitignore; echo k > secrets/key",
    ));
    let out = plain(&r, "x2", &["--deny-path", "secrets/key"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_json_eq(&outcome(&stdout_json(&out)), &refused("secrets/key"));
}

/// A tracked denied file changed and then marked `--assume-unchanged` or
/// `--skip-worktree`: git's status no longer shows it, the guard does; the
/// mark itself is named, and the change is left as it is.
#[test]
fn an_index_flag_does_not_hide_a_changed_denied_file() {
    for flag in ["--assume-unchanged", "--skip-worktree"] {
        let r = Repo::new();
        r.fake_env(&engine_only(&format!(
            "echo changed > README.md; git update-index {flag} README.md"
        )));
        let out = plain(&r, "f1", &["--deny-path", "README.md"]);
        assert_eq!(out.status.code(), Some(1), "{flag}: {}", stderr(&out));
        let res = stdout_json(&out);
        assert_eq!(res["pathViolations"], json!(["README.md"]), "{flag}: {res}");
        let error = res["error"].as_str().unwrap();
        assert!(
            error.contains(
                "marked 1 tracked path(s) --assume-unchanged or --skip-worktree: \"README.md\""
            ),
            "{flag}: {error}"
        );
        assert_eq!(read_text(&r.repo().join("README.md")), "changed\n");
    }
}

/// A worktree run that writes the user's own checkout (through the shared
/// git dir): the guard reads that checkout too, fails the unit, names the
/// path, and leaves the user's file as the engine left it.
#[test]
fn a_worktree_run_that_writes_the_users_checkout_is_refused() {
    let r = Repo::new();
    let user = "\"$(git rev-parse --path-format=absolute --git-common-dir)/..\"";
    r.fake_env(&engine_only(&format!("echo pwned >> {user}/README.md")));
    let out = r.dispatch("u1", &["--deny-path", "README.md"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["pathViolations"]),
        (&json!("failed"), &json!("policy"), &json!(["README.md"])),
        "{res}"
    );
    let error = res["error"].as_str().unwrap();
    assert!(
        error.contains("refuse in the user's own checkout (left as they are): \"README.md\""),
        "{error}"
    );
    assert_eq!(read_text(&r.repo().join("README.md")), "hello\npwned\n");
    // The same run touching only its own worktree passes.
    r.git(&["checkout", "--", "README.md"]);
    r.fake_env("");
    let out = r.dispatch("u2", &["--deny-path", "README.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
