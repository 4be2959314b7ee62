//! The worktree is proven to be vf's before vf runs git in it (issue 25):
//! an engine that deletes, replaces or links its `.git`, or switches branch,
//! fails the unit (`workspace`) and nothing is committed anywhere, the
//! user's checkout least of all; a unit name git refuses as a branch, and
//! files in an uninitialised submodule.

use super::*;

/// A [`Repo`] as the issue had it: the state dir inside the repository
/// (ignored), and an untracked file of the user's.
fn inside() -> Repo {
    let r = Repo::new();
    r.env.write("repo/.gitignore", ".vibeflow/\n");
    r.git(&["add", ".gitignore"]);
    r.git(&["commit", "-q", "-m", "ignore"]);
    r.env.write("repo/wip.txt", "user wip\n");
    r
}

fn state_in(r: &Repo) -> PathBuf {
    r.repo().join(".vibeflow")
}

/// A codex that writes a file, runs `act` in its working directory (the
/// unit's worktree), then prints a genuine codex stream.
fn engine(r: &Repo, name: &str, act: &str) -> PathBuf {
    let capture = fixture(CODEX);
    let body = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 0.171.0; exit 0; fi\n\
         echo engine > engine.txt\n{act}\ncat '{}'\n",
        capture.display()
    );
    write_exe(&r.env.path().join(name), &body)
}

/// `vf ARGS` with the state dir inside the repository and `codex` as given.
fn vf_inside(r: &Repo, codex: &Path, args: &[&str]) -> Output {
    let mut c = r.vf(args);
    c.env("VF_STATE_DIR", state_in(r))
        .env("VF_CODEX_BIN", codex)
        .env("REPO", r.repo());
    run_bounded(c, Duration::from_secs(90))
}

fn dispatch_inside(r: &Repo, codex: &Path, unit: &str) -> Output {
    vf_inside(r, codex, &dispatch_args(unit, &[]))
}

/// Every ref of the repository with its commit.
fn refs(r: &Repo) -> String {
    r.git(&["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// The refs of a repository at `base` with `branches` made from it.
fn refs_at(base: &str, branches: &[&str]) -> String {
    let mut all: Vec<String> = branches
        .iter()
        .map(|b| format!("refs/heads/vf/{b} {base}"))
        .collect();
    all.insert(0, format!("refs/heads/main {base}"));
    all.join("\n")
}

fn failed_for_workspace(out: &Output, why: &str) -> Value {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let res = stdout_json(out);
    assert_eq!(
        (&res["state"], &res["reason"], &res["error"]),
        (&json!("failed"), &json!("workspace"), &json!(why)),
        "{res}"
    );
    res
}

fn broken(r: &Repo, unit: &str, why: &str, then: &str) -> String {
    let path = state_in(r).join("worktrees").join(unit);
    format!(
        "the worktree {} is no longer the one vf made: {why}; {then}",
        path.display()
    )
}

#[test]
fn an_engine_that_deletes_its_git_gets_nothing_committed_anywhere() {
    let r = inside();
    let before = r.checkout();
    let base = r.git(&["rev-parse", "HEAD"]);
    let rmgit = engine(&r, "rmgit-engine", "rm -rf .git");
    let out = dispatch_inside(&r, &rmgit, "fix");
    let why = broken(&r, "fix", "its .git is gone", "nothing was committed");
    let res = failed_for_workspace(&out, &why);
    assert_eq!(res["workspace"]["head"], Value::Null, "{res}");
    assert_eq!(r.checkout(), before, "the user's checkout changed");
    assert_eq!(read_text(&r.repo().join("wip.txt")), "user wip\n");
    assert_eq!(refs(&r), refs_at(&base, &["fix"]));
    let marker: Value =
        serde_json::from_str(&read_text(&state_in(&r).join("units/fix/marker.json"))).unwrap();
    assert_eq!(
        (&marker["state"], &marker["reason"]),
        (&json!("failed"), &json!("workspace"))
    );
    // Resumed, or run again: vf runs no git where the worktree was.
    let again = broken(&r, "fix", "its .git is gone", "vf runs no git in it");
    let out = vf_inside(&r, &rmgit, &["resume", "fix", "--json"]);
    failed_for_workspace(&out, &again);
    let out = dispatch_inside(&r, &rmgit, "fix");
    failed_for_workspace(&out, &again);
    assert_eq!(r.checkout(), before, "the user's checkout changed");
    assert_eq!(refs(&r), refs_at(&base, &["fix"]));
}

#[test]
fn an_engine_that_replaces_or_links_its_git_or_switches_branch_gets_nothing_committed() {
    let r = inside();
    let base = r.git(&["rev-parse", "HEAD"]);
    // Another unit's worktree, whose git dir an engine could point at.
    let plain = engine(&r, "plain-engine", ":");
    assert_eq!(dispatch_inside(&r, &plain, "other").status.code(), Some(0));
    let other = r.git(&["rev-parse", "vf/other"]);
    let git = r.repo().join(".git");
    let admin = git.join("worktrees/other");
    let cases = [
        (
            "link",
            "rm -rf .git && ln -s \"$REPO/.git\" .git",
            "its .git is a symbolic link".to_string(),
        ),
        (
            "gitfile",
            "rm -rf .git && printf 'gitdir: %s\\n' \"$REPO/.git\" > .git",
            format!(
                "its .git points at {}, not at a worktree of the repository {}",
                git.display(),
                git.display()
            ),
        ),
        (
            "init",
            "rm -rf .git && git init -q .",
            "its .git is a directory, a repository of its own".to_string(),
        ),
        (
            "borrow",
            "printf 'gitdir: %s\\n' \"$REPO/.git/worktrees/other\" > .git",
            format!(
                "its git dir {} belongs to another worktree",
                admin.display()
            ),
        ),
        (
            "switch",
            "git checkout -q -b elsewhere",
            "it is on elsewhere, not vf/switch".to_string(),
        ),
    ];
    for (unit, act, why) in cases {
        let before = r.checkout();
        let exe = engine(&r, &format!("{unit}-engine"), act);
        let out = dispatch_inside(&r, &exe, unit);
        failed_for_workspace(&out, &broken(&r, unit, &why, "nothing was committed"));
        assert_eq!(r.checkout(), before, "{unit}: the user's checkout changed");
        assert_eq!(read_text(&r.repo().join("wip.txt")), "user wip\n");
        assert_eq!(r.git(&["rev-parse", "main"]), base, "{unit}");
        assert_eq!(r.git(&["rev-parse", "vf/other"]), other, "{unit}");
        assert_eq!(r.git(&["rev-parse", &format!("vf/{unit}")]), base, "{unit}");
    }
    // The branch the engine made holds no commit of vf's.
    assert_eq!(r.git(&["rev-parse", "elsewhere"]), base);
    // `vf clean` runs no git through a linked `.git` either.
    let out = vf_inside(&r, &plain, &["clean", "link", "--force", "--branches"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let why = broken(
        &r,
        "link",
        "its .git is a symbolic link",
        "vf leaves it alone: remove it by hand",
    );
    assert_eq!(
        stderr(&out).trim(),
        format!("vf: unit \"link\": {why} (nothing was cleaned)")
    );
    assert!(state_in(&r).join("worktrees/link").is_dir());
    assert_eq!(r.git(&["rev-parse", "vf/link"]), base);
}

#[test]
fn a_unit_name_git_refuses_as_a_branch_is_refused_before_anything_is_made() {
    let r = Repo::new();
    let out = r.dispatch("x.lock", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "vf: --worktree: the unit name \"x.lock\" cannot be a git branch: git refuses \
         \"vf/x.lock\" (a branch name may not end in `.lock`); pick another unit name"
    );
    let units = r.env.state().join("units");
    let made: Vec<PathBuf> = files_under(&units);
    assert_eq!(made, Vec::<PathBuf>::new(), "the unit's files were made");
    assert!(!r.worktree("x.lock").exists());
    assert_eq!(r.git(&["branch", "--list", "vf/*"]), "");
    // A plan is refused before any of its units starts.
    let plan = format!(
        "{}{}",
        unit_toml("fine", &[], ""),
        unit_toml("x.lock", &[], "")
    );
    let out = r.plan(&plan);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "unit \"x.lock\": worktree = true: the unit name \"x.lock\" cannot be a git branch"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(files_under(&units), Vec::<PathBuf>::new());
    assert_eq!(r.git(&["branch", "--list", "vf/*"]), "");
}

#[test]
fn files_written_in_an_uninitialised_submodule_are_named_in_the_warnings() {
    let r = Repo::new();
    let sub = r.env.path().join("subrepo");
    std::fs::create_dir_all(&sub).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "sub"],
    ] {
        let mut c = Command::new("git");
        c.arg("-C").arg(&sub).args(args);
        git_env(&mut c);
        assert!(c.status().unwrap().success());
    }
    let url = sub.to_str().unwrap();
    r.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        url,
        "sm",
    ]);
    r.git(&["commit", "-q", "-m", "submodule"]);
    // The fake writes `<unit>.txt` in its cwd: `sm/u.txt` from the submodule.
    r.fake_env("FAKE_WRITE=sm/@NAME@.txt");
    let out = r.dispatch("u", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["state"], "done", "{res}");
    assert_eq!(
        res["warnings"],
        json!([
            "1 file(s) written in \"sm\", a submodule that is not initialised in the worktree, \
             are not committed (git does not look inside it): \"sm/u.txt\""
        ])
    );
    assert_eq!(r.files_of("vf/u"), [".gitmodules", "README.md", "sm"]);
}
