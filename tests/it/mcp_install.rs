//! `vf mcp install` (`vf::project::mcp_install`): for each engine, the entry
//! printed and written where that engine reads it, idempotently, the rest of
//! the user's file kept byte for byte, a different `vf` entry refused
//! without --force, a file that does not parse refused and named, never
//! through a link or over a FIFO, a new file 0600, and the server's flags
//! checked as `vf mcp` parses them.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::common::{TempDir, read_text, stderr, tempdir, vf, vf_cli};

/// A project dir and a home, with every engine's home variable pointed below it.
struct Place {
    _t: TempDir,
    project: PathBuf,
    home: PathBuf,
}

fn place() -> Place {
    let t = tempdir();
    let (project, home) = (t.path().join("project"), t.path().join("home"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    Place {
        _t: t,
        project,
        home,
    }
}

impl Place {
    fn install(&self, engine: &str, extra: &[&str]) -> std::process::Output {
        vf_cli()
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("CODEX_HOME")
            .env_remove("COPILOT_HOME")
            .args(["mcp", "install", "--engine", engine])
            .args(extra)
            .output()
            .unwrap()
    }

    fn file(&self, engine: &str) -> PathBuf {
        match engine {
            "claude" => self.project.join(".mcp.json"),
            "gemini" => self.project.join(".gemini/settings.json"),
            "opencode" => self.project.join("opencode.json"),
            "copilot" => self.home.join(".copilot/mcp-config.json"),
            "codex" => self.home.join(".codex/config.toml"),
            _ => unreachable!(),
        }
    }
}

fn ok(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn refused(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    stderr(out)
}

const ENGINES: [&str; 5] = ["claude", "gemini", "opencode", "copilot", "codex"];

/// The `vf` server's entry as the engine's file holds it.
fn entry_of(engine: &str, text: &str) -> Value {
    match engine {
        "codex" => {
            let t: toml::Table = text.parse().unwrap();
            serde_json::to_value(&t["mcp_servers"]["vf"]).unwrap()
        }
        "opencode" => serde_json::from_str::<Value>(text).unwrap()["mcp"]["vf"].clone(),
        _ => serde_json::from_str::<Value>(text).unwrap()["mcpServers"]["vf"].clone(),
    }
}

fn expected(engine: &str, args: &[&str]) -> Value {
    let vf = vf().display().to_string();
    let mut argv = vec!["mcp"];
    argv.extend_from_slice(args);
    match engine {
        "claude" | "gemini" => json!({"command": vf, "args": argv}),
        "copilot" => json!({"type": "local", "command": vf, "args": argv, "tools": ["*"]}),
        "opencode" => {
            let mut c = vec![vf.as_str()];
            c.extend(argv);
            json!({"type": "local", "command": c, "enabled": true})
        }
        _ => json!({"command": vf, "args": argv,
                    "env_vars": ["VF_PARENT_UNIT", "VF_DEPTH", "VF_STATE_DIR"]}),
    }
}

#[test]
fn print_writes_nothing_and_write_is_idempotent_for_every_engine() {
    for engine in ENGINES {
        let p = place();
        let printed = ok(&p.install(engine, &["--", "--allow-engines", "codex"]));
        let file = p.file(engine);
        assert!(
            printed.starts_with(&format!("# {}\n", file.display())),
            "{printed}"
        );
        let body = printed.split_once('\n').unwrap().1;
        let want = expected(engine, &["--allow-engines", "codex"]);
        assert_eq!(entry_of(engine, body), want, "{engine}: {printed}");
        assert!(
            !file.exists(),
            "{engine}: printing wrote {}",
            file.display()
        );

        let first = ok(&p.install(engine, &["--write", "--", "--allow-engines", "codex"]));
        assert_eq!(first, format!("{:<18} {}\n", "created", file.display()));
        let text = read_text(&file);
        assert_eq!(entry_of(engine, &text), want, "{engine}: {text}");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{engine}");

        let again = ok(&p.install(engine, &["--write", "--", "--allow-engines", "codex"]));
        assert_eq!(again, format!("{:<18} {}\n", "unchanged", file.display()));
        assert_eq!(read_text(&file), text, "{engine}");
    }
}

/// A user's file: other servers and keys, comments where the format has them,
/// its own layout. Each keeps all of it byte for byte around vf's entry.
fn users_file(engine: &str) -> &'static str {
    match engine {
        "codex" => {
            "# my codex\nmodel = \"gpt-5.5\"\n\n[mcp_servers.docs]\ncommand = \"docs-server\" # mine\n\n[features]\nplugins = false\n"
        }
        "opencode" => {
            "{\n    \"$schema\": \"https://opencode.ai/config.json\",\n    \"mcp\": {\n        \"docs\": {\"type\": \"local\", \"command\": [\"docs\"]}\n    },\n    \"theme\":   \"dark\"\n}\n"
        }
        _ => {
            "{\"theme\":\"dark\",\n \"mcpServers\" : { \"docs\": { \"command\": \"docs\", \"args\": [\"--x\"] } },\n \"z\": [1, 2, {\"a\": \"}\\\"{\"}]}"
        }
    }
}

#[test]
fn a_users_file_keeps_every_other_byte_and_a_different_entry_needs_force() {
    for engine in ENGINES {
        let p = place();
        let file = p.file(engine);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let mine = users_file(engine);
        std::fs::write(&file, mine).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();

        let out = ok(&p.install(engine, &["--write"]));
        assert_eq!(out, format!("{:<18} {}\n", "updated", file.display()));
        let text = read_text(&file);
        assert_eq!(
            entry_of(engine, &text),
            expected(engine, &[]),
            "{engine}: {text}"
        );
        // What vf added is one contiguous piece: the user's bytes around it are intact.
        let added = text.len() - mine.len();
        let at = (0..=mine.len())
            .find(|&i| text[..i] == mine[..i] && text[i + added..] == mine[i..])
            .unwrap_or_else(|| panic!("{engine}: the rest of the file changed:\n{text}"));
        let piece = &text[at..at + added];
        assert!(
            piece.contains("\"vf\"") || piece.contains("[mcp_servers.vf]"),
            "{engine}: {piece}"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o644,
            "{engine}: an existing file keeps its permissions"
        );

        // A different vf entry: refused, the file untouched; --force replaces it.
        let err = refused(&p.install(engine, &["--write", "--", "--max-depth", "3"]));
        assert!(err.contains(&file.display().to_string()), "{engine}: {err}");
        assert!(
            err.contains("different `vf` server") && err.contains("--force"),
            "{err}"
        );
        assert_eq!(read_text(&file), text, "{engine}");
        let out = ok(&p.install(engine, &["--write", "--force", "--", "--max-depth", "3"]));
        assert_eq!(
            out,
            format!("{:<18} {}\n", "replaced (--force)", file.display())
        );
        let forced = read_text(&file);
        assert_eq!(
            entry_of(engine, &forced),
            expected(engine, &["--max-depth", "3"])
        );
        let other = match engine {
            "codex" => forced.contains("[mcp_servers.docs]\ncommand = \"docs-server\" # mine\n"),
            _ => forced.contains("\"docs\""),
        };
        assert!(other, "{engine}: {forced}");
        let again = ok(&p.install(engine, &["--write", "--", "--max-depth", "3"]));
        assert!(again.starts_with("unchanged"), "{engine}: {again}");
    }
}

#[test]
fn a_file_that_does_not_parse_is_refused_and_named() {
    for engine in ENGINES {
        let p = place();
        let file = p.file(engine);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let bad = "{ \"mcpServers\": { // a comment\n [oops\n";
        std::fs::write(&file, bad).unwrap();
        let err = refused(&p.install(engine, &["--write"]));
        assert!(err.contains(&file.display().to_string()), "{engine}: {err}");
        assert!(err.contains("does not parse"), "{engine}: {err}");
        assert_eq!(read_text(&file), bad, "{engine}");
    }
}

#[test]
fn never_through_a_link_never_over_a_fifo() {
    for engine in ENGINES {
        let p = place();
        let file = p.file(engine);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let elsewhere = p.home.join("elsewhere.json");
        std::fs::write(&elsewhere, "{}").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        let err = refused(&p.install(engine, &["--write"]));
        assert!(err.contains("symbolic link"), "{engine}: {err}");
        assert_eq!(read_text(&elsewhere), "{}", "{engine}");
        assert!(
            std::fs::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_symlink()
        );

        std::fs::remove_file(&file).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap();
        assert!(fifo.success());
        let err = refused(&p.install(engine, &["--write"]));
        assert!(err.contains("not a regular file"), "{engine}: {err}");
        assert!(
            std::fs::symlink_metadata(&file)
                .unwrap()
                .file_type()
                .is_fifo_like()
        );
    }
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}

impl FifoLike for std::fs::FileType {
    fn is_fifo_like(&self) -> bool {
        std::os::unix::fs::FileTypeExt::is_fifo(self)
    }
}

#[test]
fn a_linked_config_dir_is_refused() {
    let p = place();
    let real = p.home.join("dotfiles-codex");
    std::fs::create_dir_all(&real).unwrap();
    std::os::unix::fs::symlink(&real, p.home.join(".codex")).unwrap();
    let err = refused(&p.install("codex", &["--write"]));
    assert!(err.contains("symbolic link"), "{err}");
    assert!(std::fs::read_dir(&real).unwrap().next().is_none());
}

#[test]
fn the_servers_flags_are_checked_as_vf_mcp_parses_them() {
    let p = place();
    for flags in [
        &["--bogus"][..],
        &["--max-depth", "0"],
        &["--allow-engines", "nosuch"],
        &["install", "--engine", "claude"],
    ] {
        let mut args = vec!["--write", "--"];
        args.extend_from_slice(flags);
        let err = refused(&p.install("claude", &args));
        assert!(
            err.starts_with("vf: vf mcp install: the server's flags: "),
            "{flags:?}: {err}"
        );
        assert!(!p.file("claude").exists(), "{flags:?}");
    }
    let err = refused(&p.install("claude", &["--force"]));
    assert!(err.contains("--write"), "{err}");
}

#[test]
fn codex_and_copilot_follow_their_home_variables() {
    let p = place();
    let codex_home = p.home.join("elsewhere/codex");
    let out = vf_cli()
        .current_dir(&p.project)
        .env("HOME", &p.home)
        .env("CODEX_HOME", &codex_home)
        .args(["mcp", "install", "--engine", "codex", "--write", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    let file = codex_home.join("config.toml");
    assert_eq!(v["path"], json!(file));
    assert_eq!(v["action"], "created");
    assert_eq!(
        v["passEnv"],
        json!(["VF_PARENT_UNIT", "VF_DEPTH", "VF_STATE_DIR"])
    );
    assert!(file.exists());
    let out = vf_cli()
        .current_dir(&p.project)
        .env("HOME", &p.home)
        .env("COPILOT_HOME", p.home.join("cp"))
        .args(["mcp", "install", "--engine", "copilot", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(v["path"], json!(p.home.join("cp/mcp-config.json")));
    assert_eq!(
        (v["action"].clone(), v["passEnv"].clone()),
        (json!("printed"), json!([]))
    );
}

/// Shapes a splice must get right: an empty object, an empty `mcpServers`,
/// a one-line file, an empty file, a key that repeats, a non-object root or
/// container, and codex's `mcp_servers` as an inline table (refused: vf
/// would have to rewrite it).
#[test]
fn edge_shapes_merge_or_are_refused_whole() {
    let want = expected("claude", &[]);
    for (before, after_has) in [
        ("{}", "{\n  \"mcpServers\": {\n    \"vf\": {"),
        ("{\"mcpServers\": {}}\n", "{\"mcpServers\": {\n  \"vf\": {"),
        (
            "{\"a\":1,\"mcpServers\":{\"b\":{\"command\":\"b\"}}}",
            "{\"a\":1,\"mcpServers\":{\"vf\": {\"command\":\"",
        ),
        ("  \n", "{\n  \"mcpServers\": {"),
    ] {
        let p = place();
        let file = p.file("claude");
        std::fs::write(&file, before).unwrap();
        ok(&p.install("claude", &["--write"]));
        let text = read_text(&file);
        assert_eq!(entry_of("claude", &text), want, "{before:?}: {text}");
        assert!(text.starts_with(after_has), "{before:?}: {text}");
        let again = ok(&p.install("claude", &["--write"]));
        assert!(again.starts_with("unchanged"), "{before:?}: {again}");
    }
    for bad in ["[1, 2]", "{\"mcpServers\": [1]}", "{\"mcpServers\": \"x\"}"] {
        let p = place();
        let file = p.file("claude");
        std::fs::write(&file, bad).unwrap();
        let err = refused(&p.install("claude", &["--write"]));
        assert!(err.contains(&file.display().to_string()), "{bad}: {err}");
        assert_eq!(read_text(&file), bad);
    }
    let p = place();
    let file = p.file("codex");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let inline = "mcp_servers = { docs = { command = \"d\" } }\n";
    std::fs::write(&file, inline).unwrap();
    let err = refused(&p.install("codex", &["--write"]));
    assert!(
        err.contains("add it by hand") && err.contains("[mcp_servers.vf]"),
        "{err}"
    );
    assert_eq!(read_text(&file), inline);
}
