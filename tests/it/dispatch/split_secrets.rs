//! Issue 38, section 4: secrets an engine echoes in pieces, and the MCP
//! servers' secrets. A private line split across two streamed frames, at
//! every position, and an MCP `env` value split the same way, reach no
//! event, no result, no raw log and no file of the state dir; the raw logs
//! are the owner's only and the unit's MCP config is gone after the run.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::json;

use super::*;

const SECRET: &str = "SECRET-LINE-7f3a9";

/// Every piece of [`SECRET`] of at least 6 bytes (shorter ones could be
/// hex digits of an id) that `text` holds.
fn pieces_in(text: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for len in 6..=SECRET.len() {
        for i in 0..=SECRET.len() - len {
            let piece = &SECRET[i..i + len];
            if text.contains(piece) && !found.contains(&piece) {
                found.push(piece);
            }
        }
    }
    found
}

/// gemini's stream with the answer's two deltas as `@PROMPT1@` and
/// `@PROMPT2@`: the fake echoes the prompt it got, split at FAKE_ECHO_SPLIT.
fn split_template(env: &Env) -> PathBuf {
    let text = read_text(&fixture("gemini/0.61.0/a_json_stream.stdout.jsonl"));
    let mut deltas = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["role"] == "assistant" && v["delta"] == true {
                deltas += 1;
                v["content"] = format!("@PROMPT{deltas}@").into();
            }
            v.to_string()
        })
        .collect();
    assert_eq!(deltas, 2);
    env.write("split.tpl", lines.join("\n") + "\n")
}

fn all_files(dir: &std::path::Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for f in files_under(dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into_owned();
        out.push((f, text));
    }
    out
}

/// A CLI engine (gemini's stream) echoes the prompt with its private range
/// in two answer deltas, split at each position around the private line:
/// no piece of it is shown, kept as the answer or left under the state dir.
#[test]
fn a_private_line_split_across_two_frames_of_a_cli_engine_is_redacted() {
    let env = Env::new();
    let src: String = (1..=10)
        .map(|i| match i {
            5 => format!("let key = \"{SECRET}\";\n"),
            _ => format!("line {i}\n"),
        })
        .collect();
    env.write("config.rs", src);
    let template = split_template(&env);
    // The prompt as the fake gets it: the task, then the wire block.
    let text = "line 4\nlet key = \"SECRET-LINE-7f3a9\";\nline 6\n";
    let block = json!([{"end": 6, "file": "config.rs", "start": 4, "text": text}]);
    let prompt = format!("review it\n\nVF-PRIVATE-FILE-RANGES/1\n{block}");
    let at = prompt.find(SECRET).unwrap();
    for k in at - 1..=at + SECRET.len() {
        let unit = format!("s{k}");
        let mut c = env.live(
            "gemini",
            &unit,
            "review it",
            &["--private-range", "config.rs:4-6"],
        );
        c.env("FAKE_ECHO_TEMPLATE", &template)
            .env("FAKE_ECHO_SPLIT", k.to_string())
            .env("FAKE_VERSION", version_of("gemini"));
        let out = run_bounded(c, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let r = last_json(&out);
        assert_eq!(r["state"], "done", "split at {k}: {r}");
        let answer = r["answer"].as_str().unwrap_or_default();
        assert!(
            answer.starts_with("review it\n\n"),
            "split at {k}: {answer}"
        );
        assert!(
            answer.contains(vf::dispatch::REDACTED),
            "split at {k}: {answer}"
        );
        assert_eq!(
            pieces_in(&stdout),
            Vec::<&str>::new(),
            "split at {k}: {stdout}"
        );
        for (path, text) in all_files(&env.state()) {
            let found = pieces_in(&text);
            assert!(
                found.is_empty(),
                "split at {k}: {} holds {found:?}",
                path.display()
            );
        }
    }
}

/// copilot's capture with `@PROMPT1@`/`@PROMPT2@` as its first two answer
/// deltas and `@PROMPT@` as the whole message, written with `token`.
fn mcp_echo(env: &Env, token: &str, split: usize) -> PathBuf {
    let text = read_text(&fixture("copilot/1.0.102/a_json.stdout.jsonl"));
    let (a, b) = token.split_at(split);
    let mut deltas = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str() {
                Some("assistant.message_delta") if deltas < 2 => {
                    deltas += 1;
                    let piece = if deltas == 1 {
                        format!("the token is {a}")
                    } else {
                        format!("{b}, done")
                    };
                    v["data"]["deltaContent"] = piece.into();
                }
                Some("assistant.message") => {
                    v["data"]["content"] = format!("the token is {token}, done").into();
                }
                _ => {}
            }
            v.to_string()
        })
        .collect();
    env.write(&format!("mcp{split}.jsonl"), lines.join("\n") + "\n")
}

fn mcp_file(env: &Env, token: &str) -> PathBuf {
    let servers = json!({"mcpServers": {"files": {"command": "mcp-files",
        "env": {"FILES_TOKEN": token}}}});
    env.write("servers.json", servers.to_string())
}

/// An engine that echoes an MCP server's env value, whole (its final
/// message) and split across two deltas at several points: the value is in
/// no event, no result and no file of the state dir.
#[test]
fn mcp_secrets_echoed_by_an_engine_are_redacted_everywhere() {
    let env = Env::new();
    let token = "mcp-T0KEN-value-98765";
    let file = mcp_file(&env, token);
    for k in [1, 8, 20] {
        let unit = format!("m{k}");
        let mut c = env.live("copilot", &unit, "go", &["--mcp", file.to_str().unwrap()]);
        c.env("FAKE_STDOUT", mcp_echo(&env, token, k))
            .env("FAKE_VERSION", version_of("copilot"));
        let out = run_bounded(c, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(last_json(&out)["state"], "done", "{stdout}");
        assert!(!stdout.contains(token), "split at {k}: {stdout}");
        let (a, b) = token.split_at(k);
        assert!(
            !stdout.contains(&format!("is {a}")),
            "split at {k}: {stdout}"
        );
        // The second delta as the engine wrote it: a bare `{b},` would also
        // match a number of the result (`"durationMs":65,` at split 20).
        assert!(
            !stdout.contains(&format!("{b}, done")),
            "split at {k}: {stdout}"
        );
        assert!(
            stdout.contains(vf::dispatch::REDACTED),
            "split at {k}: {stdout}"
        );
        for (path, text) in all_files(&env.state()) {
            assert!(!text.contains(token), "{} holds the token", path.display());
        }
    }
}

/// The unit's MCP config (it holds the values) is removed once the engine
/// has ended, whether it succeeded or failed; the raw logs, the verify
/// step's included, are the owner's only.
#[test]
fn the_mcp_config_is_removed_after_the_run_and_raw_logs_are_0600() {
    let env = Env::new();
    let file = mcp_file(&env, "mcp-T0KEN-value-98765");
    for (unit, exit, want) in [("ok", "0", "done"), ("bad", "3", "failed")] {
        let extra = ["--mcp", file.to_str().unwrap(), "--verify", "echo checked"];
        let mut c = env.live("copilot", unit, "go", &extra);
        c.env(
            "FAKE_STDOUT",
            fixture("copilot/1.0.102/a_json.stdout.jsonl"),
        )
        .env("FAKE_EXIT", exit)
        .env("FAKE_VERSION", version_of("copilot"));
        let out = run_bounded(c, Duration::from_secs(60));
        assert_eq!(last_json(&out)["state"], want, "{}", stderr(&out));
        let dir = env.state().join("units").join(unit);
        assert!(
            !dir.join("mcp-copilot.json").exists(),
            "{unit}: config left"
        );
        let mut logs: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        logs.sort();
        let mut want_logs = vec!["attempt-1.stderr.log", "attempt-1.stdout.log"];
        if exit == "0" {
            want_logs.push("attempt-1.verify.log");
        }
        assert_eq!(logs, want_logs, "{unit}");
        for log in logs {
            let mode = std::fs::metadata(dir.join(&log))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{unit}: {log}");
        }
    }
}
