//! Private ranges in `vf dispatch --dry-run`: what is delivered, what is
//! refused (and how), and that the text is never printed or stored.

use vf::dispatch::private::{RangeSpec, apply_private_ranges, stage_private_ranges};

use super::common::assert_nowhere_under;
use super::*;

const SECRET: &str = "SECRET-7f3a-LINE";

fn secret_repo() -> Repo {
    let r = Repo::new();
    std::fs::create_dir_all(r.root.join("src")).unwrap();
    std::fs::write(
        r.root.join("src/lib.rs"),
        format!("fn a() {{}}\n// {SECRET} two\n// {SECRET} three\nfn d() {{}}\n"),
    )
    .unwrap();
    r
}

#[test]
fn dry_run_never_prints_private_text() {
    let r = secret_repo();
    for engine in ["claude", "codex", "copilot", "opencode", "gemini", "agy"] {
        for json in [true, false] {
            let mut cmd = r.vf();
            cmd.args([
                "dispatch",
                "--dry-run",
                "-e",
                engine,
                "--prompt",
                "review it",
                "--private-range",
                "src/lib.rs:2-3",
            ]);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "{engine}");
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains(SECRET), "{engine} json={json}: {all}");
            // The JSON shows where the ranges go (argv or stdin), as a placeholder.
            if json {
                assert!(all.contains("VF-PRIVATE-FILE-RANGES/1"), "{engine}: {all}");
            }
            let bytes = format!("// {SECRET} two\n// {SECRET} three\n").len();
            assert!(all.contains(&format!("{bytes} bytes")), "{engine}: {all}");
            if json {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(v["privateRanges"][0]["file"], "src/lib.rs");
                assert_eq!(v["privateRanges"][0]["start"], 2);
                assert_eq!(v["privateRanges"][0]["end"], 3);
                assert_eq!(v["privateRanges"][0]["bytes"], bytes);
            }
        }
    }
    assert_nowhere_under(&r.state(), SECRET);
}

#[test]
fn private_range_from_a_text_attachment() {
    let r = Repo::new();
    r.add("ctx.md", format!("one\n{SECRET}\nthree\n").as_bytes());
    let v = r.dry_run(&["-e", "claude", "--private-range", "ctx.md:2-2"]);
    assert_eq!(v["privateRanges"][0]["file"], "ctx.md");
    assert_eq!(v["privateRanges"][0]["bytes"], SECRET.len() + 1);
    assert!(!v.to_string().contains(SECRET));
    assert_nowhere_under(&r.state().join("dispatch"), SECRET);
}

#[test]
fn private_range_refusals() {
    let r = secret_repo();
    r.add("shot.png", b"\x89PNG");
    std::fs::write(r.root.join("latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(r.root.join("photo.jpg"), b"a\nb\n").unwrap();
    for (range, why) in [
        ("src/lib.rs:4-5", "outside"),
        ("src/lib.rs:9-9", "which has 4 line(s)"),
        ("shot.png:1-1", "not text"),
        ("photo.jpg:1-1", "not text"),
        ("latin1.txt:1-1", "UTF-8"),
        ("missing.rs:1-1", "no text attachment and no file"),
        ("../outside.md:1-1", "`..`"),
        ("/etc/hostname:1-1", "absolute"),
    ] {
        let err = r.dry_run_refused(&["-e", "claude", "--private-range", range]);
        assert!(err.contains(why), "{range}: {err}");
    }
    // Syntax is checked by the flag parser.
    for range in [
        "src/lib.rs:3-2",
        "src/lib.rs:0-1",
        "src/lib.rs",
        "src/lib.rs:a-b",
    ] {
        let err = r.dry_run_refused(&["-e", "claude", "--private-range", range]);
        assert!(err.contains("--private-range"), "{range}: {err}");
    }
}

/// cli.rs takes `--private-range` as text and `vf dispatch` parses it: a bad
/// value still gets clap's own report, word for word, and exit 2.
#[test]
fn private_range_syntax_errors_read_as_claps_own() {
    let r = secret_repo();
    for (range, why) in [
        (
            "bad",
            r#""bad" is not FILE:START-END (1-based inclusive line numbers)"#,
        ),
        ("x:3-1", r#""x:3-1": START 3 is after END 1"#),
        ("x:0-1", r#""x:0-1": line numbers start at 1"#),
        (":1-2", r#"":1-2" names no file"#),
        (
            "x:99999999999999999999999-1",
            r#"line number 99999999999999999999999 in "x:99999999999999999999999-1" is too large"#,
        ),
    ] {
        // A good range first: the first bad one is the one reported.
        let err = r.dry_run_refused(&[
            "-e",
            "claude",
            "--private-range",
            "src/lib.rs:1-1",
            "--private-range",
            range,
            "--session",
            "../x",
        ]);
        assert_eq!(
            err,
            format!(
                "error: invalid value '{range}' for '--private-range <FILE:START-END>': {why}\n\n\
                 For more information, try '--help'.\n"
            )
        );
    }
}

/// 11.15: a path below the working dir whose symbolic link (the file itself
/// or a directory on the way) leads out of it is refused, naming the path;
/// a link that stays inside is followed.
#[test]
fn private_range_through_a_symlink_out_of_the_working_dir_is_refused() {
    let r = secret_repo();
    let outside = r.file("outside.md", format!("{SECRET} elsewhere\n").as_bytes());
    std::os::unix::fs::symlink(&outside, r.root.join("leak.md")).unwrap();
    std::os::unix::fs::symlink(&r.src, r.root.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(r.root.join("src/lib.rs"), r.root.join("inside.rs")).unwrap();
    for (range, target) in [
        ("leak.md:1-1", "leak.md"),
        ("linkdir/outside.md:1-1", "linkdir/outside.md"),
    ] {
        let err = r.dry_run_refused(&["-e", "claude", "--private-range", range]);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&r.root.join(target).display().to_string())
                && err.contains(&outside.display().to_string())
                && err.contains("outside the working directory"),
            "{range}: {err}"
        );
        assert!(!err.contains(SECRET), "{err}");
    }
    let v = r.dry_run(&["-e", "claude", "--private-range", "inside.rs:2-2"]);
    assert_eq!(v["privateRanges"][0]["file"], "inside.rs");
    assert_nowhere_under(&r.state(), SECRET);
}

#[test]
fn wire_form_through_the_library() {
    let r = secret_repo();
    let specs: Vec<RangeSpec> = ["src/lib.rs:2-2", "src/lib.rs:4-4"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let staged = stage_private_ranges(&specs, &r.state(), &r.root).unwrap();
    let msg = apply_private_ranges("review it", &staged);
    assert_eq!(
        msg,
        format!(
            "review it\n\nVF-PRIVATE-FILE-RANGES/1\n\
             [{{\"end\":2,\"file\":\"src/lib.rs\",\"start\":2,\"text\":\"// {SECRET} two\\n\"}},\
             {{\"end\":4,\"file\":\"src/lib.rs\",\"start\":4,\"text\":\"fn d() {{}}\\n\"}}]"
        )
    );
    // The staged value's Debug form carries no text.
    assert!(!format!("{staged:?}").contains(SECRET));
}
