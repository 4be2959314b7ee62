//! The sandbox around the other kinds of run (issue 43): a conversation
//! turn, an ACP agent; and what `vf doctor` says of this machine.

use serde_json::Value;

use super::{Lab, PROBES, enforced_here, probes};
use crate::common::{self, fixture, last_json, stderr};

/// A read-only conversation turn on an engine with no read-only mode of its
/// own (opencode) is refused without the sandbox (issue 39); with
/// `--sandbox workspace` the sandbox holds it read-only: no opt-in, the turn
/// `enforced`, and its engine cannot write its working directory.
#[test]
fn a_conversation_turn_is_held_read_only_by_the_sandbox() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    let ok = |out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    };
    ok(&lab
        .vf(&["conv", "new", "d", "--with", "opencode"])
        .output()
        .unwrap());
    let bin = lab.env.fake_for("opencode");
    lab.env.write(
        "bin/opencode.env",
        format!(
            "FAKE_VERSION=1.18.33\nFAKE_STDOUT={}\n{PROBES}\n\
             if [ \"${{1:-}}\" != --version ]; then probe turn >> \"$PROBE_OUT\"; fi\n",
            fixture("opencode/1.18.33/a_json.stdout.jsonl").display()
        ),
    );
    let mut c = lab.vf(&[
        "conv",
        "say",
        "d",
        "--all",
        "--prompt",
        "hello",
        "--json",
        "--sandbox",
        "workspace",
    ]);
    c.env("VF_OPENCODE_BIN", &bin);
    let out = c.output().unwrap();
    ok(&out);
    let turn = &last_json(&out)["turns"][0];
    assert_eq!(turn["readOnly"], "enforced", "{turn}");
    let sb = &turn["result"]["policy"]["sandbox"];
    assert_eq!(
        (sb["mode"].as_str(), sb["state"].as_str()),
        (Some("read-only"), Some("enforced")),
        "{turn}"
    );
    let got = probes(&lab.probe_file());
    assert_eq!(
        (
            got["turn:cwd"].as_str(),
            got["turn:home"].as_str(),
            got["turn:tmp"].as_str()
        ),
        ("refused", "refused", "ok"),
        "{got:?}"
    );
}

/// An ACP agent (and what it starts) runs in the sandbox like any engine.
#[test]
fn an_acp_agent_runs_confined() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    let agent = common::root().join("tests/support/fake_acp_agent.py");
    let wrap = lab.env.write(
        "scripts/acp.sh",
        format!(
            "{PROBES}\nprobe agent >> \"$PROBE_OUT\"\nexec python3 {} json\n",
            agent.display()
        ),
    );
    let line = format!("sh {}", wrap.display());
    let out = lab
        .vf(&[
            "dispatch",
            "--engine",
            "acp",
            "--acp",
            &line,
            "--unit",
            "a1",
            "--prompt",
            "x",
            "--output",
            "json",
            "--sandbox",
            "workspace",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["policy"]["sandbox"]["state"], "enforced");
    let got = probes(&lab.probe_file());
    assert_eq!(
        (
            got["agent:cwd"].as_str(),
            got["agent:outside"].as_str(),
            got["agent:ssh"].as_str()
        ),
        ("ok", "refused", "refused"),
        "{got:?}"
    );
}

/// `vf doctor` says whether this machine can hold the sandbox, and with what:
/// a line after the table, and `sandbox` in each engine's JSON report.
#[test]
fn doctor_says_whether_the_sandbox_is_enforced_here() {
    let lab = Lab::new();
    let doctor = |sim: &str, json: bool| {
        let mut args = vec!["doctor", "-e", "bridge"];
        if json {
            args.push("--json");
        }
        let mut c = lab.vf(&args);
        c.env("VF_TEST_SANDBOX", sim).env("VIBEFLOW_AI", "true");
        c.output().unwrap()
    };
    let out = doctor("none", false);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("sandbox (--sandbox): unenforced here (no mechanism): simulated: none"),
        "{text}"
    );
    let v: Value = serde_json::from_slice(&doctor("none", true).stdout).unwrap();
    assert_eq!(v[0]["sandbox"]["state"], "unenforced", "{v}");
    if cfg!(target_os = "linux") && enforced_here(&lab) {
        let v: Value = serde_json::from_slice(&doctor("landlock-abi-2", true).stdout).unwrap();
        let sb = &v[0]["sandbox"];
        assert_eq!(
            (sb["state"].as_str(), sb["mechanism"].as_str()),
            (Some("unenforced"), Some("landlock-abi-2")),
            "{sb}"
        );
        assert!(sb["missing"].to_string().contains("truncate"), "{sb}");
        let text = String::from_utf8_lossy(&doctor("landlock-abi-7", false).stdout).to_string();
        assert!(
            text.contains("sandbox (--sandbox): enforced here by landlock-abi-"),
            "{text}"
        );
    }
}
