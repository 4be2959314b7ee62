//! Golden argv tests: the exact process each engine's `build` asks for.
//!
//! Every flag here was checked against the CLI's own help
//! (`fixtures/<cli>/<version>/help/`); see ENGINES.md.

use std::path::{Path, PathBuf};

use vf::engine::tool_policy::ToolPolicy;
use vf::engine::{Attachment, AttachmentKind, EngineId, Invocation, Request, RunOptions};
use vf::ground::error::exit;
use vf::ground::version::Version;

use crate::common;
use common::fixtures;

// Absolute on each OS (vf makes the files it names absolute, and a path
// without a drive is not absolute on Windows).
#[cfg(not(windows))]
const CWD: &str = "/work/proj";
#[cfg(not(windows))]
const STATE: &str = "/work/proj/.vibeflow";
/// Unit u1's directory in [`STATE`], as `vf::unit` builds it.
#[cfg(not(windows))]
const UNIT_DIR: &str = "/work/proj/.vibeflow/units/u1";
#[cfg(windows)]
const CWD: &str = r"C:\work\proj";
#[cfg(windows)]
const STATE: &str = r"C:\work\proj\.vibeflow";
#[cfg(windows)]
const UNIT_DIR: &str = r"C:\work\proj\.vibeflow\units\u1";
const CODEX_ID: &str = "01a229e6-b739-7472-9ac7-c8fe37200f9b";
const CLAUDE_ID: &str = "5e0e0c89-f301-4ba6-8327-7b41f84dc493";
const COPILOT_ID: &str = "23a3694b-6367-494d-aa02-ae5d5602995f";
const GEMINI_ID: &str = "d40ec370-b510-4397-9950-47c6add9e2ec";
const OPENCODE_ID: &str = "ses_dd6038aa0ffepDEX7skMCMq13N";

static NO_POLICY: ToolPolicy = ToolPolicy {
    read_only: false,
    allow_tools: Vec::new(),
    deny_tools: Vec::new(),
    require_enforced: false,
    sandbox_holds_read_only: false,
    in_sandbox: false,
};

fn req<'a>(prompt: &'a str) -> Request<'a> {
    Request {
        prompt,
        session: None,
        skip_permissions: false,
        cwd: Path::new(CWD),
        in_git_repo: true,
        attachments: &[],
        unit: "u1",
        state_dir: Path::new(STATE),
        unit_dir: Path::new(UNIT_DIR),
        version: None,
        policy: &NO_POLICY,
        mcp: None,
        options: &RunOptions::NONE,
        command: None,
    }
}

fn build(e: EngineId, r: &Request<'_>) -> Invocation {
    e.engine()
        .build(r)
        .unwrap_or_else(|err| panic!("{e}: {err}"))
}

fn refused(e: EngineId, r: &Request<'_>) -> vf::VfError {
    match e.engine().build(r) {
        Ok(inv) => panic!("{e}: expected a refusal, got {inv:?}"),
        Err(err) => err,
    }
}

fn args(inv: &Invocation) -> Vec<&str> {
    inv.args.iter().map(String::as_str).collect()
}

fn att(kind: AttachmentKind, p: &str) -> Attachment {
    Attachment {
        kind,
        path: PathBuf::from(p),
    }
}

// ---------- claude ----------

#[test]
fn claude_fresh_stdin() {
    let inv = build(EngineId::Claude, &req("do it"));
    assert_eq!(inv.program, "claude");
    assert_eq!(
        args(&inv),
        ["-p", "--output-format", "stream-json", "--verbose"]
    );
    assert_eq!(inv.stdin.as_deref(), Some("do it"));
    assert_eq!(inv.cwd, PathBuf::from(CWD));
    assert_eq!(inv.prompt_file, None);
}

#[test]
fn claude_resume_skip_and_attachments() {
    let atts = [
        att(AttachmentKind::Text, "notes.md"),
        att(AttachmentKind::Text, "/abs/spec.txt"),
    ];
    let r = Request {
        session: Some(CLAUDE_ID),
        skip_permissions: true,
        attachments: &atts,
        ..req("go on")
    };
    let inv = build(EngineId::Claude, &r);
    // `-r` only works with `-p`; no positional at all (variadic flags would eat it).
    assert_eq!(
        args(&inv),
        [
            "-p",
            "-r",
            CLAUDE_ID,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
            "--append-system-prompt-file=notes.md",
            "--append-system-prompt-file=/abs/spec.txt",
        ]
    );
    assert_eq!(inv.stdin.as_deref(), Some("go on"));
}

#[test]
fn claude_refuses_images() {
    let atts = [att(AttachmentKind::Image, "a.png")];
    let err = refused(
        EngineId::Claude,
        &Request {
            attachments: &atts,
            ..req("x")
        },
    );
    let msg = err.to_string();
    assert_eq!(err.exit_code(), exit::USAGE);
    assert!(msg.contains("image attachments are not supported"), "{msg}");
    assert!(msg.contains("codex"), "{msg}");
}

// ---------- codex ----------

#[test]
fn codex_fresh_in_git_repo() {
    let inv = build(EngineId::Codex, &req("task"));
    assert_eq!(inv.program, "codex");
    assert_eq!(args(&inv), ["exec", "--json", "-"]);
    assert_eq!(inv.stdin.as_deref(), Some("task"));
}

#[test]
fn codex_fresh_outside_git_repo() {
    let r = Request {
        in_git_repo: false,
        ..req("task")
    };
    assert_eq!(
        args(&build(EngineId::Codex, &r)),
        ["exec", "--json", "--skip-git-repo-check", "-"]
    );
}

#[test]
fn codex_resume_everything() {
    let atts = [
        att(AttachmentKind::Image, "shot.png"),
        att(AttachmentKind::Image, "/abs/b.jpg"),
    ];
    let r = Request {
        session: Some(CODEX_ID),
        skip_permissions: true,
        in_git_repo: false,
        attachments: &atts,
        ..req("more")
    };
    let inv = build(EngineId::Codex, &r);
    // `--image` is variadic: the `=` form keeps it from swallowing the `-`.
    assert_eq!(
        args(&inv),
        [
            "exec",
            "resume",
            CODEX_ID,
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--image=shot.png",
            "--image=/abs/b.jpg",
            "-",
        ]
    );
    assert_eq!(inv.stdin.as_deref(), Some("more"));
}

#[test]
fn codex_refuses_text_attachments() {
    let atts = [att(AttachmentKind::Text, "a.md")];
    let err = refused(
        EngineId::Codex,
        &Request {
            attachments: &atts,
            ..req("x")
        },
    );
    assert!(err.to_string().contains("text attachments"), "{err}");
}

// ---------- copilot ----------

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

#[test]
fn copilot_fresh_newest() {
    let ver = v("1.0.102");
    let r = Request {
        version: Some(&ver),
        skip_permissions: true,
        ..req("fix it")
    };
    let inv = build(EngineId::Copilot, &r);
    assert_eq!(inv.program, "copilot");
    assert_eq!(
        args(&inv),
        [
            "--output-format",
            "json",
            "--no-auto-update",
            "--disable-client-telemetry",
            "--allow-all",
            "-p",
            "fix it",
        ]
    );
    assert_eq!(inv.stdin, None);
    assert!(inv.warnings.is_empty(), "{:?}", inv.warnings);
}

#[test]
fn copilot_1_0_83_has_no_telemetry_flag() {
    let ver = v("1.0.83");
    let r = Request {
        version: Some(&ver),
        ..req("fix it")
    };
    assert_eq!(
        args(&build(EngineId::Copilot, &r)),
        [
            "--output-format",
            "json",
            "--no-auto-update",
            "-p",
            "fix it"
        ]
    );
}

#[test]
fn copilot_older_than_verified_runs_in_text_mode() {
    let ver = v("1.0.40");
    let r = Request {
        version: Some(&ver),
        ..req("fix it")
    };
    let inv = build(EngineId::Copilot, &r);
    assert_eq!(args(&inv), ["--no-auto-update", "-p", "fix it"]);
    assert_eq!(
        EngineId::Copilot.engine().output_transport(Some(&ver)),
        vf::engine::OutputTransport::Text
    );
}

#[test]
fn copilot_unknown_version_warns_and_uses_newest_mode() {
    let inv = build(EngineId::Copilot, &req("hi"));
    assert_eq!(
        args(&inv),
        [
            "--output-format",
            "json",
            "--no-auto-update",
            "--disable-client-telemetry",
            "-p",
            "hi"
        ]
    );
    assert_eq!(inv.warnings.len(), 1);
    assert!(inv.warnings[0].contains("--version"), "{:?}", inv.warnings);
}

#[test]
fn copilot_resume_and_attachments_come_before_the_prompt() {
    let ver = v("1.0.102");
    let atts = [
        att(AttachmentKind::Image, "a.png"),
        att(AttachmentKind::Document, "spec.pdf"),
    ];
    let r = Request {
        version: Some(&ver),
        session: Some(COPILOT_ID),
        skip_permissions: true,
        attachments: &atts,
        ..req("again")
    };
    let resume = format!("--resume={COPILOT_ID}");
    assert_eq!(
        args(&build(EngineId::Copilot, &r)),
        [
            "--output-format",
            "json",
            "--no-auto-update",
            "--disable-client-telemetry",
            "--attachment=a.png",
            "--attachment=spec.pdf",
            "--allow-all",
            resume.as_str(),
            "-p",
            "again",
        ]
    );
}

#[test]
fn copilot_resume_on_1_0_83() {
    let ver = v("1.0.83");
    let r = Request {
        version: Some(&ver),
        session: Some(COPILOT_ID),
        ..req("again")
    };
    let inv = build(EngineId::Copilot, &r);
    assert!(args(&inv).contains(&format!("--resume={COPILOT_ID}").as_str()));
}

#[test]
fn copilot_refuses_resume_for_unproven_versions() {
    for ver in [None, Some(v("1.0.90")), Some(v("1.0.103"))] {
        let r = Request {
            version: ver.as_ref(),
            session: Some(COPILOT_ID),
            ..req("again")
        };
        let err = refused(EngineId::Copilot, &r);
        assert_eq!(err.exit_code(), exit::USAGE);
        assert!(err.to_string().contains("exact resume"), "{err}");
    }
}

#[test]
fn copilot_prompt_starting_with_dash_uses_the_long_form() {
    let ver = v("1.0.102");
    let r = Request {
        version: Some(&ver),
        ..req("- list item first")
    };
    let inv = build(EngineId::Copilot, &r);
    assert_eq!(args(&inv).last(), Some(&"--prompt=- list item first"));
    assert!(!args(&inv).contains(&"-p"));
}

#[test]
fn copilot_prompt_file_switch_at_32_kib() {
    let ver = v("1.0.102");
    let at_limit = "a".repeat(32 * 1024);
    let r = Request {
        version: Some(&ver),
        ..req(&at_limit)
    };
    let inv = build(EngineId::Copilot, &r);
    assert_eq!(args(&inv).last(), Some(&at_limit.as_str()));
    assert_eq!(inv.prompt_file, None);

    // One byte more (here: a 2-byte UTF-8 char pushes it over) goes to a file.
    let over = format!("{}é", "a".repeat(32 * 1024 - 1));
    assert_eq!(over.len(), 32 * 1024 + 1);
    let r = Request {
        version: Some(&ver),
        ..req(&over)
    };
    let inv = build(EngineId::Copilot, &r);
    let file = Path::new(STATE).join("dispatch").join("u1.md");
    assert_eq!(inv.prompt_file.as_ref(), Some(&file));
    assert_eq!(inv.prompt_file_contents.as_deref(), Some(over.as_str()));
    let read = format!("Read {} and follow it", file.display());
    assert_eq!(args(&inv)[args(&inv).len() - 2..], ["-p", read.as_str()]);
    assert_eq!(inv.stdin, None);
}

#[test]
fn copilot_refuses_text_attachments() {
    let atts = [att(AttachmentKind::Text, "a.md")];
    let ver = v("1.0.102");
    let r = Request {
        version: Some(&ver),
        attachments: &atts,
        ..req("x")
    };
    assert!(refused(EngineId::Copilot, &r).to_string().contains("text"));
}

// ---------- opencode ----------

#[test]
fn opencode_fresh() {
    let inv = build(EngineId::Opencode, &req("p"));
    assert_eq!(inv.program, "opencode");
    assert_eq!(args(&inv), ["run", "--format", "json"]);
    assert_eq!(inv.stdin.as_deref(), Some("p"));
}

#[test]
fn opencode_resume_auto_files() {
    let atts = [
        att(AttachmentKind::Text, "notes.txt"),
        att(AttachmentKind::Image, "a.png"),
        att(AttachmentKind::Document, "b.pdf"),
    ];
    let r = Request {
        session: Some(OPENCODE_ID),
        skip_permissions: true,
        attachments: &atts,
        ..req("p")
    };
    assert_eq!(
        args(&build(EngineId::Opencode, &r)),
        [
            "run",
            "--session",
            OPENCODE_ID,
            "--format",
            "json",
            "--auto",
            "--file=notes.txt",
            "--file=a.png",
            "--file=b.pdf",
        ]
    );
}

// ---------- gemini ----------

#[test]
fn gemini_fresh_and_resume() {
    let inv = build(EngineId::Gemini, &req("q"));
    assert_eq!(inv.program, "gemini");
    assert_eq!(args(&inv), ["--output-format", "stream-json"]);
    assert_eq!(inv.stdin.as_deref(), Some("q"));

    let r = Request {
        session: Some(GEMINI_ID),
        skip_permissions: true,
        ..req("q")
    };
    assert_eq!(
        args(&build(EngineId::Gemini, &r)),
        ["--output-format", "stream-json", "-r", GEMINI_ID, "--yolo"]
    );
}

#[test]
fn gemini_refuses_every_attachment() {
    for kind in [
        AttachmentKind::Text,
        AttachmentKind::Image,
        AttachmentKind::Document,
    ] {
        let atts = [att(kind, "f")];
        let r = Request {
            attachments: &atts,
            ..req("q")
        };
        assert_eq!(refused(EngineId::Gemini, &r).exit_code(), exit::USAGE);
    }
}

// ---------- agy ----------

#[test]
fn agy_argv_prompt() {
    let inv = build(EngineId::Agy, &req("hello there"));
    assert_eq!(inv.program, "agy");
    assert_eq!(args(&inv), ["-p", "hello there"]);
    assert_eq!(inv.stdin, None);
}

#[test]
fn agy_skip_permissions_is_a_warning_not_a_flag() {
    let r = Request {
        skip_permissions: true,
        ..req("x")
    };
    let inv = build(EngineId::Agy, &r);
    assert_eq!(args(&inv), ["-p", "x"]);
    assert_eq!(inv.warnings.len(), 1);
}

#[test]
fn agy_refuses_prompts_at_or_above_30_kib() {
    let below = "a".repeat(30 * 1024 - 1);
    build(EngineId::Agy, &req(&below));

    let at = "a".repeat(30 * 1024);
    let err = refused(EngineId::Agy, &req(&at));
    assert_eq!(err.exit_code(), exit::NOT_READY);
    assert!(err.to_string().contains("30720"), "{err}");

    // Bytes of UTF-8, not chars: 10240 three-byte chars are 30 KiB.
    let wide = "€".repeat(10 * 1024);
    assert_eq!(wide.chars().count(), 10 * 1024);
    refused(EngineId::Agy, &req(&wide));
}

#[test]
fn agy_has_no_exact_resume() {
    let r = Request {
        session: Some(CLAUDE_ID),
        ..req("x")
    };
    assert!(
        refused(EngineId::Agy, &r)
            .to_string()
            .contains("not supported")
    );
}

// ---------- shared rules ----------

#[test]
fn bad_session_ids_are_refused_everywhere() {
    let ver = v("1.0.102");
    let bad = [
        "--dangerously-skip-permissions",
        "../x",
        " 5e0e0c89-f301-4ba6-8327-7b41f84dc493",
        "5e0e0c89-f301-4ba6-8327-7b41f84dc493\n",
        "5e0e0c89 f301 4ba6 8327 7b41f84dc493",
        "",
        "ses_../../../etc/passwd00000",
        "-r",
    ];
    for e in EngineId::ALL {
        for id in bad {
            let r = Request {
                session: Some(id),
                version: Some(&ver),
                ..req("x")
            };
            let err = refused(e, &r);
            assert_eq!(err.exit_code(), exit::USAGE, "{e} {id:?}");
            assert!(!err.to_string().contains('\n'), "one line: {err}");
        }
    }
}

#[test]
fn ids_of_another_engine_are_refused() {
    let r = Request {
        session: Some(CODEX_ID),
        ..req("x")
    };
    refused(EngineId::Opencode, &r);
    let r = Request {
        session: Some(OPENCODE_ID),
        ..req("x")
    };
    refused(EngineId::Codex, &r);
    refused(EngineId::Claude, &r);
    refused(EngineId::Gemini, &r);
}

#[test]
fn exact_resume_table() {
    let new = v("1.0.102");
    let old = v("1.0.83");
    for (e, want) in [
        (EngineId::Claude, true),
        (EngineId::Codex, true),
        (EngineId::Opencode, true),
        (EngineId::Gemini, true),
        (EngineId::Agy, false),
    ] {
        assert_eq!(e.engine().exact_resume(None), want, "{e}");
    }
    let c = EngineId::Copilot.engine();
    assert!(c.exact_resume(Some(&new)));
    assert!(c.exact_resume(Some(&old)));
    assert!(!c.exact_resume(None));
    assert!(!c.exact_resume(Some(&v("1.0.100"))));
}

#[test]
fn skip_permission_flags_match_the_spec() {
    for e in EngineId::ALL {
        let spec = e.engine().spec();
        let ver = v("1.0.102");
        let with = build(
            e,
            &Request {
                skip_permissions: true,
                version: Some(&ver),
                ..req("x")
            },
        );
        let without = build(
            e,
            &Request {
                version: Some(&ver),
                ..req("x")
            },
        );
        match spec.skip_permissions_flag {
            Some(flag) => {
                assert!(with.args.iter().any(|a| a == flag), "{e}");
                assert!(!without.args.iter().any(|a| a == flag), "{e}");
            }
            None => assert_eq!(with.args, without.args, "{e}"),
        }
    }
}

#[test]
fn stdin_engines_never_put_the_prompt_in_argv() {
    let prompt = "UNIQUE-PROMPT-TEXT --allowedTools";
    for e in EngineId::ALL {
        let inv = build(e, &req(prompt));
        let in_argv = inv.args.iter().any(|a| a.contains("UNIQUE-PROMPT-TEXT"));
        match e.engine().spec().prompt_transport {
            vf::engine::PromptTransport::Stdin => {
                assert!(!in_argv, "{e}");
                assert_eq!(inv.stdin.as_deref(), Some(prompt), "{e}");
            }
            vf::engine::PromptTransport::Argv => {
                assert!(in_argv, "{e}");
                assert_eq!(inv.stdin, None, "{e}");
            }
        }
    }
}

// ---------- through the binary: `vf dispatch --dry-run --json` ----------

#[path = "engine_argv/binary.rs"]
mod binary;

// ---------- --model, --effort, the native schema flag ----------

#[path = "engine_argv/options.rs"]
mod options;

// ---------- --read-only, --allow-tool, --deny-tool ----------

#[path = "engine_argv/policy.rs"]
mod policy;

// ---------- --mcp FILE ----------

#[path = "engine_argv/mcp.rs"]
mod mcp;

// ---------- the flags vf relies on are in the saved help texts ----------

#[test]
fn required_flags_appear_in_the_verified_help() {
    let root = fixtures();
    for e in EngineId::ALL {
        let spec = e.engine().spec();
        for ver in spec.verified_versions {
            for f in spec.required_flags {
                let name = match f.help_args {
                    ["--help"] => "help",
                    ["run", "--help"] => "run",
                    ["exec", "--help"] => "exec",
                    ["exec", "resume", "--help"] => "exec-resume",
                    other => panic!("{e}: no saved help for {other:?}"),
                };
                let p = root
                    .join(e.as_str())
                    .join(ver)
                    .join("help")
                    .join(format!("{name}.txt"));
                let text = std::fs::read_to_string(&p)
                    .unwrap_or_else(|err| panic!("{}: {err}", p.display()));
                assert!(
                    text.contains(f.flag),
                    "{e} {ver}: {} lacks {}",
                    p.display(),
                    f.flag
                );
            }
        }
    }
}

#[test]
fn every_emitted_flag_is_in_the_verified_help() {
    // Builds the fullest invocation per engine and checks each `--flag` word
    // against every verified version's help (agy has none to check against).
    let root = fixtures();
    for e in EngineId::ALL {
        let spec = e.engine().spec();
        for ver_s in spec.verified_versions {
            let ver = Version::parse(ver_s).unwrap();
            let kinds = spec.attachment_kinds;
            let atts: Vec<Attachment> = kinds.iter().map(|k| att(*k, "f.bin")).collect();
            let session = match e {
                EngineId::Opencode => OPENCODE_ID,
                _ => CLAUDE_ID,
            };
            let o = spec.options;
            let options = RunOptions {
                model: o.model.map(|_| "provider/model".into()),
                effort: o.effort_levels.first().map(|l| l.to_string()),
                schema: Some(vf::engine::options::SchemaArg {
                    path: "s.json".into(),
                    json: "{}".into(),
                }),
                agent: None,
            };
            let r = Request {
                session: e.engine().exact_resume(Some(&ver)).then_some(session),
                skip_permissions: true,
                in_git_repo: false,
                attachments: &atts,
                version: Some(&ver),
                options: &options,
                ..req("x")
            };
            let inv = build(e, &r);
            let dir = root.join(e.as_str()).join(ver_s).join("help");
            let mut help = String::new();
            for f in std::fs::read_dir(&dir).unwrap().flatten() {
                help.push_str(&std::fs::read_to_string(f.path()).unwrap());
            }
            for a in &inv.args {
                if !a.starts_with("--") {
                    continue;
                }
                let flag = a.split('=').next().unwrap();
                // Hidden in claude's help: 2.1.332 proven by fixtures/claude/2.1.332/v_stdin_append_file, 2.1.220 and 2.1.207 accept it (ENGINES.md).
                let hidden = flag == "--append-system-prompt-file";
                let found = help.contains(&format!("{flag} "))
                    || help.contains(&format!("{flag}\n"))
                    || help.contains(&format!("{flag}="))
                    || help.contains(&format!("{flag}["))
                    || help.contains(&format!("{flag},"));
                assert!(
                    found || hidden,
                    "{e} {ver_s}: {flag} not in {}",
                    dir.display()
                );
            }
        }
    }
}
