//! The invocations through the binary: `vf dispatch --dry-run --json`.

use assert_cmd::Command;
use serde_json::{Value, json};

use super::common::{Env, vf_cli};

/// `vf dispatch --cwd DIR --state-dir DIR/.vibeflow` in `dir`.
fn vf(dir: &std::path::Path) -> Command {
    let mut c = vf_cli();
    c.current_dir(dir)
        .env_remove("VF_STATE_DIR")
        .arg("dispatch")
        .arg("--cwd")
        .arg(dir)
        .arg("--state-dir")
        .arg(dir.join(".vibeflow"));
    c
}

fn dry_run(dir: &std::path::Path, extra: &[&str]) -> Value {
    let out = vf(dir)
        .args(extra)
        .args(["--dry-run", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn codex_outside_and_inside_git() {
    let tmp = Env::new();
    let dir = tmp.path().to_path_buf();
    let v = dry_run(&dir, &["--engine", "codex", "--prompt", "hi there"]);
    assert_eq!(v["program"], "codex");
    assert_eq!(
        v["args"],
        json!(["exec", "--json", "--skip-git-repo-check", "-"])
    );
    assert_eq!(v["stdin"], "hi there");
    assert_eq!(v["cwd"], dir.display().to_string());
    assert_eq!(v["promptFile"], Value::Null);

    std::fs::create_dir(dir.join(".git")).unwrap();
    let v = dry_run(&dir, &["--engine", "codex", "--prompt", "hi"]);
    assert_eq!(v["args"], json!(["exec", "--json", "-"]));
}

#[test]
fn claude_resume_with_skip() {
    let tmp = Env::new();
    let id = "5e0e0c89-f301-4ba6-8327-7b41f84dc493";
    let v = dry_run(
        tmp.path(),
        &[
            "--engine",
            "claude",
            "--prompt",
            "go",
            "--session",
            id,
            "--skip-permissions",
        ],
    );
    assert_eq!(
        v["args"],
        json!([
            "-p",
            "-r",
            id,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions"
        ])
    );
    assert_eq!(v["stdin"], "go");
}

#[test]
fn copilot_big_prompt_goes_to_a_file() {
    let tmp = Env::new();
    let dir = tmp.path().to_path_buf();
    let big = "x".repeat(32 * 1024 + 1);
    let pf = dir.join("prompt.txt");
    std::fs::write(&pf, &big).unwrap();
    let v = dry_run(
        &dir,
        &[
            "--engine",
            "copilot",
            "--unit",
            "big1",
            "--prompt-file",
            pf.to_str().unwrap(),
        ],
    );
    let file = dir.join(".vibeflow/dispatch/big1.md");
    assert_eq!(v["promptFile"], file.display().to_string());
    assert_eq!(v["stdin"], Value::Null);
    let args = v["args"].as_array().unwrap();
    assert_eq!(
        args[args.len() - 1],
        format!("Read {} and follow it", file.display())
    );
    // A dry run writes nothing.
    assert!(!file.exists());
}

#[test]
fn opencode_from_stdin() {
    let tmp = Env::new();
    let out = vf(tmp.path())
        .args(["--engine", "opencode", "--dry-run", "--json"])
        .write_stdin("from stdin")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["args"], json!(["run", "--format", "json"]));
    assert_eq!(v["stdin"], "from stdin");
}

fn refused(extra: &[&str], code: i32, needle: &str) {
    let tmp = Env::new();
    let out = vf(tmp.path())
        .args(extra)
        .args(["--dry-run", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(code), "{extra:?}");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(needle), "{err:?} lacks {needle:?}");
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    for id in ["--dangerously-skip-permissions", "../x", " ", "a b"] {
        refused(
            &[
                "--engine",
                "codex",
                "--prompt",
                "p",
                &format!("--session={id}"),
            ],
            2,
            "not a valid codex session id",
        );
    }
    refused(
        &["--engine", "opencode", "--prompt", "p", "--session="],
        2,
        "session id",
    );
    refused(
        &["--engine", "agy", "--prompt", "p", "--session=x"],
        2,
        "not supported",
    );
    refused(
        &[
            "--engine",
            "copilot",
            "--prompt",
            "p",
            "--session=23a3694b-6367-494d-aa02-ae5d5602995f",
        ],
        2,
        "exact resume",
    );
}

#[test]
fn agy_over_limit_is_refused_before_spawn() {
    let big = "y".repeat(30 * 1024);
    refused(&["--engine", "agy", "--prompt", &big], 3, "30720");
}
