//! claude as root: it refuses `--dangerously-skip-permissions` unless
//! `IS_SANDBOX=1` is set (containers, CI). vf says so in the failure, and never
//! sets `IS_SANDBOX` on the user's behalf. A fake claude prints the real refusal;
//! the real one is exercised in tests/it/real_engines.rs.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::*;

/// claude's stderr line as root (2.1.207 and 2.1.332, run as root in
/// scripts/engine-sandbox.sh), then exit 1 with nothing on stdout.
const REAL_REFUSAL: &str =
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";

/// A claude that refuses like the real one and writes its environment to `env.log`.
fn fake_claude(env: &Env) -> PathBuf {
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
        log = env.path().join("env.log").display(),
        stream = fixture(STREAM).display(),
    );
    write_exe(&env.path().join("claude"), &script)
}

const STREAM: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";

/// `vf dispatch --engine claude --skip-permissions` with `IS_SANDBOX` as given;
/// returns (exit code, result object normalised, the environment claude was started with).
fn dispatch(is_sandbox: Option<&str>) -> (Option<i32>, Value, String) {
    let env = Env::new();
    let bin = fake_claude(&env);
    let mut c = env.cmd(&["dispatch", "--engine", "claude", "--unit", "u"]);
    c.args([
        "--prompt",
        "LAB-JSON hi",
        "--skip-permissions",
        "--output",
        "json",
    ])
    .arg("--engine-bin")
    .arg(&bin);
    if let Some(v) = is_sandbox {
        c.env("IS_SANDBOX", v);
    }
    let out = run_bounded(c, Duration::from_secs(60));
    let result = env.normalized(&stdout_json(&out));
    (
        out.status.code(),
        result,
        read_text(&env.path().join("env.log")),
    )
}

fn env_value<'a>(env: &'a str, name: &str) -> Option<&'a str> {
    env.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

#[test]
fn the_root_refusal_names_is_sandbox_and_vf_does_not_set_it() {
    let (code, result, env) = dispatch(None);
    assert_eq!(code, Some(1), "{result}");
    let mut want = finished_result("claude", "u", 1, "failed", 1, &Value::Null);
    want["error"] = "claude exited with status 1: claude refuses --dangerously-skip-permissions \
        as root; in a container or CI set IS_SANDBOX=1 (vf never sets it for you)"
        .into();
    assert_json_eq(&result, &want);
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
    let mut want = finished_result(
        "claude",
        "u",
        1,
        "done",
        0,
        &capture_session_id(STREAM).into(),
    );
    answered(&mut want, &result);
    assert_json_eq(&result, &want);
    assert_eq!(env_value(&env, "IS_SANDBOX"), Some("1"));
    // Any other value is the user's too: passed on as it is, never "fixed".
    let (code, result, env) = dispatch(Some("0"));
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(env_value(&env, "IS_SANDBOX"), Some("0"));
}
