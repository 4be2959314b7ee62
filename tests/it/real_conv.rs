//! The real-engine tier of `vf conv`: a three-turn conversation of the real
//! claude and codex CLIs (every CLI in one sandbox HOME, `engine-sandbox.sh
//! all`) against the fake model server, whose request log proves what each
//! turn delivered. Skips cleanly without the CLIs, fails without them when
//! `VF_REAL_ENGINES=1` (see tests/it/real_engines.rs).
//!
//! Linux only: the sandbox is a network namespace (`unshare -n`).

use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common;
use crate::sandbox;
use common::root;
use sandbox::{available, memo_id, versions};

/// `vf ARGS` inside one sandbox of every CLI, with `home` kept across calls.
fn vf(home: &std::path::Path, args: &[&str]) -> Output {
    let out = Command::new(root().join("scripts/engine-sandbox.sh"))
        .args(["all", "--timeout", "240", "--home"])
        .arg(home)
        .arg("--workdir")
        .arg(home.join("project"))
        .arg("--")
        .arg(common::vf())
        .args(args)
        .env("VF_STATE_DIR", home.join("project/.vibeflow"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "vf {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn say(home: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["conv", "say", "rc"];
    all.extend_from_slice(args);
    all.push("--json");
    serde_json::from_slice(&vf(home, &all).stdout).unwrap()
}

/// The envelope of the latest VF-TURN/1 text in a request body, if any.
fn turn_envelope(body: &Value) -> Option<Value> {
    fn walk<'a>(v: &'a Value, found: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if s.contains("VF-TURN/1\n") => found.push(s),
            Value::Array(a) => a.iter().for_each(|x| walk(x, found)),
            Value::Object(o) => o.values().for_each(|x| walk(x, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(body, &mut found);
    let text = found.last()?;
    let after = text.rsplit("VF-TURN/1\n").next()?;
    serde_json::from_str(after.lines().next()?).ok()
}

/// Every logged request that carried a turn, as (path, envelope, whole body).
fn turns(home: &std::path::Path) -> Vec<(String, Value, Value)> {
    let log = std::fs::read_to_string(home.join("fake-model.jsonl")).unwrap_or_default();
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|e| {
            let env = turn_envelope(&e["body"])?;
            Some((
                e["path"].as_str().unwrap_or("").to_string(),
                env,
                e["body"].clone(),
            ))
        })
        .collect()
}

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["text"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn claude_and_codex_three_turns_through_the_model_server() {
    let (Some(cv), Some(xv)) = (versions("claude").pop(), versions("codex").pop()) else {
        return;
    };
    let every = ["codex", "claude", "gemini", "opencode", "copilot"];
    let all_there = every
        .iter()
        .all(|e| versions(e).first().is_some_and(|v| available(e, v)));
    if !(all_there && available("claude", &cv) && available("codex", &xv)) {
        return;
    }
    // The sandbox HOME, kept across the calls (the CLIs keep sessions there).
    let home = common::Env::new();
    let h = home.path();
    std::fs::create_dir_all(h.join("project")).unwrap();
    vf(
        h,
        &["conv", "new", "rc", "--with", "claude", "--with", "codex"],
    );
    let memo = memo_id();
    let q1 = format!("LAB-JSON First question. (LAB-MEMO-{memo})");
    let s1 = say(h, &["--all", "--prompt", &q1]);
    let claude_sid = s1["turns"][0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let claude_a1 = s1["turns"][0]["result"]["answer"]
        .as_str()
        .unwrap()
        .to_string();
    let codex_a1 = s1["turns"][1]["result"]["answer"]
        .as_str()
        .unwrap()
        .to_string();
    for t in s1["turns"].as_array().unwrap() {
        assert_eq!(
            (t["recorded"].as_bool(), t["readOnly"].as_str()),
            (Some(true), Some("enforced")),
            "{t}"
        );
    }
    let q2 = "LAB-JSON Second question, to claude only.";
    let s2 = say(h, &["--to", "claude", "--prompt", q2]);
    assert_eq!(s2["turns"][0]["deliveryMode"], "exact-delta", "{s2}");
    assert_eq!(s2["turns"][0]["result"]["sessionId"], claude_sid.as_str());
    let q3 = "LAB-JSON Third question, codex afresh.";
    let s3 = say(h, &["--to", "codex", "--fresh", "--prompt", q3]);
    assert_eq!(s3["turns"][0]["deliveryMode"], "full-history", "{s3}");

    let seen = turns(h);
    // Claude's turn 2: the resumed session's request, with only Q2 and codex's answer.
    let (_, e2, body2) = seen
        .iter()
        .find(|(_, e, _)| e["participant"] == "claude" && e["turn"] == 2)
        .expect("claude's turn 2 reached the server");
    assert_eq!(e2["delivery_mode"], "exact-delta");
    assert_eq!(
        (texts(&e2["messages"]), texts(&e2["peers"])),
        (vec![q2.to_string()], vec![codex_a1.clone()])
    );
    assert!(e2.get("replay").is_none(), "{e2}");
    // The same session: the request carries turn 1 (the memo) from the CLI's own history.
    assert!(
        body2.to_string().contains(&format!("LAB-MEMO-{memo}")),
        "turn 1 is not in the resumed request"
    );
    // Claude's own first answer is in its session, never in the envelope.
    assert!(!e2.to_string().contains(&claude_a1), "{e2}");
    // Codex with --fresh: the full history with the replay of its own answer.
    let (_, e3, _) = seen
        .iter()
        .find(|(_, e, _)| e["participant"] == "codex" && e["turn"] == 2)
        .expect("codex's fresh turn reached the server");
    assert_eq!(e3["delivery_mode"], "full-history");
    assert_eq!(
        texts(&e3["messages"]),
        [q1.clone(), q2.to_string(), q3.to_string()]
    );
    assert_eq!(
        texts(&e3["peers"]),
        [
            claude_a1,
            s2["turns"][0]["result"]["answer"]
                .as_str()
                .unwrap()
                .to_string()
        ]
    );
    assert_eq!(
        e3["replay"]["counts"],
        serde_json::json!({"source": 1, "replayed": 1, "truncated": 0})
    );
    assert_eq!(texts(&e3["replay"]["responses"]), [codex_a1]);
}
