//! `vf conv`: golden envelopes (tests/it/conv/envelope.rs) and conversations run
//! on the fake engine.

#[path = "conv/envelope.rs"]
mod envelope;
#[path = "conv/three_turns.rs"]
mod three_turns;

use crate::common;
use common::{Env, stderr, stdout_json};

/// Issue 25 (8d): a handoff document that cannot be used is refused (exit 2)
/// under the name the user gave it, never as a "prompt file".
#[test]
fn handoff_errors_name_the_handoff_file() {
    let env = Env::new();
    assert!(
        env.run(&["conv", "new", "d", "--with", "codex"])
            .status
            .success()
    );
    let missing = env.path().join("missing.md");
    let empty = env.write("empty.md", " \n");
    let binary = env.write("binary.md", [0xff, 0xfe]);
    let huge = env.write("huge.md", "");
    // Sparse: the size alone is over the 16 MiB cap.
    std::fs::File::options()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    for (file, why) in [
        (&missing, "cannot read handoff file "),
        (&empty, " is empty"),
        (&binary, " is not UTF-8"),
        (&huge, " is over the limit of 16777216 bytes (16 MiB)"),
    ] {
        let out = env.run(&["conv", "handoff", "d", "--file", file.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("handoff file {}", file.display())) && err.contains(why),
            "{err}"
        );
        assert!(!err.contains("prompt"), "{err}");
    }
    let conv = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    assert_eq!(conv["handoff"], serde_json::Value::Null, "{conv}");
}

/// `say --require-enforced` with a tool list a participant's engine cannot
/// hold (codex has none; its turn is read-only by default) is refused
/// (exit 2) before the message enters the transcript; contradictory lists too.
#[test]
fn say_require_enforced_is_refused_and_nothing_is_saved() {
    let env = Env::new();
    assert!(
        env.run(&["conv", "new", "d", "--with", "codex"])
            .status
            .success()
    );
    let before = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    let files = common::files_under(&env.state());
    for (extra, why) in [
        (
            &["--deny-tool", "shell", "--require-enforced"][..],
            "require-enforced: codex cannot enforce this policy: codex: tools unenforced",
        ),
        (
            &["--allow-tool", "x", "--deny-tool", "x"][..],
            "tool \"x\" is both allowed and denied",
        ),
    ] {
        let mut args = vec!["conv", "say", "d", "--all", "--prompt", "hello"];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(why), "{extra:?}: {err}");
    }
    let after = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    assert_eq!(after, before);
    assert_eq!(common::files_under(&env.state()), files);
}

/// `conv show` prints a transcript that is not vf's own (an engine's answer,
/// a file from a cloned repository): terminal escapes are shown escaped,
/// never written raw; `--json` keeps the text exact.
#[test]
fn show_never_writes_a_transcripts_escape_raw() {
    let env = Env::new();
    assert!(
        env.run(&["conv", "new", "d", "--with", "codex"])
            .status
            .success()
    );
    let file = env.state().join("conversations/d/conversation.json");
    let mut conv: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let text = "done\u{1b}]0;owned\u{7}\u{1b}[2J\rhidden";
    conv["transcript"] = serde_json::json!([{
        "id": 1, "kind": "response", "from": "codex", "text": text,
        "sha256": vf::ground::text::sha256_hex(text.as_bytes())
    }]);
    std::fs::write(&file, serde_json::to_vec(&conv).unwrap()).unwrap();
    let out = env.run(&["conv", "show", "d"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(
        shown
            .lines()
            .any(|l| l == r"done\u{1b}]0;owned\u{7}\u{1b}[2J\rhidden"),
        "{shown}"
    );
    assert!(!shown.contains(['\u{1b}', '\u{7}', '\r']), "{shown:?}");
    let json = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    assert_eq!(json["transcript"][0]["text"], text);
}

/// Issue 39: a read-only turn on an engine that cannot hold it read-only
/// (opencode; codex on a resumed turn) ran `unenforced` with only a warning.
/// It is refused (exit 2, nothing saved) unless the `say` opts in with
/// `--allow-unenforced`; `--write` needs no opt-in.
#[test]
fn say_refuses_a_read_only_turn_the_engine_cannot_hold() {
    let env = Env::new();
    assert!(
        env.run(&["conv", "new", "d", "--with", "opencode"])
            .status
            .success()
    );
    let before = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    let files = common::files_under(&env.state());
    let bin = env.fake_for("opencode");
    let stdout = common::fixture("opencode/1.18.33/a_json.stdout.jsonl");
    let say = |extra: &[&str]| {
        let mut args = vec!["conv", "say", "d", "--all", "--prompt", "hello", "--json"];
        args.extend_from_slice(extra);
        let mut c = env.cmd(&args);
        c.env("VF_OPENCODE_BIN", &bin)
            .env("FAKE_VERSION", "1.18.33")
            .env("FAKE_STDOUT", &stdout);
        common::run_bounded(c, std::time::Duration::from_secs(60))
    };
    let out = say(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("participant opencode (opencode) cannot be held read-only: give --write"),
        "{err}"
    );
    assert_eq!(
        stdout_json(&env.run(&["conv", "show", "d", "--json"])),
        before
    );
    assert_eq!(common::files_under(&env.state()), files);
    let out = say(&["--allow-unenforced"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let turn = &stdout_json(&out)["turns"][0];
    assert_eq!(turn["readOnly"], "unenforced", "{turn}");
    assert!(
        turn["result"]["warnings"]
            .to_string()
            .contains("opencode: read-only unenforced"),
        "{turn}"
    );
}

/// Issue 39: `say` to a participant whose binary is missing exited 3 after
/// the message had entered the transcript, so saying it again entered it
/// twice. Nothing is written until every addressee can run.
#[test]
fn say_to_a_participant_that_cannot_run_writes_nothing() {
    let env = Env::new();
    assert!(
        env.run(&["conv", "new", "d", "--with", "codex"])
            .status
            .success()
    );
    let before = stdout_json(&env.run(&["conv", "show", "d", "--json"]));
    let files = common::files_under(&env.state());
    let missing = env.path().join("no-such-codex");
    for _ in 0..2 {
        let mut c = env.cmd(&["conv", "say", "d", "--all", "--prompt", "hello"]);
        c.env("VF_CODEX_BIN", &missing);
        let out = common::run_bounded(c, std::time::Duration::from_secs(60));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("no such file"), "{err}");
    }
    assert_eq!(
        stdout_json(&env.run(&["conv", "show", "d", "--json"])),
        before
    );
    assert_eq!(common::files_under(&env.state()), files);
}
