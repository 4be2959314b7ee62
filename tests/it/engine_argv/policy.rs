//! `--read-only`, `--allow-tool`, `--deny-tool` (`vf::engine::tool_policy`): the
//! exact argv per engine and version family, the recorded status, the
//! warnings, the variadic flags' `=` form, and through the binary the dry
//! run's `warnings` and the `--require-enforced` refusal (exit 2, nothing written).

use serde_json::{Value, json};
use vf::engine::tool_policy::{self, Enforcement, PolicyStatus, ToolPolicy};
use vf::engine::{EngineId, Invocation, Request};
use vf::ground::error::exit;
use vf::ground::version::Version;

use super::common::{Env, files_under, vf_cli};
use super::{CLAUDE_ID, CODEX_ID, args, build, fixtures, refused, req, v};

const E: Enforcement = Enforcement::Enforced;
const U: Enforcement = Enforcement::Unenforced;
const OFF: Enforcement = Enforcement::Off;

fn pol(read_only: bool, allow: &[&str], deny: &[&str]) -> ToolPolicy {
    ToolPolicy {
        read_only,
        allow_tools: allow.iter().map(|s| s.to_string()).collect(),
        deny_tools: deny.iter().map(|s| s.to_string()).collect(),
        require_enforced: false,
        sandbox_holds_read_only: false,
        in_sandbox: false,
    }
}

/// The whole outcome of one build: argv, status, warnings.
fn outcome(inv: &Invocation) -> Value {
    json!({"args": inv.args, "policy": inv.policy, "warnings": inv.warnings})
}

fn status(read_only: Enforcement, tools: Enforcement) -> Value {
    json!(PolicyStatus {
        read_only,
        tools,
        sandbox: None
    })
}

fn run(e: EngineId, version: Option<&Version>, session: Option<&str>, p: &ToolPolicy) -> Value {
    let r = Request {
        version,
        session,
        policy: p,
        ..req("x")
    };
    outcome(&build(e, &r))
}

#[test]
fn claude_every_version_plan_mode_and_both_tool_lists() {
    let p = pol(true, &["Read", "Bash(git log *)"], &["Edit"]);
    let policy_args = [
        "--permission-mode",
        "plan",
        "--allowedTools=Read",
        "--allowedTools=Bash(git log *)",
        "--disallowedTools=Edit",
    ];
    for ver in ["2.1.332", "2.1.220", "2.1.207"] {
        let ver = v(ver);
        let mut fresh = vec!["-p"];
        fresh.extend(policy_args);
        fresh.extend(["--output-format", "stream-json", "--verbose"]);
        assert_eq!(
            run(EngineId::Claude, Some(&ver), None, &p),
            json!({"args": fresh, "policy": status(E, E), "warnings": []})
        );
        let mut resumed = vec!["-p", "-r", CLAUDE_ID];
        resumed.extend(policy_args);
        resumed.extend(["--output-format", "stream-json", "--verbose"]);
        assert_eq!(
            run(EngineId::Claude, Some(&ver), Some(CLAUDE_ID), &p),
            json!({"args": resumed, "policy": status(E, E), "warnings": []})
        );
    }
}

#[test]
fn codex_sandbox_on_fresh_runs_only_and_no_tool_lists() {
    let ver = v("0.171.0");
    for ver in [Some(&ver), Some(&v("0.146.0")), Some(&v("0.144.1")), None] {
        assert_eq!(
            run(EngineId::Codex, ver, None, &pol(true, &["Read"], &[])),
            json!({
                "args": ["exec", "--json", "--sandbox", "read-only", "-"],
                "policy": status(E, U),
                "warnings": ["codex: tools unenforced: codex has no verified allow-tool flag"]
            })
        );
        assert_eq!(
            run(EngineId::Codex, ver, Some(CODEX_ID), &pol(true, &[], &[])),
            json!({
                "args": ["exec", "resume", CODEX_ID, "--json", "-"],
                "policy": status(U, OFF),
                "warnings": ["codex: read-only unenforced: no verified read-only mode for a resumed run; it may edit files"]
            })
        );
    }
}

#[test]
fn gemini_both_families_plan_mode_and_allowed_tools_but_no_deny() {
    for ver in ["0.61.0", "0.47.0"] {
        let ver = v(ver);
        assert_eq!(
            run(EngineId::Gemini, Some(&ver), None, &pol(true, &[], &[])),
            json!({
                "args": ["--approval-mode", "plan", "--output-format", "stream-json"],
                "policy": status(E, OFF),
                "warnings": []
            })
        );
        // An allowed tool runs even in plan mode (real_policy.rs saw
        // run_shell_command write): read-only wins, the list is not sent.
        assert_eq!(
            run(
                EngineId::Gemini,
                Some(&ver),
                None,
                &pol(true, &["run_shell_command"], &[])
            ),
            json!({
                "args": ["--approval-mode", "plan", "--output-format", "stream-json"],
                "policy": status(E, U),
                "warnings": ["gemini: tools unenforced: its allowed tools run even in plan mode, so under read-only the allow list is not sent"]
            })
        );
        assert_eq!(
            run(
                EngineId::Gemini,
                Some(&ver),
                None,
                &pol(false, &["read_file"], &[])
            ),
            json!({
                "args": ["--allowed-tools=read_file", "--output-format", "stream-json"],
                "policy": status(OFF, E),
                "warnings": []
            })
        );
        assert_eq!(
            run(
                EngineId::Gemini,
                Some(&ver),
                None,
                &pol(false, &["glob"], &["run_shell_command"])
            ),
            json!({
                "args": ["--allowed-tools=glob", "--output-format", "stream-json"],
                "policy": status(OFF, U),
                "warnings": ["gemini: tools unenforced: gemini has no verified deny-tool flag"]
            })
        );
    }
}

#[test]
fn copilot_by_version_family_and_unknown_names_dropped_on_1_0_83() {
    let p = pol(
        true,
        &["shell(git:*)", "MyMCP"],
        &["write", "MyMCP(drop_db)"],
    );
    let head = ["--output-format", "json", "--no-auto-update"];
    let new_family = json!({
        "args": [head[0], head[1], head[2], "--disable-client-telemetry",
            "--allow-tool=shell(git:*)", "--allow-tool=MyMCP",
            "--deny-tool=write", "--deny-tool=MyMCP(drop_db)", "-p", "x"],
        "policy": status(U, E),
        "warnings": ["copilot: read-only unenforced: no verified read-only mode; it may edit files"]
    });
    let v102 = v("1.0.102");
    assert_eq!(run(EngineId::Copilot, Some(&v102), None, &p), new_family);
    // An unreadable version runs as the newest verified one (its own warning first).
    let unread = run(EngineId::Copilot, None, None, &p);
    assert_eq!(unread["args"], new_family["args"]);
    assert_eq!(unread["policy"], new_family["policy"]);
    // 1.0.83: the model's tool names; claude's names and intents are unknown.
    let v83 = v("1.0.83");
    let p83 = pol(
        true,
        &["Read", "view", "MyMCP-query", "shell(git:*)"],
        &["WebFetch", "bash"],
    );
    assert_eq!(
        run(EngineId::Copilot, Some(&v83), None, &p83),
        json!({
            "args": [head[0], head[1], head[2],
                "--available-tools=view", "--available-tools=MyMCP-query",
                "--excluded-tools=bash", "-p", "x"],
            "policy": status(U, U),
            "warnings": [
                "copilot 1.0.83: tool \"Read\" is not a name --available-tools knows: not sent",
                "copilot 1.0.83: tool \"shell(git:*)\" is not a name --available-tools knows: not sent",
                "copilot 1.0.83: tool \"WebFetch\" is not a name --excluded-tools knows: not sent",
                "copilot: tools unenforced: allow \"Read\" unknown, allow \"shell(git:*)\" unknown, deny \"WebFetch\" unknown",
                "copilot: read-only unenforced: no verified read-only mode; it may edit files"
            ]
        })
    );
    // Known names only: the 1.0.83 family holds them.
    assert_eq!(
        run(
            EngineId::Copilot,
            Some(&v83),
            None,
            &pol(false, &["view", "MyMCP-query"], &["bash"])
        )["policy"],
        status(OFF, E)
    );
}

/// The issue's repro: claude's `Read` on copilot 1.0.83 under
/// `--require-enforced` was sent, ignored by copilot, and called enforced.
// A shell-script copilot: POSIX only.
#[cfg(unix)]
#[test]
fn copilot_1_0_83_refuses_an_unknown_tool_under_require_enforced() {
    let tmp = Env::new();
    let bin = super::common::write_exe(
        &tmp.path().join("copilot"),
        "#!/bin/sh\necho 'GitHub Copilot CLI 1.0.83.'\n",
    );
    let bin = bin.to_str().unwrap();
    let out = vf_dispatch(
        tmp.path(),
        &["-e", "copilot", "--engine-bin", bin, "--allow-tool", "Read"]
            .into_iter()
            .chain(["--require-enforced", "--dry-run", "--prompt", "x"])
            .collect::<Vec<_>>(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::USAGE), "{stderr}");
    assert!(
        stderr.contains(
            "require-enforced: copilot cannot enforce this policy: copilot 1.0.83: tool \"Read\" is not a name --available-tools knows"
        ),
        "{stderr}"
    );
}

#[test]
fn opencode_and_agy_send_nothing_and_say_unenforced() {
    for e in [EngineId::Opencode, EngineId::Agy] {
        let none = run(e, None, None, &pol(false, &[], &[]));
        let asked = run(e, None, None, &pol(true, &["read"], &["bash"]));
        assert_eq!(asked["args"], none["args"], "{e}");
        assert_eq!(asked["policy"], status(U, U), "{e}");
        assert_eq!(
            asked["warnings"],
            json!([
                format!(
                    "{e}: tools unenforced: {e} has no verified allow-tool flag, {e} has no verified deny-tool flag"
                ),
                format!("{e}: read-only unenforced: no verified read-only mode; it may edit files"),
            ]),
            "{e}"
        );
    }
}

/// The command engines, on the pure mapping (their argv is their command's).
#[test]
fn acp_holds_read_only_itself_and_the_bridge_nothing() {
    let p = pol(true, &["read"], &[]);
    let acp = tool_policy::apply(EngineId::Acp, None, false, &p);
    assert_eq!(
        (acp.args.len(), acp.status),
        (
            0,
            PolicyStatus {
                read_only: E,
                tools: U,
                sandbox: None
            }
        )
    );
    let bridge = tool_policy::apply(EngineId::Bridge, None, false, &p);
    assert_eq!(
        (bridge.args.len(), bridge.status),
        (
            0,
            PolicyStatus {
                read_only: U,
                tools: U,
                sandbox: None
            }
        )
    );
    let off = tool_policy::apply(EngineId::Claude, None, false, &pol(false, &[], &[]));
    assert_eq!(
        (off.args, off.status, off.warnings),
        (vec![], PolicyStatus::OFF, vec![])
    );
}

/// Every tool flag takes many values (`<tools...>`, `[array]`,
/// `[<tools>...]`): each is sent as `--flag=value`, which binds exactly one,
/// and is followed by a flag, never by a word it could swallow.
#[test]
fn variadic_tool_flags_never_swallow_what_follows() {
    let p = pol(false, &["Read", "LAB-TOOL prompt words"], &["Edit"]);
    let v83 = v("1.0.83");
    for (e, ver) in [
        (EngineId::Claude, None),
        (EngineId::Gemini, None),
        (EngineId::Copilot, None),
        (EngineId::Copilot, Some(&v83)),
    ] {
        let applied = tool_policy::apply(e, ver, false, &p);
        let r = Request {
            version: ver,
            policy: &p,
            ..req("the prompt")
        };
        let inv = build(e, &r);
        let a = args(&inv);
        for tool_arg in applied
            .args
            .iter()
            .filter(|a| a.contains("tool") || a.contains("Tool"))
        {
            assert!(
                tool_arg.starts_with("--") && tool_arg.contains('='),
                "{e}: {tool_arg}"
            );
            let at = a.iter().position(|x| x == tool_arg).unwrap();
            assert!(
                a[at + 1].starts_with('-'),
                "{e}: {tool_arg} is followed by {:?}",
                a[at + 1]
            );
        }
    }
    // The prompt itself is never in claude's argv: it goes on stdin.
    let r = Request {
        policy: &p,
        ..req("LAB-WRITE the prompt")
    };
    let inv = build(EngineId::Claude, &r);
    assert_eq!(inv.stdin.as_deref(), Some("LAB-WRITE the prompt"));
    assert!(!args(&inv).iter().any(|a| a.contains("LAB-WRITE")));
}

/// Each flag vf sends is in the saved help of each version family it is sent to.
#[test]
fn every_policy_flag_is_in_the_saved_help() {
    let help = |cli: &str, ver: &str, file: &str| {
        std::fs::read_to_string(fixtures().join(cli).join(ver).join("help").join(file)).unwrap()
    };
    let all = pol(true, &["MyMCP"], &["Other"]);
    let cases: &[(EngineId, &str, &str, bool)] = &[
        (EngineId::Claude, "2.1.332", "help.txt", false),
        (EngineId::Claude, "2.1.220", "help.txt", false),
        (EngineId::Claude, "2.1.207", "help.txt", false),
        (EngineId::Codex, "0.171.0", "exec.txt", false),
        (EngineId::Codex, "0.146.0", "exec.txt", false),
        (EngineId::Codex, "0.144.1", "exec.txt", false),
        (EngineId::Gemini, "0.61.0", "help.txt", false),
        (EngineId::Gemini, "0.47.0", "help.txt", false),
        (EngineId::Copilot, "1.0.102", "help.txt", false),
        (EngineId::Copilot, "1.0.83", "help.txt", false),
        (EngineId::Codex, "0.171.0", "exec-resume.txt", true),
    ];
    for (e, ver, file, resume) in cases {
        let text = help(e.as_str(), ver, file);
        let applied = tool_policy::apply(*e, Some(&v(ver)), *resume, &all);
        for a in applied.args.iter().filter(|a| a.starts_with("--")) {
            let flag = a.split('=').next().unwrap();
            assert!(text.contains(flag), "{e} {ver}: {flag} is not in {file}");
        }
        if *e == EngineId::Codex && *resume {
            assert!(!text.contains("--sandbox") && applied.args.is_empty());
        }
    }
}

#[test]
fn contradictions_are_refused_by_the_build() {
    let ro = pol(true, &[], &[]);
    let r = Request {
        skip_permissions: true,
        policy: &ro,
        ..req("x")
    };
    assert_eq!(refused(EngineId::Claude, &r).exit_code(), exit::USAGE);
    let require = ToolPolicy {
        require_enforced: true,
        ..pol(true, &[], &[])
    };
    let r = Request {
        policy: &require,
        ..req("x")
    };
    let err = refused(EngineId::Opencode, &r);
    assert_eq!(err.exit_code(), exit::USAGE);
    assert!(err.to_string().contains("unenforced"), "{err}");
    assert!(EngineId::Claude.engine().build(&r).is_ok());
}

// ---------- through the binary ----------

fn vf_dispatch(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    vf_cli()
        .current_dir(dir)
        .env_remove("VF_STATE_DIR")
        .arg("dispatch")
        .arg("--cwd")
        .arg(dir)
        .arg("--state-dir")
        .arg(dir.join(".vibeflow"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn dry_run_json_reports_the_policy_and_an_unenforced_warning() {
    let tmp = Env::new();
    let out = vf_dispatch(
        tmp.path(),
        &[
            "-e",
            "codex",
            "--prompt",
            "hi",
            "--read-only",
            "--deny-tool",
            "shell",
            "--dry-run",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&v["args"], &v["policy"], &v["warnings"]),
        (
            &json!([
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                "-"
            ]),
            &status(E, U),
            &json!(["codex: tools unenforced: codex has no verified deny-tool flag"])
        )
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: codex: tools unenforced"),
        "{stderr}"
    );
}

#[test]
fn require_enforced_refuses_before_anything_is_written() {
    let tmp = Env::new();
    let state = tmp.path().join(".vibeflow");
    for extra in [
        &["-e", "copilot", "--read-only", "--require-enforced"][..],
        &["-e", "codex", "--allow-tool", "x", "--require-enforced"][..],
        &[
            "-e",
            "opencode",
            "--deny-tool",
            "bash",
            "--require-enforced",
            "--dry-run",
        ][..],
        &["-e", "claude", "--read-only", "--skip-permissions"][..],
        &[
            "-e",
            "claude",
            "--allow-tool",
            "Read",
            "--deny-tool",
            "Read",
        ][..],
        &["-e", "claude", "--allow-tool", ""][..],
    ] {
        let mut a = extra.to_vec();
        a.extend(["--prompt", "LAB-WRITE x", "--unit", "u"]);
        let out = vf_dispatch(tmp.path(), &a);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{extra:?}: {stderr}");
        assert!(!state.exists(), "{extra:?} wrote {:?}", files_under(&state));
    }
    let out = vf_dispatch(
        tmp.path(),
        &[
            "-e",
            "copilot",
            "--read-only",
            "--require-enforced",
            "--prompt",
            "x",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "require-enforced: copilot cannot enforce this policy: copilot: read-only unenforced"
        ),
        "{stderr}"
    );
}
