//! `--read-only`, `--allow-tool`, `--deny-tool` on a real dispatch (the fake
//! engine): the argv the engine got, the result's and the marker's
//! `policy`, the warning rows, and an older marker without the field.

use serde_json::{Value, json};

use super::*;

fn logged_args(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let argv = text.split("--stdin--").next().unwrap();
    argv.lines().map(String::from).collect()
}

#[test]
fn an_enforced_policy_reaches_argv_the_result_and_the_marker() {
    let env = Env::new();
    let log = env.path().join("args.log");
    let out = env.dispatch(
        "claude",
        "ro",
        &[
            fake_stdout("claude/2.1.332/a_json_stream.stdout.jsonl"),
            ("FAKE_VERSION", "2.1.332".into()),
            ("FAKE_ARGS_LOG", log.display().to_string()),
        ],
        &["--read-only", "--allow-tool", "Read", "--deny-tool", "Edit"],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(
        logged_args(&log),
        [
            "-p",
            "--permission-mode",
            "plan",
            "--allowedTools=Read",
            "--disallowedTools=Edit",
            "--output-format",
            "stream-json",
            "--verbose"
        ]
    );
    let enforced = json!({"readOnly": "enforced", "tools": "enforced"});
    assert_eq!((&r["policy"], &r["warnings"]), (&enforced, &json!([])));
    assert_eq!(env.marker("ro")["policy"], enforced);
}

#[test]
fn an_unenforced_part_is_a_warning_and_an_unknown_tool_is_never_sent() {
    let env = Env::new();
    let log = env.path().join("args.log");
    let out = env.dispatch(
        "copilot",
        "old",
        &[
            fake_stdout("copilot/1.0.83/v_a_json.stdout.jsonl"),
            ("FAKE_VERSION", "1.0.83".into()),
            ("FAKE_ARGS_LOG", log.display().to_string()),
        ],
        &["--allow-tool", "Read", "--allow-tool", "MyMCP-query"],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    let args = logged_args(&log);
    assert!(
        args.contains(&"--available-tools=MyMCP-query".to_string()),
        "{args:?}"
    );
    assert!(!args.iter().any(|a| a.contains("Read")), "{args:?}");
    assert_eq!(
        r["policy"],
        json!({"readOnly": "off", "tools": "unenforced"})
    );
    assert_eq!(
        r["warnings"],
        json!([
            "copilot 1.0.83: tool \"Read\" is not a name --available-tools knows: not sent",
            "copilot: tools unenforced: allow \"Read\" unknown"
        ])
    );
    // The live output shows them as warning rows too.
    let human = env
        .command(
            "copilot",
            "old-human",
            "x",
            "human",
            &["--allow-tool", "write"],
        )
        .env("FAKE_VERSION", "1.0.83")
        .env(
            fake_stdout("copilot/1.0.83/v_a_json.stdout.jsonl").0,
            fake_stdout("copilot/1.0.83/v_a_json.stdout.jsonl").1,
        )
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&human.stdout).to_string()
        + &String::from_utf8_lossy(&human.stderr);
    assert!(shown.contains("copilot: tools unenforced"), "{shown}");
}

/// A marker written before `policy` existed loads: `vf status` reads it
/// and a resume of it runs (and records the resume's policy).
#[test]
fn an_older_marker_without_policy_is_readable() {
    let env = Env::new();
    // A failed run that recorded its session id: resumable.
    let cap = "codex/0.171.0/d_error500.stdout.jsonl";
    let failing = [fake_stdout(cap), ("FAKE_EXIT", "1".into())];
    let out = env.dispatch("codex", "old", &failing, &[]);
    assert_eq!(out.status.code(), Some(1));
    let mut m = env.marker("old");
    assert_eq!(m["policy"], json!({"readOnly": "off", "tools": "off"}));
    m.as_object_mut().unwrap().remove("policy");
    std::fs::write(
        env.marker_path("old"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    let status = env.run(&["status", "old", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let bin = env.fake_for("codex");
    let mut c = env.cmd(&[
        "resume",
        "old",
        "--read-only",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ]);
    c.envs(failing.iter().map(|(k, v)| (*k, v.as_str())));
    let resumed = run_bounded(c, std::time::Duration::from_secs(60));
    let r: Value = last_json(&resumed);
    assert_eq!(r["attempt"], 2, "{r}");
    // codex's `exec resume` has no `--sandbox`: read-only is unenforced, and said so.
    assert_eq!(
        r["policy"],
        json!({"readOnly": "unenforced", "tools": "off"})
    );
    assert_eq!(env.marker("old")["policy"], r["policy"]);
    assert!(
        r["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("read-only unenforced")),
        "{r}"
    );
}

/// Issue 39: a stream the engine cut short (codex's `output.truncated`)
/// left the unit done with `warnings: []`; the result says so now.
#[test]
fn a_truncated_stream_is_a_warning_in_the_result() {
    let env = Env::new();
    let mut log = std::fs::read(fixture("codex/0.171.0/a_json.stdout.jsonl")).unwrap();
    log.extend_from_slice(b"{\"type\":\"output.truncated\"}\n");
    let stdout = env.write("truncated.jsonl", log);
    let out = env.dispatch(
        "codex",
        "cut",
        &[
            ("FAKE_STDOUT", stdout.display().to_string()),
            ("FAKE_VERSION", "0.171.0".into()),
        ],
        &[],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(
        (&r["state"], &r["warnings"]),
        (&json!("done"), &json!(["codex: its output was truncated"]))
    );
}

/// Issue 39: a patch of a known family that is not itself verified (codex
/// 0.146.9 beside 0.146.0) ran and replayed with no word; only `vf doctor`
/// said so. The run's warnings say it, and so does the replay.
#[test]
fn an_unverified_patch_is_a_warning_in_the_result_and_the_replay() {
    let env = Env::new();
    let out = env.dispatch(
        "codex",
        "patch",
        &[
            fake_stdout("codex/0.171.0/a_json.stdout.jsonl"),
            ("FAKE_VERSION", "0.146.9".into()),
        ],
        &[],
    );
    let r = last_json(&out);
    assert_eq!(out.status.code(), Some(0), "{r}");
    let said = "codex 0.146.9 is unverified: its family 0.146 is verified at 0.146.0";
    assert_eq!(
        (&r["state"], &r["warnings"]),
        (&json!("done"), &json!([said]))
    );
    let replay = vf_cli()
        .args([
            "replay",
            "--cli",
            "codex",
            "--cli-version",
            "0.146.9",
            "--output",
            "jsonl",
        ])
        .arg(fixture("codex/0.171.0/a_json.stdout.jsonl"))
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", stderr(&replay));
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&replay.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (&first["label"], &first["detail"]),
        (&json!("Unverified CLI version"), &json!(said))
    );
}
