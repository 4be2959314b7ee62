//! Hostile and unusual agents (issue 39): `vf doctor -e acp` against an agent
//! that floods stderr or dies on it, usage in every shape ACP agents report
//! it, and answers far over the bound vf keeps in memory, for ACP agents and
//! the other engines alike.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::*;

/// The fake agent's command line in `mode`.
fn agent(mode: &str) -> String {
    let script = root().join("tests/support/fake_acp_agent.py");
    format!("python3 {} {mode}", script.display())
}

fn run(c: Command) -> Output {
    run_bounded(c, Duration::from_secs(90))
}

fn doctor(env: &Env, line: &str) -> (Output, Value) {
    let mut c = env.cmd(&["doctor", "-e", "acp", "--json", "--timeout", "20"]);
    c.env("VF_ACP_CMD", line);
    let out = run(c);
    let report = stdout_json(&out)[0].clone();
    (out, report)
}

/// An agent that writes more than a pipe holds to stderr before it answers
/// `initialize` is read all along: it answers, and is ready, at once.
#[test]
fn doctor_reads_an_agents_stderr_while_it_waits() {
    let env = Env::new();
    let began = Instant::now();
    let (out, r) = doctor(&env, &agent("noisy"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r["verdict"], "ready", "{r}");
    assert_eq!(r["acp"]["agent"]["name"], "fake-acp", "{r}");
    // Well before the 20 s handshake timeout a blocked agent would reach.
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "{:?}",
        began.elapsed()
    );
}

/// A failing agent is named by its program, not by the shell that runs its
/// command line, and its last words on stderr are in the reason.
#[test]
fn doctor_names_the_agent_and_says_what_it_wrote_on_stderr() {
    let env = Env::new();
    let (_, r) = doctor(&env, &agent("stderr-exit"));
    assert_eq!(r["verdict"], "degraded", "{r}");
    assert_json_eq(
        &r["reasons"],
        &json!([
            "python3: does not speak ACP: it ended without answering initialize \
                 (its stderr ends: fatal: no API key)"
        ]),
    );
}

// ---- usage in every shape ---------------------------------------------------

/// `vf dispatch --engine acp` against the fake agent in `mode`, with `env`
/// added; its result.
fn dispatch(env: &Env, unit: &str, mode: &str, vars: &[(&str, &str)]) -> (Output, Value) {
    let line = agent(mode);
    let mut c = env.cmd(&[
        "dispatch", "--engine", "acp", "--acp", &line, "--unit", unit, "--prompt", "the task",
        "--output", "json",
    ]);
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = run(c);
    let r = last_json(&out);
    (out, r)
}

fn usage(
    input: Option<u64>,
    output: Option<u64>,
    total: Option<u64>,
    cost: Option<f64>,
    source: &str,
) -> Value {
    json!({"inputTokens": input, "cachedInputTokens": null, "outputTokens": output,
           "reasoningTokens": null, "totalTokens": total, "costUsd": cost, "source": source})
}

/// Each place an ACP agent reports usage is read, the one used is named, the
/// same figures are never counted twice, and null means none was there.
#[test]
fn usage_is_read_in_every_shape_and_counted_once() {
    let env = Env::new();
    let cases: &[(&str, Value)] = &[
        ("", Value::Null),
        (
            "result",
            usage(Some(100), Some(20), Some(120), None, "session/prompt.usage"),
        ),
        (
            "quota",
            usage(
                Some(200),
                Some(40),
                Some(240),
                None,
                "session/prompt._meta.quota.token_count",
            ),
        ),
        // On each of three chunks: once, not three times.
        (
            "meta",
            usage(
                Some(10),
                Some(4),
                Some(14),
                None,
                "session/update._meta.usage",
            ),
        ),
        (
            "meta-quota",
            usage(
                Some(30),
                Some(6),
                Some(36),
                None,
                "session/update._meta.quota.token_count",
            ),
        ),
        // The latest update's figures, not their sum.
        (
            "meta,meta-quota",
            usage(
                Some(30),
                Some(6),
                Some(36),
                None,
                "session/update._meta.quota.token_count",
            ),
        ),
        // The result's own figures win over the updates'.
        (
            "meta,result",
            usage(Some(100), Some(20), Some(120), None, "session/prompt.usage"),
        ),
        // usage_update: the session's cost, its latest; its `used` is no token count.
        (
            "update",
            usage(None, None, None, Some(0.045), "session/update.usage_update"),
        ),
        (
            "result,update",
            usage(
                Some(100),
                Some(20),
                Some(120),
                Some(0.045),
                "session/prompt.usage+session/update.usage_update",
            ),
        ),
    ];
    for (n, (shapes, want)) in cases.iter().enumerate() {
        let (out, r) = dispatch(
            &env,
            &format!("u{n}"),
            "usage",
            &[("FAKE_ACP_USAGE", shapes)],
        );
        assert_eq!(out.status.code(), Some(0), "{shapes}: {}", stderr(&out));
        assert_json_eq(&r["usage"], want);
        assert_eq!(r["summary"], json!({}), "{shapes}: {r}");
    }
}

// ---- the answer's bound -------------------------------------------------------

const ANSWER_MAX: usize = 4 << 20;

/// What every engine's result must show for a 40 MiB answer: its end (with
/// the summary) within the bound, and a warning naming the cut.
fn assert_cut(out: &Output, r: &Value, log: &std::path::Path) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let answer = r["answer"].as_str().unwrap();
    assert!(answer.len() <= ANSWER_MAX, "{} bytes", answer.len());
    assert!(answer.len() > ANSWER_MAX - 70_000, "{} bytes", answer.len());
    let end = &answer[answer.len().saturating_sub(40)..];
    assert!(
        answer.trim_end().ends_with("```json\n{\"flood\": 40}\n```"),
        "{end}"
    );
    assert_eq!(
        r["summary"],
        json!({"flood": 40}),
        "the summary is found in what is kept"
    );
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("the answer was cut: vf keeps its last 4 MiB"),
        "{warnings}"
    );
    // The whole of it is in the raw log.
    let logged = std::fs::metadata(log).unwrap().len();
    assert!(logged > 40 << 20, "{logged}");
}

#[test]
fn an_acp_answer_over_the_bound_keeps_its_end_and_says_so() {
    let env = Env::new();
    let (out, r) = dispatch(&env, "flood", "flood", &[]);
    assert_cut(
        &out,
        &r,
        &env.state().join("units/flood/attempt-1.stdout.log"),
    );
}

fn flood(env: &Env, unit: &str, mode: &str, extra: &[&str]) -> (Output, Value) {
    let script = root().join("tests/support/flood.py");
    let line = format!("python3 {} {mode} 40", script.display());
    let mut args = vec![
        "dispatch", "--engine", "bridge", "--bridge", &line, "--unit", unit, "--prompt", "p",
        "--output", "json",
    ];
    args.extend_from_slice(extra);
    let out = run(env.cmd(&args));
    let r = last_json(&out);
    (out, r)
}

#[test]
fn a_bridges_text_answer_over_the_bound_keeps_its_end_and_says_so() {
    let env = Env::new();
    let (out, r) = flood(&env, "text", "text", &[]);
    assert_cut(
        &out,
        &r,
        &env.state().join("units/text/attempt-1.stdout.log"),
    );
}

/// The frames path of the CLI engines: one message streamed as gemini's
/// deltas, far over the bound (shown as several rows, answered as one).
#[test]
fn a_streamed_json_answer_over_the_bound_keeps_its_end_and_says_so() {
    let env = Env::new();
    let (out, r) = flood(&env, "deltas", "gemini", &["--bridge-output", "gemini"]);
    assert_cut(
        &out,
        &r,
        &env.state().join("units/deltas/attempt-1.stdout.log"),
    );
}
