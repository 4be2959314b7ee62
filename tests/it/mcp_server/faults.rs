//! `vf mcp` under faults: a cancelled call, the `cancel` tool, stdin's EOF,
//! kill -9 of the server alone and of its whole group, garbage on stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::*;

/// Waits, off the runtime, for the unit's marker to satisfy `f`.
async fn marker_until(env: &Env, unit: &str, what: &str, f: fn(&Value) -> bool) -> Value {
    let p = env.marker_path(unit);
    let what = what.to_string();
    tokio::task::spawn_blocking(move || {
        let mut seen = Value::Null;
        wait_for(&what, Duration::from_secs(30), || {
            let m: Option<Value> = std::fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            m.is_some_and(|m| {
                let ok = f(&m);
                seen = m;
                ok
            })
        });
        seen
    })
    .await
    .unwrap()
}

fn running_with_id(m: &Value) -> bool {
    m["state"] == "running" && m["engineSessionId"].is_string()
}

/// `vf resume UNIT` with the fake answering at once: it ends done.
fn resume_works(env: &Env, unit: &str) {
    let mut c = env.cmd(&["resume", unit, "--output", "json"]);
    c.env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_STDOUT", fixture(TOOL_CAPTURE));
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["state"], "done");
}

fn slow() -> [(&'static str, String); 1] {
    [("FAKE_DELAY", "3".to_string())]
}

#[tokio::test]
async fn a_cancelled_call_ends_its_unit_interrupted_and_resume_continues_it() {
    let env = Env::new();
    let c = start(&env, &["--allow-engines", "codex"], &slow()).await;
    let p = CallToolRequestParams::new("dispatch").with_arguments(args(
        json!({"engine": "codex", "prompt": "hi", "unit": "slow"}),
    ));
    let req = ClientRequest::CallToolRequest(Request::new(p));
    let h = c
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    marker_until(&env, "slow", "a running marker", running_with_id).await;
    h.cancel(Some("enough".into())).await.unwrap();
    let m = marker_until(&env, "slow", "the unit to end", |m| m["state"] != "running").await;
    assert_eq!(
        (m["state"].as_str(), m["reason"].as_str()),
        (Some("failed"), Some("interrupted")),
        "{m}"
    );
    // The server is still there for the next call.
    assert!(call(&c, "status", json!({"unit": "slow"})).await.is_error != Some(true));
    c.cancel().await.unwrap();
    resume_works(&env, "slow");
}

#[tokio::test]
async fn the_cancel_tool_ends_a_unit_that_runs_in_the_background() {
    let env = Env::new();
    let c = start(&env, &["--allow-engines", "codex"], &slow()).await;
    let a = json!({"engine": "codex", "prompt": "hi", "unit": "bg", "wait": false});
    assert_eq!(content(&call(&c, "dispatch", a).await)["state"], "running");
    marker_until(&env, "bg", "a running marker", running_with_id).await;
    let r = content(&call(&c, "cancel", json!({"unit": "bg"})).await);
    assert_eq!(r["signalled"], true, "{r}");
    let m = marker_until(&env, "bg", "the unit to end", |m| m["state"] != "running").await;
    assert_eq!(
        (m["state"].as_str(), m["reason"].as_str()),
        (Some("failed"), Some("interrupted")),
        "{m}"
    );
    // The resume tool continues it, its prompt from a private file removed after.
    env.write("fake.env", "FAKE_DELAY=0\n");
    let again = content(&call(&c, "resume", json!({"unit": "bg", "prompt": "go on"})).await);
    assert_eq!(
        (
            again["state"].as_str(),
            env.marker("bg")["attempts"].as_i64()
        ),
        (Some("done"), Some(2)),
        "{again}"
    );
    let left: Vec<_> = std::fs::read_dir(env.state().join("mcp"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "the prompt's private file stays: {left:?}");
    // A unit that does not exist, and one that is not running.
    let e = tool_error(&call(&c, "cancel", json!({"unit": "other"})).await);
    assert_eq!(e["reason"], "invalid", "{e}");
    let e = tool_error(&call(&c, "cancel", json!({"unit": "bg"})).await);
    assert!(e["error"].as_str().unwrap().contains("not running"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_cancel_tool_ends_a_unit_another_vf_runs_once_that_vf_is_proven() {
    let env = Env::new();
    // `vf dispatch` in a terminal of its own, slow.
    let mut d = env.cmd(&[
        "dispatch", "--engine", "codex", "--unit", "term", "--prompt", "hi",
    ]);
    d.env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_STDOUT", fixture(TOOL_CAPTURE))
        .env("FAKE_DELAY", "30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut term = d.spawn().unwrap();
    let m = marker_until(&env, "term", "a running marker", running_with_id).await;
    let c = start(&env, &["--allow-engines", "codex"], &[]).await;
    let r = content(&call(&c, "cancel", json!({"unit": "term"})).await);
    assert_eq!(
        (&r["signalled"], &r["runBy"], &r["pid"]),
        (
            &json!(true),
            &json!("another vf"),
            &m["owner"]["supervisor"]["pid"]
        ),
        "{r}"
    );
    let m = marker_until(&env, "term", "the unit to end", |m| m["state"] != "running").await;
    assert_eq!(m["reason"], "interrupted", "{m}");
    let st = tokio::task::spawn_blocking(move || term.wait().unwrap())
        .await
        .unwrap();
    assert!(!st.success());
    // A marker that says running but whose vf cannot be its own is never signalled.
    let mut fake = env.marker("term");
    fake["state"] = json!("running");
    fake["owner"]["supervisor"]["startTime"] = json!(1);
    fake["owner"]["supervisor"]["pid"] = json!(std::process::id());
    std::fs::write(env.marker_path("term"), fake.to_string()).unwrap();
    let e = tool_error(&call(&c, "cancel", json!({"unit": "term"})).await);
    assert!(e["error"].as_str().unwrap().contains("is gone"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_kill_9_of_the_server_alone_leaves_its_unit_running_to_the_end() {
    let env = Env::new();
    let (c, pid) = connect(server_cmd(
        &env,
        &["--allow-engines", "codex"],
        &[("FAKE_DELAY", "0.5".into())],
    ))
    .await;
    let p = CallToolRequestParams::new("dispatch").with_arguments(args(
        json!({"engine": "codex", "prompt": "hi", "unit": "k"}),
    ));
    let req = ClientRequest::CallToolRequest(Request::new(p));
    let _h = c
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    marker_until(&env, "k", "a running marker", running_with_id).await;
    assert!(signal(pid as i32, libc::SIGKILL));
    let m = marker_until(&env, "k", "the unit to end", |m| m["state"] != "running").await;
    assert_eq!(m["state"], "done", "{m}");
    drop(c);
}

#[tokio::test]
async fn a_kill_9_of_the_servers_group_leaves_a_running_marker_resume_takes_over() {
    let env = Env::new();
    let (c, pid) = connect(server_cmd(&env, &["--allow-engines", "codex"], &slow())).await;
    let p = CallToolRequestParams::new("dispatch").with_arguments(args(
        json!({"engine": "codex", "prompt": "hi", "unit": "g"}),
    ));
    let req = ClientRequest::CallToolRequest(Request::new(p));
    let _h = c
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    marker_until(&env, "g", "a running marker", running_with_id).await;
    assert!(signal(-(pid as i32), libc::SIGKILL));
    tokio::task::spawn_blocking(move || {
        wait_for("the server's group to die", Duration::from_secs(20), || {
            !group_alive(pid as i32)
        })
    })
    .await
    .unwrap();
    let m = env.marker("g");
    assert_eq!(m["state"], "running", "{m}");
    drop(c);
    resume_works(&env, "g");
}

#[test]
fn garbage_on_stdin_never_ends_the_server() {
    let env = Env::new();
    let (mut child, mut input, mut out) = raw_server(&env, &[]);
    let lines: [String; 5] = [
        "garbage \u{1b}[31m not json".into(),
        "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"tools/call\", \"params\": 5}".into(),
        "[1, 2, {".into(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "status", "arguments": {"unit": 42}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
    ];
    for l in lines {
        writeln!(input, "{l}").unwrap();
    }
    input.flush().unwrap();
    let mut answers = std::collections::BTreeMap::new();
    let mut line = String::new();
    while !(answers.contains_key(&2) && answers.contains_key(&9)) {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the server ended: {answers:?}"
        );
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && let Some(id) = v["id"].as_i64()
        {
            answers.insert(id, v);
        }
    }
    assert_eq!(answers[&9]["result"]["isError"], true, "{answers:?}");
    assert_eq!(answers[&2]["result"]["tools"].as_array().unwrap().len(), 8);
    drop(input);
    assert_eq!(
        wait_exit(&mut child).code(),
        Some(0),
        "stdin's EOF ends the server cleanly"
    );
}

/// `vf mcp` with raw stdio: its stdin, its stdout's lines.
fn raw_server(
    env: &Env,
    envs: &[(&str, &str)],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let mut c = env.cmd(&["mcp", "--allow-engines", "codex"]);
    c.env("VF_CODEX_BIN", env.fake_for("codex"))
        .env("FAKE_STDOUT", fixture(TOOL_CAPTURE));
    for (k, v) in envs {
        c.env(k, v);
    }
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(input, "{init}").unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    (child, input, out)
}

#[test]
fn at_stdins_eof_a_waited_unit_is_interrupted_and_one_not_waited_for_runs_on() {
    let env = Env::new();
    let (mut child, mut input, _out) = raw_server(&env, &[("FAKE_DELAY", "0.5")]);
    for (id, unit, wait) in [(2, "bg", false), (3, "fg", true)] {
        let a = json!({"engine": "codex", "prompt": "hi", "unit": unit, "wait": wait});
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "dispatch", "arguments": a}});
        writeln!(input, "{req}").unwrap();
    }
    input.flush().unwrap();
    for u in ["fg", "bg"] {
        wait_for("a running marker", Duration::from_secs(20), || {
            env.marker_opt(u).is_some_and(|m| running_with_id(&m))
        });
    }
    drop(input);
    let fg = {
        wait_for("fg to end", Duration::from_secs(30), || {
            env.marker_opt("fg")
                .is_some_and(|m| m["state"] != "running")
        });
        env.marker("fg")
    };
    assert_eq!(fg["reason"], "interrupted", "{fg}");
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    wait_for("bg to end", Duration::from_secs(30), || {
        env.marker_opt("bg")
            .is_some_and(|m| m["state"] != "running")
    });
    assert_eq!(env.marker("bg")["state"], "done");
}
