//! The normalised `usage` of genuine captures, replayed by the fake engine
//! through `vf dispatch`: the figures each engine's frames carry (read off
//! the capture files by hand), null where it reports none, and codex's
//! cumulative figure turned into one run's usage on a resume.

use serde_json::{Value, json};

use crate::common;
use common::*;

/// The capture replayed through `vf dispatch --output json`: its result and exit code.
fn replay(env: &Env, engine: &str, unit: &str, cap: &str, extra: &[&str]) -> (Value, i32) {
    let out = env.replay_capture(engine, unit, cap, extra);
    (last_json(&out), out.status.code().unwrap())
}

fn usage(
    source: &str,
    [input, cached, output, reasoning, total]: [Option<u64>; 5],
    cost: Option<f64>,
) -> Value {
    json!({
        "inputTokens": input, "cachedInputTokens": cached, "outputTokens": output,
        "reasoningTokens": reasoning, "totalTokens": total, "costUsd": cost, "source": source,
    })
}

#[test]
fn every_engine_and_family_reports_its_captured_usage() {
    let claude = |reasoning: Option<u64>, cost: Option<f64>| {
        usage(
            "result.usage",
            [Some(100), Some(0), Some(20), reasoning, Some(120)],
            cost,
        )
    };
    let codex = usage(
        "turn.completed.usage",
        [Some(100), Some(0), Some(20), Some(0), Some(120)],
        None,
    );
    let gemini = usage(
        "result.stats",
        [Some(200), Some(0), Some(40), None, Some(240)],
        None,
    );
    let opencode = |n: u64| {
        let f = |x: u64| Some(x * n);
        usage(
            "step_finish.part.tokens",
            [f(100), f(0), f(20), f(0), f(120)],
            Some(0.0),
        )
    };
    #[rustfmt::skip]
    let cases = [
        ("claude", "claude/2.1.332/a_json_stream.stdout.jsonl", claude(Some(0), Some(0.0008))),
        ("claude", "claude/2.1.207/a_json_stream.stdout.jsonl", claude(None, Some(0.001))),
        ("codex", "codex/0.171.0/a_json.stdout.jsonl", codex.clone()),
        ("codex", "codex/0.144.1/a_json.stdout.jsonl", codex),
        ("gemini", "gemini/0.61.0/a_json_stream.stdout.jsonl", gemini.clone()),
        ("gemini", "gemini/0.47.0/a_json_stream.stdout.jsonl", gemini),
        ("opencode", "opencode/1.18.33/a_json.stdout.jsonl", opencode(1)),
        // Two model calls, two steps: summed.
        ("opencode", "opencode/1.18.33/b_tool.stdout.jsonl", opencode(2)),
        // copilot's `result.usage` names no token or cost figure.
        ("copilot", "copilot/1.0.102/a_json.stdout.jsonl", Value::Null),
    ];
    let env = Env::new();
    for (i, (engine, cap, want)) in cases.iter().enumerate() {
        let unit = format!("u{i}");
        let (r, code) = replay(&env, engine, &unit, cap, &[]);
        assert_eq!(code, 0, "{cap}: {r}");
        assert_json_eq(&r["usage"], want);
        assert_json_eq(&env.marker(&unit)["usage"], want);
    }
}

#[test]
fn a_resumed_codex_run_is_its_thread_figure_less_the_previous_one() {
    let env = Env::new();
    let (first, _) = replay(&env, "codex", "r", "codex/0.171.0/a_json.stdout.jsonl", &[]);
    let id = first["sessionId"].as_str().unwrap().to_string();
    // c_resume's turn.completed says 200/40: the thread's total, not this run's.
    let (r, code) = replay(
        &env,
        "codex",
        "r",
        "codex/0.171.0/c_resume.stdout.jsonl",
        &["--session", &id],
    );
    assert_eq!(code, 0, "{r}");
    let once = usage(
        "turn.completed.usage",
        [Some(100), Some(0), Some(20), Some(0), Some(120)],
        None,
    );
    assert_json_eq(&r["usage"], &once);
    let m = env.marker("r");
    assert_json_eq(&m["usage"], &once);
    let thread = usage(
        "turn.completed.usage",
        [Some(200), Some(0), Some(40), Some(0), Some(240)],
        None,
    );
    assert_json_eq(&m["threadUsage"], &thread);
}

/// claude's `total_cost_usd` is the session's so far on a resume from
/// 2.1.332 (proven against the fake server's per-call figures in
/// tests/it/real_usage.rs): each resumed run costs its own 0.0008, not the
/// session's 0.0016 and 0.0024, so a budget never counts a session twice. In
/// 2.1.207 the cost was the run's own already.
#[test]
fn a_resumed_claude_run_costs_its_own_share_of_the_session() {
    let cost_of = |v: &Value| v["costUsd"].as_f64().unwrap();
    for (version, costs) in [("2.1.332", [0.0008; 3]), ("2.1.207", [0.001; 3])] {
        let env = Env::new();
        let cap = |case: &str| format!("claude/{version}/{case}.stdout.jsonl");
        let (first, _) = replay(&env, "claude", "r", &cap("a_json"), &[]);
        let id = first["sessionId"].as_str().unwrap().to_string();
        let mut runs = vec![first];
        for case in ["c_resume", "c_resume_stream"] {
            let (r, code) = replay(&env, "claude", "r", &cap(case), &["--session", &id]);
            assert_eq!(code, 0, "{version} {case}: {r}");
            runs.push(r);
        }
        for (r, want) in runs.iter().zip(costs) {
            let u = &r["usage"];
            assert_eq!(
                (&u["inputTokens"], &u["outputTokens"]),
                (&json!(100), &json!(20))
            );
            assert!((cost_of(u) - want).abs() < 1e-12, "{version}: {u}");
        }
        let m = env.marker("r");
        assert!(
            (cost_of(&m["usage"]) - costs[2]).abs() < 1e-12,
            "{version}: {m}"
        );
        if version == "2.1.332" {
            // The session so far, for the next resume: its tokens and claude's cost.
            let t = &m["threadUsage"];
            assert_eq!(
                (&t["inputTokens"], &t["outputTokens"]),
                (&json!(300), &json!(60))
            );
            assert!((cost_of(t) - 0.0024).abs() < 1e-12, "{t}");
        } else {
            assert!(m.get("threadUsage").is_none(), "{m}");
        }
    }
}

#[test]
fn the_human_end_line_shows_tokens_and_cost() {
    let env = Env::new();
    let cap = "claude/2.1.332/a_json_stream.stdout.jsonl";
    let mut c = env.command("claude", "h", "do it", "human", &[]);
    c.env("FAKE_STDOUT", fixture(cap))
        .env("FAKE_VERSION", "2.1.332");
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("usage: 120 tokens · $0.0008\n"), "{text}");
}

/// gemini's `--output-format json` document: per-model `tokens`, summed (vf
/// dispatches stream-json, so this is replayed through the projector).
#[test]
fn the_gemini_json_document_sums_its_models() {
    use vf::engine::{EngineId, OutputTransport};
    let version = vf::ground::version::Version::parse("0.61.0").unwrap();
    let mut p =
        vf::engine::frames::Projector::new(EngineId::Gemini, Some(&version), OutputTransport::Json);
    for line in read_text(&fixture("gemini/0.61.0/a_json.stdout.jsonl")).lines() {
        p.push_line(line.as_bytes());
    }
    p.finish();
    let (got, running) = p.tracker().usage();
    assert_eq!(running, vf::engine::usage::Running::None);
    let want = usage(
        "stats.models.tokens",
        [Some(200), Some(0), Some(40), Some(0), Some(240)],
        None,
    );
    assert_json_eq(&serde_json::to_value(got).unwrap(), &want);
}

#[test]
fn status_shows_usage_and_totals_a_filter() {
    let env = Env::new();
    replay(
        &env,
        "claude",
        "c",
        "claude/2.1.332/a_json_stream.stdout.jsonl",
        &[],
    );
    replay(&env, "codex", "x", "codex/0.171.0/a_json.stdout.jsonl", &[]);
    let rows = stdout_json(&env.run(&["status", "--json"]));
    let units: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["unit"].as_str().unwrap(),
                r["usage"]["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        units,
        [("c", "result.usage"), ("x", "turn.completed.usage")]
    );
    let table = String::from_utf8(env.run(&["status"]).stdout).unwrap();
    assert!(
        table.contains("USAGE") && table.contains("120 tokens · $0.0008"),
        "{table}"
    );

    let sum = usage(
        "sum",
        [Some(200), Some(0), Some(40), Some(0), Some(240)],
        Some(0.0008),
    );
    let total = |since: &str| {
        let out = env.run(&["status", "--json", "--total", "--since", since]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout_json(&out)
    };
    assert_json_eq(
        &total("1h"),
        &json!({"units": 2, "since": "1h", "usage": sum}),
    );
    let later = "2099-01-01T00:00:00Z";
    assert_json_eq(
        &total(later),
        &json!({"units": 0, "since": later, "usage": null}),
    );
    let bad = env.run(&["status", "--total", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("invalid --since"), "{}", stderr(&bad));
}

/// A plan of three independent codex units run one at a time (each uses 120
/// tokens), with `budget` as its `[budget]` table; `(result, exit code)`.
fn budget_plan(budget: &str, extra: &[&str]) -> (Value, i32) {
    let env = Env::new();
    let mut plan = format!("{budget}\n");
    for u in ["a", "b", "c"] {
        plan.push_str(&format!(
            "[[unit]]\nname = \"{u}\"\nengine = \"codex\"\nprompt = \"task\"\n\n"
        ));
    }
    let plan = env.write("plan.toml", plan);
    let mut c = env.cmd(&[
        "orchestrate",
        plan.to_str().unwrap(),
        "--jobs",
        "1",
        "--json",
    ]);
    c.args(extra)
        .env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_STDOUT", fixture("codex/0.171.0/a_json.stdout.jsonl"));
    let out = run_bounded(c, std::time::Duration::from_secs(60));
    // A refused plan prints nothing on stdout.
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (v, out.status.code().unwrap())
}

/// `(unit, state, reason)` of each unit.
fn states(result: &Value) -> Vec<(String, String, Value)> {
    let units = result["units"].as_array().unwrap();
    let row = |u: &Value| {
        let reason = u.get("reason").cloned().unwrap_or(Value::Null);
        (
            u["unit"].as_str().unwrap().into(),
            u["state"].as_str().unwrap().into(),
            reason,
        )
    };
    units.iter().map(row).collect()
}

#[test]
fn a_budget_stops_new_units_once_reached() {
    let row = |u: &str, s: &str, r: Value| (u.to_string(), s.to_string(), r);
    let budget = || Value::from("budget");
    // --max-tokens 200: a (120) and b (240 in all) run, then the budget is reached.
    let (r, code) = budget_plan("", &["--max-tokens", "200"]);
    assert_eq!(code, 1, "{r}");
    let want = [
        row("a", "done", Value::Null),
        row("b", "done", Value::Null),
        row("c", "notStarted", budget()),
    ];
    assert_eq!(states(&r), want);
    assert_eq!(r["units"][2]["error"], "budget reached: 240 of 200 tokens");
    assert_eq!(r["usage"]["totalTokens"], 240);
    // The plan's [budget], and a flag that overrides it.
    let (r, _) = budget_plan("[budget]\ntokens = 100", &[]);
    let want = [
        row("a", "done", Value::Null),
        row("b", "notStarted", budget()),
        row("c", "notStarted", budget()),
    ];
    assert_eq!(states(&r), want);
    let (r, code) = budget_plan("[budget]\ntokens = 100", &["--max-tokens", "1000"]);
    assert_eq!((code, r["ok"].clone()), (0, Value::Bool(true)), "{r}");
    // codex reports no cost: a cost budget is never reached by it.
    let (r, code) = budget_plan("[budget]\ncost_usd = 0.0001", &[]);
    assert_eq!((code, r["ok"].clone()), (0, Value::Bool(true)), "{r}");
    let (r, code) = budget_plan("[budget]\ncost_usd = -1", &[]);
    assert_eq!(code, 2, "{r}");
}

#[test]
fn dispatch_max_cost_is_claudes_own_cap_and_refused_elsewhere() {
    let env = Env::new();
    let args = env.path().join("args");
    let cap = "claude/2.1.332/a_json_stream.stdout.jsonl";
    let out = env.dispatch(
        "claude",
        "capped",
        &[
            fake_stdout(cap),
            ("FAKE_VERSION", "2.1.332".into()),
            ("FAKE_ARGS_LOG", args.display().to_string()),
        ],
        &["--max-cost", "0.5"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        read_text(&args).contains("\n--max-budget-usd\n0.5\n"),
        "{}",
        read_text(&args)
    );
    for (engine, usd, why) in [
        ("codex", "1", "codex has no spending cap"),
        ("claude", "0", "must be a positive number"),
    ] {
        let out = env.dispatch(engine, "refused", &[], &["--max-cost", usd]);
        assert_eq!(out.status.code(), Some(2), "{engine}");
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert!(env.marker_opt("refused").is_none());
    }
}

/// claude ending on its own `--max-budget-usd` (`result/error_max_budget_usd`,
/// the subtype named in its binary; here set on a genuine result frame) is a
/// failure with reason `budget`.
#[test]
fn claudes_budget_stop_is_reason_budget() {
    let env = Env::new();
    let text = read_text(&fixture("claude/2.1.332/a_json_stream.stdout.jsonl"));
    let stopped: String = text
        .lines()
        .map(|l| match l.contains("\"type\":\"result\"") {
            true => l.replace(
                "\"subtype\":\"success\"",
                "\"subtype\":\"error_max_budget_usd\"",
            ),
            false => l.to_string(),
        })
        .map(|l| l + "\n")
        .collect();
    assert_ne!(stopped, text);
    let cap = env.write("stopped.jsonl", stopped);
    let envs = [
        ("FAKE_STDOUT", cap.display().to_string()),
        ("FAKE_VERSION", "2.1.332".into()),
    ];
    let out = env.dispatch("claude", "b", &envs, &["--max-cost", "0.0001"]);
    let r = last_json(&out);
    assert_eq!(
        (r["state"].clone(), r["reason"].clone()),
        ("failed".into(), "budget".into()),
        "{r}"
    );
    assert_eq!(out.status.code(), Some(1));
}
