//! The user config file (docs/CONFIG.md): precedence of each layer, the
//! origins `vf config` and `vf dispatch --dry-run --json` report, bad files
//! (exit 2 naming the file and the line), and that no test reads the
//! developer's own config.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use common::{Env, assert_json_eq, stderr, stdout_json};

/// `vf ARGS` in `env` with `VF_CONFIG=config`.
fn with_config(env: &Env, config: &Path, args: &[&str]) -> Command {
    let mut c = env.cmd(args);
    c.env("VF_CONFIG", config);
    c
}

fn run(c: Command) -> std::process::Output {
    common::run_bounded(c, std::time::Duration::from_secs(60))
}

const CONFIG: &str = r#"jobs = 7

[defaults]
engine = "codex"
read_only = true
deny_tools = ["shell"]
on_finish = "true"
timeout = 30.0

[engines.codex]
model = "gpt-config"
effort = "high"
"#;

/// `vf dispatch --dry-run --json` with `extra` flags: the result's origins and args.
fn dry_run(env: &Env, config: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "dispatch",
        "--dry-run",
        "--json",
        "--prompt",
        "x",
        "--unit",
        "u",
    ];
    args.extend_from_slice(extra);
    let out = run(with_config(env, config, &args));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout_json(&out)
}

#[test]
fn a_flag_beats_the_config_which_beats_the_builtin_in_a_dispatch() {
    let env = Env::new();
    let config = env.write("cfg/config.toml", CONFIG);
    let origin = format!("config:{}", config.display());
    let v = dry_run(&env, &config, &[]);
    assert_eq!(v["engine"], "codex");
    assert_eq!(
        v["engineReason"],
        format!("chosen by `engine` in {}", config.display())
    );
    let args: Vec<&str> = v["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["--model", "gpt-config"]),
        "{args:?}"
    );
    assert_json_eq(
        &v["origins"],
        &json!({
            "engine": origin, "state_dir": "env", "model": origin, "effort": origin,
            "read_only": origin, "allow_tools": "builtin", "deny_tools": origin,
            "require_enforced": "builtin", "deny_paths": "builtin", "allow_paths": "builtin",
            "on_finish": origin, "on_fail": "builtin", "stall_timeout": "builtin",
            "timeout": origin, "fix_rounds": "builtin", "review": "builtin",
            "on_conflict": "builtin", "resolver": "builtin",
            "pause_at": "builtin", "stagger": "builtin", "rotate": "builtin",
        }),
    );
    assert_eq!(v["hooks"], json!({"onFinish": "true", "onFail": null}));
    // Every flag given wins over the file.
    let v = dry_run(
        &env,
        &config,
        &[
            "--engine",
            "claude",
            "--model",
            "sonnet",
            "--deny-tool",
            "Bash",
            "--timeout",
            "9",
        ],
    );
    assert_eq!(v["engine"], "claude");
    let o = &v["origins"];
    for key in ["engine", "model", "deny_tools", "timeout"] {
        assert_eq!(o[key], "flag", "{key}: {o}");
    }
    // The per-engine model is claude's: none in the file.
    assert_eq!(
        (&o["effort"], &o["read_only"]),
        (&json!("builtin"), &json!(origin))
    );
}

#[test]
fn a_run_the_config_shaped_names_its_origins_in_the_result() {
    let env = Env::new();
    let config = env.write("cfg/config.toml", "[defaults]\nengine = \"codex\"\n");
    let run_json = |config: &Path, engine: &[&str]| {
        let mut args = vec!["dispatch", "--json", "--prompt", "x"];
        args.extend_from_slice(engine);
        let mut c = with_config(&env, config, &args);
        c.env("VF_CODEX_BIN", env.fake_for("codex")).env(
            "FAKE_STDOUT",
            common::fixture("codex/0.171.0/a_json.stdout.jsonl"),
        );
        let out = run(c);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout_json(&out)
    };
    let v = run_json(&config, &[]);
    assert_eq!(v["engine"], "codex");
    assert_eq!(
        v["origins"]["engine"],
        format!("config:{}", config.display())
    );
    assert_eq!(v["origins"]["model"], "builtin");
    // Without a file, the result is as it always was.
    let v = run_json(&common::no_config(), &["-e", "codex"]);
    assert_eq!(v.get("origins"), None);
}

#[test]
fn without_a_config_or_flag_dispatch_needs_an_engine() {
    let env = Env::new();
    let out = run(env.cmd(&["dispatch", "--dry-run", "--prompt", "x"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no engine: give --engine NAME"),
        "{}",
        stderr(&out)
    );
}

/// `vf config --json` (and `--plan`) in `env`.
fn shown(env: &Env, config: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["config", "--json"];
    args.extend_from_slice(extra);
    let out = run(with_config(env, config, &args));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout_json(&out)
}

/// The setting `key` of `vf config --json`: (value, origin).
fn setting(v: &Value, key: &str) -> (Value, Value) {
    let s = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap();
    (s["value"].clone(), s["origin"].clone())
}

#[test]
fn vf_config_names_each_settings_origin_and_the_state_dir_order() {
    let env = Env::new();
    let config = env.write(
        "cfg/config.toml",
        format!(
            "state_dir = \"{}\"\n{CONFIG}",
            env.path().join("cfg-state").display()
        ),
    );
    let origin = json!(format!("config:{}", config.display()));
    let v = shown(&env, &config, &[]);
    assert_eq!((&v["path"], &v["exists"]), (&json!(config), &json!(true)));
    // VF_STATE_DIR (the harness sets it) beats the file.
    let state = json!(env.state().display().to_string());
    assert_eq!(setting(&v, "state_dir"), (state, json!("env")));
    assert_eq!(setting(&v, "jobs"), (json!(7), origin.clone()));
    assert_eq!(setting(&v, "engine"), (json!("codex"), origin.clone()));
    assert_eq!(
        setting(&v, "engines.codex.model"),
        (json!("gpt-config"), origin.clone())
    );
    assert_eq!(
        setting(&v, "on_rate_limit"),
        (json!("fail"), json!("builtin"))
    );
    // A flag beats the variable; without either, the file's.
    let flag = env.path().join("flag-state");
    let v = shown(&env, &config, &["--state-dir", flag.to_str().unwrap()]);
    assert_eq!(setting(&v, "state_dir"), (json!(flag), json!("flag")));
    let mut c = with_config(&env, &config, &["config", "--json"]);
    c.env_remove("VF_STATE_DIR");
    let v = stdout_json(&run(c));
    assert_eq!(
        setting(&v, "state_dir"),
        (json!(env.path().join("cfg-state")), origin)
    );
    // The human form: origin, tab, key=value.
    let out = run(with_config(&env, &config, &["config"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("config:{}\tjobs=7\n", config.display())),
        "{text}"
    );
    assert!(text.contains("builtin\tfallback=[]\n"), "{text}");
}

#[test]
fn a_plan_unit_beats_its_defaults_which_beat_the_config() {
    let env = Env::new();
    let config = env.write("cfg/config.toml", CONFIG);
    let origin = format!("config:{}", config.display());
    let plan = env.write(
        "plan.toml",
        "[defaults]\ndeny_tools = [\"x\"]\ntimeout = 5.0\n\
         [[unit]]\nname = \"own\"\nengine = \"claude\"\nprompt = \"p\"\ntimeout = 1.0\n\
         [[unit]]\nname = \"cfg\"\nprompt = \"p\"\n",
    );
    let v = shown(&env, &config, &["--plan", plan.to_str().unwrap()]);
    let unit = |n: &str| {
        v["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == n)
            .unwrap()["origins"]
            .clone()
    };
    let own = unit("own");
    let cfg = unit("cfg");
    let pick = |o: &Value| {
        [
            "engine",
            "timeout",
            "deny_tools",
            "read_only",
            "model",
            "allow_paths",
        ]
        .map(|k| o[k].clone())
    };
    assert_eq!(
        pick(&own),
        ["unit", "unit", "defaults", &origin, "builtin", "builtin"].map(|s| json!(s))
    );
    assert_eq!(
        pick(&cfg),
        [&origin, "defaults", "defaults", &origin, &origin, "builtin"].map(|s| json!(s))
    );
}

#[test]
fn the_configs_engine_and_jobs_reach_a_plan_run() {
    let env = Env::new();
    let config = env.write(
        "cfg/config.toml",
        "jobs = 1\n[defaults]\nengine = \"codex\"\n",
    );
    let plan = env.write(
        "plan.toml",
        "[[unit]]\nname = \"a\"\nprompt = \"p\"\n[[unit]]\nname = \"b\"\nprompt = \"p\"\nengine = \"codex\"\n",
    );
    let mut c = with_config(
        &env,
        &config,
        &["orchestrate", plan.to_str().unwrap(), "--json"],
    );
    c.env("VF_CODEX_BIN", env.fake_for("codex")).env(
        "FAKE_STDOUT",
        common::fixture("codex/0.171.0/a_json.stdout.jsonl"),
    );
    let out = run(c);
    let v = stdout_json(&out);
    let engines: Vec<&Value> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["engine"])
        .collect();
    assert_eq!(
        engines,
        [&json!("codex"), &json!("codex")],
        "{}",
        stderr(&out)
    );
    // Each unit's row says where its keys came from, as a dispatch result does.
    let origins: Vec<&Value> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["origins"])
        .collect();
    let from_config = format!("config:{}", config.display());
    assert_eq!(
        origins,
        [
            &json!({"engine": from_config, "name": "unit", "prompt": "unit"}),
            &Value::Null
        ],
        "a's engine came from the config; b set its own, so its row has no origins"
    );
}

/// `vf config` with `config` as the file: exit 2 and its stderr.
fn refused(env: &Env, config: &Path) -> String {
    let out = run(with_config(env, config, &["config"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_bad_file_is_exit_2_naming_the_file_and_the_line() {
    let env = Env::new();
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "unknown.toml",
            b"jobs = 2\n\ncolour = \"red\"\n",
            ":3: unknown field `colour`",
        ),
        (
            "default.toml",
            b"[defaults]\nengine = \"codex\"\nprompt = \"x\"\n",
            ":3: unknown key `prompt` in [defaults]",
        ),
        (
            "type.toml",
            b"[defaults]\nread_only = \"yes\"\n",
            ":2: [defaults] `read_only`: invalid type",
        ),
        (
            "engine.toml",
            b"\n[engines.gpt]\nmodel = \"m\"\n",
            ":2: [engines.gpt]: unknown engine",
        ),
        ("utf8.toml", b"jobs = 1\n# \xff\xfe\n", ": not UTF-8"),
    ];
    for (name, text, part) in cases {
        let p = env.write(name, text);
        let e = refused(&env, &p);
        assert!(
            e.contains(&format!("config {}{part}", p.display())),
            "{name}: {e}"
        );
    }
    let huge = env.write("huge.toml", vec![b'#'; 300 * 1024]);
    assert!(refused(&env, &huge).contains("is over 262144 bytes"));
    // Unreadable: a directory, and a path through a file.
    let dir = env.path().join("cfg-dir");
    std::fs::create_dir(&dir).unwrap();
    assert!(refused(&env, &dir).contains("is not a regular file"));
    let through = env.path().join("huge.toml/config.toml");
    assert!(refused(&env, &through).contains("cannot read config"));
}

#[test]
fn a_refused_dispatch_writes_nothing_and_a_missing_file_is_builtins() {
    let env = Env::new();
    let bad = env.write("bad.toml", "[defaults]\ntimeout = -1.0\n");
    let out = run(with_config(
        &env,
        &bad,
        &["dispatch", "-e", "codex", "--prompt", "x"],
    ));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(":2: [defaults] `timeout`: `timeout` must be a positive"),
        "{}",
        stderr(&out)
    );
    assert!(
        !env.state().exists(),
        "a refused command wrote its state dir"
    );
    let missing = env.path().join("none/config.toml");
    let v = shown(&env, &missing, &[]);
    assert_eq!((&v["path"], &v["exists"]), (&json!(missing), &json!(false)));
    assert_eq!(setting(&v, "jobs"), (json!(4), json!("builtin")));
}

#[test]
fn config_path_is_vf_config_else_the_platform_config_dir() {
    let env = Env::new();
    let p = env.path().join("elsewhere/my.toml");
    let out = run(with_config(&env, &p, &["config", "path"]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n", p.display())
    );
    let mut c = env.cmd(&["config", "path"]);
    c.env_remove("VF_CONFIG")
        .env("HOME", env.path())
        .env("XDG_CONFIG_HOME", env.path().join("xdg"));
    let out = run(c);
    let expected = directories_path(env.path());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n", expected.display())
    );
}

/// Where the platform keeps the file for a user whose home is `home`
/// (`XDG_CONFIG_HOME` set to `home/xdg` where it counts).
fn directories_path(home: &Path) -> std::path::PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/vf/config.toml")
    } else {
        home.join("xdg/vf/config.toml")
    }
}

/// Every vf a test starts gets `VF_CONFIG` from the harness: a file that
/// spawns vf by hand, or clears the environment, must set it itself.
#[test]
fn no_test_reads_the_developers_own_config() {
    let mut missing = Vec::new();
    for f in common::files_under(&common::root().join("tests/it")) {
        if f.extension().is_none_or(|e| e != "rs")
            || f.components().any(|c| c.as_os_str() == "common")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let spawns = text.contains("Command::new(vf())")
            || text.contains("Command::new(common::vf())")
            || text.contains("env_clear()");
        if spawns && !text.contains("no_config()") {
            missing.push(f);
        }
    }
    assert!(
        missing.is_empty(),
        "spawn vf without VF_CONFIG: {missing:?}"
    );
}

/// `VF_CONFIG=/dev/null` (also through a link) is "no config": builtins, exit
/// 0; another device or a FIFO is still refused at once, never read or
/// waited on.
#[cfg(unix)]
#[test]
fn the_null_device_is_an_empty_config_other_devices_and_fifos_are_refused() {
    let env = Env::new();
    let null = Path::new("/dev/null");
    let link = env.path().join("cfg-null");
    std::os::unix::fs::symlink(null, &link).unwrap();
    for p in [null, link.as_path()] {
        let v = shown(&env, p, &[]);
        assert_eq!(v["exists"], json!(false), "{}", p.display());
        assert_eq!(setting(&v, "jobs"), (json!(4), json!("builtin")));
    }
    let fifo = env.path().join("cfg-fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for p in [fifo.as_path(), Path::new("/dev/zero")] {
        assert!(
            refused(&env, p).contains("is not a regular file"),
            "{}",
            p.display()
        );
    }
}
