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
