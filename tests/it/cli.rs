//! The clap front end: help, completions, man page, usage errors.

use std::collections::BTreeSet;

use crate::common;
use common::{read_text, root, vf_cli as vf};

#[test]
fn completions_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = vf().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        for sub in [
            "dispatch",
            "resume",
            "status",
            "orchestrate",
            "doctor",
            "replay",
            "attach",
            "engines",
        ] {
            assert!(text.contains(sub), "{shell} completions lack {sub}");
        }
    }
}

#[test]
fn man_page_is_roff_for_vf() {
    let out = vf().arg("man").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(".ie") || text.contains(".TH vf"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text.contains("dispatch"));
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        &["dispatch", "--engine", "nope", "--prompt", "x"][..],
        &[
            "dispatch",
            "--engine",
            "codex",
            "--prompt",
            "x",
            "--prompt-file",
            "y",
        ][..],
        &["frobnicate"][..],
    ] {
        let out = vf().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error:"), "{args:?}: {err}");
    }
    // Errors vf itself raises are one line, prefixed `vf:`.
    let out = vf()
        .args([
            "dispatch",
            "--engine",
            "codex",
            "--prompt",
            "x",
            "--session",
            "../x",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("vf: "), "{err}");
}

#[test]
fn help_and_version_succeed() {
    assert!(vf().arg("--help").output().unwrap().status.success());
    let out = vf().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("vf "));
}

#[test]
fn cli_imports_only_clap_std_the_engine_types_and_the_variables_names() {
    use common::source::{code_of, crate_modules, crates_named, dependencies};
    let deps = dependencies(&read_text(&root().join("Cargo.toml")));
    let (mut modules, mut crates) = (BTreeSet::new(), BTreeSet::new());
    for f in common::files_under(&root().join("src/cli")) {
        let code = code_of(&read_text(&f));
        modules.extend(crate_modules(&code));
        crates.extend(crates_named(&code, &deps));
    }
    assert_eq!(
        modules,
        BTreeSet::from(["engine".to_string(), "ground".to_string()])
    );
    assert_eq!(crates, BTreeSet::from(["clap"]));
}

#[test]
fn state_dir_and_output_flags_are_the_same_everywhere() {
    // Help text with its wrapping undone.
    let help = |cmd: &str| {
        let out = vf().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success(), "{cmd}");
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let state = "--state-dir <DIR> vf's state directory (default: the nearest `.vibeflow/`, else `./.vibeflow`) [env: VF_STATE_DIR";
    let output = "--output <OUTPUT> Output format (default: human on a terminal, jsonl otherwise; for `orchestrate`, human is a live table)";
    for cmd in ["dispatch", "resume", "orchestrate", "status", "doctor"] {
        assert!(help(cmd).contains(state), "{cmd}: {}", help(cmd));
        if matches!(cmd, "dispatch" | "resume" | "orchestrate") {
            assert!(help(cmd).contains(output), "{cmd}: {}", help(cmd));
            let out = vf()
                .args([cmd, "x", "--json", "--output", "jsonl"])
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(2),
                "{cmd}: --json and --output conflict"
            );
        }
    }
}
