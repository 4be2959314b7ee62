//! What vf's process start-up promises (src/main.rs runs it instead of
//! std's): a reader that closes the pipe early is not an error, closed
//! standard descriptors never capture vf's own files, and engines start
//! with `SIGPIPE` at its default; and how it ends when stdout or stderr
//! refuses its output (process_start/output.rs).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;
use common::{Env, files_under, fixture, read_text, run_bounded, vf, wait_exit, write_exe};

#[path = "process_start/lifeline.rs"]
mod lifeline;
#[path = "process_start/output.rs"]
mod output;

/// `vf replay ... | head -c 100`: vf meets a closed pipe, ends with 0 and
/// says nothing (it is not killed by `SIGPIPE` either).
#[test]
fn a_reader_that_closes_the_pipe_early_ends_vf_quietly() {
    let env = Env::new();
    let one = std::fs::read(fixture("claude/2.1.332/b_tool.stdout.jsonl")).unwrap();
    // Far more output than a pipe holds, so vf is still writing when the
    // reader goes away.
    let log = env.write("big.jsonl", one.repeat(2000));
    let mut child = Command::new(vf())
        .env("VF_CONFIG", common::no_config())
        .args(["replay", "--cli", "claude", "--output", "jsonl"])
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // The read end is dropped here: vf's next writes fail with EPIPE.
    let status = wait_exit(&mut child);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.signal(),
        None,
        "killed by a signal; stderr: {stderr}"
    );
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "");
}

/// `vf dispatch ... <&- >&- 2>&-`: the files vf opens do not land on the
/// standard descriptors, so what vf prints goes nowhere instead of into its
/// lock, logs or markers.
#[test]
fn closed_standard_descriptors_never_capture_vf_files() {
    let env = Env::new();
    let capture = "codex/0.171.0/a_json.stdout.jsonl";
    // jsonl: events are printed while the engine runs and vf's files are open.
    let mut c = env.command("codex", "u", "do the thing", "jsonl", &[]);
    let program = c.get_program().to_owned();
    let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
    c = {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(r#"exec "$0" "$@" >&- 2>&-"#)
            .arg(program)
            .args(args);
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh.current_dir(env.path())
            .env("FAKE_STDOUT", fixture(capture))
            .env("FAKE_VERSION", "0.171.0");
        sh
    };
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let marker = env.marker("u");
    assert_eq!(marker["state"], "done", "{marker}");
    for f in files_under(&env.state()) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = read_text(&f);
        if name == "attempt-1.stdout.log" {
            assert_eq!(text, read_text(&fixture(capture)), "{}", f.display());
        } else if name.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}: {text}", f.display()));
        } else if name == "lock" {
            let pid = text.trim();
            assert!(
                !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()),
                "{name}: {text}"
            );
        } else if name.ends_with(".log") {
            assert_eq!(text, "", "{}", f.display());
        }
    }
}

/// vf ignores `SIGPIPE` for itself; the engine must not inherit that (a
/// `yes | head` inside it would then spin on errors instead of ending). A
/// shell cannot undo a signal ignored when it started, so one that sends
/// itself `SIGPIPE` lives on to say so only if it was ignored (on every Unix,
/// without `/proc`).
#[test]
fn engines_start_with_sigpipe_at_its_default() {
    let env = Env::new();
    let seen = env.path().join("sigign");
    let engine = write_exe(
        &env.path().join("codex"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 0.171.0; exit 0; }}\n\
             cat >/dev/null\nsh -c 'kill -PIPE $$; echo ignored' > '{}'\ncat '{}'\n",
            seen.display(),
            fixture("codex/0.171.0/a_json.stdout.jsonl").display()
        ),
    );
    let out = env.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "u",
        "--prompt",
        "p",
        "--engine-bin",
        engine.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        read_text(&seen),
        "",
        "the engine started with SIGPIPE ignored"
    );
}
