//! The clap front end: help, completions, man page, usage errors.

use assert_cmd::Command;

fn vf() -> Command {
    Command::cargo_bin("vf").unwrap()
}

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

/// The paths `src` reaches, sorted: every `use` tree (whitespace removed) and
/// every inline `crate::` path. Comments are skipped.
fn paths_used(src: &str) -> Vec<String> {
    let code: Vec<&str> = src
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect();
    let mut out = Vec::new();
    let mut tree: Option<String> = None;
    for line in &code {
        let start = line.strip_prefix("pub use ").or(line.strip_prefix("use "));
        if let Some(rest) = start {
            tree = Some(String::new());
            if let Some(t) = tree.as_mut() {
                t.push_str(rest);
            }
        } else if let Some(t) = tree.as_mut() {
            t.push_str(line);
        }
        if let Some(t) = tree.take_if(|t| t.contains(';')) {
            out.push(t.trim_end_matches(';').split_whitespace().collect());
        }
    }
    let text = code.join("\n");
    for (i, _) in text.match_indices("crate::") {
        let tail = &text[i..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn cli_rs_imports_only_clap_std_and_the_engine_types() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/cli.rs")).unwrap();
    let used = paths_used(&src);
    assert!(used.iter().any(|p| p.starts_with("clap::")), "{used:?}");
    let stray: Vec<&String> = used
        .iter()
        .filter(|p| {
            !["std::", "clap::", "crate::engine::"]
                .iter()
                .any(|ok| p.starts_with(ok))
        })
        .collect();
    assert!(
        stray.is_empty(),
        "cli.rs reaches beyond clap/std/engine: {stray:?}"
    );
    // The checker itself sees a core import and an inline path.
    let bad = paths_used(
        "use crate::{\n    private::RangeSpec,\n};\n// crate::x\nfn f(x: crate::doctor::Options) {}",
    );
    assert_eq!(
        bad,
        [
            "crate::",
            "crate::doctor::Options",
            "crate::{private::RangeSpec,}"
        ]
    );
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
