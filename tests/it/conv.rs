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
