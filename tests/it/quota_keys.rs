//! The quota governor's configuration (docs/CONFIG.md, "Accounts") and the
//! account choice of the single-unit commands: bad accounts and keys are
//! exit 2 naming the file and line with nothing written; flags beat the
//! config; an account's env reaches the engine and never a log; a held
//! account stops `vf dispatch` (exit 75) before the engine starts, another
//! open account takes the run, and `vf resume` moves to it with a replay.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::{Env, fixture, last_json, read_text, stderr};

/// A secret the accounts' env carries: it must never be shown.
const SECRET_A: &str = "sk-ant-secret-aaaa-4242";
const SECRET_B: &str = "sk-ant-secret-bbbb-4343";

const ACCOUNTS: &str = r#"
[[accounts]]
name = "a"
engine = "claude"
env = { CLAUDE_CONFIG_DIR = "/cfg/claude-a", ANTHROPIC_API_KEY = "sk-ant-secret-aaaa-4242" }

[[accounts]]
name = "b"
engine = "claude"
env = { CLAUDE_CONFIG_DIR = "/cfg/claude-b", ANTHROPIC_API_KEY = "sk-ant-secret-bbbb-4343" }
"#;

const OK: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";
const LIMITED: &str = "claude/2.1.207/d_error429.stdout.jsonl";

/// An env with a fake claude that logs, per start, the account variables it
/// got (`starts.log`), and the user config `config` (`cfg/config.toml`).
fn env_with(config: &str) -> (Env, PathBuf) {
    let env = Env::new();
    env.fake_for("claude");
    let log = env.path().join("starts.log");
    env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=${{FAKE_VERSION:-2.1.332}}\nFAKE_STDOUT=${{FAKE_STDOUT:-{}}}\n\
             [ \"${{1:-}}\" != --version ] && printf '%s %s\\n' \"${{CLAUDE_CONFIG_DIR:-none}}\" \
             \"${{ANTHROPIC_API_KEY:-none}}\" >> {}\n",
            fixture(OK).display(),
            log.display()
        ),
    );
    let cfg = env.write("cfg/config.toml", config);
    (env, cfg)
}

/// The config dirs the fake was started with, one per start.
fn starts(env: &Env) -> Vec<String> {
    std::fs::read_to_string(env.path().join("starts.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
}

fn vf(env: &Env, cfg: &Path, args: &[&str]) -> Command {
    let mut c = env.cmd(args);
    c.env("VF_CONFIG", cfg);
    c
}

fn run(c: Command) -> Output {
    common::run_bounded(c, Duration::from_secs(60))
}

/// `vf dispatch` of `unit` on the fake claude, `--output json`, with `extra`.
fn dispatch(env: &Env, cfg: &Path, unit: &str, extra: &[&str], envs: &[(&str, &str)]) -> Output {
    let bin = env.path().join("bin/claude");
    let mut args = vec![
        "dispatch",
        "--engine",
        "claude",
        "--unit",
        unit,
        "--prompt",
        "the task",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut c = vf(env, cfg, &args);
    for (k, v) in envs {
        c.env(k, v);
    }
    run(c)
}

/// A run of `unit` on `account` that the provider refuses with a reset ten
/// minutes away: the ledger holds claude on that account.
fn hold(env: &Env, cfg: &Path, unit: &str, account: &str) {
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let mut lines: Vec<String> = read_text(&fixture(LIMITED))
        .lines()
        .map(str::to_string)
        .collect();
    lines.insert(1, format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{reset},"rateLimitType":"five_hour"}},"session_id":"6194bcf3-613b-4938-813a-96fd27dc6521"}}"#
    ));
    let limited = env.write("limited.jsonl", lines.join("\n") + "\n");
    let out = dispatch(
        env,
        cfg,
        unit,
        &["--account", account],
        &[
            ("FAKE_STDOUT", limited.to_str().unwrap()),
            ("FAKE_VERSION", "2.1.207"),
            ("FAKE_EXIT", "1"),
        ],
    );
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
}

/// Every file below `dir`, as text (lossy).
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return text;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            text.push_str(&all_text(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            text.push_str(&String::from_utf8_lossy(&b));
        }
    }
    text
}

#[test]
fn bad_accounts_and_quota_keys_in_the_config_are_exit_2_with_the_line() {
    let cases = [
        (
            "[[accounts]]\nname = \"a/b\"\nengine = \"claude\"\n",
            2,
            "account name",
        ),
        (
            "[[accounts]]\nname = \"a\"\nengine = \"claude\"\n[[accounts]]\nname = \"a\"\nengine = \"claude\"\n",
            5,
            "declared twice for claude",
        ),
        (
            "[[accounts]]\nname = \"a\"\nengine = \"gpt\"\n",
            3,
            "unknown engine",
        ),
        (
            "[[accounts]]\nname = \"a\"\nengine = \"claude\"\nenv = { PATH = \"/x\" }\n",
            4,
            "may not set `PATH`",
        ),
        (
            "[[accounts]]\nname = \"a\"\nengine = \"claude\"\nenv = { VF_STATE_DIR = \"/x\" }\n",
            4,
            "may not set `VF_STATE_DIR`",
        ),
        ("[defaults]\n\npause_at = 0\n", 3, "from 1 to 100"),
        ("[defaults]\npause_at = 101\n", 2, "from 1 to 100"),
        ("[defaults]\nstagger = 3601\n", 2, "from 0 to 3600"),
        ("[defaults]\nrotate = \"no\"\n", 2, "invalid type"),
    ];
    for (config, line, want) in cases {
        let (env, cfg) = env_with(config);
        let out = dispatch(&env, &cfg, "u", &[], &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(
            err.contains(&format!("{}:{line}:", cfg.display())) && err.contains(want),
            "{config}: {err}"
        );
        assert!(!env.state().exists() && starts(&env).is_empty(), "{config}");
    }
}

#[test]
fn bad_flags_and_a_plans_unknown_account_are_exit_2() {
    let (env, cfg) = env_with(ACCOUNTS);
    for (flags, want) in [
        (
            &["--pause-at", "0"][..],
            "--pause-at: `pause_at` must be a percent",
        ),
        (
            &["--stagger", "3601"][..],
            "--stagger: `stagger` must be from 0",
        ),
        (&["--account", "c"][..], "claude's accounts: a, b"),
    ] {
        let out = dispatch(&env, &cfg, "u", flags, &[]);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{flags:?}: {}", stderr(&out));
    }
    let plan = env.write(
        "plan.toml",
        "[[unit]]\nname = \"x\"\nengine = \"claude\"\nprompt = \"p\"\n\n\
         [[unit]]\nname = \"y\"\nengine = \"claude\"\nprompt = \"p\"\naccount = \"c\"\n",
    );
    let out = run(vf(
        &env,
        &cfg,
        &["orchestrate", plan.to_str().unwrap(), "--json"],
    ));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("plan {}: line 6: unit \"y\"", plan.display()))
            && err.contains("`account` \"c\" is not an account of claude"),
        "{err}"
    );
    let plan = env.write(
        "plan2.toml",
        "[[unit]]\nname = \"x\"\nengine = \"claude\"\nprompt = \"p\"\nstagger = 4000\n",
    );
    let out = run(vf(
        &env,
        &cfg,
        &["orchestrate", plan.to_str().unwrap(), "--json"],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 1: unit \"x\""),
        "{}",
        stderr(&out)
    );
    assert!(!env.state().exists() && starts(&env).is_empty());
}

#[test]
fn a_flag_beats_the_configs_quota_keys_and_says_so() {
    let (env, cfg) = env_with(&format!(
        "[defaults]\npause_at = 80\nstagger = 2\n{ACCOUNTS}"
    ));
    let origin = format!("config:{}", cfg.display());
    let bin = env.path().join("bin/claude");
    let dry = |extra: &[&str]| {
        let mut args = vec!["dispatch", "--dry-run", "--json", "--engine", "claude"];
        args.extend_from_slice(&["--prompt", "x", "--engine-bin", bin.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let out = run(vf(&env, &cfg, &args));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        common::stdout_json(&out)["origins"].clone()
    };
    let o = dry(&[]);
    assert_eq!(
        (&o["pause_at"], &o["stagger"]),
        (&Value::from(origin.clone()), &Value::from(origin.clone())),
        "{o}"
    );
    assert_eq!(
        (&o["rotate"], &o["account"]),
        (&Value::from("builtin"), &Value::Null),
        "{o}"
    );
    let o = dry(&["--pause-at", "95", "--stagger", "0", "--account", "b"]);
    for k in ["pause_at", "stagger", "account"] {
        assert_eq!(o[k], "flag", "{k}: {o}");
    }
}

#[test]
fn an_accounts_env_reaches_the_engine_and_never_a_log() {
    let (env, cfg) = env_with(ACCOUNTS);
    let out = dispatch(&env, &cfg, "u", &["--account", "b"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["account"], "b");
    assert_eq!(env.marker("u")["account"], "b");
    let log = std::fs::read_to_string(env.path().join("starts.log")).unwrap();
    assert_eq!(log, format!("/cfg/claude-b {SECRET_B}\n"));
    let shown = format!(
        "{}{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out),
        all_text(&env.state())
    );
    for secret in [SECRET_A, SECRET_B] {
        assert!(!shown.contains(secret), "{secret} shown");
    }
}

#[test]
fn a_held_account_stops_dispatch_before_the_engine_starts() {
    let (env, cfg) = env_with(ACCOUNTS);
    hold(&env, &cfg, "w", "a");
    assert_eq!(starts(&env), ["/cfg/claude-a"]);
    let out = dispatch(&env, &cfg, "u", &["--account", "a"], &[]);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(
        (&r["reason"], &r["state"]),
        (&Value::from("rate-limited"), &Value::from("held")),
        "{r}"
    );
    assert_eq!(
        (&r["heldBy"]["engine"], &r["heldBy"]["account"]),
        (&Value::from("claude"), &Value::from("a")),
        "{r}"
    );
    assert!(
        stderr(&out).contains("claude/a is held (rate-limited) until"),
        "{}",
        stderr(&out)
    );
    // Not started, and nothing of the unit written.
    assert_eq!(starts(&env), ["/cfg/claude-a"]);
    assert!(!env.state().join("units/u").exists());
}

#[test]
fn with_the_first_account_held_a_dispatch_runs_on_the_next() {
    let (env, cfg) = env_with(ACCOUNTS);
    hold(&env, &cfg, "w", "a");
    let out = dispatch(&env, &cfg, "u", &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["account"], "b");
    assert_eq!(starts(&env), ["/cfg/claude-a", "/cfg/claude-b"]);
    // `rotate = false`: the first account only, held.
    let cfg2 = env.write(
        "cfg/norotate.toml",
        format!("[defaults]\nrotate = false\n{ACCOUNTS}"),
    );
    let out = dispatch(&env, &cfg2, "v", &[], &[]);
    assert_eq!(out.status.code(), Some(75), "{}", stderr(&out));
    assert_eq!(starts(&env).len(), 2);
}

#[test]
fn resume_on_another_account_starts_fresh_with_the_replay() {
    let (env, cfg) = env_with(ACCOUNTS);
    let args = env.path().join("args.log");
    let args_s = args.to_str().unwrap();
    // A failed run on account a, with an answer and an exact session.
    let out = dispatch(&env, &cfg, "u", &["--account", "a"], &[("FAKE_EXIT", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(env.marker("u")["account"], "a");
    let sid = env.marker("u")["engineSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    hold(&env, &cfg, "w", "a");
    let bin = env.path().join("bin/claude");
    let resume = [
        "resume",
        "u",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ];
    let mut c = vf(&env, &cfg, &resume);
    c.env("FAKE_ARGS_LOG", args_s);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(
        (&r["account"], &r["start"]),
        (&Value::from("b"), &Value::from("replay")),
        "{r}"
    );
    let argv = read_text(&args);
    assert!(
        !argv.contains(&sid) && argv.contains("NOT a continued session"),
        "{argv}"
    );
    let err = stderr(&out);
    assert!(err.contains("belongs to account a, not b"), "{err}");
    assert_eq!(
        starts(&env).last().map(String::as_str),
        Some("/cfg/claude-b")
    );
}

#[test]
fn resume_on_the_sessions_own_account_is_exact() {
    let (env, cfg) = env_with(ACCOUNTS);
    let args = env.path().join("args.log");
    let out = dispatch(&env, &cfg, "u", &["--account", "b"], &[("FAKE_EXIT", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sid = env.marker("u")["engineSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let bin = env.path().join("bin/claude");
    let resume = [
        "resume",
        "u",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ];
    let mut c = vf(&env, &cfg, &resume);
    c.env("FAKE_ARGS_LOG", &args);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["account"], "b");
    assert!(read_text(&args).contains(&sid), "{}", read_text(&args));
}
