//! `vf mcp` driven by the SDK's own client (`rmcp`) over stdio, with the
//! fake engine as codex (docs/MCP.md): the tools, their schemas against the
//! doc, bad inputs, depth, cancel, progress, `wait = false`, kill -9.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::common;
use common::*;

#[path = "mcp_server/faults.rs"]
mod faults;

const TOOL_CAPTURE: &str = "codex/0.171.0/b_tool.stdout.jsonl";

/// The client: keeps every progress notification with when it came.
#[derive(Clone, Default)]
pub struct Client {
    pub progress: Arc<Mutex<Vec<(Instant, ProgressNotificationParam)>>>,
}

impl ClientHandler for Client {
    async fn on_progress(&self, p: ProgressNotificationParam, _c: NotificationContext<RoleClient>) {
        self.progress.lock().unwrap().push((Instant::now(), p));
    }
}

pub type Conn = RunningService<RoleClient, Client>;

/// `vf mcp FLAGS` in `env`, codex being the fake with `envs`, as its own
/// process group (so a test can kill that group).
pub fn server_cmd(env: &Env, flags: &[&str], envs: &[(&str, String)]) -> tokio::process::Command {
    let mut args = vec!["mcp"];
    args.extend_from_slice(flags);
    let mut c = env.cmd(&args);
    c.env("VF_CODEX_BIN", env.fake_for("codex"));
    c.env("FAKE_STDOUT", fixture(TOOL_CAPTURE));
    for (k, v) in envs {
        c.env(k, v);
    }
    let mut c = tokio::process::Command::from(c);
    c.process_group(0).stderr(std::process::Stdio::null());
    c
}

pub async fn connect(cmd: tokio::process::Command) -> (Conn, u32) {
    let t = TokioChildProcess::new(cmd).unwrap();
    let pid = t.id().unwrap();
    let conn = Client::default().serve(t).await.unwrap();
    (conn, pid)
}

pub async fn start(env: &Env, flags: &[&str], envs: &[(&str, String)]) -> Conn {
    connect(server_cmd(env, flags, envs)).await.0
}

pub fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

pub async fn call(c: &Conn, tool: &str, a: Value) -> CallToolResult {
    let p = CallToolRequestParams::new(tool.to_string()).with_arguments(args(a));
    tokio::time::timeout(Duration::from_secs(60), c.peer().call_tool(p))
        .await
        .expect("the call ends")
        .unwrap()
}

pub fn content(r: &CallToolResult) -> Value {
    r.structured_content.clone().expect("structured content")
}

/// A tool error's `{error, reason, exitCode}`, asserted whole in shape.
pub fn tool_error(r: &CallToolResult) -> Value {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let v = content(r);
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert!(v["exitCode"].is_i64(), "{v}");
    v
}

/// The JSON Schema under `### \`tool\`` in docs/MCP.md.
fn doc_schema(doc: &str, tool: &str) -> Value {
    let head = format!("### `{tool}`");
    let at = doc
        .find(&head)
        .unwrap_or_else(|| panic!("docs/MCP.md has no {head}"));
    let rest = &doc[at..];
    let start = rest.find("```json\n").unwrap() + 8;
    let end = start + rest[start..].find("```").unwrap();
    serde_json::from_str(&rest[start..end]).unwrap()
}

#[tokio::test]
async fn lists_every_tool_with_the_schema_the_doc_shows() {
    let env = Env::new();
    let c = start(&env, &["--allow-engines", "codex"], &[]).await;
    let tools = c.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "dispatch",
            "resume",
            "status",
            "result",
            "events",
            "cancel",
            "orchestrate",
            "report"
        ]
    );
    let doc = read_text(&root().join("docs/MCP.md"));
    for t in &tools {
        let schema = Value::Object((*t.input_schema).clone());
        assert_eq!(schema["additionalProperties"], json!(false), "{}", t.name);
        assert_eq!(
            doc_schema(&doc, &t.name),
            schema,
            "docs/MCP.md's schema of {}",
            t.name
        );
    }
    assert!(
        !env.state().exists(),
        "listing the tools wrote the state dir"
    );
    c.cancel().await.unwrap();
}

/// The event rows `vf dispatch --output jsonl` prints for the capture.
fn jsonl_rows(env: &Env) -> usize {
    let out = env
        .live("codex", "plain", "hi", &[])
        .env("FAKE_STDOUT", fixture(TOOL_CAPTURE))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).lines().count() - 1
}

#[tokio::test]
async fn a_waited_dispatch_sends_rate_limited_progress_then_its_result() {
    let env = Env::new();
    let rows = jsonl_rows(&env);
    let c = start(
        &env,
        &["--allow-engines", "codex"],
        &[("FAKE_DELAY", "0.05".into())],
    )
    .await;
    let p = CallToolRequestParams::new("dispatch").with_arguments(args(
        json!({"engine": "codex", "prompt": "say hello", "unit": "u1"}),
    ));
    let req = ClientRequest::CallToolRequest(Request::new(p));
    let asked = Instant::now();
    let h = c
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(60), h.await_response())
        .await
        .unwrap()
        .unwrap();
    let call_took = asked.elapsed();
    let r: CallToolResult = match resp {
        rmcp::model::ServerResult::CallToolResult(r) => r,
        other => panic!("{other:?}"),
    };
    let v = content(&r);
    assert_eq!(
        (v["unit"].as_str(), v["state"].as_str()),
        (Some("u1"), Some("done")),
        "{v}"
    );
    assert!(v.get("kind").is_none(), "{v}");
    assert_eq!(env.marker("u1")["state"], "done");
    let seen = c.service().progress.lock().unwrap().clone();
    // The last row is always sent: the count reaches every event row.
    assert_eq!(
        seen.last().map(|(_, p)| p.progress as usize),
        Some(rows),
        "{seen:?}"
    );
    // Rows 50 ms apart are coalesced: fewer notifications than rows, and
    // no more than one per 250 ms of the call (the server sends them all
    // within it), plus the last, sent as the unit ends. Counted against the
    // call's own length, never against delivery gaps, which load can squeeze.
    assert!(
        seen.len() < rows,
        "{} notifications for {rows} rows",
        seen.len()
    );
    let most = call_took.as_millis() as usize / 250 + 2;
    assert!(
        seen.len() <= most,
        "{} notifications in {call_took:?}: {seen:?}",
        seen.len()
    );
    assert!(
        seen.iter()
            .all(|(_, p)| p.message.as_deref().is_some_and(|m| !m.is_empty()))
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_dispatch_that_does_not_wait_is_followed_by_events_result_and_status() {
    let env = Env::new();
    let c = start(
        &env,
        &["--allow-engines", "codex"],
        &[("FAKE_DELAY", "0.1".into())],
    )
    .await;
    let r = call(
        &c,
        "dispatch",
        json!({"engine": "codex", "prompt": "hi", "wait": false}),
    )
    .await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    let v = content(&r);
    assert_eq!(v["state"], "running", "{v}");
    let unit = v["unit"].as_str().unwrap().to_string();
    assert!(unit.starts_with("codex-"), "{unit}");
    let done = |m: Option<Value>| m.is_some_and(|m| m["state"] == "done");
    let u = unit.clone();
    let e = env.state();
    tokio::task::spawn_blocking(move || {
        wait_for("the unit to end", Duration::from_secs(30), || {
            done(
                std::fs::read(e.join("units").join(&u).join("marker.json"))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok()),
            )
        })
    })
    .await
    .unwrap();
    let all = content(&call(&c, "events", json!({"unit": unit})).await);
    let n = all["events"].as_array().unwrap().len();
    assert!(n > 3, "{all}");
    assert_eq!(all["next"], json!(n));
    let tail = content(&call(&c, "events", json!({"unit": unit, "after": 2, "limit": 2})).await);
    assert_eq!(
        tail["events"],
        json!(all["events"].as_array().unwrap()[2..4])
    );
    assert_eq!(tail["next"], json!(4));
    let res = content(&call(&c, "result", json!({"unit": unit})).await);
    assert_eq!(
        (res["unit"].as_str(), res["state"].as_str()),
        (Some(&*unit), Some("done")),
        "{res}"
    );
    // The answer the engine gave, as vf recorded it.
    assert!(
        res["answer"]
            .as_str()
            .is_some_and(|a| a.starts_with("The command printed: hello")),
        "{res}"
    );
    let st = content(&call(&c, "status", json!({})).await);
    assert!(st.to_string().contains(&unit), "{st}");
    let rep = content(&call(&c, "report", json!({})).await);
    assert!(
        std::path::Path::new(rep["path"].as_str().unwrap()).is_file(),
        "{rep}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_inputs_are_tool_errors_and_write_nothing() {
    let env = Env::new();
    env.write(
        "outside/plan.toml",
        "[[unit]]\nname='a'\nengine='codex'\nprompt='x'\n",
    );
    let inside = env.path().join("ws");
    std::fs::create_dir_all(&inside).unwrap();
    let ws = inside.to_str().unwrap();
    let flags = [
        "--allow-engines",
        "codex",
        "--timeout",
        "60",
        "--read-only",
        "--cwd",
        ws,
    ];
    let c = start(&env, &flags, &[]).await;
    let d = |extra: Value| {
        let mut a = json!({"engine": "codex", "prompt": "hi"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let outside = env.path().join("outside/plan.toml");
    let cases = [
        ("dispatch", d(json!({"colour": "red"})), "colour"),
        ("dispatch", d(json!({"wait": "yes"})), "wait"),
        ("dispatch", d(json!({"unit": "../escape"})), "unit name"),
        ("dispatch", d(json!({"engine": "claude"})), "not allowed"),
        (
            "dispatch",
            d(json!({"skip_permissions": true})),
            "--allow-skip-permissions",
        ),
        ("dispatch", d(json!({"timeout": 120})), "--timeout 60"),
        ("dispatch", d(json!({"read_only": false})), "--read-only"),
        ("status", json!({"unit": "a/b"}), "unit name"),
        (
            "orchestrate",
            json!({"plan_path": outside.to_str().unwrap()}),
            "workspace",
        ),
        (
            "orchestrate",
            json!({"plan_path": "../outside/plan.toml"}),
            "workspace",
        ),
        ("nope", json!({}), "nope"),
    ];
    for (tool, a, says) in cases {
        let e = tool_error(&call(&c, tool, a.clone()).await);
        assert_eq!(
            (e["reason"].as_str(), e["exitCode"].as_i64()),
            (Some("invalid"), Some(2)),
            "{tool} {a}: {e}"
        );
        assert!(
            e["error"].as_str().unwrap().contains(says),
            "{tool} {a}: {e}"
        );
    }
    assert!(!env.state().exists(), "a refused call wrote the state dir");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_deeper_than_the_limit_is_refused_and_a_child_is_named_after_its_parent() {
    let env = Env::new();
    let deep = [
        ("VF_PARENT_UNIT", "x".to_string()),
        ("VF_DEPTH", "2".to_string()),
    ];
    let c = start(&env, &["--allow-engines", "codex"], &deep).await;
    let e = tool_error(&call(&c, "dispatch", json!({"engine": "codex", "prompt": "hi"})).await);
    assert_eq!(e["reason"], "invalid", "{e}");
    assert!(
        e["error"].as_str().unwrap().contains("--max-depth 2"),
        "{e}"
    );
    assert!(!env.state().exists());
    c.cancel().await.unwrap();
    let one = [
        ("VF_PARENT_UNIT", "lead".to_string()),
        ("VF_DEPTH", "1".to_string()),
    ];
    let c = start(&env, &["--allow-engines", "codex"], &one).await;
    let v = content(&call(&c, "dispatch", json!({"engine": "codex", "prompt": "hi"})).await);
    assert_eq!(
        (v["unit"].as_str(), v["state"].as_str()),
        (Some("lead.1"), Some("done")),
        "{v}"
    );
    // The child's marker records its parent, one level deeper.
    let m = env.marker("lead.1");
    assert_eq!(
        (&m["parent"], &m["depth"]),
        (&json!("lead"), &json!(2)),
        "{m}"
    );
    assert_eq!(
        (&v["parent"], &v["depth"]),
        (&json!("lead"), &json!(2)),
        "{v}"
    );
    c.cancel().await.unwrap();
}

const CLAUDE_CAPTURE: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";

#[tokio::test]
async fn a_child_is_refused_once_its_parent_has_spent_its_cap_on_children() {
    let env = Env::new();
    let claude = [
        (
            "VF_CLAUDE_BIN",
            env.fake_for("claude").display().to_string(),
        ),
        ("FAKE_STDOUT", fixture(CLAUDE_CAPTURE).display().to_string()),
        ("FAKE_VERSION", "2.1.332".to_string()),
    ];
    // The parent: a claude unit capped at $0.001 (each fake claude run
    // reports $0.0008).
    let mut lead = env.cmd(&[
        "dispatch",
        "--engine",
        "claude",
        "--unit",
        "lead",
        "--max-cost",
        "0.001",
        "--prompt",
        "lead",
        "--output",
        "json",
    ]);
    lead.envs(claude.iter().map(|(k, v)| (k, v)));
    let out = run_bounded(lead, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut envs = claude.to_vec();
    envs.push(("VF_PARENT_UNIT", "lead".into()));
    envs.push(("VF_DEPTH", "1".into()));
    let c = start(&env, &["--allow-engines", "claude"], &envs).await;
    let ask = json!({"engine": "claude", "prompt": "hi", "max_cost": 0.5});
    // $0.001 left, then $0.0002: both children run.
    for child in ["lead.1", "lead.2"] {
        let v = content(&call(&c, "dispatch", ask.clone()).await);
        assert_eq!(
            (v["unit"].as_str(), v["state"].as_str()),
            (Some(child), Some("done")),
            "{v}"
        );
    }
    // $0.0016 spent below a $0.001 cap: refused, nothing written.
    let e = tool_error(&call(&c, "dispatch", ask).await);
    assert_eq!(e["reason"], "budget", "{e}");
    assert!(!env.state().join("units/lead.3").exists());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn orchestrate_runs_a_plan_inside_the_workspace_and_checks_its_engines() {
    let env = Env::new();
    let plan = "[[unit]]\nname = \"p1\"\nengine = \"codex\"\nprompt = \"hi\"\n";
    env.write("plan.toml", plan);
    env.write("bad.toml", plan.replace("codex", "claude"));
    let c = start(&env, &["--allow-engines", "codex"], &[]).await;
    let r = call(&c, "orchestrate", json!({"plan_path": "plan.toml"})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(env.marker("p1")["state"], "done");
    let e = tool_error(&call(&c, "orchestrate", json!({"plan_path": "bad.toml"})).await);
    assert!(e["error"].as_str().unwrap().contains("not allowed"), "{e}");
    c.cancel().await.unwrap();
}
