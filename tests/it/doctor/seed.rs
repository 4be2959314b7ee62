//! The seed's remaining doctor checks (issue 25): codex's `exec resume`
//! positional, and the auxiliary bun runtime against its verified version.

use super::*;

/// Issue 25: `codex exec resume` must still take the session id as its first
/// positional (`[SESSION_ID] [PROMPT]` in its usage line).
#[test]
fn a_codex_exec_resume_without_the_session_id_positional_is_degraded() {
    let t = Env::new();
    Fake::new(EngineId::Codex)
        .omit("[SESSION_ID] [PROMPT]")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "codex"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verdict"], "degraded");
    assert_eq!(
        r[0]["missingFlags"],
        serde_json::json!(["exec resume SESSION_ID (positional, before PROMPT)"])
    );
}

/// Issue 25: bun's version is compared with the verified 1.4.0: older is
/// degraded, with the reason; bun never changes the exit status.
#[test]
fn bun_runtime_version_is_judged_against_the_verified_one() {
    for (version, line, reason) in [
        (
            "1.3.4",
            "degraded, 1.3.4",
            Some("version 1.3.4 is older than the verified version (1.4.0); upgrade it"),
        ),
        ("1.4.0", "ready, 1.4.0", None),
        ("1.5.1", "ready, 1.5.1", None),
    ] {
        let t = Env::new();
        Fake::new(EngineId::Codex).install(t.path());
        let bun = write_exe(
            &t.path().join("bun"),
            &format!("#!/bin/sh\n[ \"$1\" = --version ] && echo {version}\n"),
        );
        let out = vf(t.path())
            .args(["doctor", "-e", "codex"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{version}");
        let text = String::from_utf8(out.stdout).unwrap();
        let want = format!(
            "bun (auxiliary runtime): {line} at {} (verified: 1.4.0)\n",
            bun.display()
        );
        let want = match reason {
            Some(r) => format!("{want}          - {r}\n"),
            None => format!("{want}1 of 1 engines ready."),
        };
        assert!(text.contains(&want), "{version}: {text}");
    }

    let empty = Env::new();
    let out = vf(empty.path())
        .args(["doctor", "-e", "codex"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("bun (auxiliary runtime): not found on PATH"),
        "{text}"
    );
}
