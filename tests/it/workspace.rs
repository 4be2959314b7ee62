//! Worktree units on a real git repository (docs/WORKSPACES.md), with the
//! fake engine writing a file named after its unit (`FAKE_WRITE`): each
//! unit's branch, dependency merges, conflicts, setup/verify, the user's
//! checkout left alone, and `vf clean`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

#[path = "workspace/clean.rs"]
mod clean;
#[path = "workspace/guards.rs"]
mod guards;
#[path = "workspace/hooks.rs"]
mod hooks;
#[path = "workspace/identity.rs"]
mod identity;
#[path = "workspace/kept.rs"]
mod kept;
#[path = "workspace/merge.rs"]
mod merge;
#[path = "workspace/push.rs"]
mod push;
#[path = "workspace/resume.rs"]
mod resume;
#[path = "workspace/steps.rs"]
mod steps;

const CODEX: &str = "codex/0.171.0/b_tool.stdout.jsonl";

/// An [`Env`] with a git repository at `<dir>/repo` (one commit), the state
/// dir outside it, and the fake as codex writing `FAKE_WRITE` (default
/// `<unit>.txt`: the fake's name is its working dir's, the unit's worktree).
struct Repo {
    env: Env,
}

impl Repo {
    fn new() -> Repo {
        let env = Env::new();
        let r = Repo { env };
        std::fs::create_dir_all(r.repo()).unwrap();
        r.git(&["init", "-q", "-b", "main"]);
        r.env.write("repo/README.md", "hello\n");
        r.git(&["add", "README.md"]);
        r.git(&["commit", "-q", "-m", "init"]);
        r.env.fake_for("codex");
        r.fake_env("");
        r
    }
    fn repo(&self) -> PathBuf {
        self.env.path().join("repo")
    }
    /// `bin/codex.env`: the capture replayed, plus `extra` lines.
    fn fake_env(&self, extra: &str) {
        let stdout = fixture(CODEX).display().to_string();
        let body =
            format!("FAKE_STDOUT={stdout}\nFAKE_WRITE=${{FAKE_WRITE:-@NAME@.txt}}\n{extra}\n");
        self.env.write("bin/codex.env", body);
    }
    /// `git -C <repo> ARGS`, its trimmed stdout; panics on failure.
    fn git(&self, args: &[&str]) -> String {
        let mut c = Command::new("git");
        c.arg("-C").arg(self.repo()).args(args);
        git_env(&mut c);
        let out = c.output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
    /// The user's checkout as git sees it: status, HEAD, current branch.
    fn checkout(&self) -> (String, String, String) {
        (
            self.git(&["status", "--porcelain", "--untracked-files=all"]),
            self.git(&["rev-parse", "HEAD"]),
            self.git(&["symbolic-ref", "HEAD"]),
        )
    }
    /// `vf ARGS` run in the repository, the fake as codex.
    fn vf(&self, args: &[&str]) -> Command {
        let mut c = self.env.cmd(args);
        c.current_dir(self.repo())
            .env("VF_CODEX_BIN", self.env.fake_for("codex"));
        git_env(&mut c);
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        run_bounded(self.vf(args), Duration::from_secs(90))
    }
    /// `vf dispatch --worktree` of `unit`, JSON result.
    fn dispatch(&self, unit: &str, extra: &[&str]) -> Output {
        run_bounded(self.dispatch_cmd(unit, extra), Duration::from_secs(90))
    }
    /// The command of [`Repo::dispatch`], to start it and watch it.
    fn dispatch_cmd(&self, unit: &str, extra: &[&str]) -> Command {
        self.vf(&dispatch_args(unit, extra))
    }
    fn worktree(&self, unit: &str) -> PathBuf {
        self.env.state().join("worktrees").join(unit)
    }
    /// The files of a branch's tree.
    fn files_of(&self, branch: &str) -> Vec<String> {
        let out = self.git(&["ls-tree", "-r", "--name-only", branch]);
        out.lines().map(str::to_string).collect()
    }
    fn plan(&self, text: &str) -> Output {
        let plan = self.env.write("repo/.plan/plan.toml", text);
        // The plan lives in the repository but is not committed: it is the
        // user's untracked file, which must stay as it is.
        self.run(&[
            "orchestrate",
            plan.to_str().unwrap(),
            "--jobs",
            "3",
            "--json",
        ])
    }
}

/// `dispatch --worktree` of `unit` on codex, JSON result, and `extra`.
fn dispatch_args<'a>(unit: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        unit,
        "--prompt",
        "go",
        "--json",
        "--worktree",
    ];
    args.extend_from_slice(extra);
    args
}

/// What `workspace` must say for a unit whose branch changed `files`.
fn expected_workspace(r: &Repo, unit: &str, base: &str, files: &[&str]) -> Value {
    let branch = format!("vf/{unit}");
    json!({
        "path": r.worktree(unit),
        "branch": branch,
        "base": base,
        "head": r.git(&["rev-parse", &branch]),
        "changedFiles": files,
    })
}

fn unit_toml(name: &str, deps: &[&str], extra: &str) -> String {
    format!(
        "[[unit]]\nname = \"{name}\"\nengine = \"codex\"\nprompt = \"write\"\nworktree = true\ndepends_on = {deps:?}\n{extra}\n"
    )
}

/// The plan of the issue: three parallel units and one depending on two.
fn diamond(extra_b: &str) -> String {
    [
        unit_toml("a", &[], ""),
        unit_toml("b", &[], extra_b),
        unit_toml("c", &[], ""),
        unit_toml("d", &["a", "b"], ""),
    ]
    .concat()
}

fn unit_of<'a>(result: &'a Value, unit: &str) -> &'a Value {
    result["units"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["unit"] == unit))
        .unwrap_or_else(|| panic!("no unit {unit} in {result}"))
}

#[test]
fn dispatch_in_a_worktree_commits_on_the_units_branch_only() {
    let r = Repo::new();
    let before = r.checkout();
    let base = r.git(&["rev-parse", "HEAD"]);
    let out = r.dispatch("w1", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["state"], "done", "{res}");
    assert_json_eq(
        &res["workspace"],
        &expected_workspace(&r, "w1", &base, &["w1.txt"]),
    );
    // The marker records the same workspace, and the engine ran in the worktree.
    assert_json_eq(&r.env.marker("w1")["workspace"], &res["workspace"]);
    let status = r.run(&["status", "w1", "--json"]);
    assert_json_eq(&stdout_json(&status)["workspace"], &res["workspace"]);
    assert_eq!(r.env.marker("w1")["cwd"], json!(r.worktree("w1")));
    assert_eq!(r.git(&["show", "vf/w1:w1.txt"]), "w1");
    // One commit on top of the base: `vf: <unit>` with the engine and session.
    let session = res["sessionId"].as_str().unwrap().to_string();
    let msg = r.git(&["log", "-1", "--format=%B", "vf/w1"]);
    assert_eq!(
        msg,
        format!("vf: w1\n\nvf-engine: codex\nvf-session: {session}")
    );
    assert_eq!(r.git(&["rev-parse", "vf/w1~1"]), base);
    assert_eq!(r.checkout(), before, "the user's checkout changed");
    assert!(!r.repo().join("w1.txt").exists()); // The human result names the worktree and branch.
    let human = r.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "w3",
        "--prompt",
        "go",
        "--output",
        "human",
        "--worktree",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    let line = format!(
        "worktree: {} on vf/w3 (1 file(s) changed since {})",
        r.worktree("w3").display(),
        &base[..12]
    );
    assert!(text.lines().any(|l| l == line), "{text}");
}

#[test]
fn no_commit_leaves_the_changes_in_the_worktree_and_base_picks_the_start() {
    let r = Repo::new();
    let first = r.git(&["rev-parse", "HEAD"]);
    r.env.write("repo/second.md", "2\n");
    r.git(&["add", "second.md"]);
    r.git(&["commit", "-q", "-m", "second"]);
    let out = r.dispatch("w2", &["--base", "HEAD~1", "--no-commit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    let mut want = expected_workspace(&r, "w2", &first, &[]);
    want["commit"] = false.into();
    assert_json_eq(&res["workspace"], &want);
    assert_eq!(r.git(&["rev-parse", "vf/w2"]), first);
    let status = Command::new("git")
        .arg("-C")
        .arg(r.worktree("w2"))
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "?? w2.txt\n");
}

#[test]
fn worktree_outside_a_git_repository_is_a_usage_error() {
    let env = Env::new();
    let out = env.dispatch("codex", "u", &[fake_stdout(CODEX)], &["--worktree"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--worktree needs a git repository"), "{err}");
    assert!(env.marker_opt("u").is_none());
    let r = Repo::new();
    let out = r.dispatch("u", &["--base", "no-such-ref"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("\"no-such-ref\" is not a commit"),
        "{}",
        stderr(&out)
    );
    // A done unit is refused before any worktree is made for it.
    let plain = [
        "dispatch", "--engine", "codex", "--unit", "p", "--prompt", "x", "--json",
    ];
    assert_eq!(r.run(&plain).status.code(), Some(0));
    let marker = r.env.marker_bytes("p");
    let out = r.dispatch("p", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is already done"), "{}", stderr(&out));
    assert!(!r.worktree("p").exists());
    assert_eq!(r.git(&["branch", "--list", "vf/p"]), "");
    assert_eq!(r.env.marker_bytes("p"), marker);
}

#[test]
fn a_plan_composes_dependency_branches_and_leaves_the_checkout_alone() {
    let r = Repo::new();
    let base = r.git(&["rev-parse", "HEAD"]);
    r.env.write("repo/.plan/plan.toml", diamond(""));
    let before = r.checkout();
    let out = r.plan(&diamond(""));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = last_json(&out);
    for u in ["a", "b", "c"] {
        assert_eq!(
            r.files_of(&format!("vf/{u}")),
            ["README.md", &format!("{u}.txt")]
        );
        let want = expected_workspace(&r, u, &base, &[&format!("{u}.txt")]);
        assert_json_eq(&unit_of(&res, u)["workspace"], &want);
    }
    assert_eq!(r.files_of("vf/d"), ["README.md", "a.txt", "b.txt", "d.txt"]);
    let want = expected_workspace(&r, "d", &base, &["a.txt", "b.txt", "d.txt"]);
    assert_json_eq(&unit_of(&res, "d")["workspace"], &want);
    assert_eq!(r.checkout(), before, "the user's checkout changed");
    assert_eq!(
        status_details(&r),
        ["a", "b", "c"]
            .map(|u| format!("vf/{u} (1 file(s) changed) summary: "))
            .into_iter()
            .chain(["vf/d (3 file(s) changed) summary: ".to_string()])
            .collect::<Vec<_>>()
    );
    // Resumed with nothing left to do, and run again: nothing moves.
    let again = r.run(&["orchestrate", ".plan/plan.toml", "--resume", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_json_eq(&unit_of(&last_json(&again), "d")["workspace"], &want);
}

#[test]
fn a_merge_conflict_blocks_the_dependent_and_leaves_nothing_half_merged() {
    let r = Repo::new();
    // a and b both write shared.txt, each with its own name in it.
    let plan = [
        unit_toml("a", &[], ""),
        unit_toml("b", &[], ""),
        unit_toml("d", &["a", "b"], ""),
    ]
    .concat();
    r.fake_env("FAKE_WRITE=shared.txt");
    r.env.write("repo/.plan/plan.toml", &plan);
    let before = r.checkout();
    let out = r.plan(&plan);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = last_json(&out);
    let d = unit_of(&res, "d");
    assert_eq!(d["state"], "blocked", "{d}");
    assert_eq!(d["reason"], "merge-conflict");
    assert_eq!(
        d["error"],
        "merge conflict: vf/b does not merge into vf/d: shared.txt"
    );
    let m = r.env.marker("d");
    assert_eq!(
        (&m["state"], &m["reason"]),
        (&json!("blocked"), &json!("merge-conflict"))
    );
    // The worktree is clean at a's merge: no MERGE_HEAD, no conflict markers.
    let wt = r.worktree("d");
    let st = Command::new("git")
        .arg("-C")
        .arg(&wt)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&st.stdout), "");
    assert!(!git_dir_has(&wt, "MERGE_HEAD"));
    assert_eq!(read_text(&wt.join("shared.txt")), "a\n");
    assert_eq!(r.checkout(), before);
}

/// The `vf status` table's last column (from the header's SUMMARY column on,
/// so a shifted column shows), each cut after its `summary: `.
fn status_details(r: &Repo) -> Vec<String> {
    let out = r.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let col = header.find("SUMMARY").expect("a SUMMARY column");
    lines
        .map(|l| {
            let detail: String = l.chars().skip(col).collect();
            match detail.find("summary: ") {
                Some(i) => detail[..i + "summary: ".len()].to_string(),
                None => detail,
            }
        })
        .collect()
}

/// Whether the worktree's own git dir holds `name`.
fn git_dir_has(wt: &Path, name: &str) -> bool {
    let out = Command::new("git")
        .arg("-C")
        .arg(wt)
        .args(["rev-parse", "--git-dir"])
        .output()
        .unwrap();
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    wt.join(dir).join(name).exists()
}

#[test]
fn a_dry_run_shows_the_worktree_it_would_use_and_makes_nothing() {
    let r = Repo::new();
    r.env.write("repo/sub/f.txt", "f\n");
    r.git(&["add", "sub"]);
    r.git(&["commit", "-q", "-m", "sub"]);
    let base = r.git(&["rev-parse", "HEAD"]);
    let sub = r.repo().join("sub");
    let sub = sub.to_str().unwrap();
    let args = ["--dry-run", "--cwd", sub];
    let out = r.dispatch("dr", &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let inv = stdout_json(&out);
    let want = r.worktree("dr").join("sub");
    assert_eq!(inv["cwd"], json!(want), "{inv}");
    let human = r.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "dr",
        "--prompt",
        "x",
        "--worktree",
        "--cwd",
        sub,
        "--dry-run",
    ]);
    let text = String::from_utf8_lossy(&human.stdout).to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("cd {} && ", want.display())),
        "{text}"
    );
    let line = format!(
        "# worktree: {} on vf/dr from {}",
        r.worktree("dr").display(),
        &base[..12]
    );
    assert!(lines.any(|l| l == line), "{text}");
    assert!(!r.worktree("dr").exists());
    assert_eq!(r.git(&["branch", "--list", "vf/dr"]), "");
}

#[test]
fn a_cwd_the_base_lacks_is_refused_and_leaves_no_worktree_or_branch() {
    let r = Repo::new();
    r.env.write("repo/newdir/f.txt", "not committed\n");
    let dir = r.repo().join("newdir");
    let dir = dir.to_str().unwrap();
    let out = r.dispatch("s", &["--cwd", dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let base = r.git(&["rev-parse", "HEAD"]);
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "vf: the working directory newdir is not in the unit's worktree (is it committed at base {}?); commit it, or run from a directory the base has",
            &base[..12]
        )
    );
    assert!(!r.worktree("s").exists());
    assert_eq!(r.git(&["branch", "--list", "vf/s"]), "");
    assert!(r.env.marker_opt("s").is_none());
    // Once committed, the same unit name runs there (the fake names its file after its cwd).
    r.git(&["add", "newdir"]);
    r.git(&["commit", "-q", "-m", "newdir"]);
    let out = r.dispatch("s", &["--cwd", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        r.files_of("vf/s"),
        ["README.md", "newdir/f.txt", "newdir/newdir.txt"]
    );
}
