//! `vf doctor` through the binary, against fake engine executables (small
//! shell scripts) for every outcome. The environment is cleared so nothing
//! installed on the machine leaks in.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};
use vf::engine::EngineId;

use crate::common;
use common::*;

mod probe;
mod seed;

/// A fake engine CLI: what it does on `--version` and which flags its help omits.
struct Fake {
    id: EngineId,
    /// Shell snippet run for `--version`.
    version_sh: String,
    omit: Vec<&'static str>,
    /// Shell snippet for any other invocation (a real run); default: refuse.
    run_sh: Option<String>,
}

impl Fake {
    fn new(id: EngineId) -> Fake {
        let v = id
            .engine()
            .spec()
            .verified_versions
            .first()
            .copied()
            .unwrap_or("1.0.0");
        Fake {
            id,
            version_sh: format!("echo '{} {v}'", id.as_str()),
            omit: Vec::new(),
            run_sh: None,
        }
    }

    /// A real run replays what `tests/fake/fake-engine` is told through FAKE_* variables.
    fn replaying(mut self) -> Fake {
        let fake = fake();
        self.run_sh = Some(format!(
            "PATH=/usr/bin:/bin exec /bin/bash '{}' \"$@\"",
            fake.display()
        ));
        self
    }

    fn version_sh(mut self, sh: &str) -> Fake {
        self.version_sh = sh.to_string();
        self
    }

    fn omit(mut self, flag: &'static str) -> Fake {
        self.omit.push(flag);
        self
    }

    /// Writes the script as `dir/<binary>` and returns its path.
    fn install(&self, dir: &Path) -> PathBuf {
        let spec = self.id.engine().spec();
        let mut cases = format!("  '--version')\n    {}\n    ;;\n", self.version_sh);
        let mut seen: Vec<&[&str]> = Vec::new();
        for f in spec.required_flags {
            if seen.contains(&f.help_args) {
                continue;
            }
            seen.push(f.help_args);
            // Only shell builtins: PATH holds nothing but the fakes.
            let mut text = String::from("    echo 'Usage: fake [OPTIONS]'\n");
            for g in spec
                .required_flags
                .iter()
                .filter(|g| g.help_args == f.help_args)
            {
                if !self.omit.contains(&g.flag) {
                    text.push_str(&format!(
                        "    echo '  {} <value>    does a thing'\n",
                        g.flag
                    ));
                }
            }
            // A longer option sharing a prefix must not count as the flag.
            for o in &self.omit {
                text.push_str(&format!("    echo '  {o}-extra    something else'\n"));
            }
            cases.push_str(&format!("  '{}')\n{text}    ;;\n", f.help_args.join(" ")));
        }
        let fallback = self
            .run_sh
            .clone()
            .unwrap_or_else(|| "echo \"unexpected: $*\" >&2\n    exit 2".into());
        let script =
            format!("#!/bin/sh\ncase \"$*\" in\n{cases}  *)\n    {fallback}\n    ;;\nesac\n");
        write_exe(&dir.join(spec.binary), &script)
    }
}

/// A shell command that hangs (as `exec`, so the hung process is the CLI itself),
/// first recording its pid in `pidfile`.
fn hang_sh(pidfile: &Path) -> String {
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("sleep(1) available");
    format!("echo $$ > '{}'; exec {sleep} 300", pidfile.display())
}

/// `vf` with nothing of the environment but `PATH=path_dir`, run in
/// `path_dir` with a state dir of its own (not the checkout's, nor one above).
fn vf(path_dir: &Path) -> Command {
    let mut c = vf_cli();
    c.env_clear()
        .env("PATH", path_dir)
        .env("VF_CONFIG", common::no_config())
        .env("VF_STATE_DIR", path_dir.join("state"))
        // The machine's sandbox plays "none": the reports do not depend on the kernel.
        .env("VF_TEST_SANDBOX", "none")
        .current_dir(path_dir);
    c
}

/// `vf doctor --json`'s reports.
fn json_of(out: &std::process::Output) -> Vec<Value> {
    stdout_json(out).as_array().expect("an array").clone()
}

fn doctor_json(path_dir: &Path, args: &[&str]) -> (i32, Vec<Value>) {
    let out = vf(path_dir)
        .arg("doctor")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap(), json_of(&out))
}

#[test]
fn verified_engine_with_all_flags_is_ready() {
    let t = Env::new();
    let path = Fake::new(EngineId::Codex).install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "codex"]);
    assert_eq!(code, 0, "{r:?}");
    assert_json_eq(&json!(r), &json!([ready_report("codex", &path)]));
}

/// The whole `--json` report of an engine that is ready (no probe ran).
fn ready_report(engine: &str, path: &Path) -> Value {
    json!({
        "engine": engine,
        "path": path,
        "version": EngineId::ALL
            .into_iter()
            .find(|e| e.as_str() == engine)
            .and_then(|e| e.engine().spec().verified_versions.first().copied()),
        "verification": "verified",
        "missingFlags": [],
        "verdict": "ready",
        "reasons": [],
        "warnings": [],
        "notes": [],
        "sandbox": no_sandbox(),
    })
}

/// What `VF_TEST_SANDBOX=none` makes every report say of the machine's sandbox.
pub fn no_sandbox() -> Value {
    json!({"state": "unenforced", "mechanism": null, "missing": ["simulated: none"]})
}

#[test]
fn newer_unverified_version_is_degraded() {
    let t = Env::new();
    Fake::new(EngineId::Claude)
        .version_sh("echo '9.0.0 (Claude Code)'")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["--engine", "claude"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["version"], "9.0.0");
    assert_eq!(r[0]["verification"], "newer, unverified");
    assert_eq!(r[0]["verdict"], "degraded");
    let reason = r[0]["reasons"][0].as_str().unwrap();
    assert!(
        reason.contains("newer than the newest verified"),
        "{reason}"
    );
}

#[test]
fn missing_flag_is_named() {
    let t = Env::new();
    Fake::new(EngineId::Claude)
        .omit("--verbose")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "claude"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verification"], "verified");
    assert_eq!(r[0]["missingFlags"], serde_json::json!(["--verbose"]));
    assert_eq!(r[0]["verdict"], "degraded");
    assert!(
        r[0]["reasons"][0].as_str().unwrap().contains("--verbose"),
        "{r:?}"
    );
}

#[test]
fn missing_subcommand_flag_is_named_by_its_label() {
    let t = Env::new();
    Fake::new(EngineId::Opencode)
        .omit("--session")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "opencode"]);
    assert_eq!(code, 1);
    let label = EngineId::Opencode
        .engine()
        .spec()
        .required_flags
        .iter()
        .find(|f| f.flag == "--session")
        .unwrap()
        .label;
    assert_eq!(r[0]["missingFlags"], serde_json::json!([label]));
}

#[test]
fn garbage_version_is_unreadable() {
    let t = Env::new();
    Fake::new(EngineId::Gemini)
        .version_sh("echo 'Welcome to gemini!'")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "gemini"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["version"], Value::Null);
    assert_eq!(r[0]["verification"], "unreadable");
    assert_eq!(r[0]["verdict"], "degraded");
    let reason = r[0]["reasons"][0].as_str().unwrap();
    assert!(reason.contains("printed no version number"), "{reason}");
    assert!(reason.contains("Welcome to gemini!"), "{reason}");
}

#[test]
fn hung_version_is_cut_off_and_reported_as_timeout() {
    let t = Env::new();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let pidfile = t.path().join("hung.pid");
    Fake::new(EngineId::Codex)
        .version_sh(&hang_sh(&pidfile))
        .install(&bin);
    let (code, r) = doctor_json(&bin, &["-e", "codex", "--timeout", "2"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verification"], "unreadable");
    assert_eq!(r[0]["verdict"], "degraded");
    assert_eq!(
        r[0]["reasons"][0], "`codex --version` timed out after 2s",
        "{r:?}"
    );
    // The hung process did not outlive vf.
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        matches!(
            vf::sys::process(pid),
            Ok(None) | Ok(Some(vf::sys::ProcSnapshot { zombie: true, .. }))
        ),
        "hung child {pid} still running"
    );
}

#[test]
fn several_hung_engines_are_each_reported() {
    let t = Env::new();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    Fake::new(EngineId::Claude)
        .version_sh(&hang_sh(&t.path().join("a.pid")))
        .install(&bin);
    Fake::new(EngineId::Gemini)
        .version_sh(&hang_sh(&t.path().join("b.pid")))
        .install(&bin);
    Fake::new(EngineId::Codex).install(&bin);
    let (code, r) = doctor_json(
        &bin,
        &[
            "-e",
            "claude",
            "-e",
            "gemini",
            "-e",
            "codex",
            "--timeout",
            "2",
        ],
    );
    assert_eq!(code, 1);
    let by: Vec<(&str, &str)> = r
        .iter()
        .map(|o| {
            (
                o["engine"].as_str().unwrap(),
                o["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [
            ("claude", "degraded"),
            ("gemini", "degraded"),
            ("codex", "ready")
        ]
    );
    for o in &r[..2] {
        assert!(
            o["reasons"][0]
                .as_str()
                .unwrap()
                .ends_with("timed out after 2s"),
            "{o}"
        );
    }
}

#[test]
fn copilot_unreadable_version_is_a_warning_only() {
    let t = Env::new();
    Fake::new(EngineId::Copilot)
        .version_sh("echo 'Run copilot update to check for updates.'")
        .install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "copilot"]);
    assert_eq!(code, 0, "{r:?}");
    assert_eq!(r[0]["verification"], "unreadable");
    assert_eq!(r[0]["verdict"], "ready");
    assert_eq!(r[0]["reasons"], serde_json::json!([]));
    let w = r[0]["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with("`copilot --version` printed no version"),
        "{w}"
    );

    // The table shows the warning on a ready row.
    let out = vf(t.path())
        .args(["doctor", "-e", "copilot"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("copilot   ready"), "{text}");
    assert!(
        text.contains("! `copilot --version` printed no version"),
        "{text}"
    );
}

#[test]
fn missing_engine_reports_install_hint() {
    let t = Env::new();
    let (code, r) = doctor_json(t.path(), &["-e", "gemini"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verdict"], "missing");
    assert_eq!(r[0]["path"], Value::Null);
    assert_eq!(r[0]["verification"], Value::Null);
    assert_eq!(r[0]["installHint"], "npm install -g @google/gemini-cli");
    assert!(
        r[0]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("VF_GEMINI_BIN"),
        "{r:?}"
    );
}

#[test]
fn nothing_installed_still_tells_how_to_install_each_engine() {
    let t = Env::new();
    let out = vf(t.path()).arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    for id in EngineId::ALL {
        let spec = id.engine().spec();
        assert!(text.contains(spec.install_hint), "{id}: {text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{:<9} missing", id.as_str()))),
            "{id}: {text}"
        );
    }
    assert!(text.contains("0 of 6 engines ready"), "{text}");

    let (code, r) = doctor_json(t.path(), &[]);
    assert_eq!(code, 1);
    let engines: Vec<&str> = r.iter().map(|o| o["engine"].as_str().unwrap()).collect();
    let all: Vec<&str> = EngineId::ALL.iter().map(|e| e.as_str()).collect();
    assert_eq!(engines, all);
    assert!(r.iter().all(|o| o["verdict"] == "missing"));
}

#[test]
fn bin_env_var_overrides_path_lookup() {
    let t = Env::new();
    let path_dir = t.path().join("path");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir(&path_dir).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    // On PATH: a newer one; in VF_CODEX_BIN: the verified one, which must win.
    Fake::new(EngineId::Codex)
        .version_sh("echo 'codex-cli 9.9.9'")
        .install(&path_dir);
    let chosen = Fake::new(EngineId::Codex).install(&elsewhere);
    let out = vf(&path_dir)
        .env("VF_CODEX_BIN", &chosen)
        .args(["doctor", "--json", "-e", "codex"])
        .output()
        .unwrap();
    let r = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{r:?}");
    assert_eq!(r[0]["path"], chosen.to_str().unwrap());
    assert_eq!(r[0]["version"], "0.171.0");

    // An override that is not executable is reported, not silently replaced by PATH.
    let plain = elsewhere.join("plain");
    std::fs::write(&plain, "").unwrap();
    let out = vf(&path_dir)
        .env("VF_CODEX_BIN", &plain)
        .args(["doctor", "--json", "-e", "codex"])
        .output()
        .unwrap();
    let r = json_of(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(r[0]["verdict"], "missing");
    assert_eq!(
        r[0]["reasons"][0],
        format!("VF_CODEX_BIN={}: not executable", plain.display())
    );
}

#[test]
fn non_executable_file_on_path_is_not_found() {
    let t = Env::new();
    let p = Fake::new(EngineId::Codex).install(t.path());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, r) = doctor_json(t.path(), &["-e", "codex"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verdict"], "missing");
}

#[test]
fn engine_selection_is_deduplicated_and_ordered_as_given() {
    let t = Env::new();
    Fake::new(EngineId::Codex).install(t.path());
    Fake::new(EngineId::Claude).install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "codex", "-e", "claude", "-e", "codex"]);
    assert_eq!(code, 0, "{r:?}");
    let engines: Vec<&str> = r.iter().map(|o| o["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["codex", "claude"]);
}

#[test]
fn one_bad_engine_fails_the_run() {
    let t = Env::new();
    Fake::new(EngineId::Codex).install(t.path());
    let (code, r) = doctor_json(t.path(), &["-e", "codex", "-e", "claude"]);
    assert_eq!(code, 1);
    assert_eq!(r[0]["verdict"], "ready");
    assert_eq!(r[1]["verdict"], "missing");
}

#[test]
fn timeout_must_be_positive() {
    let t = Env::new();
    let out = vf(t.path())
        .args(["doctor", "--timeout", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// The real CLIs' `--version` and `--help` are checked by tests/it/real_engines.rs
// (`vf doctor --probe` inside the loopback-only sandbox).

#[test]
fn doctor_lists_a_group_that_outlived_its_leader_and_its_vf() {
    let t = Env::new();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    Fake::new(EngineId::Codex).install(&bin);
    let state = t.path().join("state");
    let (pgid, pid) = leaderless_group();
    // The record of a vf that died (its start time no longer matches).
    let mut rec = vf::process::owned::ProcRecord::new("left", 1, "codex", pgid as u32);
    rec.supervisor.start_time = rec.supervisor.start_time.map(|t| t + 1);
    let record = vf::process::owned::record_path(&state, "left", 1);
    rec.save(&record).unwrap();
    let run = |args: &[&str]| {
        vf(&bin)
            .env("VF_STATE_DIR", &state)
            .arg("doctor")
            .args(["-e", "codex"])
            .args(args)
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap()
    };
    let json = run(&["--json"]);
    let human = run(&[]);
    let fixed = run(&["--fix"]);
    let alive = vf::process::orphans::group_members(pgid) == vec![pid];
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    assert!(alive, "vf ended a group it cannot prove");

    let reports = json_of(&json);
    let group = &reports[0]["leftoverGroups"][0];
    let age = group["leftover"]["members"][0]["ageSecs"].clone();
    assert!(age.as_u64().is_some_and(|a| a < 60), "{group}");
    let expected = serde_json::json!({
        "record": record, "unit": "left", "attempt": 1, "engine": "codex",
        "supervisorPid": std::process::id(), "cliPid": pgid, "pgid": pgid,
        "class": "unproven", "reason": group["reason"], "action": "none", "detail": null,
        "leftover": {
            "members": [{"pid": pid, "command": "sleep 300", "ageSecs": age}],
            "manual": format!("kill -TERM -- -{pgid}"),
        },
    });
    assert_eq!(group, &expected);
    assert!(
        group["reason"]
            .as_str()
            .unwrap()
            .contains("not proven ours")
    );

    for out in [&human, &fixed] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("kill -TERM -- -{pgid}")), "{text}");
        assert!(
            text.contains(&format!("pid {pid}")) && text.contains("sleep 300"),
            "{text}"
        );
    }
    assert!(
        record.exists(),
        "the record of an unproven group was released"
    );
}

/// The effective uid of this test process (the doctor it starts has the same).
fn running_as_root() -> bool {
    // SAFETY: geteuid only reads this process's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// claude as root refuses --dangerously-skip-permissions unless IS_SANDBOX=1: a
/// note for claude only, in `--json` and in the table; none when not root.
#[test]
fn claude_as_root_has_an_is_sandbox_note() {
    let t = Env::new();
    Fake::new(EngineId::Claude).install(t.path());
    Fake::new(EngineId::Codex).install(t.path());
    let root = running_as_root();
    let refusal = "running as root: claude refuses --dangerously-skip-permissions (vf \
        --skip-permissions) unless IS_SANDBOX=1 is set; in a container or CI set it yourself \
        (vf never sets it for you)";
    let (code, r) = doctor_json(t.path(), &["-e", "claude", "-e", "codex"]);
    assert_eq!(code, 0, "a note never changes the verdict: {r:?}");
    let want = if root { vec![refusal] } else { vec![] };
    assert_eq!(r[0]["notes"], serde_json::json!(want), "{r:?}");
    assert_eq!(r[1]["notes"], serde_json::json!([]), "{r:?}");
    let out = vf(t.path())
        .args(["doctor", "-e", "claude"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(table.contains(&format!("note: {refusal}")), root, "{table}");
    let out = vf(t.path())
        .env("IS_SANDBOX", "1")
        .args(["doctor", "--json", "-e", "claude"])
        .output()
        .unwrap();
    let notes = json_of(&out)[0]["notes"].clone();
    let accepted = "running as root: IS_SANDBOX=1 is set, so claude accepts \
        --dangerously-skip-permissions (vf --skip-permissions)";
    let want = if root { vec![accepted] } else { vec![] };
    assert_eq!(notes, serde_json::json!(want));
}

// ---- The doctor cache (src/readiness/doctor/cache.rs): answers per executable identity.

/// `vf doctor --json` with its cache under `cache` (and no HOME).
fn doctor_cached(path_dir: &Path, cache: &Path, args: &[&str]) -> (i32, Vec<Value>) {
    let out = vf(path_dir)
        .env("XDG_CACHE_HOME", cache)
        .args(["doctor", "--json"])
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap(), json_of(&out))
}

/// A fake whose `--version` also appends a line to `calls`.
fn counting(id: EngineId, calls: &Path, version: &str) -> Fake {
    Fake::new(id).version_sh(&format!(
        "echo x >> '{}'; echo '{} {version}'",
        calls.display(),
        id.as_str()
    ))
}

fn calls(calls: &Path) -> usize {
    std::fs::read_to_string(calls).map_or(0, |s| s.lines().count())
}

#[test]
fn cache_answers_until_the_binary_changes() {
    let t = common::Env::new();
    let (bin, cache, log) = (
        t.path().join("bin"),
        t.path().join("cache"),
        t.path().join("calls"),
    );
    std::fs::create_dir(&bin).unwrap();
    let path = counting(EngineId::Codex, &log, "0.171.0").install(&bin);
    let first = doctor_cached(&bin, &cache, &["-e", "codex"]);
    assert_eq!(
        (first.0, first.1[0]["verdict"].clone()),
        (0, "ready".into())
    );
    // Warm: the same report, and the CLI was not started again.
    assert_eq!(doctor_cached(&bin, &cache, &["-e", "codex"]), first);
    assert_eq!(calls(&log), 1);
    assert!(cache.join("vf/doctor/codex.json").is_file());
    // `--refresh` runs it again.
    assert_eq!(
        doctor_cached(&bin, &cache, &["-e", "codex", "--refresh"]),
        first
    );
    assert_eq!(calls(&log), 2);
    // Only the mtime changes: asked again.
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60))
        .unwrap();
    drop(f);
    assert_eq!(doctor_cached(&bin, &cache, &["-e", "codex"]), first);
    assert_eq!(calls(&log), 3);
    // An upgrade in place: the new version is reported at once.
    counting(EngineId::Codex, &log, "99.0.0").install(&bin);
    let (code, r) = doctor_cached(&bin, &cache, &["-e", "codex"]);
    assert_eq!(
        (code, r[0]["version"].clone()),
        (1, "99.0.0".into()),
        "{r:?}"
    );
    assert_eq!(calls(&log), 4);
}

#[test]
fn corrupt_cache_is_treated_as_absent() {
    let t = common::Env::new();
    let (bin, cache, log) = (
        t.path().join("bin"),
        t.path().join("cache"),
        t.path().join("calls"),
    );
    std::fs::create_dir(&bin).unwrap();
    counting(EngineId::Claude, &log, "2.1.332").install(&bin);
    let first = doctor_cached(&bin, &cache, &["-e", "claude"]);
    let entry = cache.join("vf/doctor/claude.json");
    for garbage in [
        &b"{\"format\":1,\"exe\""[..],
        b"\xff\xfe not json",
        b"[]",
        b"",
    ] {
        std::fs::write(&entry, garbage).unwrap();
        let before = calls(&log);
        assert_eq!(doctor_cached(&bin, &cache, &["-e", "claude"]), first);
        assert_eq!(calls(&log), before + 1, "a corrupt entry was used");
        // Rewritten whole: the next run is warm again.
        serde_json::from_slice::<Value>(&std::fs::read(&entry).unwrap()).unwrap();
    }
    // A cache dir that cannot be written (a file in its place) costs only the cache.
    std::fs::remove_dir_all(&cache).unwrap();
    std::fs::write(&cache, "not a dir").unwrap();
    assert_eq!(doctor_cached(&bin, &cache, &["-e", "claude"]), first);
}

#[test]
fn a_timed_out_call_is_not_remembered() {
    let t = common::Env::new();
    let (bin, cache) = (t.path().join("bin"), t.path().join("cache"));
    std::fs::create_dir(&bin).unwrap();
    let once = t.path().join("hung-once");
    // Hangs on the first `--version` only.
    let sh = format!(
        "if [ -e '{0}' ]; then echo 'codex 0.171.0'; else echo > '{0}'; {1}; fi",
        once.display(),
        hang_sh(&t.path().join("pid"))
    );
    Fake::new(EngineId::Codex).version_sh(&sh).install(&bin);
    let (code, _) = doctor_cached(&bin, &cache, &["-e", "codex", "--timeout", "1"]);
    assert_eq!(code, 1);
    let (code, r) = doctor_cached(&bin, &cache, &["-e", "codex"]);
    assert_eq!(
        (code, r[0]["verdict"].clone()),
        (0, "ready".into()),
        "{r:?}"
    );
}

#[test]
fn concurrent_doctors_agree_and_leave_a_whole_cache() {
    let t = common::Env::new();
    let (bin, cache, log) = (
        t.path().join("bin"),
        t.path().join("cache"),
        t.path().join("calls"),
    );
    std::fs::create_dir(&bin).unwrap();
    for id in EngineId::ALL {
        let v = id
            .engine()
            .spec()
            .verified_versions
            .first()
            .copied()
            .unwrap_or("1.0.0");
        counting(id, &log, v).install(&bin);
    }
    let children: Vec<_> = (0..6)
        .map(|_| {
            std::process::Command::new(common::vf())
                .env_clear()
                .env("PATH", &bin)
                .env("VF_CONFIG", common::no_config())
                .env("VF_STATE_DIR", bin.join("state"))
                .env("VF_TEST_SANDBOX", "none")
                .current_dir(&bin)
                .env("XDG_CACHE_HOME", &cache)
                .args(["doctor", "--json"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Vec<Value>> = children
        .into_iter()
        .map(|c| json_of(&c.wait_with_output().unwrap()))
        .collect();
    assert!(outs.iter().all(|o| *o == outs[0]), "{outs:?}");
    assert_eq!(outs[0].len(), EngineId::ALL.len());
    // Whatever writer won, every entry is whole and a warm run starts no CLI.
    let before = calls(&log);
    assert_eq!(doctor_cached(&bin, &cache, &[]).1, outs[0]);
    assert_eq!(calls(&log), before);
}
