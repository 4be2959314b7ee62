//! A resumed (or re-run) unit keeps what it asked for: its read-only and
//! tool policy, its path guards and its hooks, from the marker's `asked`;
//! flags given again replace a part, `--clear PART` drops one, an older
//! marker without the field asks nothing, a recorded
//! `--require-enforced` refuses a resume the engine cannot enforce, and the
//! `--mcp` file is kept by its path and read again.

use super::*;

const CLAUDE: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";

/// The repository with the fake as claude 2.1.332, which appends to
/// `secrets/key` on every run (never for `--version`) and logs its argv.
fn claude_repo() -> (Repo, PathBuf) {
    let r = Repo::new();
    r.env.fake_for("claude");
    let log = r.env.path().join("args.log");
    let body = format!(
        "FAKE_STDOUT={}\nFAKE_VERSION=2.1.332\nFAKE_ARGS_LOG={}\n{}\n",
        fixture(CLAUDE).display(),
        log.display(),
        guards::engine_only("mkdir -p secrets; echo x >> secrets/key"),
    );
    r.env.write("bin/claude.env", body);
    (r, log)
}

/// `vf ARGS --engine-bin <fake claude> --json` in the repository.
fn claude(r: &Repo, args: &[&str]) -> Output {
    let bin = r.env.fake_for("claude");
    let mut all = args.to_vec();
    all.extend(["--engine-bin", bin.to_str().unwrap(), "--json"]);
    r.run(&all)
}

fn dispatch(r: &Repo, unit: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "dispatch", "--engine", "claude", "--unit", unit, "--prompt", "go",
    ];
    args.extend_from_slice(extra);
    claude(r, &args)
}

fn argv(log: &Path) -> Vec<String> {
    let text = read_text(log);
    text.split("--stdin--")
        .next()
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// The marker's `asked` with the given parts set, the rest empty.
fn asked(parts: Value) -> Value {
    let mut a = json!({
        "readOnly": false, "allowTools": [], "denyTools": [], "requireEnforced": false,
        "denyPaths": [], "allowPaths": [], "onFinish": null, "onFail": null,
    });
    for (k, v) in parts.as_object().unwrap() {
        a[k] = v.clone();
    }
    a
}

fn session_of(r: &Repo, unit: &str) -> String {
    r.env.marker(unit)["engineSessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_resume_without_flags_keeps_read_only_and_the_path_guards() {
    let (r, log) = claude_repo();
    let out = dispatch(&r, "k1", &["--read-only", "--deny-path", "secrets/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_json_eq(
        &guards::outcome(&stdout_json(&out)),
        &guards::refused("secrets/key"),
    );
    let want = asked(json!({"readOnly": true, "denyPaths": ["secrets/**"]}));
    assert_json_eq(&r.env.marker("k1")["asked"], &want);
    // A dry re-run shows what it would keep: the guards and read-only.
    let dry = dispatch(&r, "k1", &["--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let dry = stdout_json(&dry);
    assert_eq!(
        (&dry["pathGuards"], &dry["policy"], dry.get("hooks")),
        (
            &json!({"deny": ["secrets/**"], "allow": []}),
            &json!({"readOnly": "enforced", "tools": "off"}),
            None
        ),
        "{dry}"
    );
    // Resumed without a flag: still read-only, and the change still refused.
    let id = session_of(&r, "k1");
    let out = claude(&r, &["resume", "k1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_json_eq(&guards::outcome(&res), &guards::refused("secrets/key"));
    assert_eq!(
        res["policy"],
        json!({"readOnly": "enforced", "tools": "off"})
    );
    assert_eq!(
        argv(&log),
        [
            "-p",
            "-r",
            &id,
            "--permission-mode",
            "plan",
            "--output-format",
            "stream-json",
            "--verbose"
        ]
    );
    assert_json_eq(&r.env.marker("k1")["asked"], &want);
}

#[test]
fn flags_given_again_replace_their_part_and_clear_drops_one() {
    let (r, log) = claude_repo();
    let first = [
        "--read-only",
        "--allow-tool",
        "Read",
        "--deny-path",
        "secrets/**",
    ];
    let out = dispatch(&r, "k2", &first);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // A new allow list replaces the old one; read-only and the guards stay.
    let out = claude(&r, &["resume", "k2", "--allow-tool", "Grep"]);
    assert_json_eq(
        &guards::outcome(&stdout_json(&out)),
        &guards::refused("secrets/key"),
    );
    let args = argv(&log);
    assert!(
        args.contains(&"--allowedTools=Grep".to_string()),
        "{args:?}"
    );
    assert!(
        !args.contains(&"--allowedTools=Read".to_string()),
        "{args:?}"
    );
    assert!(
        args.windows(2).any(|w| w == ["--permission-mode", "plan"]),
        "{args:?}"
    );
    let kept = json!({"readOnly": true, "allowTools": ["Grep"], "denyPaths": ["secrets/**"]});
    assert_json_eq(&r.env.marker("k2")["asked"], &asked(kept));
    // Dropped on purpose: read-only and the tools go, the guards stay.
    let out = claude(
        &r,
        &["resume", "k2", "--clear", "read-only", "--clear", "tools"],
    );
    assert_json_eq(
        &guards::outcome(&stdout_json(&out)),
        &guards::refused("secrets/key"),
    );
    let args = argv(&log);
    let loose = |a: &String| a.contains("permission-mode") || a.contains("allowedTools");
    assert!(!args.iter().any(loose), "{args:?}");
    let kept = asked(json!({"denyPaths": ["secrets/**"]}));
    assert_json_eq(&r.env.marker("k2")["asked"], &kept);
    // `all` drops everything: a dry re-run shows no guards, no policy.
    let dry = stdout_json(&dispatch(&r, "k2", &["--dry-run", "--clear", "all"]));
    let shown = (dry.get("pathGuards"), &dry["policy"]);
    assert_eq!(
        shown,
        (None, &json!({"readOnly": "off", "tools": "off"})),
        "{dry}"
    );
    // New guards replace the old: the change is allowed now, the unit done.
    let out = claude(&r, &["resume", "k2", "--deny-path", "docs/**"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_json_eq(
        &r.env.marker("k2")["asked"],
        &asked(json!({"denyPaths": ["docs/**"]})),
    );
}

#[test]
fn an_older_marker_without_the_field_asks_nothing() {
    let (r, log) = claude_repo();
    let out = dispatch(&r, "k3", &["--read-only", "--deny-path", "secrets/**"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let mut m = r.env.marker("k3");
    m.as_object_mut().unwrap().remove("asked");
    std::fs::write(
        r.env.marker_path("k3"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
    let out = claude(&r, &["resume", "k3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(res["policy"], json!({"readOnly": "off", "tools": "off"}));
    assert!(!argv(&log).contains(&"--permission-mode".to_string()));
}

#[test]
fn the_dry_run_shows_the_path_guards_and_hooks() {
    let (r, _) = claude_repo();
    let extra = [
        "--dry-run",
        "--deny-path",
        "secrets/**",
        "--allow-path",
        "src/**",
        "--on-finish",
        "notify done",
        "--on-fail",
        "notify failed",
    ];
    let out = dispatch(&r, "d1", &extra);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let res = stdout_json(&out);
    assert_eq!(
        (&res["pathGuards"], &res["hooks"]),
        (
            &json!({"deny": ["secrets/**"], "allow": ["src/**"]}),
            &json!({"onFinish": "notify done", "onFail": "notify failed"})
        ),
        "{res}"
    );
    assert!(!r.env.state().join("markers").exists());
}

#[test]
fn a_recorded_require_enforced_refuses_a_resume_it_cannot_hold() {
    // codex enforces read-only on `exec` but not on `exec resume`.
    let r = Repo::new();
    let fail = fixture("codex/0.171.0/d_error500.stdout.jsonl");
    r.fake_env(&format!("FAKE_STDOUT={}\nFAKE_WRITE=", fail.display()));
    let out = r.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "c1",
        "--prompt",
        "go",
        "--json",
        "--read-only",
        "--require-enforced",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let before = r.env.marker_bytes("c1");
    let listing = list_tree(&r.env.state());
    let out = r.run(&["resume", "c1", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("unenforced"), "{}", stderr(&out));
    assert_eq!(r.env.marker_bytes("c1"), before);
    assert_eq!(list_tree(&r.env.state()), listing);
    // Dropped on purpose, the resume runs, read-only unenforced (a warning).
    let out = r.run(&["resume", "c1", "--json", "--clear", "require-enforced"]);
    let res = stdout_json(&out);
    assert_eq!(
        res["policy"],
        json!({"readOnly": "unenforced", "tools": "off"}),
        "{res}"
    );
}

#[test]
fn a_plan_units_own_values_are_recorded() {
    let r = Repo::new();
    let extra = "deny_paths = [\"secrets/**\"]\nread_only = true\non_fail = \"true\"";
    let out = r.plan(&unit_toml("p1", &[], extra));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = asked(json!({"readOnly": true, "denyPaths": ["secrets/**"], "onFail": "true"}));
    assert_json_eq(&r.env.marker("p1")["asked"], &want);
}

/// Every path below `dir`, sorted.
fn list_tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `--mcp FILE` is kept too: the marker records the file's canonical path
/// (never the servers), a resume reads it again and hands it to the engine;
/// a kept file that is gone is exit 2 naming `--clear mcp`, with nothing
/// written; `--clear mcp` drops it. A plan unit records its `mcp` file.
#[test]
fn the_mcp_file_is_kept_by_path_and_read_again() {
    let (r, log) = claude_repo();
    let servers = r.env.write(
        "cfg/servers.json",
        r#"{"mcpServers": {"files": {"command": "mcp-files", "env": {"T": "s3cret-kept"}}}}"#,
    );
    let canonical = std::fs::canonicalize(&servers).unwrap();
    // Failed by its guard (the fake writes secrets/key), so it can be resumed.
    let first = [
        "--mcp",
        servers.to_str().unwrap(),
        "--deny-path",
        "secrets/**",
    ];
    let out = dispatch(&r, "m1", &first);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let want = asked(json!({"mcp": canonical.to_str().unwrap(), "denyPaths": ["secrets/**"]}));
    assert_json_eq(&r.env.marker("m1")["asked"], &want);
    let config = |args: &[String]| {
        args.iter()
            .filter(|a| a.starts_with("--mcp-config="))
            .count()
    };
    // Resumed without a flag: the servers are given again.
    let out = claude(&r, &["resume", "m1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["mcp"], json!(["files"]));
    assert_eq!(config(&argv(&log)), 1, "{:?}", argv(&log));
    assert_json_eq(&r.env.marker("m1")["asked"], &want);
    // The file is gone: refused, nothing written.
    std::fs::remove_file(&servers).unwrap();
    let before = r.env.marker_bytes("m1");
    let listing = list_tree(&r.env.state());
    let out = claude(&r, &["resume", "m1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--clear mcp") && err.contains("servers.json"),
        "{err}"
    );
    assert_eq!(r.env.marker_bytes("m1"), before);
    assert_eq!(list_tree(&r.env.state()), listing);
    // Dropped on purpose: no servers, nothing recorded.
    let out = claude(&r, &["resume", "m1", "--clear", "mcp"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(config(&argv(&log)), 0, "{:?}", argv(&log));
    let want = asked(json!({"denyPaths": ["secrets/**"]}));
    assert_json_eq(&r.env.marker("m1")["asked"], &want);
    // A plan unit's file, recorded by its canonical path (a claude unit:
    // codex refuses `--mcp`).
    let servers = r.env.write(
        "cfg/plan-servers.json",
        r#"{"mcpServers": {"p": {"command": "x"}}}"#,
    );
    let extra = format!("mcp = {:?}", servers.to_str().unwrap());
    let text = unit_toml("p2", &[], &extra).replace("engine = \"codex\"", "engine = \"claude\"");
    let plan = r.env.write("repo/.plan/plan.toml", text);
    let mut c = r.vf(&["orchestrate", plan.to_str().unwrap(), "--json"]);
    c.env("VF_CLAUDE_BIN", r.env.fake_for("claude"));
    let out = run_bounded(c, Duration::from_secs(90));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mcp_args = argv(&log);
    assert_eq!(config(&mcp_args), 1, "{mcp_args:?}");
    let canonical = std::fs::canonicalize(&servers).unwrap();
    assert_json_eq(
        &r.env.marker("p2")["asked"],
        &asked(json!({"mcp": canonical.to_str().unwrap()})),
    );
}
