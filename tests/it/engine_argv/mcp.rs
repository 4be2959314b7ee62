//! `--mcp FILE` (`vf::engine::mcp`): per engine and version family the exact
//! argv, environment and per-unit config file (its place, in the unit's
//! directory, and its whole text), the refusals, and every flag used is in
//! the saved help.

use serde_json::{Value, json};
use vf::engine::mcp::{self, McpServers};
use vf::engine::{EngineId, Invocation, Request};
use vf::ground::error::exit;

use super::{CODEX_ID, GEMINI_ID, STATE, UNIT_DIR, build, fixtures, refused, req, v};

const SERVERS: &str = r#"{"mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@x/files", "/tmp/a b"], "env": {"TOKEN": "s3cret"}},
    "web": {"url": "https://mcp.example/x", "headers": {"Authorization": "Bearer s3cret"}}
}}"#;
const PLAIN: &str = r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@x/files"]}}}"#;

fn servers(text: &str) -> McpServers {
    mcp::parse(text).unwrap()
}

fn file_of(e: EngineId) -> String {
    let dir = std::path::Path::new(STATE).join("units").join("u1");
    dir.join(format!("mcp-{e}.json")).display().to_string()
}

/// The whole outcome of one build: argv, env, the file and its JSON, names.
fn outcome(inv: &Invocation) -> Value {
    let file = inv
        .config_file
        .as_ref()
        .map(|(p, text)| json!({"path": p, "json": serde_json::from_str::<Value>(text).unwrap()}));
    json!({"args": inv.args, "env": inv.env, "file": file, "mcp": inv.mcp})
}

fn run(e: EngineId, ver: Option<&str>, session: Option<&str>, s: &McpServers) -> Value {
    let ver = ver.map(v);
    let r = Request {
        version: ver.as_ref(),
        session,
        mcp: Some(s),
        ..req("x")
    };
    outcome(&build(e, &r))
}

#[test]
fn claude_every_version_takes_the_servers_file_with_one_bound_value() {
    let s = servers(SERVERS);
    let arg = format!("--mcp-config={}", file_of(EngineId::Claude));
    for ver in ["2.1.332", "2.1.220", "2.1.207"] {
        assert_eq!(
            run(EngineId::Claude, Some(ver), None, &s),
            json!({
                "args": ["-p", arg, "--output-format", "stream-json", "--verbose"],
                "env": [],
                "file": {"path": file_of(EngineId::Claude), "json": serde_json::from_str::<Value>(SERVERS).unwrap()},
                "mcp": ["files", "web"],
            }),
            "{ver}"
        );
    }
}

#[test]
fn copilot_both_families_take_an_at_file_with_type_and_tools() {
    let s = servers(SERVERS);
    let path = file_of(EngineId::Copilot);
    let body = json!({"mcpServers": {
        "files": {"type": "local", "command": "npx", "args": ["-y", "@x/files", "/tmp/a b"],
                  "env": {"TOKEN": "s3cret"}, "tools": ["*"]},
        "web": {"type": "http", "url": "https://mcp.example/x",
                "headers": {"Authorization": "Bearer s3cret"}, "tools": ["*"]},
    }});
    for ver in ["1.0.102", "1.0.83"] {
        let got = run(EngineId::Copilot, Some(ver), None, &s);
        let a: Vec<&str> = got["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let flag = format!("--additional-mcp-config=@{path}");
        let at = a.iter().position(|x| *x == flag).expect("the flag");
        // Never between `-p` and the prompt.
        assert_eq!(&a[a.len() - 2..], ["-p", "x"], "{ver}");
        assert!(at < a.len() - 2, "{ver}: {a:?}");
        assert_eq!(got["file"], json!({"path": path, "json": body}), "{ver}");
        assert_eq!(got["env"], json!([]));
    }
}

const CODEX_REFUSED: &str = "--mcp: codex: not verified: with codex 0.171.0 a server given \
     as `-c mcp_servers.<name>.*` starts, but the model is never offered its tools (upstream \
     openai/codex#17904); --mcp works with claude, copilot and opencode";
const GEMINI_REFUSED: &str = "--mcp: gemini: not verified: gemini 0.61.0 never starts a server \
     from the settings file named by GEMINI_CLI_SYSTEM_SETTINGS_PATH in `-p` mode (upstream \
     google-gemini/gemini-cli#26021); --mcp works with claude, copilot and opencode";

/// codex and gemini are refused (exit 2) on every version, fresh and
/// resumed, before any argv is made: their real runs never offered the
/// model the servers' tools (ENGINES.md, "What a real run proves").
#[test]
fn codex_and_gemini_are_refused_on_every_version_fresh_and_resumed() {
    let s = servers(PLAIN);
    let cases: &[(EngineId, &[&str], &str, &str)] = &[
        (
            EngineId::Codex,
            &["0.171.0", "0.146.0", "0.144.1"],
            CODEX_ID,
            CODEX_REFUSED,
        ),
        (
            EngineId::Gemini,
            &["0.61.0", "0.47.0"],
            GEMINI_ID,
            GEMINI_REFUSED,
        ),
    ];
    for (e, versions, id, msg) in cases {
        for ver in *versions {
            for session in [None, Some(*id)] {
                let ver = v(ver);
                let r = Request {
                    version: Some(&ver),
                    session,
                    mcp: Some(&s),
                    ..req("x")
                };
                let err = refused(*e, &r);
                assert_eq!(err.exit_code(), exit::USAGE, "{e} {ver:?}");
                assert_eq!(err.to_string(), *msg, "{e} {ver:?} {session:?}");
            }
        }
        let err = mcp::check(*e, &s).unwrap_err();
        assert_eq!(
            (err.exit_code(), err.to_string()),
            (exit::USAGE, msg.to_string())
        );
    }
}

#[test]
fn opencode_gets_a_per_unit_file_named_by_its_variable() {
    let s = servers(SERVERS);
    for ver in ["1.18.33", "1.18.22"] {
        let got = run(EngineId::Opencode, Some(ver), None, &s);
        assert_eq!(
            got["env"],
            json!([["OPENCODE_CONFIG", file_of(EngineId::Opencode)]])
        );
        assert_eq!(
            got["file"],
            json!({"path": file_of(EngineId::Opencode), "json": {
                "$schema": "https://opencode.ai/config.json",
                "mcp": {
                    "files": {"type": "local", "command": ["npx", "-y", "@x/files", "/tmp/a b"],
                              "environment": {"TOKEN": "s3cret"}},
                    "web": {"type": "remote", "url": "https://mcp.example/x",
                            "headers": {"Authorization": "Bearer s3cret"}},
                }
            }}),
            "{ver}"
        );
        assert!(!got["args"].to_string().contains("mcp"), "{got}");
    }
}

#[test]
fn no_secret_reaches_argv_env_or_the_shown_invocation() {
    let s = servers(SERVERS);
    for e in [EngineId::Claude, EngineId::Copilot, EngineId::Opencode] {
        let inv = build(
            e,
            &Request {
                mcp: Some(&s),
                ..req("x")
            },
        );
        let shown = serde_json::to_string(&inv).unwrap();
        assert!(!shown.contains("s3cret"), "{e}: {shown}");
        assert!(shown.contains(r#""mcp":["files","web"]"#), "{e}: {shown}");
    }
}

#[test]
fn unverified_mechanisms_are_refused_with_exit_2() {
    let with_env = servers(SERVERS);
    let plain = servers(PLAIN);
    let cases: &[(EngineId, &McpServers, &str)] = &[
        (
            EngineId::Agy,
            &plain,
            "vf workspace init --engine agy --mcp FILE",
        ),
        (EngineId::Bridge, &plain, "no verified mechanism"),
    ];
    for (e, s, why) in cases {
        let err = mcp::apply(*e, s, std::path::Path::new(UNIT_DIR)).unwrap_err();
        assert_eq!(err.exit_code(), exit::USAGE, "{e}");
        let msg = err.to_string();
        assert!(msg.starts_with(&format!("--mcp: {e}: ")), "{msg}");
        assert!(msg.contains(why), "{msg}");
        assert!(!msg.contains("s3cret"), "{msg}");
    }
    // ACP: nothing on argv, no file, no environment: `session/new` carries them.
    let acp = mcp::apply(EngineId::Acp, &with_env, std::path::Path::new(UNIT_DIR));
    assert_eq!(acp.unwrap(), mcp::McpApplied::default());
    // Through the build too: before any argv is made.
    let err = refused(
        EngineId::Agy,
        &Request {
            mcp: Some(&plain),
            ..req("x")
        },
    );
    assert_eq!(err.exit_code(), exit::USAGE);
}

/// Every flag the mapping sends is in the saved help of every version.
#[test]
fn the_flags_are_in_the_saved_help() {
    let help = |cli: &str, ver: &str, file: &str| {
        std::fs::read_to_string(fixtures().join(cli).join(ver).join("help").join(file)).unwrap()
    };
    for ver in ["2.1.332", "2.1.220", "2.1.207"] {
        assert!(help("claude", ver, "help.txt").contains("--mcp-config <configs...>"));
    }
    for ver in ["1.0.102", "1.0.83"] {
        let h = help("copilot", ver, "help.txt");
        assert!(h.contains("--additional-mcp-config <json>"), "{ver}");
        assert!(h.contains("prefix with @"), "{ver}");
    }
}

// ---------- through the binary ----------

/// An opencode unit's servers reach the engine through a 0600 file in the
/// unit's directory, named by `OPENCODE_CONFIG`; the result names the
/// servers, never their env.
// Runs the fake engine, a bash script (platform_skips names it).
#[cfg(unix)]
#[test]
fn an_opencode_run_reads_its_servers_from_the_units_own_file() {
    let env = super::common::Env::new();
    let servers = env.write("servers.json", SERVERS.replace(r#""web""#, r#""_web""#).replace(
        r#""_web": {"url": "https://mcp.example/x", "headers": {"Authorization": "Bearer s3cret"}}"#,
        r#""web": {"command": "w"}"#,
    ));
    let bin = env.fake_for("opencode");
    // The fake sources `<bin>.env`: it copies what the variable names.
    std::fs::write(
        bin.with_extension("env"),
        "ls -l \"$OPENCODE_CONFIG\" | cut -c1-10 > \"$PWD/mode\"; \
         echo \"$OPENCODE_CONFIG\" > \"$PWD/seen\"; cat \"$OPENCODE_CONFIG\" >> \"$PWD/seen\"\n",
    )
    .unwrap();
    let mut c = env.command(
        "opencode",
        "o1",
        "hi",
        "json",
        &["--mcp", servers.to_str().unwrap()],
    );
    c.env("FAKE_VERSION", "1.18.33").env(
        "FAKE_STDOUT",
        super::common::fixture("opencode/1.18.33/a_json.stdout.jsonl"),
    );
    let out = super::common::run_bounded(c, std::time::Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = env.state().join("units/o1/mcp-opencode.json");
    let seen = std::fs::read_to_string(env.path().join("seen")).unwrap();
    let (path, text) = seen.split_once('\n').unwrap();
    assert_eq!(path, file.to_str().unwrap());
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"$schema": "https://opencode.ai/config.json", "mcp": {
            "files": {"type": "local", "command": ["npx", "-y", "@x/files", "/tmp/a b"],
                      "environment": {"TOKEN": "s3cret"}},
            "web": {"type": "local", "command": ["w"], "environment": {}},
        }})
    );
    // 0600 while the engine ran, and gone once it ended.
    let mode = std::fs::read_to_string(env.path().join("mode")).unwrap();
    assert_eq!(mode.trim(), "-rw-------");
    assert!(!file.exists(), "removed after the run");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains("s3cret"), "{stdout}");
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(result["mcp"], json!(["files", "web"]), "{result}");
    assert_eq!(result["state"], "done", "{result}");
    // Only the unit's file holds the secret in the state dir.
    for f in super::common::files_under(&env.state()) {
        if f != file {
            let text = std::fs::read(&f).unwrap();
            assert!(
                !String::from_utf8_lossy(&text).contains("s3cret"),
                "{}",
                f.display()
            );
        }
    }
}

/// A bad `--mcp` is refused (exit 2, one line) before anything is written.
#[test]
fn a_bad_mcp_file_is_refused_and_nothing_is_written() {
    let env = super::common::Env::new();
    let big = format!(
        r#"{{"mcpServers": {{"a": {{"command": "{}"}}}}}}"#,
        "x".repeat(1 << 20)
    );
    let cases: &[(&str, &str, &str)] = &[
        ("missing.json", "", "--mcp "),
        ("text.json", "not json", "not JSON"),
        ("shape.json", r#"{"servers": {}}"#, "no `mcpServers` object"),
        (
            "name.json",
            r#"{"mcpServers": {"a/b": {"command": "x"}}}"#,
            "MCP server name",
        ),
        ("big.json", &big, "over 1048576 bytes"),
    ];
    for (name, text, needle) in cases {
        let f = if text.is_empty() {
            env.path().join(name)
        } else {
            env.write(name, text)
        };
        for engine in ["claude", "opencode"] {
            let out = env.run(&[
                "dispatch",
                "--engine",
                engine,
                "--unit",
                "u",
                "--prompt",
                "x",
                "--mcp",
                f.to_str().unwrap(),
            ]);
            assert_eq!(out.status.code(), Some(exit::USAGE), "{name}");
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(needle), "{name}: {err}");
        }
    }
    let plain = env.write("plain.json", PLAIN);
    for extra in [
        &["--engine", "agy"][..],
        &["--engine", "bridge", "--bridge", "true"],
    ] {
        let mut a = vec!["dispatch", "--unit", "u", "--prompt", "x"];
        a.extend_from_slice(extra);
        a.extend(["--mcp", plain.to_str().unwrap()]);
        let out = env.run(&a);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{extra:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(&format!("--mcp: {}:", extra[1])), "{err}");
    }
    for (engine, msg) in [("codex", CODEX_REFUSED), ("gemini", GEMINI_REFUSED)] {
        let out = env.run(&[
            "dispatch",
            "--engine",
            engine,
            "--unit",
            "u",
            "--prompt",
            "x",
            "--mcp",
            plain.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{engine}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!("vf: {msg}\n")
        );
    }
    assert!(!env.state().exists(), "a refused command writes nothing");
}

/// `vf resume` of a codex unit with `--mcp` is refused like a dispatch:
/// exit 2, the marker and the state dir untouched, no engine started.
// Runs the fake engine, a bash script (platform_skips names it).
#[cfg(unix)]
#[test]
fn resuming_a_codex_unit_with_mcp_is_refused_and_nothing_is_written() {
    let env = super::common::Env::new();
    // A failed unit (a done one is never resumed), with a session to resume.
    let cap = "codex/0.171.0/d_error500.stdout.jsonl";
    let out = env.replay_capture("codex", "c1", cap, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(env.marker("c1")["engineSessionId"].is_string());
    let plain = env.write("plain.json", PLAIN);
    // The files and the marker's bytes (the unit's `lock` is taken, as by
    // every resume, so its holder pid is rewritten; tests/it/workspace/kept.rs
    // checks a refused resume the same way).
    let listing = || {
        let mut l = super::common::files_under(&env.state());
        l.sort();
        (l, env.marker_bytes("c1"))
    };
    let before = listing();
    let bin = env.fake_for("codex");
    let out = env.run(&[
        "resume",
        "c1",
        "--engine-bin",
        bin.to_str().unwrap(),
        "--mcp",
        plain.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(exit::USAGE));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("vf: {CODEX_REFUSED}\n")
    );
    assert!(listing() == before, "the state dir changed");
}
