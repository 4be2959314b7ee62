//! Issue 11: private ranges never persist. A prompt file left by `kill -9`
//! is removed by recovery; an engine's echo of the prompt is redacted before
//! projection and before the raw log.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use super::*;

const SECRET: &str = "SECRET-LINE-7f3a9";

/// `config.rs` whose lines 4-6 hold [`SECRET`].
fn private_source(env: &Env) {
    let src: String = (1..=10)
        .map(|i| match i {
            5 => format!("let key = \"{SECRET}\";\n"),
            _ => format!("line {i}\n"),
        })
        .collect();
    std::fs::write(env.path().join("config.rs"), src).unwrap();
}

/// `vf dispatch` of unit `pf` on the fake copilot with a private range.
fn copilot_pf(env: &Env, prompt: &str) -> std::process::Command {
    let mut c = env.live(
        "copilot",
        "pf",
        prompt,
        &["--private-range", "config.rs:4-6"],
    );
    c.env(
        "FAKE_STDOUT",
        fixture("copilot/1.0.102/a_json.stdout.jsonl"),
    )
    .env("FAKE_VERSION", "1.0.102");
    c
}

/// A copilot run with a prompt over 32 KiB (so it goes by file) holding a
/// private range, its vf killed with SIGKILL mid-run: the file is left.
fn prompt_file_left_by_kill_9(env: &Env) -> std::path::PathBuf {
    private_source(env);
    let big = "x".repeat(40 * 1024);
    let mut c = copilot_pf(env, &big);
    c.env("FAKE_MODE", "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let file = env.path().join("state/dispatch/pf.md");
    let pgid = env.wait_running("pf", false);
    // Readable by the owner only while the engine needs it.
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read_to_string(&file).unwrap().contains(SECRET));
    vf_proc.kill().unwrap();
    vf_proc.wait().unwrap();
    signal(-pgid, libc::SIGKILL);
    assert!(file.exists(), "nothing removed it yet");
    file
}

#[test]
fn a_prompt_file_left_by_kill_9_is_removed_by_the_next_dispatch() {
    let env = Env::new();
    let file = prompt_file_left_by_kill_9(&env);
    // Recovery: the next dispatch of the unit (a small prompt: no file of its own).
    let out = run_bounded(copilot_pf(&env, "review it"), Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!file.exists(), "the stale prompt file survived recovery");
    assert_nowhere_under(&env.state(), SECRET);
}

#[test]
fn a_prompt_file_left_by_kill_9_is_removed_by_doctor_fix() {
    let env = Env::new();
    let file = prompt_file_left_by_kill_9(&env);
    let out = env.run(&["doctor", "--fix"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !file.exists(),
        "the stale prompt file survived doctor --fix"
    );
    assert!(err.contains("removed a stale prompt file"), "{err}");
    assert_nowhere_under(&env.state(), SECRET);
}

/// A genuine capture with the prompt's echo replaced by `@PROMPT@`, which the
/// fake fills with the prompt it receives (JSON-escaped, as the CLI does).
fn echo_template(
    env: &Env,
    capture: &str,
    is_echo: impl Fn(&Value) -> bool,
    fill: impl Fn(&mut Value),
) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(fixture(capture)).unwrap();
    let mut echoes = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(mut v) if is_echo(&v) => {
                echoes += 1;
                fill(&mut v);
                serde_json::to_string(&v).unwrap()
            }
            _ => l.to_string(),
        })
        .collect();
    assert_eq!(echoes, 1, "{capture} has no single prompt echo");
    let p = env
        .path()
        .join(format!("{}.tpl", capture.replace('/', "_")));
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    (p, lines.len())
}

/// `vf dispatch` of `unit` with the private range, the fake `engine` printing
/// `template` with the prompt it received echoed in it.
fn echo_run(
    env: &Env,
    engine: &str,
    unit: &str,
    template: &std::path::Path,
) -> std::process::Command {
    let extra = ["--private-range", "config.rs:4-6"];
    let mut c = env.live(engine, unit, "review it", &extra);
    c.env("FAKE_ECHO_TEMPLATE", template)
        .env("FAKE_VERSION", version_of(engine));
    c
}

#[test]
fn prompt_echoes_of_copilot_and_gemini_are_redacted_everywhere() {
    let env = Env::new();
    private_source(&env);
    let copilot = echo_template(
        &env,
        "copilot/1.0.102/a_json.stdout.jsonl",
        |v| v["type"] == "user.message",
        |v| {
            v["data"]["content"] = "@PROMPT@".into();
            v["data"]["transformedContent"] =
                "<current_datetime>2026-11-30T01:08:20.764+00:00</current_datetime>\n\n@PROMPT@"
                    .into();
        },
    );
    let gemini = echo_template(
        &env,
        "gemini/0.61.0/a_json_stream.stdout.jsonl",
        |v| v["type"] == "message" && v["role"] == "user",
        |v| v["content"] = "@PROMPT@".into(),
    );
    for (engine, version, (template, lines)) in [
        ("copilot", "1.0.102", copilot),
        ("gemini", "0.61.0", gemini),
    ] {
        assert_eq!(version, version_of(engine));
        let unit = format!("echo-{engine}");
        let c = echo_run(&env, engine, &unit, &template);
        let out = run_bounded(c, Duration::from_secs(60));
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        let r = last_json(&out);
        assert_eq!(out.status.code(), Some(0), "{engine}: {r}");
        assert!(
            !stdout.contains(SECRET),
            "{engine}: private text in vf's events"
        );
        // The raw log keeps the echo's line, with the placeholder instead of the block.
        let log = std::fs::read_to_string(r["stdoutLog"].as_str().unwrap()).unwrap();
        assert_eq!(
            log.lines().count(),
            lines,
            "{engine}: line structure changed"
        );
        let echo = log
            .lines()
            .find(|l| l.contains("@PROMPT@") || l.contains("review it"))
            .unwrap();
        assert!(
            echo.contains("review it\\n\\n[private ranges redacted]")
                && !echo.contains("VF-PRIVATE"),
            "{engine}: {echo}"
        );
        for line in stdout.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if let Some(end) = v["rawRange"]["end"].as_u64() {
                assert!(end as usize <= lines, "{engine}: {line}");
            }
        }
        assert_nowhere_under(&env.state(), SECRET);
    }
}

#[test]
fn private_ranges_reach_the_engine_and_are_persisted_nowhere() {
    let env = Env::new();
    private_source(&env);
    let args_log = env.path().join("engine-input.log");
    for (engine, cap, big) in [
        ("codex", "codex/0.171.0/a_json.stdout.jsonl", false),
        // Over 32 KiB: copilot gets a prompt file, which must be gone afterwards.
        ("copilot", "copilot/1.0.102/a_json.stdout.jsonl", true),
    ] {
        let prompt = if big {
            "x".repeat(40 * 1024)
        } else {
            "review it".to_string()
        };
        let unit = format!("priv-{engine}");
        let mut c = env.live(
            engine,
            &unit,
            &prompt,
            &["--private-range", "config.rs:4-6"],
        );
        c.env("FAKE_STDOUT", fixture(cap))
            .env("FAKE_VERSION", version_of(engine))
            .env("FAKE_ARGS_LOG", &args_log);
        let out = run_bounded(c, Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(SECRET),
            "{engine}: secret in vf's events"
        );
        // The engine did receive it (in stdin, argv, or the prompt file it was pointed at).
        let seen = std::fs::read_to_string(&args_log).unwrap();
        if big {
            assert!(
                seen.contains("Read ") && seen.contains(" and follow it"),
                "{seen}"
            );
        } else {
            assert!(
                seen.contains("VF-PRIVATE-FILE-RANGES/1") && seen.contains(SECRET),
                "{seen}"
            );
        }
        assert_nowhere_under(&env.state(), SECRET);
        assert!(
            !String::from_utf8_lossy(
                &run_bounded(env.cmd(&["status", "--json"]), Duration::from_secs(30)).stdout
            )
            .contains(SECRET)
        );
    }
    assert!(
        !env.path().join("state/dispatch/priv-copilot.md").exists(),
        "copilot prompt file left behind"
    );
}

/// Fragments of the private range and of its header: none may be left in any
/// string, decoded, however the echo spelled or split it.
const FRAGMENTS: [&str; 4] = ["SECRET", "7f3a9", "PRIVATE", "RANGES"];

/// Every string (keys too) of each JSON line of `text`, decoded.
fn decoded_strings(text: &str) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|i| walk(i, out)),
            Value::Object(m) => m.iter().for_each(|(k, i)| {
                out.push(k.clone());
                walk(i, out);
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for line in text.lines() {
        walk(&serde_json::from_str(line).unwrap(), &mut out);
    }
    out
}

/// Issue 25, defect 5: an echo of the prompt spelled with other JSON escapes
/// (`\u0053\u0045...`, every character or every other one), or split across two
/// fields, is redacted on its decoded text, in vf's events and in the raw log.
#[test]
fn escaped_mixed_and_split_echoes_are_redacted_everywhere() {
    let env = Env::new();
    private_source(&env);
    let range = ["config.rs:4-6".parse().unwrap()];
    let staged =
        vf::dispatch::private::stage_private_ranges(&range, &env.state(), env.path()).unwrap();
    let prompt = vf::dispatch::private::apply_private_ranges("review it", &staged);
    let in_secret = prompt.find(SECRET).unwrap() + 6;
    let in_header = prompt.find("VF-PRIVATE").unwrap() + 5;
    // Each under a name of its own (the template is named after the capture).
    let copilot = |name: &str, fill: fn(&mut Value)| {
        let (p, lines) = echo_template(
            &env,
            "copilot/1.0.102/a_json.stdout.jsonl",
            |v| v["type"] == "user.message",
            fill,
        );
        let to = env.path().join(name);
        std::fs::rename(p, &to).unwrap();
        (to, lines)
    };
    let whole = copilot("whole.tpl", |v| v["data"]["content"] = "@PROMPT@".into());
    // Two fields that copilot fills with the prompt: here each gets a part.
    let split = copilot("split.tpl", |v| {
        v["data"]["content"] = "@PROMPT1@".into();
        v["data"]["transformedContent"] = "@PROMPT2@".into();
    });
    let gemini = echo_template(
        &env,
        "gemini/0.61.0/a_json_stream.stdout.jsonl",
        |v| v["type"] == "message" && v["role"] == "user",
        |v| v["content"] = "@PROMPT@".into(),
    );
    let cases = [
        ("copilot", &whole, "unicode", 0),
        ("copilot", &whole, "mixed", 0),
        ("gemini", &gemini, "unicode", 0),
        ("copilot", &split, "json", in_secret),
        ("copilot", &split, "unicode", in_secret),
        ("copilot", &split, "mixed", in_header),
    ];
    for (i, (engine, (template, lines), escape, at)) in cases.into_iter().enumerate() {
        let case = format!("{engine} {escape} split at {at}");
        let unit = format!("esc{i}");
        let mut c = echo_run(&env, engine, &unit, template);
        c.env("FAKE_ECHO_ESCAPE", escape)
            .env("FAKE_ECHO_SPLIT", at.to_string());
        let out = run_bounded(c, Duration::from_secs(60));
        let r = last_json(&out);
        assert_eq!(out.status.code(), Some(0), "{case}: {r}");
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        let log = std::fs::read_to_string(r["stdoutLog"].as_str().unwrap()).unwrap();
        assert_eq!(
            log.lines().count(),
            *lines,
            "{case}: line structure changed"
        );
        for (what, text) in [("events", &stdout), ("raw log", &log)] {
            for s in decoded_strings(text) {
                for f in FRAGMENTS {
                    assert!(!s.contains(f), "{case}: {f:?} in the {what}: {s:?}");
                }
            }
        }
        // The echo is still there, with the placeholder for the block.
        let echoed = decoded_strings(&stdout)
            .into_iter()
            .any(|s| s.starts_with("review it"));
        assert!(echoed, "{case}: {stdout}");
        assert!(log.contains("private ranges redacted"), "{case}");
        assert_nowhere_under(&env.state(), SECRET);
    }
}
