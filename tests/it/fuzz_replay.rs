//! `vf replay` end to end on damaged streams, through the built binary
//! (issue 11; docs/FUZZING.md): exit 0, never a panic or a hang, every
//! `--output jsonl` line valid JSON with a `rawRange` inside the file, no
//! payload of unknown frames. A handful of cases: each one starts processes.
//! Budget: `VF_FUZZ_CASES=N` runs N cases.

use crate::common;
use crate::fuzz_support;

use std::time::Duration;

use fuzz_support::mutate::{
    frames_of, frames_to_lines, inject, injection, join_lines, mutation, secret,
};
use fuzz_support::{Capture, captures, config, json_captures};
use proptest::prelude::*;
use serde_json::Value;

/// A replay must never take this long, even in a debug build under load.
const LIMIT: Duration = Duration::from_secs(60);

/// Lines as `vf replay` counts them: a last line without a newline counts.
fn line_count(bytes: &[u8]) -> u64 {
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

/// Runs `vf replay` on `bytes` (as a file or on stdin) in both output modes.
fn replay(c: &Capture, bytes: &[u8], stdin: bool, secrets: &[String]) -> Result<(), String> {
    let dir = common::tempdir();
    let file = dir.path().join("attempt-1.stdout.log");
    std::fs::write(&file, bytes).unwrap();
    for output in ["jsonl", "human"] {
        let mut cmd = common::vf_cli();
        cmd.arg("replay")
            .arg(if stdin {
                "-".as_ref()
            } else {
                file.as_os_str()
            })
            .args([
                "--cli",
                c.cli.as_str(),
                "--cli-version",
                &c.version.to_string(),
            ])
            .args(["--transport", c.transport.as_str(), "--output", output])
            .timeout(LIMIT);
        if stdin {
            cmd.write_stdin(bytes.to_vec());
        }
        let out = cmd.output().map_err(|e| e.to_string())?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) {
            return Err(format!("{output}: exit {:?}: {err}", out.status));
        }
        if output == "jsonl" {
            check_jsonl(&out.stdout, line_count(bytes), secrets)?;
        }
    }
    Ok(())
}

fn check_jsonl(stdout: &[u8], lines: u64, secrets: &[String]) -> Result<(), String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("stdout is not UTF-8: {e}"))?;
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).map_err(|e| format!("invalid JSON {l:?}: {e}"))?;
        let (start, end) = (&v["rawRange"]["start"], &v["rawRange"]["end"]);
        let (Some(start), Some(end)) = (start.as_u64(), end.as_u64()) else {
            return Err(format!("no rawRange: {l}"));
        };
        let startup = start == 0 && end == 0 && v["level"] == "warning";
        if !startup && (start == 0 || start > end || end > lines) {
            return Err(format!("rawRange {start}..{end} outside 1..={lines}: {l}"));
        }
        if let Some(s) = secrets.iter().find(|s| l.contains(s.as_str())) {
            return Err(format!("payload word {s} in {l}"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn replay_of_damaged_streams_exits_0_with_valid_jsonl(
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
        stdin in any::<bool>(),
    ) {
        let c = pick.get(captures());
        let r = replay(c, &c.damaged(&mutations, true), stdin, &[]);
        prop_assert!(r.is_ok(), "{}: {} after {mutations:?}", c.name, r.unwrap_err());
    }

    #[test]
    fn replay_never_shows_unknown_frame_payload(
        pick in any::<prop::sample::Index>(),
        injections in prop::collection::vec(injection(), 1..4),
    ) {
        let c = *pick.get(&json_captures());
        let t = c.target();
        let mut frames = frames_of(&c.bytes).unwrap();
        for (i, inj) in injections.iter().enumerate() {
            inject(&mut frames, &t, i, inj);
        }
        let secrets: Vec<String> = (0..injections.len()).chain([999]).map(secret).collect();
        let bytes = join_lines(&frames_to_lines(&frames, &[]), false);
        let r = replay(c, &bytes, false, &secrets);
        prop_assert!(r.is_ok(), "{}: {} with {injections:?}", c.name, r.unwrap_err());
    }
}

#[test]
fn line_count_matches_the_reader() {
    assert_eq!(line_count(b""), 0);
    assert_eq!(line_count(b"a"), 1);
    assert_eq!(line_count(b"a\n"), 1);
    assert_eq!(line_count(b"a\n\nb"), 3);
}
