//! claude as root: it refuses `--dangerously-skip-permissions` unless
//! `IS_SANDBOX=1` is set (containers, CI). vf says so in the failure, and never
//! sets `IS_SANDBOX` on the user's behalf. A fake claude prints the real refusal;
//! the real one is exercised in tests/real_engines.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{fixture, run_bounded, vf};

/// claude's stderr line as root (2.1.207 and 2.1.332, run as root in
/// scripts/engine-sandbox.sh), then exit 1 with nothing on stdout.
const REAL_REFUSAL: &str =
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";

/// A claude that refuses like the real one and writes its environment to `env.log`.
fn fake_claude(dir: &Path) -> PathBuf {
    let path = dir.join("claude");
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = --version ]; then echo "2.1.332 (Claude Code)"; exit 0; fi
env > "{log}"
cat > /dev/null
for a in "$@"; do
  if [ "$a" = --dangerously-skip-permissions ] && [ "${{IS_SANDBOX:-}}" != 1 ]; then
    echo "{REAL_REFUSAL}" >&2
    exit 1
  fi
done
cat "{stream}"
"#,
        log = dir.join("env.log").display(),
        stream = fixture("claude/2.1.332/a_json_stream.stdout.jsonl").display(),
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `vf dispatch --engine claude --skip-permissions` with `IS_SANDBOX` as given;
/// returns (exit code, result object, the environment claude was started with).
fn dispatch(is_sandbox: Option<&str>) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_claude(dir.path());
    let mut c = Command::new(vf());
    c.args(["dispatch", "--engine", "claude", "--unit", "u"])
        .args([
            "--prompt",
            "LAB-JSON hi",
            "--skip-permissions",
            "--output",
            "json",
        ])
        .arg("--engine-bin")
        .arg(&bin)
        .current_dir(dir.path())
        .env("VF_STATE_DIR", dir.path().join("state"))
        .env_remove("IS_SANDBOX")
        .stdin(Stdio::null());
    if let Some(v) = is_sandbox {
        c.env("IS_SANDBOX", v);
    }
    let out = run_bounded(c, Duration::from_secs(60));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let env = std::fs::read_to_string(dir.path().join("env.log")).unwrap();
    (out.status.code(), result, env)
}

fn env_value<'a>(env: &'a str, name: &str) -> Option<&'a str> {
    env.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

#[test]
fn the_root_refusal_names_is_sandbox_and_vf_does_not_set_it() {
    let (code, result, env) = dispatch(None);
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(result["state"], "failed");
    assert_eq!(
        result["error"],
        "claude exited with status 1: claude refuses --dangerously-skip-permissions as root; \
         in a container or CI set IS_SANDBOX=1 (vf never sets it for you)"
    );
    assert_eq!(
        env_value(&env, "IS_SANDBOX"),
        None,
        "vf set IS_SANDBOX:\n{env}"
    );
}

#[test]
fn a_user_set_is_sandbox_reaches_claude_unchanged() {
    let (code, result, env) = dispatch(Some("1"));
    assert_eq!(code, Some(0), "{result}");
    assert_eq!(result["state"], "done");
    assert_eq!(env_value(&env, "IS_SANDBOX"), Some("1"));
    // Any other value is the user's too: passed on as it is, never "fixed".
    let (code, result, env) = dispatch(Some("0"));
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(env_value(&env, "IS_SANDBOX"), Some("0"));
}
