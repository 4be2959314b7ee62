//! What the real CLIs print about their quota (fixtures/quota/, recorded
//! against the fake model server's `LAB-QUOTA` / `LAB-ERR429-RESET`), replayed
//! through `vf dispatch` on the fake engine: what the ledger learns (status,
//! utilization, window, source), a refusal with a reset holds the account,
//! a 429 with a reset gives `retryAt`, and which engines say nothing.

use serde_json::Value;

use crate::common;
use common::*;

const CLAUDE: &str = "quota/claude/2.1.332";

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The capture with every `"resetsAt":<epoch s>` moved to `secs` from now
/// (the frames are genuine; only their time is today's).
fn shifted(env: &Env, cap: &str, secs: u64) -> (std::path::PathBuf, u64) {
    let at = now_secs() + secs;
    let text = read_text(&fixture(cap));
    let mut out = String::new();
    let mut rest = text.as_str();
    let key = "\"resetsAt\":";
    while let Some(i) = rest.find(key) {
        let (head, tail) = rest.split_at(i + key.len());
        out.push_str(head);
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        assert!(digits > 0, "{cap}: resetsAt is epoch seconds");
        out.push_str(&at.to_string());
        rest = &tail[digits..];
    }
    out.push_str(rest);
    assert!(out.contains(&at.to_string()), "{cap} names a reset");
    let name = cap.replace('/', "-");
    (env.write(&name, out), at)
}

/// `vf dispatch` of `engine` printing `stdout` with the capture's exit status.
fn replay(
    env: &Env,
    engine: &str,
    unit: &str,
    cap: &str,
    stdout: &std::path::Path,
) -> (Value, i32) {
    let dir = fixture(cap).parent().unwrap().to_path_buf();
    let case = cap.rsplit('/').next().unwrap().split('.').next().unwrap();
    let exit = recorded_exit(&read_text(&dir.join(format!("{case}.cmd.txt"))));
    let out = env.dispatch(
        engine,
        unit,
        &[
            ("FAKE_STDOUT", stdout.display().to_string()),
            (
                "FAKE_VERSION",
                dir.file_name().unwrap().to_str().unwrap().into(),
            ),
            ("FAKE_EXIT", exit.to_string()),
            (
                "FAKE_STDERR",
                dir.join(format!("{case}.stderr.txt")).display().to_string(),
            ),
        ],
        &[],
    );
    (last_json(&out), out.status.code().unwrap())
}

/// The ledger's entry for `engine` (the default account), if any.
fn entry(env: &Env, engine: &str) -> Option<Value> {
    let text = std::fs::read_to_string(env.path().join("quota.json")).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    v["entries"]
        .as_array()?
        .iter()
        .find(|e| e["engine"] == engine && e["account"] == "default")
        .cloned()
}

/// claude (on a subscription: the frames below need an OAuth token) prints a
/// `rate_limit_event` on every answer; the ledger keeps its window. When
/// claude does not warn (92 % used, but late in the window: `allowed`) or
/// says no figure of its own (`allowed`), the window it lists
/// (`unifiedWindows.five_hour`) still gives the figure.
#[test]
fn claude_rate_limit_events_fill_the_ledger_window() {
    for (case, status, utilization) in [
        ("q_warning", "allowed_warning", 92.0),
        ("q_warning_late", "allowed_warning", 92.0),
        ("q_allowed", "allowed", 40.0),
    ] {
        let env = Env::new();
        let cap = format!("{CLAUDE}/{case}.stdout.jsonl");
        let (stdout, at) = shifted(&env, &cap, 4 * 3600);
        let (r, code) = replay(&env, "claude", case, &cap, &stdout);
        assert_eq!(
            (code, r["state"].clone()),
            (0, "done".into()),
            "{case}: {r}"
        );
        let e = entry(&env, "claude").unwrap_or_else(|| panic!("{case}: no ledger entry"));
        let w = &e["window"];
        assert_eq!(w["status"], status, "{case}: {e}");
        let u = w["utilization"]
            .as_f64()
            .unwrap_or_else(|| panic!("{case}: {e}"));
        assert!((u - utilization).abs() < 1e-6, "{case}: {e}");
        assert_eq!(w["name"], "five_hour", "{case}: {e}");
        assert_eq!(
            w["resetsAt"],
            vf::ground::fsutil::rfc3339(at, 0),
            "{case}: {e}"
        );
        assert_eq!(e["source"], "rate_limit_event (claude)", "{case}: {e}");
        assert_eq!(
            e.get("heldUntil"),
            None,
            "{case}: a warning is no hold: {e}"
        );
    }
}

/// A warning without a figure: claude says `allowed` and lists no window,
/// so the ledger learns the status alone.
#[test]
fn claude_warning_without_a_figure_is_a_plain_allowed() {
    let env = Env::new();
    let cap = format!("{CLAUDE}/q_warning_nofigure.stdout.jsonl");
    let (stdout, _) = shifted(&env, &cap, 4 * 3600);
    let (r, code) = replay(&env, "claude", "nofig", &cap, &stdout);
    assert_eq!(code, 0, "{r}");
    let e = entry(&env, "claude").unwrap();
    assert_eq!(e["window"]["status"], "allowed", "{e}");
    assert_eq!(e["window"].get("utilization"), None, "{e}");
}

/// claude's refusal names its reset (`rate_limit_event` `rejected`): the run
/// is rate-limited with that `retryAt`, the ledger holds claude until then,
/// and the next dispatch on claude does not start the engine.
#[test]
fn a_rejected_frame_with_a_reset_holds_the_account() {
    for case in ["q_rejected", "q_error429_reset"] {
        let env = Env::new();
        let cap = format!("{CLAUDE}/{case}.stdout.jsonl");
        let (stdout, at) = shifted(&env, &cap, 600);
        let (r, code) = replay(&env, "claude", "first", &cap, &stdout);
        let until = vf::ground::fsutil::rfc3339(at, 0);
        assert_eq!(
            (code, r["reason"].clone()),
            (75, "rate-limited".into()),
            "{case}: {r}"
        );
        assert_eq!(r["retryAt"], until, "{case}: {r}");
        let e = entry(&env, "claude").unwrap();
        assert_eq!(e["heldUntil"], until, "{case}: {e}");
        assert_eq!(e["hold"], "rate-limited", "{case}: {e}");
        assert_eq!(e["window"]["status"], "rejected", "{case}: {e}");

        let started = env.path().join("second.args");
        let out = env.dispatch(
            "claude",
            "second",
            &[
                fake_stdout("claude/2.1.332/a_json_stream.stdout.jsonl"),
                ("FAKE_VERSION", "2.1.332".into()),
                ("FAKE_ARGS_LOG", started.display().to_string()),
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(75), "{case}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("claude/default is held (rate-limited)"),
            "{case}: {}",
            stderr(&out)
        );
        assert!(!started.exists(), "{case}: the held engine was started");
    }
}

/// opencode echoes the provider's response headers in its `error` frame: a
/// 429's `retry-after` (seconds) becomes `retryAt`.
#[test]
fn an_opencode_429_with_retry_after_gives_retry_at() {
    let env = Env::new();
    let cap = "quota/opencode/1.18.33/q_error429_reset.stdout.jsonl";
    let text = read_text(&fixture(cap));
    assert!(
        text.contains(r#""retry-after":"2""#),
        "the capture's header"
    );
    let before = now_secs();
    let (r, code) = replay(&env, "opencode", "oc", cap, &fixture(cap));
    let after = now_secs();
    assert_eq!(
        (code, r["reason"].clone()),
        (75, "rate-limited".into()),
        "{r}"
    );
    let at = vf::ground::fsutil::parse_rfc3339(r["retryAt"].as_str().unwrap()).unwrap();
    assert!((before + 2..=after + 2).contains(&at), "{r}");
    assert!(entry(&env, "opencode").unwrap()["heldUntil"].is_string());
}

/// codex on a plan refuses with "You’ve hit your usage limit": rate-limited,
/// not an engine failure; its reset is a clock time without a date, so no
/// `retryAt` (the shared back-off holds instead).
#[test]
fn codex_usage_limit_is_rate_limited_without_a_reset() {
    let env = Env::new();
    let cap = "quota/codex/0.171.0/q_rejected.stdout.jsonl";
    let (r, code) = replay(&env, "codex", "cx", cap, &fixture(cap));
    assert_eq!(
        (code, r["reason"].clone()),
        (75, "rate-limited".into()),
        "{r}"
    );
    assert_eq!(r.get("retryAt"), None, "{r}");
    assert_eq!(entry(&env, "codex").unwrap()["hold"], "backoff");
}

/// gemini and copilot name the limit but no time vf can read (gemini: "Please
/// retry in 20s." in the text; copilot: only that it retried).
#[test]
fn gemini_and_copilot_429s_are_rate_limited_without_a_reset() {
    for (engine, cap) in [
        (
            "gemini",
            "quota/gemini/0.61.0/q_error429_reset.stdout.jsonl",
        ),
        ("gemini", "quota/gemini/0.61.0/q_rejected.stdout.jsonl"),
        (
            "copilot",
            "quota/copilot/1.0.102/q_error429_reset.stdout.jsonl",
        ),
    ] {
        let env = Env::new();
        let (r, code) = replay(&env, engine, "u", cap, &fixture(cap));
        assert_eq!(
            (code, r["reason"].clone()),
            (75, "rate-limited".into()),
            "{cap}: {r}"
        );
        assert_eq!(r.get("retryAt"), None, "{cap}: {r}");
        assert_eq!(entry(&env, engine).unwrap()["hold"], "backoff", "{cap}");
    }
}

/// The headers of a window at 92 % reach codex, opencode and copilot, and
/// claude on an API key, but none of them prints it: the ledger learns
/// nothing until the wall.
#[test]
fn engines_that_print_no_window_teach_the_ledger_nothing() {
    for (engine, cap) in [
        ("codex", "quota/codex/0.171.0/q_warning.stdout.jsonl"),
        ("opencode", "quota/opencode/1.18.33/q_warning.stdout.jsonl"),
        ("copilot", "quota/copilot/1.0.102/q_warning.stdout.jsonl"),
        (
            "claude",
            "quota/claude/2.1.332/q_warning_apikey.stdout.jsonl",
        ),
    ] {
        let env = Env::new();
        let (r, code) = replay(&env, engine, "u", cap, &fixture(cap));
        assert_eq!((code, r["state"].clone()), (0, "done".into()), "{cap}: {r}");
        assert_eq!(entry(&env, engine), None, "{cap}");
    }
}
