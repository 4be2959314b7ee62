//! The real-engine tier of `--worktree` (docs/WORKSPACES.md): each real CLI,
//! in the loopback-only sandbox against the fake model server, gets one
//! `LAB-WRITE` unit (the model makes it run `touch lab-written.txt`) in its own
//! worktree; the file must land on the unit's branch and nowhere in the
//! user's checkout. Skips like tests/it/real_engines.rs without the CLIs, and
//! fails when `VF_REAL_ENGINES=1` and one is missing.
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use std::path::Path;
use std::process::Command;

use crate::sandbox;
use sandbox::{Sandbox, available, is_root, versions};

const WRITE: &str = "LAB-WRITE Create the file lab-written.txt with a shell command.";

/// `git -C dir ARGS` with a fixed identity and no user config; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The sandbox's project as a repository with one commit (vf's state ignored).
fn init_repo(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "lab\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".vibeflow/\n").unwrap();
    git(dir, &["add", "README.md", ".gitignore"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

fn write_in_worktree(sb: &Sandbox) {
    let repo = sb.workdir();
    init_repo(&repo);
    let before = (
        git(&repo, &["status", "--porcelain"]),
        git(&repo, &["rev-parse", "HEAD"]),
    );
    // As root, claude needs IS_SANDBOX=1 for --dangerously-skip-permissions.
    let envs: &[(&str, &str)] = match sb.engine == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    };
    let run = sb.dispatch_env("write", WRITE, &["--worktree", "--skip-permissions"], envs);
    run.assert_done("LAB-WRITE in a worktree");
    let ws = &run.result["workspace"];
    assert_eq!(ws["branch"], "vf/write", "{}", run.result);
    assert_eq!(ws["base"], before.1.as_str());
    assert!(
        ws["changedFiles"]
            .as_array()
            .is_some_and(|f| f.iter().any(|n| n == "lab-written.txt")),
        "{}: {ws}",
        sb.engine
    );
    let files = git(&repo, &["ls-tree", "-r", "--name-only", "vf/write"]);
    assert!(files.lines().any(|f| f == "lab-written.txt"), "{files}");
    let msg = git(&repo, &["log", "-1", "--format=%B", "vf/write"]);
    assert!(
        msg.starts_with("vf: write") && msg.contains(&format!("vf-engine: {}", sb.engine)),
        "{msg}"
    );
    assert!(
        !repo.join("lab-written.txt").exists(),
        "written in the checkout"
    );
    let after = (
        git(&repo, &["status", "--porcelain"]),
        git(&repo, &["rev-parse", "HEAD"]),
    );
    assert_eq!(after, before, "{}: the user's checkout changed", sb.engine);
}

fn tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            write_in_worktree(&Sandbox::new(engine, &version));
        }
    }
}

#[test]
fn real_worktree_codex() {
    tier("codex");
}

#[test]
fn real_worktree_claude() {
    tier("claude");
}

#[test]
fn real_worktree_gemini() {
    tier("gemini");
}

#[test]
fn real_worktree_opencode() {
    tier("opencode");
}

#[test]
fn real_worktree_copilot() {
    tier("copilot");
}
