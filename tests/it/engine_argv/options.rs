//! `--model`, `--effort` and the native summary-schema flag: the exact argv
//! per engine, fresh and resumed, the refusals (exit 2), and every flag and
//! effort level checked against the verified help (`fixtures/<cli>/<v>/help/`);
//! agy's `--agent NAME`.

use std::path::{Path, PathBuf};

use vf::engine::options::SchemaArg;
use vf::engine::{EffortFlag, EngineId, Request, RunOptions, SchemaFlag};
use vf::ground::error::exit;

use super::{
    CLAUDE_ID, CODEX_ID, COPILOT_ID, GEMINI_ID, OPENCODE_ID, args, build, refused, req, v,
};

const SCHEMA_JSON: &str = r#"{"type":"object"}"#;
const SCHEMA_PATH: &str = "/work/proj/summary.schema.json";

fn opts(model: Option<&str>, effort: Option<&str>, schema: bool) -> RunOptions {
    RunOptions {
        model: model.map(String::from),
        effort: effort.map(String::from),
        schema: schema.then(|| SchemaArg {
            path: PathBuf::from(SCHEMA_PATH),
            json: SCHEMA_JSON.into(),
        }),
        agent: None,
    }
}

/// argv of `engine` with `o`, fresh or resuming `session`.
fn argv(engine: EngineId, o: &RunOptions, session: Option<&str>) -> Vec<String> {
    let ver = v(engine
        .engine()
        .spec()
        .verified_versions
        .first()
        .unwrap_or(&"1.0.0"));
    let r = Request {
        session,
        version: Some(&ver),
        options: o,
        ..req("x")
    };
    args(&build(engine, &r))
        .into_iter()
        .map(String::from)
        .collect()
}

#[test]
fn claude_model_effort_and_inline_schema() {
    let o = opts(Some("sonnet"), Some("high"), true);
    let base = ["-p", "--output-format", "stream-json", "--verbose"];
    let tail = [
        "--model",
        "sonnet",
        "--effort",
        "high",
        "--json-schema",
        SCHEMA_JSON,
    ];
    assert_eq!(
        argv(EngineId::Claude, &o, None),
        [&base[..], &tail[..]].concat()
    );
    let resumed = argv(EngineId::Claude, &o, Some(CLAUDE_ID));
    assert_eq!(
        resumed,
        [&["-p", "-r", CLAUDE_ID][..], &base[1..], &tail[..]].concat()
    );
}

#[test]
fn codex_model_effort_override_and_schema_file_before_the_stdin_marker() {
    let o = opts(Some("gpt-5.4"), Some("low"), true);
    let tail = [
        "--model",
        "gpt-5.4",
        "--config",
        "model_reasoning_effort=low",
        "--output-schema",
        SCHEMA_PATH,
        "-",
    ];
    assert_eq!(
        argv(EngineId::Codex, &o, None),
        [&["exec", "--json"][..], &tail[..]].concat()
    );
    assert_eq!(
        argv(EngineId::Codex, &o, Some(CODEX_ID)),
        [&["exec", "resume", CODEX_ID, "--json"][..], &tail[..]].concat()
    );
}

#[test]
fn copilot_model_and_reasoning_effort_before_the_prompt() {
    let o = opts(Some("gpt-5.4"), Some("xhigh"), true);
    let head = [
        "--output-format",
        "json",
        "--no-auto-update",
        "--disable-client-telemetry",
        "--model",
        "gpt-5.4",
        "--reasoning-effort",
        "xhigh",
    ];
    // No native schema flag: vf's own check only.
    assert_eq!(
        argv(EngineId::Copilot, &o, None),
        [&head[..], &["-p", "x"][..]].concat()
    );
    let resume = format!("--resume={COPILOT_ID}");
    assert_eq!(
        argv(EngineId::Copilot, &o, Some(COPILOT_ID)),
        [&head[..], &[resume.as_str(), "-p", "x"][..]].concat()
    );
}

#[test]
fn gemini_and_opencode_take_a_model_only() {
    let o = opts(Some("gemini-2.5-pro"), None, true);
    assert_eq!(
        argv(EngineId::Gemini, &o, Some(GEMINI_ID)),
        [
            "--output-format",
            "stream-json",
            "-r",
            GEMINI_ID,
            "--model",
            "gemini-2.5-pro"
        ]
    );
    let o = opts(Some("anthropic/claude-sonnet-4-5"), None, true);
    assert_eq!(
        argv(EngineId::Opencode, &o, Some(OPENCODE_ID)),
        [
            "run",
            "--session",
            OPENCODE_ID,
            "--format",
            "json",
            "--model",
            "anthropic/claude-sonnet-4-5"
        ]
    );
}

#[test]
fn a_schema_too_large_for_argv_is_left_to_vf_with_a_warning() {
    let big = format!(r#"{{"description":"{}"}}"#, "x".repeat(70_000));
    let o = RunOptions {
        schema: Some(SchemaArg {
            path: PathBuf::from(SCHEMA_PATH),
            json: big.clone(),
        }),
        ..RunOptions::NONE
    };
    let inv = build(
        EngineId::Claude,
        &Request {
            options: &o,
            ..req("x")
        },
    );
    assert_eq!(
        args(&inv),
        ["-p", "--output-format", "stream-json", "--verbose"]
    );
    assert_eq!(
        inv.warnings,
        [format!(
            "claude: the summary schema is {} bytes, over the 65536 vf passes inline: \
             --json-schema was left out (vf still checks the summary)",
            big.len()
        )]
    );
}

#[test]
fn no_options_no_flags() {
    for e in EngineId::ALL {
        let with_schema = argv(e, &opts(None, None, true), None);
        let plain = argv(e, &RunOptions::NONE, None);
        match e.engine().spec().options.schema {
            Some(_) => assert_eq!(plain.len() + 2, with_schema.len(), "{e}"),
            None => assert_eq!(plain, with_schema, "{e}"),
        }
        assert!(!plain.iter().any(|a| a == "--model"), "{e}");
    }
}

/// The usage error `engine` gives for `o` (panics when it builds).
fn refusal(engine: EngineId, o: &RunOptions) -> String {
    let err = refused(
        engine,
        &Request {
            options: o,
            ..req("x")
        },
    );
    assert_eq!(err.exit_code(), exit::USAGE, "{engine}: {err}");
    err.to_string()
}

#[test]
fn what_an_engine_cannot_take_is_refused_with_exit_2() {
    let cases: Vec<(EngineId, RunOptions, String)> = vec![
        (
            EngineId::Agy,
            opts(Some("m"), None, false),
            "agy: its verified help has no --model flag (engines that take it: claude, codex, copilot, opencode, gemini)".into(),
        ),
        (
            EngineId::Gemini,
            opts(None, Some("high"), false),
            "gemini: its verified help has no --effort flag (engines that take it: claude, codex, copilot)".into(),
        ),
        (
            EngineId::Claude,
            opts(None, Some("minimal"), false),
            "claude: --effort \"minimal\" is not one of the levels it takes: low, medium, high, xhigh, max".into(),
        ),
        (
            EngineId::Opencode,
            opts(Some("sonnet"), None, false),
            "opencode: --model takes provider/model (e.g. anthropic/claude-sonnet-4-5), not \"sonnet\"".into(),
        ),
        (
            EngineId::Claude,
            opts(Some("--dangerously-skip-permissions"), None, false),
            "claude: --model \"--dangerously-skip-permissions\" is not a model name (1-200 bytes, no spaces, not starting with '-')".into(),
        ),
    ];
    for (engine, o, want) in cases {
        assert_eq!(refusal(engine, &o), want);
    }
    for bad in ["", "a b", "x\ny", "/", "p/"] {
        refusal(EngineId::Opencode, &opts(Some(bad), None, false));
    }
    refusal(EngineId::Gemini, &opts(Some(&"m".repeat(201)), None, false));
}

/// Every saved help text of `engine` at `ver`, concatenated.
fn help_of(engine: EngineId, ver: &str) -> String {
    let dir = super::fixtures()
        .join(engine.as_str())
        .join(ver)
        .join("help");
    let mut help = String::new();
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        help.push_str(&std::fs::read_to_string(f.path()).unwrap());
    }
    help
}

#[test]
fn option_flags_and_effort_levels_are_in_every_verified_help_and_checked_by_doctor() {
    for e in EngineId::ALL {
        let spec = e.engine().spec();
        let o = spec.options;
        let schema = o.schema.map(|s| match s {
            SchemaFlag::Inline(f) | SchemaFlag::File(f) => f,
        });
        let effort = o.effort.map(EffortFlag::flag);
        let flags: Vec<&str> = [o.model, effort, schema].into_iter().flatten().collect();
        for flag in &flags {
            assert!(
                spec.required_flags.iter().any(|f| f.flag == *flag),
                "{e}: vf doctor does not check {flag}"
            );
        }
        for ver in spec.verified_versions {
            let help = help_of(e, ver);
            for flag in &flags {
                assert!(help.contains(&format!("{flag} ")), "{e} {ver}: no {flag}");
            }
            // A config override's key and levels are in the CLI's config docs,
            // not its help (codex; ENGINES.md): the real-engine tier checks them.
            if let Some(EffortFlag::Flag(flag)) = o.effort {
                // The levels are listed right after the flag (same or next lines).
                let at = help.find(&format!("{flag} ")).unwrap();
                let listed = &help[at..(at + 300).min(help.len())];
                for level in o.effort_levels {
                    let word = |w: &str| w == *level;
                    assert!(
                        listed.split(|c: char| !c.is_ascii_alphanumeric()).any(word),
                        "{e} {ver}: {flag} does not list {level}"
                    );
                }
            }
        }
        if o.effort.is_none() {
            assert!(o.effort_levels.is_empty(), "{e}");
        }
    }
}

/// `--agent NAME` (issue 27; unverified against a real agy): passed before
/// `-p` when the directory has `.agents/agents/NAME/agent.md`; refused
/// (exit 2) without it, for a name that is not a safe identifier, and for
/// every other engine.
#[test]
fn agy_agent_needs_its_workspace_file_and_no_other_engine_takes_it() {
    let dir = crate::common::tempdir();
    let with = |agent: &str| RunOptions {
        agent: Some(agent.to_string()),
        ..RunOptions::NONE
    };
    let reviewer = with("reviewer");
    let r = Request {
        cwd: dir.path(),
        options: &reviewer,
        ..req("look")
    };
    let err = refused(EngineId::Agy, &r);
    assert_eq!(err.exit_code(), exit::USAGE);
    let err = err.to_string();
    let named = err
        .strip_prefix("agy: --agent reviewer: ")
        .and_then(|e| e.strip_suffix(" is not there; write it with `vf workspace init --engine agy --agent reviewer --instructions FILE`"))
        .unwrap_or_else(|| panic!("{err}"));
    // Compared as paths: on Windows vf's path mixes `/` and `\`.
    let want = dir.path().join(".agents/agents/reviewer/agent.md");
    assert_eq!(Path::new(named), want);
    let md = dir.path().join(".agents/agents/reviewer");
    std::fs::create_dir_all(&md).unwrap();
    std::fs::write(md.join("agent.md"), "review").unwrap();
    let inv = build(EngineId::Agy, &r);
    assert_eq!(args(&inv), ["--agent", "reviewer", "-p", "look"]);
    let bad = with("../x");
    let r = Request {
        cwd: dir.path(),
        options: &bad,
        ..req("look")
    };
    assert_eq!(refused(EngineId::Agy, &r).exit_code(), exit::USAGE);
    for e in EngineId::ALL.into_iter().filter(|e| *e != EngineId::Agy) {
        let err = vf::engine::options::check(e.engine().spec(), &reviewer).unwrap_err();
        assert_eq!(err.exit_code(), exit::USAGE, "{e}");
        assert_eq!(
            err.to_string(),
            format!("{e}: --agent is agy's only (it passes agy's `--agent NAME`)")
        );
    }
}
