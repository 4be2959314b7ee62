//! The ACP engine through the whole runtime (issue 26): `vf dispatch
//! --engine acp` against the fake agent (`tests/support/fake_acp_agent.py`):
//! events with rawRanges, the result, the marker, `vf status`, `vf replay`
//! of the raw log, the permission policy, resume by `session/load`, SIGTERM
//! as `session/cancel`, presets, `VF_ACP_CMD`, the plan key.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

/// The fake agent's command line in `mode`, with `flags`.
fn agent(mode: &str, flags: &str) -> String {
    let script = root().join("tests/support/fake_acp_agent.py");
    format!("python3 {} {mode} {flags}", script.display())
}

/// `vf dispatch --engine acp --acp LINE --unit UNIT --prompt P`, then `extra`.
fn acp(env: &Env, unit: &str, line: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "dispatch", "--engine", "acp", "--acp", line, "--unit", unit, "--prompt", "the task",
    ];
    args.extend_from_slice(extra);
    env.cmd(&args)
}

fn run(c: Command) -> Output {
    run_bounded(c, Duration::from_secs(60))
}

fn log_of(env: &Env, unit: &str, attempt: u32) -> String {
    read_text(
        &env.state()
            .join(format!("units/{unit}/attempt-{attempt}.stdout.log")),
    )
}

#[test]
fn an_acp_run_yields_events_result_marker_status_and_replay() {
    let env = Env::new();
    let out = run(acp(&env, "a1", &agent("json", ""), &["--output", "jsonl"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", stderr(&out));
    let rows = jsonl(&out.stdout);
    let r = rows.last().unwrap().clone();
    assert_eq!(r["kind"], "dispatch.result", "{r}");
    assert_eq!(
        (&r["engine"], &r["state"], &r["sessionId"], &r["reason"]),
        (
            &json!("acp"),
            &json!("done"),
            &json!("sess-1"),
            &Value::Null
        )
    );
    assert_eq!(r["summary"], json!({"confidence": 1}));
    // An agent command has no --version: its `agentInfo.version` is the one.
    assert_eq!(r["engineVersion"], "1.0.0");
    assert_eq!(r["usage"]["totalTokens"], 18);
    assert_eq!(r["usage"]["source"], "session/prompt.usage");
    let events: Vec<&Value> = rows
        .iter()
        .filter(|e| e["kind"] != "dispatch.result")
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["rawRange"]["start"].as_u64() >= Some(1)),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| e["kind"] == "message.taskAgent"),
        "{events:?}"
    );
    // The raw log: the tagged JSON-RPC lines of both directions.
    let log = log_of(&env, "a1", 1);
    let dirs: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["dir"].to_string())
        .collect();
    assert!(
        dirs.contains(&"\"out\"".into()) && dirs.contains(&"\"in\"".into()),
        "{log}"
    );
    for e in &events {
        let end = e["rawRange"]["end"].as_u64().unwrap() as usize;
        assert!(end <= log.lines().count(), "{e} past the log");
    }
    // The marker, `vf status`, `vf replay` of the log: the same events.
    let m = env.marker("a1");
    assert_eq!(
        (&m["state"], &m["engineSessionId"], &m["command"]["line"]),
        (&json!("done"), &json!("sess-1"), &json!(agent("json", "")))
    );
    let status = env.run(&["status", "a1"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("acp") && text.contains("sess-1"), "{text}");
    let path = env.state().join("units/a1/attempt-1.stdout.log");
    let replay = env.run(&[
        "replay",
        "--cli",
        "acp",
        "--output",
        "jsonl",
        path.to_str().unwrap(),
    ]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let replayed = jsonl(&replay.stdout);
    let live: Vec<Value> = events.into_iter().cloned().collect();
    assert_eq!(replayed, live);
}

/// The stall timer counts the agent's lines, not only the events they make:
/// a message streamed in chunks shows as one row at its end, yet the agent
/// was writing all along (3.2 s of chunks 0.4 s apart, a 2 s stall timeout).
#[test]
fn an_agent_streaming_one_long_message_is_not_stalled() {
    let env = Env::new();
    let slow = agent("slow", "");
    let out = run(acp(
        &env,
        "s1",
        &slow,
        &["--stall-timeout", "2", "--output", "json"],
    ));
    let r = last_json(&out);
    assert_eq!(
        (&r["state"], &r["reason"]),
        (&json!("done"), &Value::Null),
        "{r}"
    );
    assert_eq!(r["summary"], json!({"ok": 1}));
}

/// Attachments go as prompt blocks: an image as base64 data, a text file as
/// an embedded resource; an agent whose promptCapabilities lack images
/// refuses the unit before any session starts.
#[test]
fn attachments_are_prompt_blocks_or_refused_by_capability() {
    let env = Env::new();
    let add = |name: &str, bytes: &[u8]| {
        let p = env.write(&format!("src/{name}"), bytes);
        let out = run(env.cmd(&["attach", "add", p.to_str().unwrap()]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    add("shot.png", b"\x89PNG-not-really");
    add("notes.md", b"the notes");
    let files = [
        "--attach", "shot.png", "--attach", "notes.md", "--output", "json",
    ];
    let out = run(acp(&env, "at", &agent("blocks", ""), &files));
    let r = last_json(&out);
    assert_eq!(r["state"], "done", "{r}\n{}", stderr(&out));
    let answer = r["answer"].as_str().unwrap().lines().next().unwrap();
    assert_eq!(
        answer,
        "text; image image/png iVBORy1ub3QtcmVhbGx5; resource notes.md the notes"
    );
    // No image capability: refused before session/new, and says why.
    let out = run(acp(&env, "at2", &agent("blocks", "--no-image"), &files));
    let r = last_json(&out);
    assert_eq!(
        (&r["state"], &r["reason"]),
        (&json!("failed"), &json!("invalid")),
        "{r}"
    );
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("image block") && error.contains("fake-acp"),
        "{r}"
    );
    assert!(!log_of(&env, "at2", 1).contains("\"session/new\""));
}

#[test]
fn a_refusal_is_the_units_failure_reason() {
    let env = Env::new();
    let out = run(acp(
        &env,
        "r1",
        &agent("refusal", ""),
        &["--output", "json"],
    ));
    let r = last_json(&out);
    assert_eq!(r["state"], "failed", "{r}");
    assert_ne!(r["reason"], Value::Null, "{r}");
    assert_ne!(out.status.code(), Some(0));
}

/// An agent that is not there (the shell's 127), or one that dies before it
/// answers: the failure is its exit status and its stderr, not a session
/// that "did not end".
#[test]
fn a_missing_or_dying_agent_is_told_by_its_exit_and_stderr() {
    let env = Env::new();
    let cases = [
        (
            "m1",
            "no-such-agent-vf-test",
            127,
            "no-such-agent-vf-test: not found",
        ),
        ("m2", "echo oops >&2; exit 3", 3, "oops"),
    ];
    for (unit, line, code, stderr) in cases {
        let r = last_json(&run(acp(&env, unit, line, &["--output", "json"])));
        let want = json!({
            "state": "failed",
            "reason": "engine",
            "exitCode": code,
            "error": format!("acp exited with status {code}: {stderr}"),
        });
        let got = json!({
            "state": r["state"],
            "reason": r["reason"],
            "exitCode": r["exitCode"],
            "error": r["error"].as_str().map(|e| e.replace("/bin/sh: 1: ", "")),
        });
        assert_eq!(got, want, "{r}");
    }
}

/// An agent that echoes the prompt: the private range it was sent is in no
/// event on stdout, not in the result, the raw log or the recorded answer,
/// and nowhere else under the state dir.
#[test]
fn private_text_echoed_by_an_agent_is_redacted_everywhere() {
    let env = Env::new();
    let secret = "SECRET-TOKEN-vf-12345678";
    env.write("sec.txt", format!("one\n{secret}\nthree\n"));
    let script = root().join("tests/support/echo_acp_agent.py");
    let line = format!("python3 {}", script.display());
    let range = ["--private-range", "sec.txt:2-2", "--output", "jsonl"];
    let out = run(acp(&env, "p1", &line, &range));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(last_json(&out)["state"], "done", "{stdout}");
    assert!(stdout.contains("You said: "), "{stdout}");
    assert!(!stdout.contains(secret), "{stdout}");
    assert!(stdout.contains(vf::dispatch::REDACTED), "{stdout}");
    let mut leaked = Vec::new();
    let mut stack = vec![env.state()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(secret))
            {
                leaked.push(p);
            }
        }
    }
    assert_eq!(leaked, Vec::<std::path::PathBuf>::new());
}

/// The agent echoes the prompt in two `agent_message_chunk` frames, split
/// at each position around the private line (issue 38): no piece of it
/// reaches an event, the result, the raw log or any file of the state dir.
#[test]
fn a_private_line_split_across_two_chunks_is_redacted_at_every_position() {
    let env = Env::new();
    let secret = "SECRET-TOKEN-vf-12345678";
    env.write("sec.txt", format!("one\n{secret}\nthree\n"));
    let script = root().join("tests/support/echo_acp_agent.py");
    let block = json!([{"end": 2, "file": "sec.txt", "start": 2, "text": format!("{secret}\n")}]);
    let echo = format!("You said: the task\n\nVF-PRIVATE-FILE-RANGES/1\n{block}");
    let at = echo.find(secret).unwrap();
    let pieces = |text: &str| -> Vec<String> {
        let windows = (0..=secret.len() - 6).map(|i| &secret[i..i + 6]);
        windows
            .filter(|w| text.contains(w))
            .map(str::to_string)
            .collect()
    };
    for k in at - 1..=at + secret.len() {
        let unit = format!("p{k}");
        let line = format!("python3 {} {k}", script.display());
        let range = ["--private-range", "sec.txt:2-2", "--output", "jsonl"];
        let out = run(acp(&env, &unit, &line, &range));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let r = last_json(&out);
        assert_eq!(r["state"], "done", "split at {k}: {stdout}");
        let answer = r["answer"].as_str().unwrap_or_default();
        assert!(
            answer.starts_with("You said: the task"),
            "split at {k}: {answer}"
        );
        assert_eq!(
            pieces(&stdout),
            Vec::<String>::new(),
            "split at {k}: {stdout}"
        );
        let mut stack = vec![env.state()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
                assert_eq!(
                    pieces(&text),
                    Vec::<String>::new(),
                    "split at {k}: {}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn the_default_policy_rejects_a_write_and_skip_permissions_allows_it() {
    let env = Env::new();
    let line = agent("tool", "--write");
    let out = run(acp(&env, "p1", &line, &["--output", "jsonl"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = jsonl(&out.stdout);
    let decision = rows.iter().find(|e| e["label"] == "Permission rejected");
    let decision = decision.expect("the rejection is an event");
    assert_eq!(decision["detail"], "execute touch x.txt: reject_once (no)");
    let tools = rows.iter().find(|e| e["kind"] == "toolBurst").unwrap();
    assert_eq!(tools["tools"][0]["status"], "failed", "{tools}");
    assert!(
        !env.path().join("x.txt").exists(),
        "written despite the policy"
    );
    let r = last_json(&out);
    assert_eq!(r["summary"], json!({"ok": false}), "{r}");
    assert_eq!(r["unknownFrames"], 1, "{r}");
    let extra = ["--output", "jsonl", "--skip-permissions"];
    let out = run(acp(&env, "p2", &line, &extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Permission rejected"), "{text}");
    assert_eq!(last_json(&out)["summary"], json!({"ok": true}));
    assert!(env.path().join("x.txt").exists(), "allowed but not written");
}

#[test]
fn sigterm_sends_session_cancel_then_ends_the_group() {
    let env = Env::new();
    let mut c = acp(&env, "sig", &agent("cancel", ""), &["--output", "jsonl"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let pgid = env.wait_running("sig", true);
    wait_for("the prompt", Duration::from_secs(10), || {
        log_of(&env, "sig", 1).contains("agent_message_chunk")
    });
    assert!(signal(child.id() as i32, libc::SIGTERM));
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(143));
    wait_for("the agent's group to end", Duration::from_secs(5), || {
        !group_alive(pgid)
    });
    assert!(log_of(&env, "sig", 1).contains("\"session/cancel\""));
    let m = env.marker("sig");
    assert_eq!(
        (m["state"].clone(), m["reason"].clone()),
        (json!("failed"), json!("interrupted"))
    );
}

#[test]
fn presets_env_and_plan_key_give_the_command() {
    let env = Env::new();
    for (preset, program, args) in [
        ("acp:gemini", "gemini", json!(["--acp"])),
        ("acp:opencode", "opencode", json!(["acp"])),
    ] {
        let out = run(env.cmd(&[
            "dispatch",
            "--engine",
            preset,
            "--unit",
            "d",
            "--prompt",
            "p",
            "--dry-run",
            "--json",
        ]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let d = stdout_json(&out);
        assert_eq!(
            d["launch"]["posix"][2],
            format!("{program} {}", args[0].as_str().unwrap())
        );
        if preset == "acp:opencode" {
            let env_vars = d["env"].to_string();
            assert!(env_vars.contains("OPENCODE_PERMISSION"), "{d}");
        }
    }
    let mut c = env.cmd(&[
        "dispatch", "--engine", "acp", "--unit", "e1", "--prompt", "p", "--output", "json",
    ]);
    c.env("VF_ACP_CMD", agent("json", ""));
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["sessionId"], "sess-1");
    let out = run(env.cmd(&[
        "dispatch", "--engine", "acp:nope", "--unit", "x", "--prompt", "p",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let plan = env.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[[unit]]\nname = \"pk\"\nengine = \"acp\"\nacp = {:?}\nprompt = \"p\"\n",
            agent("json", "")
        ),
    )
    .unwrap();
    let out = run(env.cmd(&["orchestrate", plan.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.marker("pk")["engineSessionId"], "sess-1");
}

#[test]
fn resume_uses_session_load_when_advertised() {
    let env = Env::new();
    // A unit that failed after its session began: `vf resume` loads it.
    let out = run(acp(
        &env,
        "rs",
        &agent("refusal", ""),
        &["--output", "json"],
    ));
    assert_eq!(last_json(&out)["sessionId"], "sess-1", "{}", stderr(&out));
    let out = run(env.cmd(&["resume", "rs", "--prompt", "more", "--output", "json"]));
    let log = log_of(&env, "rs", 2);
    assert!(log.contains("\"session/load\""), "{log}");
    assert!(!log.contains("\"session/new\""), "{log}");
    assert_eq!(last_json(&out)["attempt"], 2);
    // An exact resume by id, on a new unit.
    let extra = ["--session", "sess-9", "--output", "json"];
    let out = run(acp(&env, "rx", &agent("json", ""), &extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = log_of(&env, "rx", 1);
    assert!(
        log.contains("\"session/load\"") && log.contains("sess-9"),
        "{log}"
    );
    assert_eq!(last_json(&out)["sessionId"], "sess-9");
}

#[test]
fn an_agent_without_load_session_gets_the_bounded_replay() {
    let env = Env::new();
    let line = agent("json", "--no-load");
    let out = run(acp(&env, "nl", &line, &["--output", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let extra = ["--session", "sess-1", "--output", "json"];
    let out = run(acp(&env, "nl", &line, &extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(
        (&r["start"], &r["attempt"], &r["state"]),
        (&json!("replay"), &json!(3), &json!("done")),
        "{r}"
    );
    assert_eq!(r["replay"]["replayed"], 1, "{r}");
    // Attempt 2 asked nothing of the agent it could not do; 3 starts afresh,
    // its prompt primed with attempt 1's answer.
    assert!(!log_of(&env, "nl", 2).contains("\"session/load\""));
    let log = log_of(&env, "nl", 3);
    assert!(
        log.contains("\"session/new\"") && log.contains("Done."),
        "{log}"
    );
    assert_eq!(env.marker("nl")["reason"], Value::Null);
}

#[test]
fn doctor_runs_the_handshake_and_engines_lists_the_presets() {
    let env = Env::new();
    let mut c = env.cmd(&["doctor", "-e", "acp", "--json"]);
    c.env("VF_ACP_CMD", agent("json", ""));
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &stdout_json(&out)[0];
    assert_eq!(r["verdict"], "ready", "{r}");
    // The agent's version is the report's: the VERSION column.
    assert_eq!(r["version"], "1.0.0", "{r}");
    let a = &r["acp"]["agent"];
    assert_eq!(
        (
            &a["name"],
            &a["version"],
            &a["protocolVersion"],
            &a["loadSession"]
        ),
        (&json!("fake-acp"), &json!("1.0.0"), &json!(1), &json!(true)),
        "{r}"
    );
    assert_eq!(a["capabilities"]["promptCapabilities"]["image"], true);
    // A preset names its command; here it is not installed.
    let mut c = env.cmd(&["doctor", "-e", "acp:gemini", "--json"]);
    c.env("PATH", env.path());
    let r = &stdout_json(&run(c))[0];
    assert_eq!(r["verdict"], "missing", "{r}");
    assert!(r["reasons"][0].as_str().unwrap().contains("gemini"), "{r}");
    let out = run(env.cmd(&["engines", "--json"]));
    let rows = stdout_json(&out);
    let acp = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "acp")
        .unwrap();
    assert_eq!(acp["presets"][0]["command"], "gemini --acp", "{acp}");
    assert_eq!(acp["presets"][1]["command"], "opencode acp", "{acp}");
    assert_eq!(acp["enforcedBy"], "vf", "{acp}");
    assert_eq!(acp["resume"], "loadSession", "{acp}");
    let text = String::from_utf8_lossy(&env.run(&["engines"]).stdout).into_owned();
    assert!(text.contains("enforced by vf"), "{text}");
}

/// Every file under `dir`, read as text (lossy).
fn all_text_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_text_under(&p));
        } else if let Ok(b) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&b).into_owned()));
        }
    }
    out
}

/// `--mcp FILE` for an ACP agent: the servers go as `session/new`'s
/// `mcpServers` with their real env and header values (the agent says how
/// long each is), while the raw log and every other file vf writes hold
/// `***` in their place. A url server needs the agent's
/// `mcpCapabilities.http`: without it the unit fails before `session/new`.
#[test]
fn mcp_servers_go_in_session_new_and_their_secrets_never_reach_disk() {
    let env = Env::new();
    let servers = json!({"mcpServers": {
        "files": {"command": "mcp-files", "args": ["--root", "."],
                  "env": {"FILES_TOKEN": "sekrit-env-value-1234"}},
        "web": {"url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer hdr-secret-56789"}},
    }});
    let file = env.write("servers.json", servers.to_string());
    let mcp = ["--mcp", file.to_str().unwrap(), "--output", "json"];
    let out = run(acp(&env, "m1", &agent("mcp", "--mcp-http"), &mcp));
    let r = last_json(&out);
    assert_eq!(r["state"], "done", "{r}\n{}", stderr(&out));
    assert_eq!(r["mcp"], json!(["files", "web"]), "{r}");
    let answer = r["answer"].as_str().unwrap().lines().next().unwrap();
    assert_eq!(
        answer,
        "files stdio FILES_TOKEN=21; web http Authorization=23"
    );
    let log = log_of(&env, "m1", 1);
    let new = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["msg"]["method"] == "session/new")
        .expect("a session/new line");
    assert_eq!(
        new["msg"]["params"]["mcpServers"],
        json!([
            {"name": "files", "command": "mcp-files", "args": ["--root", "."],
             "env": [{"name": "FILES_TOKEN", "value": "***"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "Authorization", "value": "***"}]},
        ])
    );
    let files = all_text_under(&env.state());
    assert!(files.len() > 3, "{files:?}");
    for (path, text) in &files {
        for secret in ["sekrit-env-value-1234", "hdr-secret-56789"] {
            assert!(!text.contains(secret), "{} holds {secret}", path.display());
        }
    }
    // No http capability: refused before session/new, and says why.
    let out = run(acp(&env, "m2", &agent("mcp", ""), &mcp));
    let r = last_json(&out);
    assert_eq!(
        (&r["state"], &r["reason"]),
        (&json!("failed"), &json!("invalid")),
        "{r}"
    );
    assert_eq!(
        r["error"],
        "MCP servers: server \"web\" is an http server, and fake-acp does not advertise mcpCapabilities.http",
        "{r}"
    );
    assert!(!log_of(&env, "m2", 1).contains("\"session/new\""));
}

/// A resumed unit's answer and summary are the new turn's, wherever the
/// agent replays the loaded history (before or after `session/load`'s answer,
/// after the prompt, split around it) and wherever its bookkeeping comes.
#[test]
fn a_resumed_units_answer_is_the_new_turns_in_every_replay_order() {
    let env = Env::new();
    for place in ["before", "after", "prompt", "split"] {
        for acu in ["none", "before", "between", "after"] {
            let unit = format!("r-{place}-{acu}");
            let line = agent("json", &format!("--replay={place} --acu={acu}"));
            let extra = ["--session", "sess-1", "--output", "json"];
            let out = run(acp(&env, &unit, &line, &extra));
            let r = last_json(&out);
            assert_eq!(out.status.code(), Some(0), "{unit}: {r}");
            assert_eq!(
                r["answer"], "New answer.\n\n```json\n{\"new\":1}\n```\n",
                "{unit}: {r}"
            );
            assert_eq!(r["summary"], json!({"new": 1}), "{unit}: {r}");
        }
    }
}

/// A malformed response to the prompt fails the unit at once (exit 1,
/// reason engine), saying what was wrong; another session's updates are
/// counted as drift and kept out of the answer.
#[test]
fn a_malformed_response_fails_the_unit_and_foreign_updates_are_drift() {
    let env = Env::new();
    let line = agent("malformed", "--shape=neither");
    let out = run(acp(&env, "mal", &line, &["--output", "json"]));
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["reason"], "engine", "{r}");
    let want = "the agent sent a malformed response to session/prompt: \
                the response has neither a result nor an error";
    assert_eq!(r["error"], want, "{r}");
    let out = run(acp(
        &env,
        "fo",
        &agent("foreign", ""),
        &["--output", "json"],
    ));
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["summary"], json!({"confidence": 1}), "{r}");
    assert_eq!(r["unknownFrames"], 2, "{r}");
}

/// A handshake step the agent never answers fails the unit at
/// `VF_ACP_HANDSHAKE_TIMEOUT_MS` (exit 4, reason timeout), naming the step
/// and keeping the version `initialize` named; a bad value is exit 2.
#[test]
fn a_silent_handshake_times_out_naming_the_step_and_keeping_the_version() {
    let env = Env::new();
    let mut c = acp(&env, "mute", &agent("mute-new", ""), &["--output", "json"]);
    // Long enough for the fake to answer `initialize` on a busy machine.
    c.env("VF_ACP_HANDSHAKE_TIMEOUT_MS", "3000");
    let out = run(c);
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(4), "{r}");
    assert_eq!(r["reason"], "timeout", "{r}");
    let want = "the agent did not answer session/new within 3.0 s (VF_ACP_HANDSHAKE_TIMEOUT_MS)";
    assert_eq!(r["error"], want, "{r}");
    assert_eq!(r["engineVersion"], "1.0.0", "{r}");
    let mut c = acp(&env, "mute2", &agent("mute-new", ""), &["--output", "json"]);
    c.env("VF_ACP_HANDSHAKE_TIMEOUT_MS", "soon");
    let out = run(c);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("VF_ACP_HANDSHAKE_TIMEOUT_MS"),
        "{}",
        stderr(&out)
    );
}
