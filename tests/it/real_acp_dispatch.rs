//! The real-engine tier for ACP through `vf dispatch` (issue 26): the presets
//! `acp:gemini` and `acp:opencode` run by the whole runtime inside
//! scripts/engine-sandbox.sh (loopback only, the fake model server): a JSON
//! run with the server's usage figures and the agent's version, an exact
//! resume by `--session` (`session/load`), a shell tool run under
//! `--skip-permissions`, a write the default policy rejects (the file stays
//! unwritten), and SIGTERM mid-tool: `session/cancel`, the unit interrupted,
//! no process of the agent or its tool left in the sandbox.
//!
//! Skips like tests/it/real_engines.rs when the CLIs are absent, and fails
//! then under `VF_REAL_ENGINES=1`. Linux only (`unshare -n`).

use serde_json::Value;

use crate::common;
use crate::sandbox::{Run, Sandbox, available, memo_id, versions};

/// `vf dispatch --engine acp:<engine> --unit UNIT --prompt P --output jsonl EXTRA`.
fn dispatch(sb: &Sandbox, unit: &str, prompt: &str, extra: &[&str]) -> Run {
    let preset = format!("acp:{}", sb.engine);
    let mut args = vec!["dispatch", "--engine", &preset, "--unit", unit];
    args.extend_from_slice(&["--prompt", prompt, "--output", "jsonl"]);
    args.extend_from_slice(extra);
    Run::from(sb.vf(&args), unit)
}

/// Done, with no drift, the session id the agent named in its raw log, a
/// summary and the agent's answer.
fn assert_done(run: &Run, what: &str) {
    let r = &run.result;
    assert_eq!(run.code, Some(0), "{what}: {r}\n{}", run.stderr);
    assert_eq!(
        (&r["state"], &r["unknownFrames"]),
        (&"done".into(), &0.into()),
        "{what}: {r}"
    );
    let log = std::fs::read_to_string(r["stdoutLog"].as_str().unwrap()).unwrap();
    let sid = r["sessionId"].as_str().unwrap_or("(none)");
    assert!(
        log.contains(&format!("\"sessionId\":\"{sid}\"")),
        "{what}: {sid}\n{log}"
    );
    assert!(r["summary"].is_object(), "{what}: {r}");
    assert!(
        run.kinds().contains(&"message.taskAgent"),
        "{what}: {:?}",
        run.kinds()
    );
}

fn labels(run: &Run) -> Vec<&str> {
    let status = run.events.iter().filter(|e| e["kind"] == "system.status");
    status.filter_map(|e| e["label"].as_str()).collect()
}

fn dispatch_tier(engine: &'static str) {
    for version in versions(engine) {
        if !available(engine, &version) {
            continue;
        }
        let what = format!("acp:{engine} {version}");
        let sb = Sandbox::new(engine, &version);
        json_then_resume(&sb, &what);
        tool_and_rejected_write(&sb, &what);
        sigterm_mid_tool(&sb, &what);
    }
}

/// A JSON run (the server's usage, the agent's own version), then an exact
/// resume of its session: the fake server proves turn 1 was sent again.
fn json_then_resume(sb: &Sandbox, what: &str) {
    let memo = memo_id();
    let p1 = format!("LAB-JSON Reply with a fenced json block. (LAB-MEMO-{memo})");
    let json = dispatch(sb, "json", &p1, &[]);
    assert_done(&json, what);
    let r = &json.result;
    assert_eq!(r["engineVersion"], sb.version.as_str(), "{what}: {r}");
    let u = &r["usage"];
    let figures = (&u["inputTokens"], &u["outputTokens"], &u["totalTokens"]);
    assert_eq!(
        figures,
        (&100.into(), &20.into(), &120.into()),
        "{what}: {r}"
    );
    let sid = r["sessionId"].as_str().unwrap().to_string();

    if engine_names_files_by_minute(sb) {
        crate::real_acp::next_minute();
    }
    let p2 = format!("LAB-RESUME Continue and report again. (LAB-RECALL-{memo})");
    let resumed = dispatch(sb, "json-resumed", &p2, &["--session", &sid]);
    assert_done(&resumed, what);
    let answer = resumed.result["answer"].as_str().unwrap_or("");
    assert!(
        answer.starts_with("Resumed."),
        "{what}: turn 1 was lost: {answer:?}"
    );
    let word = format!("LAB-MEMO-{memo}");
    let log = sb.server_log();
    let seen = log.iter().any(|e| e["continuity"]["memo"] == word.as_str());
    assert!(
        seen,
        "{what}: the server never saw {word} in a resume request"
    );
    assert_eq!(resumed.result["sessionId"], sid.as_str(), "{what}");
    let log = std::fs::read_to_string(resumed.result["stdoutLog"].as_str().unwrap()).unwrap();
    let loaded = log.contains("\"session/load\"") && !log.contains("\"session/new\"");
    assert!(loaded, "{what}: not resumed by session/load\n{log}");
}

/// gemini names a session's file by the minute it began (real_acp.rs).
fn engine_names_files_by_minute(sb: &Sandbox) -> bool {
    sb.engine == "gemini"
}

/// A shell tool allowed by `--skip-permissions`; a write rejected by the
/// default policy, recorded as an event, the file never written.
fn tool_and_rejected_write(sb: &Sandbox, what: &str) {
    let tool_prompt = "LAB-TOOL Run the shell command 'echo hello' and report what it printed.";
    let tool = dispatch(sb, "tool", tool_prompt, &["--skip-permissions"]);
    assert_done(&tool, what);
    assert!(
        tool.kinds().contains(&"toolBurst"),
        "{what}: {:?}",
        tool.events
    );
    // (gemini runs `echo` without asking: no permission row is promised.)
    let answer = tool.result["answer"].as_str().unwrap_or("");
    assert!(answer.contains("hello"), "{what}: {}", tool.result);

    let write = dispatch(
        sb,
        "write",
        "LAB-WRITE Create lab-written.txt with the shell.",
        &[],
    );
    assert_eq!(write.result["state"], "done", "{what}: {}", write.result);
    let rejected = labels(&write).contains(&"Permission rejected");
    assert!(rejected, "{what}: {:?}", labels(&write));
    let written = sb.workdir().join("lab-written.txt");
    assert!(!written.exists(), "{what}: the file was written");
}

/// The sandboxed script: dispatch a tool that sleeps, SIGTERM vf once the
/// tool runs, then list what still runs in the sandbox (its own pid
/// namespace) once vf has exited.
const SIGTERM_SCRIPT: &str = r#"
vf="$1"; engine="$2"; out="$HOME/term"
"$vf" dispatch --engine "acp:$engine" --unit term --skip-permissions --output jsonl \
  --prompt "LAB-TOOL Run the shell command 'sleep 45' and report what it printed." \
  > "$out.jsonl" 2> "$out.err" &
pid=$!
i=0
until ps -eo args | grep -v LAB-TOOL | grep -q '[s]leep 45'; do
  [ $i -lt 1200 ] || break
  sleep 0.1; i=$((i+1))
done
sleep 0.5
ps -eo pid,args > "$out.before"
kill -TERM "$pid"
wait "$pid"
echo "$?" > "$out.rc"
sleep 0.5
ps -eo pid,args > "$out.ps"
"#;

/// SIGTERM while the agent's tool runs: vf sends `session/cancel`, the unit
/// is interrupted (exit 143), and neither the agent nor its tool is left.
fn sigterm_mid_tool(sb: &Sandbox, what: &str) {
    let mut c = sb.command("sh".as_ref());
    c.args(["-c", SIGTERM_SCRIPT, "sh"]);
    c.arg(common::vf()).arg(sb.engine);
    let out = sb.output(c, &[]);
    assert_eq!(out.status.code(), Some(0), "{what}: {out:?}");
    let home = sb.workdir().parent().unwrap().to_path_buf();
    let read = |f: &str| std::fs::read_to_string(home.join(f)).unwrap_or_default();
    let run = Run::from(
        std::process::Output {
            status: out.status,
            stdout: read("term.jsonl").into_bytes(),
            stderr: read("term.err").into_bytes(),
        },
        "term",
    );
    let r = &run.result;
    assert_eq!(read("term.rc").trim(), "143", "{what}: {r}\n{}", run.stderr);
    assert_eq!(
        (&r["state"], &r["reason"]),
        (&"failed".into(), &"interrupted".into()),
        "{what}: {r}"
    );
    let log = std::fs::read_to_string(r["stdoutLog"].as_str().unwrap()).unwrap();
    assert!(log.contains("\"session/cancel\""), "{what}: {log}");
    let marker: Value =
        serde_json::from_str(&read("project/.vibeflow/units/term/marker.json")).unwrap();
    assert_eq!(marker["state"], "failed", "{what}: {marker}");
    let running = |f: &str| -> Vec<String> {
        read(f)
            .lines()
            // The script's own lines (the sandbox's shells) carry its text.
            .filter(|l| !l.contains("LAB-TOOL"))
            .filter(|l| l.contains("sleep 45") || l.contains(" acp") || l.contains("--acp"))
            .map(str::to_string)
            .collect()
    };
    // The check sees the agent and its tool while they run.
    let before = running("term.before");
    assert!(
        before.iter().any(|l| l.contains("sleep 45")),
        "{what}: {before:?}"
    );
    let left = running("term.ps");
    assert!(left.is_empty(), "{what}: left running: {left:?}");
}

#[test]
fn gemini_acp_through_vf_dispatch() {
    dispatch_tier("gemini");
}

#[test]
fn opencode_acp_through_vf_dispatch() {
    dispatch_tier("opencode");
}
