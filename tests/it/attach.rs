//! `vf attach` and attachments/private ranges in `vf dispatch --dry-run`.
//!
//! Flag spellings asserted here (e.g. `--attachment=`) come from the engine
//! files; if one is corrected there, update the expectation here.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

use crate::common;
use common::Env;

use vf::engine::EngineId;

/// A work dir `repo/` (the cwd of every command, its state dir
/// `repo/.vibeflow`) and `src/` beside it for files to attach.
struct Repo {
    env: Env,
    root: PathBuf,
    src: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let env = Env::new();
        let root = env.path().join("repo");
        let src = env.path().join("src");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&src).unwrap();
        Repo { env, root, src }
    }

    fn state(&self) -> PathBuf {
        self.root.join(".vibeflow")
    }

    fn store(&self) -> PathBuf {
        self.state().join("attachments")
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        self.env.write(&format!("src/{name}"), bytes)
    }

    /// `vf` in `repo/` with `VF_STATE_DIR=repo/.vibeflow`: named, so that a
    /// `.vibeflow/` above the test's dir is not found instead (finding one is
    /// [`the_nearest_state_dir_above_the_cwd_is_found`]).
    fn vf(&self) -> Command {
        let mut c = self.env.cmd(&[]);
        c.current_dir(&self.root).env("VF_STATE_DIR", self.state());
        Command::from_std(c)
    }

    /// `vf attach add FILE [extra...]`, asserting success.
    fn add(&self, name: &str, bytes: &[u8]) {
        let p = self.file(name, bytes);
        self.vf().args(["attach", "add"]).arg(&p).assert().success();
    }

    fn store_names(&self) -> Vec<String> {
        let mut v: Vec<String> = match std::fs::read_dir(self.store()) {
            Ok(rd) => rd
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }

    fn dry_run(&self, args: &[&str]) -> Value {
        let out = self
            .vf()
            .args([
                "dispatch",
                "--dry-run",
                "--json",
                "--prompt",
                "do the thing",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "vf dispatch {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Runs a dispatch dry-run expected to fail with exit 2; returns stderr.
    fn dry_run_refused(&self, args: &[&str]) -> String {
        let out = self
            .vf()
            .args([
                "dispatch",
                "--dry-run",
                "--json",
                "--prompt",
                "do the thing",
            ])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "vf dispatch {args:?}: stdout {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    }
}

fn args_of(v: &Value) -> Vec<String> {
    v["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn list_json(repo: &Repo) -> Vec<Value> {
    let out = repo
        .vf()
        .args(["attach", "list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

// ---------------------------------------------------------------------------
// The store

#[test]
fn add_list_rm_round_trip() {
    let r = Repo::new();
    let notes = r.file("notes.md", b"# notes\nline 2\n");
    r.vf()
        .args(["attach", "add"])
        .arg(&notes)
        .assert()
        .success();
    let shot = r.file("shot.png", b"\x89PNG\r\n\x1a\nfake");
    r.vf()
        .args(["attach", "add", "--name", "login.png"])
        .arg(&shot)
        .assert()
        .success();
    assert_eq!(r.store_names(), ["login.png", "notes.md"]);
    assert_eq!(
        std::fs::read(r.store().join("notes.md")).unwrap(),
        b"# notes\nline 2\n"
    );

    let list = list_json(&r);
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["name"], "login.png");
    assert_eq!(list[0]["kind"], "image");
    assert_eq!(list[0]["bytes"], 12);
    assert_eq!(list[1]["name"], "notes.md");
    assert_eq!(list[1]["kind"], "text");
    assert_eq!(list[1]["bytes"], 15);

    let out = r.vf().args(["attach", "list"]).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("login.png") && table.contains("image"),
        "{table}"
    );

    r.vf().args(["attach", "rm", "notes.md"]).assert().success();
    assert_eq!(r.store_names(), ["login.png"]);
    let out = r.vf().args(["attach", "rm", "notes.md"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no attachment named"));
}

#[test]
fn empty_store_lists_nothing() {
    let r = Repo::new();
    assert!(list_json(&r).is_empty());
    assert!(!r.state().exists(), "list must not create the state dir");
}

/// With no state dir named, vf uses the nearest `.vibeflow/` at or above its
/// cwd, as git finds `.git` (a nearer one than any above the test's dir).
#[test]
fn the_nearest_state_dir_above_the_cwd_is_found() {
    let r = Repo::new();
    r.add("notes.md", b"n\n");
    let below = r.root.join("src/deep");
    std::fs::create_dir_all(&below).unwrap();
    let out = r
        .vf()
        .current_dir(&below)
        .env_remove("VF_STATE_DIR")
        .args(["attach", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["name"], "notes.md", "{v}");
    assert!(!below.join(".vibeflow").exists());
}

#[test]
fn state_dir_flag_and_env() {
    let r = Repo::new();
    let elsewhere = r.src.join("state-a");
    let p = r.file("a.txt", b"a\n");
    r.vf()
        .args(["attach", "add", "--state-dir"])
        .arg(&elsewhere)
        .arg(&p)
        .assert()
        .success();
    assert!(elsewhere.join("attachments/a.txt").is_file());
    let env_dir = r.src.join("state-b");
    r.vf()
        .env("VF_STATE_DIR", &env_dir)
        .args(["attach", "add"])
        .arg(&p)
        .assert()
        .success();
    assert!(env_dir.join("attachments/a.txt").is_file());
    let out = r
        .vf()
        .env("VF_STATE_DIR", &env_dir)
        .args(["attach", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["name"], "a.txt");
    assert!(!r.state().exists(), "the default state dir was used");
}

#[test]
fn existing_name_needs_force() {
    let r = Repo::new();
    let p = r.file("plan.md", b"first\n");
    r.vf().args(["attach", "add"]).arg(&p).assert().success();
    std::fs::write(&p, b"second\n").unwrap();
    let out = r.vf().args(["attach", "add"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(
        std::fs::read(r.store().join("plan.md")).unwrap(),
        b"first\n"
    );
    r.vf()
        .args(["attach", "add", "--force"])
        .arg(&p)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(r.store().join("plan.md")).unwrap(),
        b"second\n"
    );
    // No temp file is left behind.
    assert_eq!(r.store_names(), ["plan.md"]);
}

#[test]
fn hostile_names_are_refused_and_nothing_is_written() {
    let r = Repo::new();
    let p = r.file("ok.md", b"x\n");
    let long = format!("{}.md", "n".repeat(62)); // 65 bytes
    assert_eq!(long.len(), 65);
    let fits = format!("{}.md", "n".repeat(61)); // 64 bytes
    for name in [
        "../escape.md",
        "../../etc/passwd.md",
        "a/b.md",
        "a\\b.md",
        "..",
        ".hidden.md",
        "-rf.md",
        "--force.md",
        "a..b.md",
        "tab\there.md",
        "nl\nx.md",
        "bell\u{7}.md",
        "del\u{7f}.md",
        "c1\u{85}.md",
        "evil\u{202E}dm.txt",
        "zw\u{200B}.md",
        "bom\u{FEFF}.md",
        "sp ace.md",
        "é.md",
        long.as_str(),
        "",
    ] {
        let out = r
            .vf()
            .arg("attach")
            .arg("add")
            .arg(format!("--name={name}"))
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name:?} accepted: {err}");
        assert!(err.contains("invalid attachment name"), "{name:?}: {err}");
        // Control and bidi characters are escaped in the message.
        assert!(
            !err.contains('\u{202E}') && !err.contains('\u{7}'),
            "{err:?}"
        );
    }
    assert!(r.store_names().is_empty(), "{:?}", r.store_names());
    assert!(!r.root.join("escape.md").exists());
    assert!(!r.state().join("escape.md").exists());
    r.vf()
        .args(["attach", "add", "--name", &fits])
        .arg(&p)
        .assert()
        .success();
    assert_eq!(r.store_names(), [fits]);
}

#[test]
fn derived_name_that_is_unsafe_asks_for_name() {
    let r = Repo::new();
    let p = r.file("my notes.md", b"x\n");
    let out = r.vf().args(["attach", "add"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name"));
    r.vf()
        .args(["attach", "add", "--name", "my-notes.md"])
        .arg(&p)
        .assert()
        .success();
}

#[test]
fn classification_and_refusals() {
    let r = Repo::new();
    for (name, kind) in [
        ("a.md", "text"),
        ("b.RS", "text"),
        ("Makefile", "text"),
        ("c.png", "image"),
        ("d.jpeg", "image"),
        ("e.webp", "image"),
        ("f.pdf", "document"),
        ("g.docx", "document"),
    ] {
        r.add(name, b"data\n");
        let list = list_json(&r);
        let e = list.iter().find(|e| e["name"] == name).unwrap();
        assert_eq!(e["kind"], kind, "{name}");
    }
    for (name, why) in [
        ("tool.exe", "not a known"),
        ("noext", "no extension"),
        ("x.tar.gz", "not a known"),
    ] {
        let p = r.file(name, b"data");
        let out = r.vf().args(["attach", "add"]).arg(&p).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{name}: {err}");
    }
    // Text must be UTF-8; a name may not change an extension's kind.
    let p = r.file("latin1.txt", b"caf\xe9\n");
    let out = r.vf().args(["attach", "add"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UTF-8"));
    let p = r.file("pic.png", b"\x89PNG");
    let out = r
        .vf()
        .args(["attach", "add", "--name", "pic.md"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Over the size limit (a sparse file: no real disk use).
    let big = r.src.join("big.pdf");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(vf::dispatch::attach::MAX_ATTACHMENT_BYTES + 1)
        .unwrap();
    let out = r.vf().args(["attach", "add"]).arg(&big).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("limited to 64 MiB"));
    // A missing source and a directory are refused.
    let out = r
        .vf()
        .args(["attach", "add"])
        .arg(r.src.join("missing.md"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::create_dir(r.src.join("dir.md")).unwrap();
    let out = r
        .vf()
        .args(["attach", "add"])
        .arg(r.src.join("dir.md"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// ---------------------------------------------------------------------------
// Per-engine argv

fn flag_of(e: EngineId) -> &'static str {
    e.engine().spec().attachment_flag.unwrap()
}

#[test]
fn claude_text_goes_to_system_prompt_file() {
    let r = Repo::new();
    r.add("notes.md", b"n\n");
    r.add("more.txt", b"m\n");
    let v = r.dry_run(&[
        "-e", "claude", "--attach", "notes.md", "--attach", "more.txt",
    ]);
    let args = args_of(&v);
    let want = [
        "--append-system-prompt-file=.vibeflow/attachments/notes.md",
        "--append-system-prompt-file=.vibeflow/attachments/more.txt",
    ];
    let got: Vec<&String> = args.iter().filter(|a| a.starts_with("--append")).collect();
    assert_eq!(got, want);
    assert!(want[0].starts_with(flag_of(EngineId::Claude)));
    assert_eq!(v["engine"], "claude");
    assert_eq!(v["engineReason"], "chosen with --engine");
    assert_eq!(v["attachments"][0]["name"], "notes.md");
    assert_eq!(v["attachments"][0]["kind"], "text");
    assert_eq!(
        v["attachments"][0]["path"],
        ".vibeflow/attachments/notes.md"
    );
}

#[test]
fn codex_image_flag() {
    let r = Repo::new();
    r.add("shot.png", b"\x89PNG");
    let v = r.dry_run(&["-e", "codex", "--attach", "shot.png"]);
    let args = args_of(&v);
    let i = args
        .iter()
        .position(|a| a == "--image=.vibeflow/attachments/shot.png")
        .unwrap_or_else(|| panic!("{args:?}"));
    // The stdin marker `-` stays last, after the image.
    assert_eq!(args.last().unwrap(), "-");
    assert!(i < args.len() - 1);
    assert!(args[i].starts_with(flag_of(EngineId::Codex)));
}

#[test]
fn copilot_attachments_come_before_prompt() {
    let r = Repo::new();
    r.add("shot.png", b"\x89PNG");
    r.add("spec.pdf", b"%PDF-1.7");
    let v = r.dry_run(&[
        "-e", "copilot", "--attach", "shot.png", "--attach", "spec.pdf",
    ]);
    let args = args_of(&v);
    let a = args
        .iter()
        .position(|a| a == "--attachment=.vibeflow/attachments/shot.png")
        .unwrap_or_else(|| panic!("{args:?}"));
    let b = args
        .iter()
        .position(|a| a == "--attachment=.vibeflow/attachments/spec.pdf")
        .unwrap_or_else(|| panic!("{args:?}"));
    let p = args.iter().position(|a| a == "-p").unwrap();
    assert!(a < b && b < p, "{args:?}");
    assert!(args[a].starts_with(flag_of(EngineId::Copilot)));
}

#[test]
fn opencode_takes_every_kind() {
    let r = Repo::new();
    r.add("notes.md", b"n\n");
    r.add("shot.png", b"\x89PNG");
    r.add("spec.pdf", b"%PDF-1.7");
    let v = r.dry_run(&[
        "-e", "opencode", "--attach", "notes.md", "--attach", "shot.png", "--attach", "spec.pdf",
    ]);
    let files: Vec<String> = args_of(&v)
        .into_iter()
        .filter(|a| a.starts_with(flag_of(EngineId::Opencode)))
        .collect();
    assert_eq!(
        files,
        [
            "--file=.vibeflow/attachments/notes.md",
            "--file=.vibeflow/attachments/shot.png",
            "--file=.vibeflow/attachments/spec.pdf",
        ]
    );
}

#[test]
fn state_outside_cwd_gives_absolute_paths() {
    let r = Repo::new();
    let state = r.src.join("outside-state");
    let p = r.file("notes.md", b"n\n");
    r.vf()
        .args(["attach", "add", "--state-dir"])
        .arg(&state)
        .arg(&p)
        .assert()
        .success();
    let v = r.dry_run(&[
        "-e",
        "claude",
        "--attach",
        "notes.md",
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    let want = format!(
        "--append-system-prompt-file={}",
        state.join("attachments/notes.md").display()
    );
    assert!(args_of(&v).contains(&want), "{v}");
}

#[test]
fn engines_without_attachments_refuse_naming_capable_ones() {
    let r = Repo::new();
    r.add("shot.png", b"\x89PNG");
    r.add("notes.md", b"n\n");
    r.add("spec.pdf", b"%PDF");
    for engine in ["gemini", "agy"] {
        let err = r.dry_run_refused(&["-e", engine, "--attach", "shot.png"]);
        assert!(
            err.contains(&format!("{engine}: image attachments are not supported"))
                && err.contains("codex, copilot, opencode"),
            "{err}"
        );
        let err = r.dry_run_refused(&["-e", engine, "--attach", "notes.md"]);
        assert!(err.contains("claude, opencode"), "{err}");
    }
    let err = r.dry_run_refused(&["-e", "claude", "--attach", "shot.png"]);
    assert!(err.contains("codex, copilot, opencode"), "{err}");
    let err = r.dry_run_refused(&["-e", "codex", "--attach", "spec.pdf"]);
    assert!(err.contains("copilot, opencode"), "{err}");
    let err = r.dry_run_refused(&["-e", "copilot", "--attach", "notes.md"]);
    assert!(err.contains("claude, opencode"), "{err}");
    // Unknown and duplicated attachments.
    let err = r.dry_run_refused(&["-e", "claude", "--attach", "nope.md"]);
    assert!(err.contains("no attachment named"), "{err}");
    let err = r.dry_run_refused(&[
        "-e", "claude", "--attach", "notes.md", "--attach", "notes.md",
    ]);
    assert!(err.contains("twice"), "{err}");
    let err = r.dry_run_refused(&["-e", "claude", "--attach", "../x.md"]);
    assert!(err.contains("invalid attachment name"), "{err}");
}

// ---------------------------------------------------------------------------
// --engine auto (readiness is not checked in --dry-run: support-matrix order)

#[test]
fn auto_rules() {
    let r = Repo::new();
    r.add("notes.md", b"n\n");
    r.add("shot.png", b"\x89PNG");
    r.add("spec.pdf", b"%PDF");
    r.add("other.png", b"\x89PNG");
    for (attach, want) in [
        (&[][..], "claude"),
        (&["notes.md"][..], "claude"),
        (&["shot.png"][..], "codex"),
        (&["spec.pdf"][..], "copilot"),
        (&["shot.png", "other.png"][..], "codex"),
        (&["shot.png", "notes.md"][..], "opencode"),
        (&["notes.md", "shot.png"][..], "opencode"),
        (&["shot.png", "spec.pdf"][..], "copilot"),
        (&["notes.md", "spec.pdf"][..], "opencode"),
        (&["notes.md", "shot.png", "spec.pdf"][..], "opencode"),
    ] {
        let mut args = vec!["--engine", "auto"];
        for a in attach {
            args.extend(["--attach", a]);
        }
        let v = r.dry_run(&args);
        assert_eq!(v["engine"], want, "{attach:?}");
        assert_eq!(v["program"], want, "{attach:?}");
        let reason = v["engineReason"].as_str().unwrap();
        assert!(reason.starts_with("auto: "), "{reason}");
        assert!(reason.contains(want), "{reason}");
        assert_eq!(v["attachments"].as_array().unwrap().len(), attach.len());
    }
    let v = r.dry_run(&["-e", "auto", "--attach", "shot.png", "--attach", "notes.md"]);
    assert!(
        v["engineReason"].as_str().unwrap().contains("text + image"),
        "{v}"
    );
}

#[test]
fn auto_cannot_resume_a_session() {
    let r = Repo::new();
    let err = r.dry_run_refused(&[
        "-e",
        "auto",
        "--session",
        "01a229e6-b739-7472-9ac7-c8fe37200f9b",
    ]);
    assert!(
        err.contains("--session") && err.contains("--engine"),
        "{err}"
    );
    let v = r.dry_run(&[
        "-e",
        "claude",
        "--session",
        "01a229e6-b739-7472-9ac7-c8fe37200f9b",
    ]);
    assert_eq!(v["engine"], "claude");
}

#[test]
fn engine_value_is_checked() {
    let r = Repo::new();
    let out = r
        .vf()
        .args(["dispatch", "--dry-run", "-e", "automatic", "--prompt", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("auto"));
}

// ---------------------------------------------------------------------------
// Private ranges

#[path = "attach/private.rs"]
mod private;

#[test]
fn cli_definition_is_consistent() {
    use clap::CommandFactory;
    vf::cli::Cli::command().debug_assert();
}
