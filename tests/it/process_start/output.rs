//! Issue 25, defect 3: a stdout that refuses vf's output. A full device is
//! exit 74 with a message that names stdout, for every command that prints,
//! and what a run saved is unaffected; a closed pipe is success and silence;
//! a stderr that refuses is never a panic.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// What vf says on stderr when stdout refuses the output.
const NOT_WRITTEN: &str = "vf: the output could not be written to stdout: ";

/// The codex stream every run of the fake prints: an answer whose summary
/// is 100 KiB, so that a result, a status listing or a replay is larger
/// than any buffer on the way (64 KiB in a pipe).
fn codex_stream() -> String {
    let summary = json!({ "notes": "x".repeat(100 << 10) });
    let answer = format!("Done.\n\n```json\n{summary}\n```\n");
    [
        json!({"type": "thread.started", "thread_id": "01a229fa-c269-71a3-a12b-439065dbf14b"}),
        json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}}),
        json!({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}),
    ]
    .map(|l| format!("{l}\n"))
    .concat()
}

/// A work dir with the fake as codex, a done unit `u`, an attachment `a`
/// and a conversation `c` with codex.
struct World {
    env: Env,
}

impl World {
    fn new() -> World {
        let env = Env::new();
        env.fake_for("codex");
        let stream = env.write("codex.out", codex_stream());
        env.write(
            "bin/codex.env",
            format!("FAKE_VERSION=0.171.0\nFAKE_STDOUT={}\n", stream.display()),
        );
        env.write("w/.keep", "");
        env.write("doc.md", "a document\n");
        let w = World { env };
        for args in [
            "dispatch --engine codex --unit u --prompt p --output json",
            "attach add doc.md --name a.md",
            "conv new c --with codex",
        ] {
            let out = w.run(&args.split(' ').collect::<Vec<_>>(), Stdio::piped());
            assert!(out.status.success(), "{args}: {}", stderr(&out));
        }
        w
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.env.cmd(args);
        c.env("VF_CODEX_BIN", self.env.fake_for("codex"));
        c
    }

    /// `vf ARGS` with stdout going to `stdout` (bounded).
    fn run(&self, args: &[&str], stdout: Stdio) -> Output {
        let limit = Duration::from_secs(60);
        run_bounded_to(self.cmd(args), stdout, Stdio::piped(), limit)
    }

    /// Every command that prints something, as run for the sink `tag`: what
    /// a command creates (units, plans, attachments) is named after it.
    fn printing_commands(&self, tag: &str) -> Vec<Vec<String>> {
        // A failed unit with a session, for `vf resume`.
        let mut failing = self.cmd(&["dispatch", "--engine", "codex", "--prompt", "p"]);
        failing.args(["--unit", &format!("r-{tag}"), "--output", "json"]);
        failing.env("FAKE_EXIT", "1");
        let out = run_bounded(failing, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let mut all = vec![
            "--help".to_string(),
            "--version".into(),
            "dispatch --help".into(),
            "completions bash".into(),
            "man".into(),
            "engines".into(),
            "engines --json".into(),
            "status".into(),
            "status --json".into(),
            "status u".into(),
            "status u --json".into(),
            "status --total".into(),
            "replay codex.out --cli codex".into(),
            "replay codex.out --cli codex --output jsonl".into(),
            "dispatch --engine codex --unit dry --prompt p --dry-run".into(),
            "dispatch --engine codex --unit dry --prompt p --dry-run --output json".into(),
            format!("resume r-{tag} --output json"),
            "clean u".into(),
            "clean u --json".into(),
            "doctor --engine codex".into(),
            "doctor --engine codex --json".into(),
            "doctor --fix".into(),
            "doctor --fix --json".into(),
            format!("attach add doc.md --name a-{tag}.md"),
            "attach list".into(),
            "attach list --json".into(),
            format!("attach rm a-{tag}.md"),
            format!("conv new n-{tag} --with codex"),
            "conv ls".into(),
            "conv ls --json".into(),
            "conv show c".into(),
            "conv show c --json".into(),
            "conv handoff c --file doc.md".into(),
        ];
        for format in ["json", "jsonl", "human"] {
            let unit = format!("d-{tag}-{format}");
            all.push(format!(
                "dispatch --engine codex --unit {unit} --prompt p --output {format}"
            ));
            let plan = format!("plan-{tag}-{format}.toml");
            let unit = format!("o-{tag}-{format}");
            let text = format!(
                "[[unit]]\nname = {unit:?}\nengine = \"codex\"\nprompt = \"p\"\ncwd = \"w\"\n"
            );
            self.env.write(&plan, text);
            all.push(format!("orchestrate {plan} --output {format}"));
            all.push(format!(
                "conv say c --all --allow-unenforced --prompt q --output {format}"
            ));
        }
        all.iter()
            .map(|a| a.split(' ').map(String::from).collect())
            .collect()
    }

    /// Runs each of [`World::printing_commands`] with stdout going to a
    /// `sink()` of its own: (the arguments, the exit code, stderr).
    fn run_each(&self, tag: &str, sink: fn() -> Stdio) -> Vec<(String, Option<i32>, String)> {
        let commands = self.printing_commands(tag);
        commands
            .iter()
            .map(|args| {
                let out = self.run(&args.iter().map(String::as_str).collect::<Vec<_>>(), sink());
                (args.join(" "), out.status.code(), stderr(&out))
            })
            .collect()
    }

    /// The state of every unit vf lists, by name.
    fn unit_states(&self) -> BTreeMap<String, String> {
        let listed = stdout_json(&self.run(&["status", "--json"], Stdio::piped()));
        let rows = listed.as_array().unwrap().iter();
        let text = |v: &Value| v.as_str().unwrap_or("?").to_string();
        rows.map(|u| (text(&u["unit"]), text(&u["state"])))
            .collect()
    }

    /// Every unit is done, among them the ones the commands for `tag` ran.
    fn assert_all_done(&self, tag: &str) {
        let states = self.unit_states();
        let mut ran = vec!["u".to_string(), format!("r-{tag}")];
        for format in ["json", "jsonl", "human"] {
            ran.push(format!("d-{tag}-{format}"));
            ran.push(format!("o-{tag}-{format}"));
        }
        for unit in &ran {
            assert!(states.contains_key(unit), "{unit} not in {states:?}");
        }
        assert!(states.values().all(|s| s == "done"), "{states:?}");
    }
}

/// `/dev/full`: every write fails with `ENOSPC`.
#[cfg(target_os = "linux")]
fn full() -> Stdio {
    File::options()
        .write(true)
        .open("/dev/full")
        .unwrap()
        .into()
}

/// A pipe whose reader is gone before vf starts: every write is `EPIPE`.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

#[cfg(target_os = "linux")]
#[test]
fn every_printing_command_fails_74_on_a_full_device_and_keeps_its_work() {
    let w = World::new();
    let said = format!("{NOT_WRITTEN}No space left on device");
    for (args, code, err) in w.run_each("full", full) {
        assert_eq!(code, Some(74), "{args}: {err}");
        assert!(
            err.contains(&said) && !err.contains("panicked"),
            "{args}: {err}"
        );
    }
    // What the runs did is saved as usual: every unit is done, the
    // resumed one included, and the handoff is the conversation's.
    w.assert_all_done("full");
    let conv = stdout_json(&w.run(&["conv", "show", "c", "--json"], Stdio::piped()));
    assert!(conv["handoff"]["digest"].is_string(), "{conv}");
    let attached = stdout_json(&w.run(&["attach", "list", "--json"], Stdio::piped()));
    assert_eq!(attached.as_array().map(Vec::len), Some(1), "{attached}");
}

/// `vf … | head`: a reader that goes away is not an error (as ripgrep).
#[test]
fn every_printing_command_ends_quietly_on_a_closed_pipe() {
    let w = World::new();
    for (args, code, err) in w.run_each("pipe", closed_pipe) {
        assert_eq!(code, Some(0), "{args}: {err}");
        // Only vf's warnings about the run (codex in a conversation cannot
        // be held read-only), never an error.
        let warnings = err.lines().all(|l| l.starts_with("vf: warning: "));
        assert!(warnings, "{args}: {err}");
    }
    w.assert_all_done("pipe");
}

/// More than a pipe or a buffer holds: the first 4 KiB are written, then the
/// file may grow no more (`EFBIG`, as a disk that fills up mid-way). The
/// part written is what vf would have printed, and the rest is an error.
#[test]
fn output_cut_off_after_4_kib_is_not_success() {
    let w = World::new();
    for args in [
        &["replay", "codex.out", "--cli", "codex", "--output", "jsonl"][..],
        &["status", "--json"],
        &["status"],
    ] {
        let whole = w.run(args, Stdio::piped()).stdout;
        assert!(whole.len() > 64 << 10, "{args:?}: {} bytes", whole.len());
        let cut = w.env.path().join("cut.out");
        let mut c = w.cmd(args);
        // SAFETY: two plain system calls between fork and exec, nothing that
        // allocates or takes a lock.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: 4096,
                    rlim_max: 4096,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
                Ok(())
            });
        }
        let limit = Duration::from_secs(60);
        let out = run_bounded_to(c, File::create(&cut).unwrap().into(), Stdio::piped(), limit);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(74), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{NOT_WRITTEN}File too large")),
            "{err}"
        );
        let written = std::fs::read(&cut).unwrap();
        assert_eq!(written.len(), 4096, "{args:?}");
        assert!(whole.starts_with(&written), "{args:?}");
    }
}

/// A stderr that refuses (`2>/dev/full`) is not a panic: vf's log lines
/// (`-vvv`) and a failed run's error line are dropped, the run's result
/// and exit code stay.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stderr_is_never_a_panic() {
    let w = World::new();
    let limit = Duration::from_secs(60);
    let mut c = w.cmd(&["-vvv", "dispatch", "--engine", "codex", "--prompt", "p"]);
    c.args(["--unit", "v", "--output", "json"]);
    let out = run_bounded_to(c, Stdio::piped(), full(), limit);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out)["state"], "done");
    let mut c = w.cmd(&["dispatch", "--engine", "codex", "--prompt", "p"]);
    c.args(["--unit", "f", "--output", "human"])
        .env("FAKE_EXIT", "1");
    let out = run_bounded_to(c, Stdio::piped(), full(), limit);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error: codex exited with status 1"), "{text}");
}
