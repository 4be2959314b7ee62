//! `vf workspace init --engine agy` and `vf hook`: the files, idempotence,
//! no overwrite of a user's edit, hostile names and planted links.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{assert_json_eq, files_under, read_text, stderr, tempdir, vf_cli};

fn init(dir: &Path, extra: &[&str]) -> std::process::Output {
    vf_cli()
        .args(["workspace", "init", "--engine", "agy", "--dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

/// An input dir with instructions, a skill and an MCP file; the workspace dir.
fn inputs(root: &Path) -> (PathBuf, Vec<String>) {
    let inp = root.join("in");
    let skill = inp.join("lint");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(skill.join("SKILL.md"), "---\nname: lint\n---\nLint it.\n").unwrap();
    std::fs::write(skill.join("scripts/run.sh"), "cargo clippy\n").unwrap();
    std::fs::write(inp.join("reviewer.md"), "Review carefully.").unwrap();
    std::fs::write(
        inp.join("servers.json"),
        r#"{"mcpServers":{"fs":{"command":"mcp-fs","args":["--root","."],"env":{"A":"1"}}}}"#,
    )
    .unwrap();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    let args = vec![
        "--agent".into(),
        "reviewer".into(),
        "--instructions".into(),
        s(inp.join("reviewer.md")),
        "--skill".into(),
        s(skill),
        "--mcp".into(),
        s(inp.join("servers.json")),
        "--hooks".into(),
        "--deny-tool".into(),
        "run_command".into(),
    ];
    (ws, args)
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut v: Vec<_> = files_under(dir)
        .into_iter()
        .map(|p| {
            let s = read_text(&p);
            (p.strip_prefix(dir).unwrap().to_path_buf(), s)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn init_writes_the_files_and_a_second_run_changes_nothing() {
    let t = tempdir();
    let (ws, args) = inputs(t.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = init(&ws, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Compared as paths: Windows writes them with `\`.
    let files: Vec<PathBuf> = snapshot(&ws).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        files,
        [
            ".agents/agents/reviewer/agent.md",
            ".agents/hooks.json",
            ".agents/mcp_config.json",
            ".agents/skills/lint/SKILL.md",
            ".agents/skills/lint/scripts/run.sh",
            ".vf-generated.json",
            "AGENTS.md",
        ]
        .map(PathBuf::from)
    );
    assert_eq!(
        read_text(&ws.join(".agents/agents/reviewer/agent.md")),
        "---\nname: reviewer\ndescription: The reviewer agent of this workspace.\n---\n\nReview carefully.\n"
    );
    assert_eq!(
        read_text(&ws.join(".agents/skills/lint/scripts/run.sh")),
        "cargo clippy\n"
    );
    let hooks: Value = serde_json::from_str(&read_text(&ws.join(".agents/hooks.json"))).unwrap();
    let cmd = |ev: &str| {
        json!([{"matcher": ".*", "hooks": [{"type": "command", "timeout": 10,
            "command": format!("vf hook {ev} --log .vibeflow/agy-hooks.jsonl --deny-tool run_command")}]}])
    };
    assert_json_eq(
        &hooks,
        &json!({"hooks": {"PreToolUse": cmd("pre-tool-use"), "PostToolUse": cmd("post-tool-use")}}),
    );
    let mcp: Value = serde_json::from_str(&read_text(&ws.join(".agents/mcp_config.json"))).unwrap();
    assert_json_eq(
        &mcp,
        &json!({"mcpServers": {"fs": {"command": "mcp-fs", "args": ["--root", "."], "env": {"A": "1"}}}}),
    );
    let agents = read_text(&ws.join("AGENTS.md"));
    assert!(agents.contains("these files are no guardrail"), "{agents}");

    let before = snapshot(&ws);
    let again = init(&ws, &args);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "nothing to do: every file is as vf wrote it\n"
    );
    assert_eq!(snapshot(&ws), before);

    // A user's edit is refused, naming the file, and nothing at all is written.
    std::fs::write(ws.join(".agents/hooks.json"), "{}\n").unwrap();
    std::fs::remove_file(ws.join(".agents/skills/lint/scripts/run.sh")).unwrap();
    let edited = snapshot(&ws);
    let refused = init(&ws, &args);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        stderr(&refused),
        "vf: refusing to overwrite .agents/hooks.json (edited since vf wrote it) (--force replaces it); nothing was written\n"
    );
    assert_eq!(snapshot(&ws), edited);
    let forced = init(&ws, &[&args[..], &["--force"]].concat());
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_eq!(snapshot(&ws), before);
}

#[test]
fn a_foreign_file_is_refused_and_hostile_input_writes_nothing() {
    let t = tempdir();
    let (ws, _) = inputs(t.path());
    std::fs::create_dir_all(ws.join(".agents")).unwrap();
    std::fs::write(ws.join(".agents/hooks.json"), "{\"mine\":1}\n").unwrap();
    let out = init(&ws, &["--hooks"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(".agents/hooks.json (not written by vf)"),
        "{}",
        stderr(&out)
    );
    let instr = t.path().join("in/reviewer.md");
    let instr = instr.to_str().unwrap();
    for bad in ["../x", "/abs", "a/b", ".hidden"] {
        let out = init(&ws, &["--agent", bad, "--instructions", instr]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("invalid agent name"),
            "{bad}: {}",
            stderr(&out)
        );
    }
    let bad_mcp = t.path().join("bad.json");
    std::fs::write(&bad_mcp, r#"{"mcpServers":{"x":{"args":["a"]}}}"#).unwrap();
    let out = init(&ws, &["--mcp", bad_mcp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "vf: --mcp: server \"x\" has no `command` or `url` string\n"
    );
    let other = vf_cli()
        .args(["workspace", "init", "--engine", "claude", "--dir"])
        .arg(&ws)
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(2));
    assert_eq!(
        snapshot(&ws),
        vec![(PathBuf::from(".agents/hooks.json"), "{\"mine\":1}\n".into())]
    );
}

#[cfg(unix)]
#[test]
fn a_link_planted_in_agents_is_refused_even_with_force() {
    let t = tempdir();
    let (ws, _) = inputs(t.path());
    let outside = t.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(ws.join(".agents")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join(".agents/agents")).unwrap();
    let instr = t.path().join("in/reviewer.md");
    for extra in [&[][..], &["--force"][..]] {
        let args = [
            &["--agent", "r", "--instructions", instr.to_str().unwrap()][..],
            extra,
        ]
        .concat();
        let out = init(&ws, &args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(".agents/agents is a symbolic link"),
            "{}",
            stderr(&out)
        );
    }
    assert!(files_under(&outside).is_empty());
    assert!(!ws.join("AGENTS.md").exists());
    // A link inside a skill directory is refused too.
    let skill = t.path().join("in/lint");
    std::os::unix::fs::symlink("/etc/passwd", skill.join("passwd")).unwrap();
    let out = init(&ws, &["--skill", skill.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn hook_refuses_a_denied_tool_and_logs_every_call() {
    let t = tempdir();
    let log = t.path().join("logs/hooks.jsonl");
    let run = |event: &str, payload: &str| {
        vf_cli()
            .args(["hook", event, "--deny-tool", "run_command", "--log"])
            .arg(&log)
            .write_stdin(payload)
            .output()
            .unwrap()
    };
    let denied = run("pre-tool-use", r#"{"tool_name":"run_command"}"#);
    assert_eq!(denied.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&denied.stdout),
        "{\"decision\":\"block\",\"reason\":\"vf: the tool \\\"run_command\\\" is denied\"}\n"
    );
    let allowed = run("pre-tool-use", r#"{"tool_name":"view_file"}"#);
    assert_eq!(allowed.status.code(), Some(0));
    assert!(allowed.stdout.is_empty());
    let after = run("post-tool-use", r#"{"tool_name":"run_command"}"#);
    assert_eq!(after.status.code(), Some(0));
    let garbage = run("pre-tool-use", "not json");
    assert_eq!(garbage.status.code(), Some(2));
    let lines: Vec<Value> = read_text(&log)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("at");
            v
        })
        .collect();
    assert_json_eq(
        &Value::Array(lines),
        &json!([
            {"event": "pre-tool-use", "tool": "run_command", "allow": false, "reason": "vf: the tool \"run_command\" is denied"},
            {"event": "pre-tool-use", "tool": "view_file", "allow": true, "reason": null},
            {"event": "post-tool-use", "tool": "run_command", "allow": true, "reason": null},
            {"event": "pre-tool-use", "tool": null, "allow": false, "reason": "the hook payload is not a JSON object"},
        ]),
    );
}

/// `vf dispatch --engine agy --agent NAME` (and the plan key `agent`):
/// refused (exit 2, nothing written) until `vf workspace init --engine agy
/// --agent NAME` wrote the agent's file, then `--agent NAME` goes before
/// `-p`; any other engine refuses the flag.
// Runs the fake engine, a bash script (platform_skips names it).
#[cfg(unix)]
#[test]
fn dispatch_agent_needs_the_workspace_file_then_passes_it() {
    let env = crate::common::Env::new();
    let bin = env.fake_for("agy");
    let log = env.path().join("args.log");
    let answer = env.write("answer.txt", "ok\n");
    env.write(
        "bin/agy.env",
        format!(
            "FAKE_STDOUT={}\nFAKE_ARGS_LOG={}\n",
            answer.display(),
            log.display()
        ),
    );
    let go = |engine: &str| {
        env.run(&[
            "dispatch",
            "--engine",
            engine,
            "--agent",
            "reviewer",
            "--prompt",
            "look",
            "--unit",
            "a1",
            "--engine-bin",
            bin.to_str().unwrap(),
            "--json",
        ])
    };
    let out = go("agy");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("vf workspace init --engine agy --agent reviewer --instructions FILE"),
        "{err}"
    );
    assert!(
        !env.state().join("units").exists(),
        "a refused command writes nothing"
    );
    let out = go("codex");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--agent is agy's only"),
        "{}",
        stderr(&out)
    );
    let md = env.write("reviewer.md", "Review carefully.");
    let made = init(
        env.path(),
        &[
            "--agent",
            "reviewer",
            "--instructions",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(made.status.code(), Some(0), "{}", stderr(&made));
    let out = go("agy");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = read_text(&log);
    let argv: Vec<&str> = text.split("--stdin--").next().unwrap().lines().collect();
    assert_eq!(argv, ["--agent", "reviewer", "-p", "look"]);
    // The plan key, the same way.
    let plan = env.write(
        "plan.toml",
        "[[unit]]\nname = \"p1\"\nengine = \"agy\"\nagent = \"reviewer\"\nprompt = \"plan look\"\n",
    );
    let mut c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "jsonl"]);
    c.env("VF_AGY_BIN", &bin);
    let out = crate::common::run_bounded(c, std::time::Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = read_text(&log);
    let argv: Vec<&str> = text.split("--stdin--").next().unwrap().lines().collect();
    assert_eq!(argv, ["--agent", "reviewer", "-p", "plan look"]);
}
