//! A three-turn conversation of claude and codex on the fake engine, with
//! every delivered argv and stdin recorded (copilot too, for `say --mcp`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

const CLAUDE_SID: &str = "5e0e0c89-f301-4ba6-8327-7b41f84dc493";
const CODEX_SID: &str = "01a229fa-c269-71a3-a12b-439065dbf14b";
const CODEX_SID2: &str = "01a229fa-c269-71a3-a12b-439065dbf1ff";
const COPILOT_SID: &str = "ec8ce325-8671-4ef3-95bc-0f00475067fa";
const ENGINES: [&str; 3] = ["claude", "codex", "copilot"];

/// The fakes of claude, codex and copilot, each answering what its `.env` says.
struct Fakes {
    env: Env,
    runs: PathBuf,
}

impl Fakes {
    fn new() -> Fakes {
        let env = Env::new();
        let runs = env.path().join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        for e in ENGINES {
            env.fake_for(e);
        }
        Fakes { env, runs }
    }

    /// The next run of `engine` answers `answer` in session `sid`.
    fn answer(&self, engine: &str, sid: &str, answer: &str) {
        let out = match engine {
            "claude" => {
                let cap = read_text(&fixture("claude/2.1.332/a_json.stdout.jsonl"));
                let mut v: Value = serde_json::from_str(cap.lines().next().unwrap()).unwrap();
                v["session_id"] = json!(sid);
                v["result"] = json!(answer);
                format!("{v}\n")
            }
            "copilot" => format!(
                "{}\n{}\n",
                json!({"type": "assistant.message", "data": {"content": answer, "toolRequests": []}}),
                json!({"type": "result", "sessionId": sid, "exitCode": 0})
            ),
            _ => format!(
                "{}\n{}\n{}\n",
                json!({"type": "thread.started", "thread_id": sid}),
                json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}}),
                json!({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}})
            ),
        };
        let stdout = self.env.write(&format!("{engine}.out"), out);
        let bin = self.env.fake_for(engine);
        std::fs::write(
            format!("{}.env", bin.display()),
            format!(
                "FAKE_VERSION={}\nFAKE_STDOUT={}\nFAKE_NAME={engine}\nFAKE_RUN_DIR={}\n",
                version_of(engine),
                stdout.display(),
                self.runs.display()
            ),
        )
        .unwrap();
    }

    /// `vf` with the fakes. These conversations are about delivery: a `say`
    /// without `--write` opts in to the turns its engines cannot hold
    /// read-only (a resumed codex turn, copilot), which `conv.rs` shows
    /// refused without it.
    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut args = args.to_vec();
        if args.get(1) == Some(&"say") && !args.contains(&"--write") {
            args.push("--allow-unenforced");
        }
        let mut c = self.env.cmd(&args);
        for e in ENGINES {
            c.env(format!("VF_{}_BIN", e.to_uppercase()), self.env.fake_for(e));
        }
        c
    }

    fn vf(&self, args: &[&str]) -> std::process::Output {
        run_bounded(self.cmd(args), std::time::Duration::from_secs(60))
    }

    /// Each run's recorded argv and stdin, in start order, as (engine, args, stdin).
    fn delivered(&self) -> Vec<(String, Vec<String>, String)> {
        let events = read_text(&self.runs.join("events.log"));
        events
            .lines()
            .filter_map(|l| l.strip_prefix("start "))
            .map(|l| {
                let (name, pid) = l.split_once(' ').unwrap();
                let rec = read_text(&self.runs.join(format!("{name}.{pid}.args")));
                let (args, stdin) = rec.split_once("--stdin--\n").unwrap();
                (
                    name.to_string(),
                    args.lines().map(String::from).collect(),
                    stdin.to_string(),
                )
            })
            .collect()
    }
}

fn envelope(stdin: &str) -> Value {
    let mut lines = stdin.lines();
    assert_eq!(lines.next(), Some("VF-TURN/1"), "{stdin}");
    serde_json::from_str(lines.next().unwrap()).unwrap()
}

fn ok(out: &std::process::Output) -> Value {
    succeeded(out);
    stdout_json(out)
}

fn succeeded(out: &std::process::Output) {
    assert!(out.status.success(), "{}", stderr(out));
}

fn modes(say: &Value) -> Vec<(String, String, bool, String)> {
    say["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["participant"].as_str().unwrap().to_string(),
                t["deliveryMode"].as_str().unwrap().to_string(),
                t["recorded"].as_bool().unwrap(),
                t["readOnly"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn texts(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect()
}

#[test]
fn three_turns_deliver_exact_deltas_and_a_fresh_full_history() {
    let f = Fakes::new();
    succeeded(&f.vf(&[
        "conv", "new", "design", "--with", "claude", "--with", "codex",
    ]));
    // Turn 1: both answer Q1; neither sees the other's answer yet.
    f.answer("claude", CLAUDE_SID, "claude answer one");
    f.answer("codex", CODEX_SID, "codex answer one");
    let s1 = ok(&f.vf(&["conv", "say", "design", "--all", "--prompt", "Q1", "--json"]));
    assert_eq!(
        modes(&s1),
        [
            (
                "claude".into(),
                "full-history".into(),
                true,
                "enforced".into()
            ),
            (
                "codex".into(),
                "full-history".into(),
                true,
                "enforced".into()
            )
        ]
    );
    // Turn 2 to claude: resumes its session; only Q2 and codex's answer.
    f.answer("claude", CLAUDE_SID, "claude answer two");
    let s2 = ok(&f.vf(&[
        "conv", "say", "design", "--to", "claude", "--prompt", "Q2", "--json",
    ]));
    assert_eq!(
        modes(&s2),
        [(
            "claude".into(),
            "exact-delta".into(),
            true,
            "enforced".into()
        )]
    );
    // Turn 3 to codex with --fresh: a new session, full history and replay.
    f.answer("codex", CODEX_SID2, "codex answer two");
    let s3 = ok(&f.vf(&[
        "conv", "say", "design", "--to", "codex", "--fresh", "--prompt", "Q3", "--json",
    ]));
    assert_eq!(
        modes(&s3),
        [(
            "codex".into(),
            "full-history".into(),
            true,
            "enforced".into()
        )]
    );

    let mut runs = f.delivered();
    // Turn 1 ran both at once: either may have started first.
    runs[..2].sort_by(|a, b| a.0.cmp(&b.0));
    let engines: Vec<&str> = runs.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(engines, ["claude", "codex", "claude", "codex"]);
    // Fresh sessions carry no resume argument; claude's turn 2 resumes its own.
    assert!(!runs[0].1.contains(&"-r".to_string()), "{:?}", runs[0].1);
    assert_eq!(runs[2].1[..3], ["-p", "-r", CLAUDE_SID]);
    // Read-only by default, with each engine's verified flags.
    for (i, flags) in [
        (0, ["--permission-mode", "plan"]),
        (1, ["--sandbox", "read-only"]),
        (2, ["--permission-mode", "plan"]),
        (3, ["--sandbox", "read-only"]),
    ] {
        assert!(runs[i].1.windows(2).any(|w| w == flags), "{:?}", runs[i].1);
    }
    assert!(!runs[3].1.iter().any(|a| a == "resume"), "{:?}", runs[3].1);

    let e1 = envelope(&runs[1].2);
    assert_eq!(
        (texts(&e1["messages"]), texts(&e1["peers"])),
        (vec!["Q1"], vec![])
    );
    let e2 = envelope(&runs[2].2);
    assert_eq!(e2["delivery_mode"], json!("exact-delta"));
    assert_eq!(e2["cursor"], json!({"from": 1, "to": 4}));
    assert_eq!(
        (texts(&e2["messages"]), texts(&e2["peers"])),
        (vec!["Q2"], vec!["codex answer one"])
    );
    assert!(!runs[2].2.contains("claude answer one"), "{}", runs[2].2);
    assert_eq!(e2.get("replay"), None);
    let e3 = envelope(&runs[3].2);
    assert_eq!(e3["delivery_mode"], json!("full-history"));
    assert_eq!(texts(&e3["messages"]), ["Q1", "Q2", "Q3"]);
    assert_eq!(
        texts(&e3["peers"]),
        ["claude answer one", "claude answer two"]
    );
    assert_eq!(
        e3["replay"]["counts"],
        json!({"source": 1, "replayed": 1, "truncated": 0})
    );
    assert_eq!(texts(&e3["replay"]["responses"]), ["codex answer one"]);
    assert_eq!(e3["replay"]["responses"][0]["session_id"], json!(CODEX_SID));

    // The stored state: transcript in order, cursors and bindings.
    let show = ok(&f.vf(&["conv", "show", "design", "--json"]));
    let froms: Vec<&str> = show["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["from"].as_str().unwrap())
        .collect();
    assert_eq!(
        froms,
        ["user", "claude", "codex", "user", "claude", "user", "codex"]
    );
    let p = &show["participants"];
    assert_eq!(
        (&p[0]["binding"], &p[1]["binding"]),
        (
            &json!({"sessionId": CLAUDE_SID, "cursor": 4}),
            &json!({"sessionId": CODEX_SID2, "cursor": 6})
        )
    );
    assert_eq!(ok(&f.vf(&["conv", "ls", "--json"])), json!(["design"]));
    succeeded(&f.vf(&["conv", "rm", "design"]));
    assert_eq!(ok(&f.vf(&["conv", "ls", "--json"])), json!([]));
}

#[test]
fn private_ranges_reach_one_turn_only_and_never_the_transcript() {
    let f = Fakes::new();
    f.env.write("secret.txt", "line1\nTOPSECRET-42\nline3\n");
    succeeded(&f.vf(&["conv", "new", "p", "--with", "codex"]));
    f.answer("codex", CODEX_SID, "noted");
    ok(&f.vf(&[
        "conv",
        "say",
        "p",
        "--to",
        "codex",
        "--prompt",
        "look",
        "--private-range",
        "secret.txt:2-2",
        "--json",
    ]));
    f.answer("codex", CODEX_SID, "again");
    ok(&f.vf(&[
        "conv", "say", "p", "--to", "codex", "--prompt", "more", "--json",
    ]));
    let runs = f.delivered();
    assert!(runs[0].2.contains("TOPSECRET-42"), "{}", runs[0].2);
    // Not in the envelope line, not in the next turn.
    assert!(!runs[0].2.lines().nth(1).unwrap().contains("TOPSECRET"));
    assert!(!runs[1].2.contains("TOPSECRET"), "{}", runs[1].2);
    assert_nowhere_under(&f.env.state().join("conversations"), "TOPSECRET-42");
}

#[test]
fn bad_input_is_a_one_line_usage_error() {
    let f = Fakes::new();
    let cases: &[&[&str]] = &[
        &["conv", "new", "../x", "--with", "claude"],
        &["conv", "new", "a", "--with", "nosuch"],
        &["conv", "new", "a", "--with", "claude", "--with", "claude"],
        &["conv", "say", "missing", "--all", "--prompt", "x"],
        &["conv", "show", "missing"],
    ];
    for args in cases {
        let out = f.vf(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    }
    succeeded(&f.vf(&["conv", "new", "a", "--with", "codex"]));
    let out = f.vf(&["conv", "say", "a", "--to", "ghost", "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no participant"), "{}", stderr(&out));
    assert!(!Path::new(&f.env.state().join("conversations/x")).exists());
}

#[test]
fn write_turns_read_only_off() {
    let f = Fakes::new();
    succeeded(&f.vf(&[
        "conv",
        "new",
        "w",
        "--with",
        "claude:c1",
        "--with",
        "claude:c2",
    ]));
    f.answer("claude", CLAUDE_SID, "ok");
    let s = ok(&f.vf(&[
        "conv", "say", "w", "--all", "--write", "--prompt", "edit", "--json",
    ]));
    assert_eq!(
        modes(&s),
        [
            ("c1".into(), "full-history".into(), true, "off".into()),
            ("c2".into(), "full-history".into(), true, "off".into())
        ]
    );
    for run in f.delivered() {
        assert!(
            !run.1.iter().any(|a| a == "--permission-mode"),
            "{:?}",
            run.1
        );
    }
}

#[test]
fn a_killed_say_keeps_the_binding_and_enters_no_partial_answer() {
    let f = Fakes::new();
    succeeded(&f.vf(&["conv", "new", "k", "--with", "codex"]));
    f.answer("codex", CODEX_SID, "never finished");
    // The session id comes first; then the fake stalls.
    let bin = f.env.fake_for("codex");
    let envf = format!("{}.env", bin.display());
    let mut e = read_text(Path::new(&envf));
    e.push_str("FAKE_DELAY=30\n");
    std::fs::write(&envf, e).unwrap();
    let mut say = f
        .cmd(&[
            "conv", "say", "k", "--to", "codex", "--prompt", "Q1", "--json",
        ])
        .spawn()
        .unwrap();
    let pgid = f.env.wait_running("conv-k-codex-t1", true);
    signal(say.id() as i32, libc::SIGKILL);
    wait_exit(&mut say);
    signal(-pgid, libc::SIGKILL);
    wait_for(
        "the engine to end",
        std::time::Duration::from_secs(10),
        || !group_alive(pgid),
    );
    // Readable, no response entered, the turn pending.
    let show = ok(&f.vf(&["conv", "show", "k", "--json"]));
    assert_eq!(show["transcript"].as_array().unwrap().len(), 1, "{show}");
    assert_eq!(
        show["participants"][0]["pending"],
        json!({"unit": "conv-k-codex-t1"})
    );
    // The same say again resumes the session the marker made durable.
    f.answer("codex", CODEX_SID, "finished");
    let s = ok(&f.vf(&[
        "conv", "say", "k", "--to", "codex", "--prompt", "Q1", "--json",
    ]));
    assert_eq!(s["turns"][0]["deliveryMode"], json!("exact-delta"), "{s}");
    let runs = f.delivered();
    assert_eq!(runs[1].1[..3], ["exec", "resume", CODEX_SID]);
    let show = ok(&f.vf(&["conv", "show", "k", "--json"]));
    let answers: Vec<&str> = show["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "response")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["finished"]);
    assert_eq!(show["participants"][0].get("pending"), None);
    // The same say continued: its message was entered once, and delivered.
    let entries: Vec<Value> = show["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["id"], e["kind"], e["text"]]))
        .collect();
    assert_eq!(
        entries,
        [json!([1, "user", "Q1"]), json!([2, "response", "finished"])]
    );
    assert_eq!(texts(&envelope(&runs[1].2)["messages"]), ["Q1"]);
    // Said again once settled, the same text is a new message.
    f.answer("codex", CODEX_SID, "again");
    ok(&f.vf(&[
        "conv", "say", "k", "--to", "codex", "--prompt", "Q1", "--json",
    ]));
    let show = ok(&f.vf(&["conv", "show", "k", "--json"]));
    assert_eq!(show["transcript"].as_array().unwrap().len(), 4, "{show}");
}

#[test]
fn a_handoff_is_stored_once_and_carried_by_the_next_turn() {
    let f = Fakes::new();
    succeeded(&f.vf(&["conv", "new", "h", "--with", "codex"]));
    let doc = f.env.write("plan.md", "# the plan\n");
    let out = f.vf(&["conv", "handoff", "h", "--file", doc.to_str().unwrap()]);
    succeeded(&out);
    let digest = vf::ground::text::sha256_hex(b"# the plan\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("sha256:{digest} 11 bytes\n")
    );
    let stored = f
        .env
        .state()
        .join(format!("conversations/h/handoffs/{digest}.txt"));
    assert_eq!(read_text(&stored), "# the plan\n");
    f.answer("codex", CODEX_SID, "ok");
    ok(&f.vf(&[
        "conv", "say", "h", "--to", "codex", "--prompt", "go", "--json",
    ]));
    ok(&f.vf(&[
        "conv", "say", "h", "--to", "codex", "--prompt", "again", "--json",
    ]));
    let runs = f.delivered();
    assert_eq!(
        envelope(&runs[0].2)["handoff"],
        json!({"format": "VF-HANDOFF/1", "digest": digest, "bytes": 11, "text": "# the plan\n"})
    );
    // Seen once: the exact-delta turn after it does not repeat it.
    assert_eq!(envelope(&runs[1].2).get("handoff"), None);
}

#[test]
fn all_runs_the_turns_at_once_and_records_them_in_participant_order() {
    let f = Fakes::new();
    succeeded(&f.vf(&["conv", "new", "par", "--with", "codex", "--with", "claude"]));
    f.answer("codex", CODEX_SID, "codex here");
    f.answer("claude", CLAUDE_SID, "claude here");
    // Each fake waits until both have started (at most ~20 s): run one
    // after the other, the first would end before the second starts.
    for e in ["codex", "claude"] {
        let envf = format!("{}.env", f.env.fake_for(e).display());
        let mut text = read_text(Path::new(&envf));
        text.push_str("FAKE_BARRIER=2\n");
        std::fs::write(&envf, text).unwrap();
    }
    let s = ok(&f.vf(&["conv", "say", "par", "--all", "--prompt", "Q", "--json"]));
    let events = read_text(&f.runs.join("events.log"));
    let first: Vec<&str> = events
        .lines()
        .take(2)
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(first, ["start", "start"], "{events}");
    assert_eq!(modes(&s).len(), 2);
    let show = ok(&f.vf(&["conv", "show", "par", "--json"]));
    let froms: Vec<&str> = show["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["from"].as_str().unwrap())
        .collect();
    assert_eq!(froms, ["user", "codex", "claude"]);
}

#[test]
fn human_output_names_the_delivery_and_read_only_mode() {
    let f = Fakes::new();
    succeeded(&f.vf(&["conv", "new", "hu", "--with", "codex:x"]));
    f.answer("codex", CODEX_SID, "the human answer");
    let out = f.vf(&[
        "conv", "say", "hu", "--to", "x", "--prompt", "hi", "--output", "human",
    ]);
    succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "x turn 1 · full-history · read-only enforced · answer recorded\nthe human answer"
        ),
        "{text}"
    );
}

#[test]
fn a_participant_model_is_checked_at_new_and_passed_on_every_turn() {
    let f = Fakes::new();
    // Refused (exit 2, one line) before anything is written.
    for with in [
        "agy@some-model",
        "opencode@no-provider",
        "codex:x@-flag",
        "codex@",
    ] {
        let out = f.vf(&["conv", "new", "m", "--with", "claude", "--with", with]);
        assert_eq!(out.status.code(), Some(2), "{with}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("--with {with:?}: ")), "{err}");
        assert!(!f.env.state().join("conversations/m").exists(), "{with}");
    }
    succeeded(&f.vf(&[
        "conv",
        "new",
        "m",
        "--with",
        "claude@claude-sonnet-4-5",
        "--with",
        "codex:cx@gpt-5.1",
        "--with",
        "codex:plain",
    ]));
    for turn in ["one", "two"] {
        f.answer("claude", CLAUDE_SID, turn);
        f.answer("codex", CODEX_SID, turn);
        ok(&f.vf(&["conv", "say", "m", "--all", "--prompt", turn, "--json"]));
    }
    let models: Vec<Option<String>> = f
        .delivered()
        .iter()
        .map(|(_, args, _)| {
            let at = args.iter().position(|a| a == "--model")?;
            Some(args[at + 1].clone())
        })
        .collect();
    let mut models: Vec<_> = models.into_iter().map(|m| m.unwrap_or_default()).collect();
    models.sort();
    assert_eq!(
        models,
        [
            "",
            "",
            "claude-sonnet-4-5",
            "claude-sonnet-4-5",
            "gpt-5.1",
            "gpt-5.1"
        ]
    );
    let show = ok(&f.vf(&["conv", "show", "m", "--json"]));
    let seats: Vec<Value> = show["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| json!([p["alias"], p["engine"], p["model"]]))
        .collect();
    assert_eq!(
        seats,
        [
            json!(["claude", "claude", "claude-sonnet-4-5"]),
            json!(["cx", "codex", "gpt-5.1"]),
            json!(["plain", "codex", null])
        ]
    );
    let human = f.vf(&["conv", "show", "m"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("participant cx · codex @gpt-5.1 · cursor"),
        "{text}"
    );
    assert!(
        text.contains("participant plain · codex · cursor"),
        "{text}"
    );
}

/// `say --mcp FILE`: every turn's engine gets the servers as `vf dispatch
/// --mcp` gives them (claude a 0600 file in the turn unit's directory,
/// copilot its `@file`); a file one participant's engine refuses (codex:
/// not verified) is exit 2 before the message enters the transcript.
#[test]
fn say_mcp_reaches_every_turn_by_its_engines_mechanism() {
    let f = Fakes::new();
    succeeded(&f.vf(&[
        "conv",
        "new",
        "m",
        "--with",
        "claude:c",
        "--with",
        "copilot:p",
    ]));
    succeeded(&f.vf(&[
        "conv", "new", "r", "--with", "claude:c", "--with", "codex:x",
    ]));
    let plain = f.env.write(
        "plain.json",
        r#"{"mcpServers": {"files": {"command": "mcp-files", "args": ["-r"]}}}"#,
    );
    let say = |conv: &str| {
        f.vf(&[
            "conv",
            "say",
            conv,
            "--all",
            "--prompt",
            "look",
            "--json",
            "--mcp",
            plain.to_str().unwrap(),
        ])
    };
    let refused_conv = f.env.state().join("conversations/r/conversation.json");
    let before = read_text(&refused_conv);
    let listing = || {
        let mut l = files_under(&f.env.state());
        l.sort();
        l
    };
    let files = listing();
    let out = say("r");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "vf: --mcp: codex: not verified: with codex 0.171.0 a server given as \
         `-c mcp_servers.<name>.*` starts, but the model is never offered its tools (upstream \
         openai/codex#17904); --mcp works with claude, copilot and opencode\n"
    );
    assert_eq!(read_text(&refused_conv), before);
    assert_eq!(listing(), files, "nothing written");
    assert!(!f.runs.join("events.log").exists(), "nothing spawned");
    f.answer("claude", CLAUDE_SID, "ok");
    f.answer("copilot", COPILOT_SID, "ok");
    succeeded(&say("m"));
    let runs = f.delivered();
    let args_of = |engine: &str| {
        runs.iter()
            .find(|r| r.0 == engine)
            .map(|r| r.1.clone())
            .unwrap()
    };
    let file = |engine: &str, unit: &str| {
        let f = f
            .env
            .state()
            .join(format!("units/{unit}/mcp-{engine}.json"));
        std::path::absolute(&f).unwrap()
    };
    let claude = file("claude", "conv-m-c-t1");
    assert!(
        args_of("claude").contains(&format!("--mcp-config={}", claude.display())),
        "{:?}",
        args_of("claude")
    );
    let copilot = file("copilot", "conv-m-p-t1");
    assert!(
        args_of("copilot").contains(&format!("--additional-mcp-config=@{}", copilot.display())),
        "{:?}",
        args_of("copilot")
    );
    // The file lived while its engine ran (the fake kept a copy).
    assert!(!copilot.exists(), "removed after the run");
    assert_eq!(
        serde_json::from_str::<Value>(&read_text(&f.runs.join("mcp-copilot.json"))).unwrap(),
        json!({"mcpServers": {"files": {
            "command": "mcp-files", "args": ["-r"], "type": "local", "tools": ["*"],
        }}})
    );
}
