//! The bridge engine (issue 26): an unknown agent CLI, stood in for by small
//! `sh` scripts, run through the whole runtime: the prompt on stdin, text and
//! the fenced json summary, stall, timeout, signals, the command carried by
//! the marker and plans, the replay of a re-run, `--bridge-output`, the dry
//! run's launches on both platforms, and the refusals.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

/// An agent that saves its stdin and answers with text and a summary.
const ANSWERING: &str = r#"#!/bin/sh
cat > "$(dirname "$0")/prompt.seen"
echo "working on it"
printf 'all done\n```json\n{"confidence": 0.9, "files": []}\n```\n'
"#;

/// `vf dispatch --engine bridge --bridge LINE --unit UNIT --prompt P`, then `extra`.
fn bridge(env: &Env, unit: &str, line: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "dispatch", "--engine", "bridge", "--bridge", line, "--unit", unit, "--prompt", "the task",
    ];
    args.extend_from_slice(extra);
    env.cmd(&args)
}

fn run(c: Command) -> Output {
    run_bounded(c, Duration::from_secs(60))
}

/// The whole result of a bridge run that ended on its own.
fn bridge_result(unit: &str, state: &str, exit_code: i64, answer: &str) -> Value {
    let mut want = finished_result("bridge", unit, 1, state, exit_code, &Value::Null);
    want["engineVersion"] = Value::Null;
    want["answer"] = answer.into();
    want
}

/// The marker such a run leaves: the finished one, with its command.
fn bridge_marker(result: &Value, attempts: u64, command: Value) -> Value {
    let mut m = finished_marker(result, attempts);
    m["command"] = command;
    m
}

#[test]
fn a_bridge_run_takes_the_prompt_on_stdin_and_yields_the_summary() {
    let env = Env::new();
    write_exe(&env.path().join("agent.sh"), ANSWERING);
    let out = run(bridge(
        &env,
        "b1",
        "./agent.sh --fast",
        &["--output", "json"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = env.normalized(&last_json(&out));
    let answer = "working on it\nall done\n```json\n{\"confidence\": 0.9, \"files\": []}\n```";
    let mut want = bridge_result("b1", "done", 0, answer);
    want["summary"] = json!({"confidence": 0.9, "files": []});
    assert_json_eq(&r, &want);
    assert_json_eq(
        &env.normalized(&env.marker("b1")),
        &bridge_marker(&want, 1, json!({"line": "./agent.sh --fast"})),
    );
    assert_eq!(read_text(&env.path().join("prompt.seen")), "the task");
    // The raw log is what the agent printed; `vf status` names the command.
    let log = read_text(&env.state().join("units/b1/attempt-1.stdout.log"));
    assert_eq!(log, format!("{answer}\n"));
    let status = env.run(&["status", "b1"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("command: ./agent.sh --fast"), "{text}");
    assert!(text.contains("bridge"), "{text}");
}

#[test]
fn shell_syntax_is_interpreted_on_posix_and_vibeflow_ai_supplies_the_command() {
    let env = Env::new();
    write_exe(&env.path().join("agent.sh"), ANSWERING);
    let mut c = env.cmd(&[
        "dispatch", "--engine", "bridge", "--unit", "b2", "--prompt", "p", "--output", "json",
    ]);
    c.env(
        "VIBEFLOW_AI",
        "./agent.sh 2>/dev/null && echo after > after.txt",
    );
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(read_text(&env.path().join("after.txt")), "after\n");
    let line = "./agent.sh 2>/dev/null && echo after > after.txt";
    assert_eq!(env.marker("b2")["command"], json!({"line": line}));
}

/// An agent `name` that starts a background `sleep 60`, writes its pid to the
/// returned file, prints one line, then runs `then`.
fn agent_with_a_child(env: &Env, name: &str, then: &str) -> std::path::PathBuf {
    let pids = env.path().join("pids");
    let body = format!(
        "#!/bin/sh\nsleep 60 &\necho $! > {}\necho started\n{then}\n",
        pids.display()
    );
    write_exe(&env.path().join(name), &body);
    pids
}

#[test]
fn a_stalled_agent_is_ended_with_its_group() {
    let env = Env::new();
    let pids = agent_with_a_child(&env, "stall.sh", "sleep 60");
    let out = run(bridge(
        &env,
        "st",
        "./stall.sh",
        &["--stall-timeout", "1", "--output", "json"],
    ));
    let r = env.normalized(&last_json(&out));
    assert_eq!(out.status.code(), Some(4), "{r}");
    let mut want = bridge_result("st", "failed", 0, "started");
    want["exitCode"] = Value::Null;
    want["reason"] = "stalled".into();
    want["error"] = r["error"].clone();
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("no output for 1s")),
        "{r}"
    );
    assert_json_eq(&r, &want);
    let grandchild: i32 = read_text(&pids).trim().parse().unwrap();
    wait_for(
        "the background sleep to end",
        Duration::from_secs(5),
        || !signal(grandchild, 0),
    );
}

#[test]
fn the_wall_timeout_ends_a_chatty_agent() {
    let env = Env::new();
    write_exe(
        &env.path().join("chatty.sh"),
        "#!/bin/sh\nwhile :; do echo tick; sleep 0.1; done\n",
    );
    let out = run(bridge(
        &env,
        "to",
        "./chatty.sh",
        &["--timeout", "1", "--output", "json"],
    ));
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(4), "{r}");
    assert_eq!(
        (r["state"].clone(), r["reason"].clone()),
        (json!("failed"), json!("timeout"))
    );
}

#[test]
fn sigterm_to_vf_ends_the_agent_and_everything_it_started() {
    let env = Env::new();
    let pids = agent_with_a_child(&env, "long.sh", "wait");
    let mut c = bridge(&env, "sig", "./long.sh", &["--output", "jsonl"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let pgid = env.wait_running("sig", false);
    wait_for("the agent's child", Duration::from_secs(10), || {
        pids.exists()
    });
    assert!(signal(child.id() as i32, libc::SIGTERM));
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(143));
    wait_for("the agent's group to end", Duration::from_secs(5), || {
        !group_alive(pgid)
    });
    let m = env.marker("sig");
    assert_eq!(
        (m["state"].clone(), m["reason"].clone()),
        (json!("failed"), json!("interrupted"))
    );
    let grandchild: i32 = read_text(&pids).trim().parse().unwrap();
    assert!(!signal(grandchild, 0), "the agent's child outlived the run");
}

#[test]
fn the_dry_run_shows_the_launch_on_both_platforms() {
    let env = Env::new();
    let line = r#""C:\Program Files\Agent\agent.cmd" --yes > log.txt && echo "a ""b""""#;
    let out = run(bridge(&env, "dry", line, &["--dry-run", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = json!({
        "engine": "bridge",
        "engineReason": "chosen with --engine",
        "unit": "dry",
        "attachments": [],
        "privateRanges": [],
        "program": "/bin/sh",
        "args": ["-c", line],
        "stdin": "the task",
        "cwd": "<tmp>",
        "promptFile": null,
        "warnings": [],
        "policy": {"readOnly": "off", "tools": "off"},
        "launch": {
            "posix": ["/bin/sh", "-c", line],
            "windows": ["cmd.exe", "/d", "/c", "call", r"C:\Program Files\Agent\agent.cmd",
                "--yes", ">", "log.txt", "&&", "echo", r#"a "b""#],
        },
        "origins": {
            "engine": "flag", "state_dir": "env", "model": "builtin", "effort": "builtin",
            "read_only": "builtin", "allow_tools": "builtin", "deny_tools": "builtin",
            "require_enforced": "builtin", "deny_paths": "builtin", "allow_paths": "builtin",
            "on_finish": "builtin", "on_fail": "builtin", "stall_timeout": "builtin",
            "timeout": "builtin", "fix_rounds": "builtin", "review": "builtin",
            "on_conflict": "builtin", "resolver": "builtin",
            "pause_at": "builtin", "stagger": "builtin", "rotate": "builtin",
        },
    });
    assert_json_eq(&env.normalized(&stdout_json(&out)), &want);
    // An unquoted `.cmd` gets no `call`; a string Windows cannot tokenize says why.
    let out = run(bridge(
        &env,
        "dry",
        "agent.cmd -q",
        &["--dry-run", "--json"],
    ));
    let launch = stdout_json(&out)["launch"].clone();
    assert_eq!(
        launch["windows"],
        json!(["cmd.exe", "/d", "/c", "agent.cmd", "-q"])
    );
    let out = run(bridge(
        &env,
        "dry",
        r#"echo "open"#,
        &["--dry-run", "--json"],
    ));
    let launch = stdout_json(&out)["launch"].clone();
    assert_json_eq(
        &launch,
        &json!({"posix": ["/bin/sh", "-c", r#"echo "open"#], "windows": null,
            "windowsError": "a double quote is not closed"}),
    );
    assert!(!env.state().exists(), "a dry run writes nothing");
}

#[test]
fn hostile_commands_and_wrong_flags_are_usage_errors_that_write_nothing() {
    let env = Env::new();
    let refused = |out: &Output, words: &str| {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
        assert!(stderr(out).contains(words), "{}", stderr(out));
    };
    refused(
        &run(bridge(&env, "h", "", &[])),
        "--bridge: the command is empty",
    );
    refused(
        &run(bridge(&env, "h", " \t ", &[])),
        "--bridge: the command is blank",
    );
    // `sh -c -x` would take the command for the shell's own options.
    for line in ["-x echo hi", "+e agent"] {
        let flag = format!("--bridge={line}");
        refused(
            &run(env.cmd(&["dispatch", "-e", "bridge", &flag, "--prompt", "p"])),
            "which the shell would read as its own option",
        );
    }
    let mut c = env.cmd(&["dispatch", "-e", "acp", "--acp=-i", "--prompt", "p"]);
    c.env_remove("VF_ACP_CMD");
    refused(&run(c), "--acp: the command begins with `-`");
    let huge = "x".repeat(40_000);
    refused(
        &run(bridge(&env, "h", &huge, &[])),
        "at most 32767 are allowed",
    );
    let mut c = env.cmd(&["dispatch", "-e", "bridge", "--unit", "h", "--prompt", "p"]);
    c.env("VIBEFLOW_AI", "");
    refused(&run(c), "VIBEFLOW_AI: the command is empty");
    refused(
        &run(env.cmd(&["dispatch", "-e", "bridge", "--unit", "h", "--prompt", "p"])),
        "bridge: no command to run: give --bridge \"CMD\" or set VIBEFLOW_AI",
    );
    refused(
        &run(env.cmd(&["dispatch", "-e", "codex", "--bridge", "x", "--prompt", "p"])),
        "--bridge and --bridge-output go with --engine bridge, not codex",
    );
    refused(
        &run(bridge(&env, "h", "x", &["--bridge-output", "agy"])),
        "not a JSON family",
    );
    refused(
        &run(bridge(&env, "h", "x", &["--engine-bin", "/bin/true"])),
        "--engine-bin does not apply",
    );
    refused(&run(bridge(&env, "h", "x", &["--model", "m"])), "bridge");
    refused(
        &run(env.cmd(&["dispatch", "-e", "acp", "--unit", "h", "--prompt", "p"])),
        "acp: no command to run: give --acp \"CMD\" or set VF_ACP_CMD",
    );
    refused(
        &run(env.cmd(&["dispatch", "-e", "acp:nope", "--prompt", "p"])),
        "engine acp has no preset \"nope\" (one of: gemini, opencode)",
    );
    refused(
        &run(env.cmd(&["dispatch", "-e", "codex", "--acp", "x", "--prompt", "p"])),
        "--acp goes with --engine acp, not codex",
    );
    refused(
        &run(env.cmd(&["dispatch", "-e", "bridge:x", "--prompt", "p"])),
        "has no preset",
    );
    assert!(!env.state().exists(), "a refused dispatch writes nothing");
}

#[test]
fn an_agent_that_is_not_found_is_missing_with_a_marker_that_says_so() {
    let env = Env::new();
    let out = run(bridge(&env, "nf", "./no-such-agent", &["--output", "json"]));
    // The shell starts; it is the agent that is missing (exit 127).
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(r["exitCode"], 127);
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("bridge exited with status 127"),
        "{r}"
    );
}

#[test]
fn a_rerun_and_a_resume_replay_the_answers_and_keep_the_command() {
    let env = Env::new();
    let body = r#"#!/bin/sh
cat > "$(dirname "$0")/prompt.$$"
echo "answer of the run"
[ -e "$(dirname "$0")/fail" ] && exit 1
exit 0
"#;
    write_exe(&env.path().join("agent.sh"), body);
    std::fs::write(env.path().join("fail"), "").unwrap();
    let out = run(bridge(&env, "rr", "./agent.sh", &["--output", "json"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(last_json(&out)["start"], Value::Null);
    // A re-run of the failed unit (its command from the marker): a fresh
    // start primed with its answer.
    let rerun = [
        "dispatch", "-e", "bridge", "--unit", "rr", "--prompt", "again", "--output", "json",
    ];
    let out = run(env.cmd(&rerun));
    let r = last_json(&out);
    assert_eq!(
        json!({"start": r["start"], "replay": r["replay"], "attempt": r["attempt"]}),
        json!({"start": "replay", "replay": {"source": 1, "replayed": 1, "truncated": 0},
            "attempt": 2})
    );
    // `vf resume` needs no --bridge: the marker holds the command.
    std::fs::remove_file(env.path().join("fail")).unwrap();
    let out = run(env.cmd(&["resume", "rr", "--output", "json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(
        (r["start"].clone(), r["attempt"].clone()),
        (json!("replay"), json!(3))
    );
    assert_eq!(env.marker("rr")["command"], json!({"line": "./agent.sh"}));
    let prompts: Vec<String> = std::fs::read_dir(env.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("prompt."))
        .map(|e| read_text(&e.path()))
        .collect();
    let primed = prompts
        .iter()
        .filter(|p| p.contains("NOT a continued session"));
    assert_eq!(primed.count(), 2, "{prompts:?}");
}

#[test]
fn bridge_output_projects_a_known_json_family_without_claiming_its_session() {
    let env = Env::new();
    let cap = "codex/0.171.0/a_json.stdout.jsonl";
    let line = format!("cat {}", fixture(cap).display());
    let out = run(bridge(
        &env,
        "fam",
        &line,
        &["--bridge-output", "codex", "--output", "jsonl"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = jsonl(&out.stdout);
    let r = env.normalized(events.last().unwrap());
    // The answer and summary are codex's (as engine_captures pins them); the
    // codex thread id is no session of the bridge's: none is claimed or shown.
    let codex = env.replay_capture("codex", "ref", cap, &[]);
    let codex = last_json(&codex);
    let mut want = bridge_result("fam", "done", 0, codex["answer"].as_str().unwrap());
    want["kind"] = "dispatch.result".into();
    want["summary"] = codex["summary"].clone();
    want["usage"] = codex["usage"].clone();
    assert_json_eq(&r, &want);
    assert_eq!(env.marker("fam")["engineSessionId"], Value::Null);
    assert_eq!(
        env.marker("fam")["command"],
        json!({"line": line, "output": "codex"})
    );
    assert!(
        events.iter().all(|e| e["sessionId"].is_null()),
        "an event shows a session id"
    );
    assert!(events.iter().all(|e| e["kind"] != "system.unknownFrame"));
    let started = events.iter().find(|e| e["label"] == "Session started");
    assert!(
        started.is_some(),
        "codex's frames were not read: {events:?}"
    );
}

/// `vf orchestrate PLAN` with `VIBEFLOW_AI` set, which must succeed.
fn orchestrate(env: &Env, plan: &std::path::Path, vibeflow_ai: &str) {
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "json"]);
    c.env("VIBEFLOW_AI", vibeflow_ai);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_plan_unit_carries_its_bridge() {
    let env = Env::new();
    write_exe(&env.path().join("agent.sh"), ANSWERING);
    let plan = env.write(
        "plan.toml",
        "[[unit]]\nname = \"pb\"\nengine = \"bridge\"\nbridge = \"./agent.sh --plan\"\nprompt = \"from the plan\"\n",
    );
    orchestrate(&env, &plan, "./not-this-one");
    let m = env.marker("pb");
    assert_eq!(
        json!({"state": m["state"], "command": m["command"], "summary": m["summary"]}),
        json!({"state": "done", "command": {"line": "./agent.sh --plan"},
            "summary": {"confidence": 0.9, "files": []}})
    );
    assert_eq!(read_text(&env.path().join("prompt.seen")), "from the plan");
    // Without the key, VIBEFLOW_AI supplies the command.
    let plan = env.write(
        "env.toml",
        "[[unit]]\nname = \"pe\"\nengine = \"bridge\"\nprompt = \"p\"\n",
    );
    orchestrate(&env, &plan, "./agent.sh --env");
    assert_eq!(
        env.marker("pe")["command"],
        json!({"line": "./agent.sh --env"})
    );
    // The keys are refused where they do not belong, and a fallback cannot name it.
    let bad = [
        (
            "engine = \"codex\"\nbridge = \"x\"",
            "`bridge` and `bridge_output` go with engine = \"bridge\"",
        ),
        (
            "engine = \"bridge\"\nbridge = \"\"",
            "`bridge`: the command is empty",
        ),
        (
            "engine = \"codex\"\nfallback = [\"bridge\"]",
            "`fallback` cannot name bridge",
        ),
        ("engine = \"acp:nope\"", "has no preset"),
        (
            "engine = \"acp\"",
            "acp has no command: set `acp` or VF_ACP_CMD",
        ),
        (
            "engine = \"bridge\"\nbridge = \"x\"\nacp = \"y\"",
            "`acp` goes with engine = \"acp\"",
        ),
        (
            "engine = \"bridge\"",
            "bridge has no command: set `bridge` or VIBEFLOW_AI",
        ),
    ];
    for (keys, words) in bad {
        let p = env.write(
            "bad.toml",
            format!("[[unit]]\nname = \"x\"\nprompt = \"p\"\n{keys}\n"),
        );
        let out = run(env.cmd(&["orchestrate", p.to_str().unwrap()]));
        assert_eq!(out.status.code(), Some(2), "{keys}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{keys}: {}", stderr(&out));
    }
}

#[test]
fn doctor_resolves_the_configured_bridge_and_auto_never_picks_it() {
    let env = Env::new();
    let agent = write_exe(&env.write("bin/my-agent", ""), ANSWERING);
    let path = format!("{}:/usr/bin:/bin", env.path().join("bin").display());
    let mut c = env.cmd(&["doctor", "-e", "bridge", "--json"]);
    c.env("VIBEFLOW_AI", "my-agent --yes")
        .env("PATH", &path)
        .env("VF_TEST_SANDBOX", "none");
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = json!([{
        "engine": "bridge",
        "path": agent.display().to_string(),
        "version": null,
        "verification": null,
        "missingFlags": [],
        "verdict": "ready",
        "reasons": [],
        "warnings": ["unverifiable: vf resolved the first token \"my-agent\" of VIBEFLOW_AI; it checks no version or flags"],
        "notes": [],
        "sandbox": {"state": "unenforced", "mechanism": null, "missing": ["simulated: none"]},
    }]);
    assert_json_eq(&stdout_json(&out), &want);
    let mut c = env.cmd(&["doctor", "-e", "bridge", "--json"]);
    c.env("VIBEFLOW_AI", "not-an-agent-anywhere");
    let out = run(c);
    assert_eq!(out.status.code(), Some(1));
    let r = &stdout_json(&out)[0];
    assert_eq!(
        (r["verdict"].clone(), r["path"].clone()),
        (json!("missing"), Value::Null)
    );
    assert_eq!(
        r["reasons"],
        json!([
            "the command's first token does not resolve: not-an-agent-anywhere: not found on PATH"
        ])
    );
    // `auto` chooses among the CLIs only.
    let out = run(env.cmd(&[
        "dispatch",
        "-e",
        "auto",
        "--prompt",
        "p",
        "--dry-run",
        "--json",
    ]));
    assert_eq!(stdout_json(&out)["engine"], "claude");
}
