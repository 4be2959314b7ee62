//! vf's own state under attack or after a crash: hostile and future-format
//! markers, hostile process records, zombie owners, orphans left by a
//! kill -9'd vf before `vf resume`, and temporaries left by a crash.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::*;

#[path = "state/layout.rs"]
mod layout;
#[path = "state/rounds.rs"]
mod rounds;

const CODEX: &str = "codex/0.171.0/b_tool.stdout.jsonl";

/// The common work dir ([`common::Env`]) with codex played by the fake.
struct Units {
    base: common::Env,
}

impl Units {
    fn new() -> Units {
        let env = Units {
            base: common::Env::new(),
        };
        std::fs::create_dir_all(env.state().join("units")).unwrap();
        env
    }
    fn path(&self) -> &Path {
        self.base.path()
    }
    fn state(&self) -> PathBuf {
        self.base.state()
    }
    fn marker_path(&self, unit: &str) -> PathBuf {
        self.state().join("units").join(unit).join("marker.json")
    }
    fn args_log(&self) -> PathBuf {
        self.path().join("engine-args.log")
    }
    /// `vf ARGS` in the work dir, with the fake as codex and its argv logged.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.base.cmd(args);
        c.env("VF_KILL_GRACE_MS", "300")
            .env("VF_CODEX_BIN", fake())
            .env("FAKE_STDOUT", fixture(CODEX))
            .env("FAKE_ARGS_LOG", self.args_log());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        run_bounded(self.cmd(args), Duration::from_secs(60))
    }
    /// A codex marker in `state` with an exact session id, as vf writes it.
    fn marker(&self, unit: &str, state: vf::unit::marker::UnitState) -> vf::unit::marker::Marker {
        let mut m = vf::unit::marker::Marker::new(unit, vf::engine::EngineId::Codex, self.path());
        m.state = state;
        m.attempts = 1;
        m.engine_version = Some("0.171.0".into());
        m.engine_session_id = Some(capture_session_id(CODEX));
        m
    }
    fn save(&self, m: &mut vf::unit::marker::Marker) {
        vf::unit::marker::MarkerStore::new(&self.state())
            .save(m)
            .unwrap();
    }
    fn write_json(&self, unit: &str, v: &Value) -> Vec<u8> {
        let bytes = serde_json::to_vec_pretty(v).unwrap();
        let path = self.marker_path(unit);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &bytes).unwrap();
        bytes
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every path under `dir`, recursively (directories too).
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            out.push(e.path());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(tree(&e.path()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_marker_naming_another_unit_is_corrupt_and_nothing_escapes() {
    let env = Units::new();
    let mut v = serde_json::to_value(env.marker("u", vf::unit::marker::UnitState::Failed)).unwrap();
    v["unit"] = "../../escaped".into();
    let before = env.write_json("u", &v);
    let files_before = tree(env.path());

    let out = env.run(&["resume", "u", "--output", "json"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("corrupt"), "{}", stderr(&out));
    assert!(!env.path().join("escaped.json").exists());
    assert!(!env.args_log().exists(), "an engine was started");
    assert_eq!(std::fs::read(env.marker_path("u")).unwrap(), before);
    // The unit's lock file is taken before the marker is read (one writer per
    // unit); it holds only the pid and lives inside the state dir.
    let written: Vec<_> = tree(env.path())
        .into_iter()
        .filter(|p| p.file_name().is_none_or(|n| n != "lock"))
        .collect();
    assert_eq!(written, files_before, "something was written");

    // Log paths outside the unit's log directory are just as corrupt.
    let mut v = serde_json::to_value(env.marker("u", vf::unit::marker::UnitState::Failed)).unwrap();
    v["stdoutLog"] = env.path().join("outside.log").display().to_string().into();
    env.write_json("u", &v);
    let out = env.run(&["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(!env.path().join("outside.log").exists());
    let out = env.run(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["unit"], "u");
    assert_eq!(rows[0]["problem"], "corrupt");
}

#[test]
fn a_unit_log_dir_linking_outside_is_never_written_through() {
    let env = Units::new();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.state().join("units/u")).unwrap();
    let out = env.run(&["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(tree(&outside), Vec::<PathBuf>::new());
    assert!(!env.args_log().exists(), "an engine was started");
}

/// A link or a FIFO planted where the attempt's raw log goes: refused before
/// the engine starts (exit 5), nothing written through the link, no wait on
/// the FIFO (an open for writing would block until a reader came).
#[test]
fn a_planted_log_file_is_refused_before_the_engine_starts() {
    for kind in ["link", "fifo"] {
        let env = Units::new();
        let outside = env.path().join("outside.log");
        std::fs::write(&outside, "keep").unwrap();
        let dir = env.state().join("units/u");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("attempt-1.stdout.log");
        if kind == "link" {
            std::os::unix::fs::symlink(&outside, &log).unwrap();
        } else {
            let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        let out = env.run(&["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"]);
        assert_eq!(out.status.code(), Some(5), "{kind}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("attempt-1.stdout.log"),
            "{kind}: {}",
            stderr(&out)
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep", "{kind}");
        assert!(!env.args_log().exists(), "{kind}: an engine was started");
        assert!(
            !env.marker_path("u").exists(),
            "{kind}: a refused run wrote a marker"
        );
    }
}

#[test]
fn a_future_format_marker_is_refused_untouched_and_shown() {
    let env = Units::new();
    let mut v = serde_json::to_value(env.marker("u", vf::unit::marker::UnitState::Failed)).unwrap();
    v["format"] = 2.into();
    v["somethingNew"] = serde_json::json!({"kept": true});
    let before = env.write_json("u", &v);
    std::fs::write(
        env.path().join("plan.toml"),
        "[[unit]]\nname = \"u\"\nengine = \"codex\"\nprompt = \"x\"\n",
    )
    .unwrap();
    for args in [
        &["resume", "u"][..],
        &["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"][..],
        &["orchestrate", "plan.toml", "--resume", "--output", "json"][..],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("format 2"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read(env.marker_path("u")).unwrap(),
            before,
            "{args:?}"
        );
    }
    assert!(!env.args_log().exists(), "an engine was started");

    let out = env.run(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows[0].as_object().unwrap();
    assert_eq!(row["unit"], "u");
    assert_eq!(row["problem"], "unsupported format 2");
    assert_eq!(row["format"], 2);
    let out = env.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("u ") && l.contains("unsupported format 2")),
        "{text}"
    );
    let out = env.run(&["status", "u", "--json"]);
    assert_eq!(out.status.code(), Some(5));
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["problem"], "unsupported format 2");
    assert_eq!(std::fs::read(env.marker_path("u")).unwrap(), before);
}

#[test]
fn a_zombie_vf_is_not_a_live_owner() {
    let env = Units::new();
    let mut z = zombie();
    let mut m = env.marker("u", vf::unit::marker::UnitState::Running);
    m.owner = Some(vf::unit::marker::Owner {
        supervisor: vf::ground::procinfo::ProcIdentity::of(z.id()),
        cli: None,
        pgid: None,
    });
    env.save(&mut m);
    let out = env.run(&["resume", "u", "--output", "json"]);
    z.wait().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read_to_string(env.args_log()).unwrap();
    assert!(log.starts_with("exec\nresume\n"), "{log}");
}

#[test]
fn resume_ends_the_orphan_of_a_killed_vf_first() {
    ends_the_orphan_before(&["resume", "a", "--output", "json"]);
}

/// A new dispatch of the unit (fresh, or on its session) is just as much a
/// second engine on it as a resume.
#[test]
fn dispatch_ends_the_orphan_of_a_killed_vf_first() {
    ends_the_orphan_before(&["dispatch", "-e", "codex", "--unit", "a", "--prompt", "y"]);
}

/// kill -9 a dispatch of unit `a` whose engine hangs, then run `rerun`: the
/// proven orphan is ended before the new engine starts.
fn ends_the_orphan_before(rerun: &[&str]) {
    let env = Units::new();
    // A dispatch whose engine hangs after printing its session; then kill -9 vf.
    let mut c = env.cmd(&["dispatch", "-e", "codex", "--unit", "a", "--prompt", "x"]);
    c.env("FAKE_MODE", "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    wait_for("the session id on record", Duration::from_secs(20), || {
        std::fs::read_to_string(env.marker_path("a"))
            .is_ok_and(|t| t.contains(&capture_session_id(CODEX)))
    });
    // Without its watcher the group outlives vf, as one of a vf without a
    // lifeline would.
    let marker: Value = serde_json::from_str(&read_text(&env.marker_path("a"))).unwrap();
    cut_lifeline(marker["owner"]["pgid"].as_i64().unwrap() as i32);
    child.kill().unwrap();
    child.wait().unwrap();
    let found = vf::process::orphans::scan(&env.state());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].class,
        vf::process::orphans::Class::Orphan,
        "{found:?}"
    );
    let pgid = found[0].pgid.unwrap();
    assert!(!vf::process::orphans::group_members(pgid).is_empty());

    let out = env.run(rerun);
    // Live members only: a killed orphan may stay a zombie until init reaps it.
    let alive_after = !vf::process::orphans::group_members(pgid).is_empty();
    if alive_after {
        signal(-pgid, libc::SIGKILL);
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!alive_after, "the orphan survived the resume");
    assert!(
        stderr(&out).contains(&format!(
            "ended the engine left running by a dead vf (process group {pgid})"
        )),
        "{}",
        stderr(&out)
    );
    assert!(vf::process::orphans::scan(&env.state()).is_empty());
}

/// A record of `unit`'s attempt 1 whose vf died, with `pgid` as its CLI.
fn dead_vf_record(state: &Path, unit: &str, pgid: i32) {
    let mut rec = vf::process::owned::ProcRecord::new(unit, 1, "codex", pgid as u32);
    rec.supervisor.start_time = rec.supervisor.start_time.map(|t| t + 1);
    rec.save(&vf::process::owned::record_path(state, unit, 1))
        .unwrap();
}

#[test]
fn resume_refuses_while_an_unproven_group_of_the_unit_runs() {
    refuses_while_an_unproven_group_runs(&["resume", "b", "--output", "json"]);
}

#[test]
fn dispatch_refuses_while_an_unproven_group_of_the_unit_runs() {
    refuses_while_an_unproven_group_runs(&[
        "dispatch", "-e", "codex", "--unit", "b", "--prompt", "y",
    ]);
}

/// A failed unit `b` with a record of a dead vf whose group cannot be proven
/// ours: `rerun` is refused (exit 2, naming `vf doctor --fix`), nothing starts.
fn refuses_while_an_unproven_group_runs(rerun: &[&str]) {
    let env = Units::new();
    env.save(&mut env.marker("b", vf::unit::marker::UnitState::Failed));
    let before = std::fs::read(env.marker_path("b")).unwrap();
    let (pgid, _) = leaderless_group();
    dead_vf_record(&env.state(), "b", pgid);
    let out = env.run(rerun);
    let alive = !vf::process::orphans::group_members(pgid).is_empty();
    signal(-pgid, libc::SIGKILL);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("vf doctor --fix"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(alive, "vf ended a group it could not prove");
    assert!(!env.args_log().exists(), "an engine was started");
    assert_eq!(std::fs::read(env.marker_path("b")).unwrap(), before);
}

#[test]
fn a_hostile_process_record_is_corrupt_and_never_acted_on() {
    let env = Units::new();
    let (pgid, _) = leaderless_group();
    // Named for unit `a`, claiming unit `b`: its fields are not trusted.
    let mut rec = vf::process::owned::ProcRecord::new("b", 1, "codex", pgid as u32);
    rec.supervisor.start_time = rec.supervisor.start_time.map(|t| t + 1);
    let path = vf::process::owned::record_path(&env.state(), "a", 1);
    rec.save(&path).unwrap();
    let out = env.run(&["doctor", "--fix", "--json"]);
    let alive = !vf::process::orphans::group_members(pgid).is_empty();
    signal(-pgid, libc::SIGKILL);
    let findings: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(findings[0]["class"], "corrupt", "{findings}");
    assert_eq!(findings[0]["unit"], Value::Null);
    assert!(alive);
    assert!(path.exists(), "a corrupt record was deleted");
}

#[test]
fn replay_of_a_directory_is_a_usage_error_naming_it() {
    let env = Units::new();
    let dir = env.path().display().to_string();
    let out = env.run(&["replay", &dir, "--cli", "codex"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&dir), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
}

#[test]
fn temporaries_left_by_a_crash_are_cleaned_by_the_next_writer() {
    let env = Units::new();
    // The directory the unit's marker is written in.
    let units = env.state().join("units/t");
    std::fs::create_dir_all(&units).unwrap();
    // Left by a vf that died mid-write (its pid and start time name it), and
    // by an older vf (no creator in the name, older than a minute).
    let mut z = zombie();
    let zid = vf::ground::procinfo::ProcIdentity::of(z.id());
    let dead = units.join(format!(
        ".tmp-{}-{}-abc123",
        z.id(),
        zid.start_time.unwrap()
    ));
    let old = units.join(".tmp-Xy12Ab");
    let me = vf::ground::procinfo::ProcIdentity::current();
    let live = units.join(format!(".tmp-{}-{}-live01", me.pid, me.start_time.unwrap()));
    for p in [&dead, &old, &live] {
        std::fs::write(p, b"partial").unwrap();
    }
    let old_time = std::time::SystemTime::now() - Duration::from_secs(120);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(old_time)
        .unwrap();
    let out = env.run(&["dispatch", "-e", "codex", "--unit", "t", "--prompt", "x"]);
    z.wait().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dead.exists(), "a dead writer's temporary is left");
    assert!(!old.exists(), "an old temporary is left");
    assert!(live.exists(), "a live writer's temporary was removed");
}

#[test]
fn a_hostile_marker_value_never_reaches_the_terminal_raw() {
    let env = Units::new();
    let mut v = serde_json::to_value(env.marker("u", vf::unit::marker::UnitState::Failed)).unwrap();
    v["engine"] = "codex\n\u{1b}[7mINJECTED\u{1b}[0m".into();
    env.write_json("u", &v);
    let path = env.marker_path("u").display().to_string();
    for args in [&["status"][..], &["resume", "u"][..]] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err:?}");
        assert!(!err.contains('\u{1b}') && err.contains(&path), "{err:?}");
        assert!(err.contains(r"codex\n\u{1b}[7mINJECTED"), "{err:?}");
    }
    // The table shows the unit as corrupt (the error went to stderr).
    let out = env.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(rows[1], ["u", "corrupt"], "{text}");
}

#[test]
fn a_moved_state_dir_still_loads_and_resumes() {
    let env = Units::new();
    let mut c = env.cmd(&["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"]);
    c.env("FAKE_EXIT", "1");
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let stored: Value =
        serde_json::from_slice(&std::fs::read(env.marker_path("u")).unwrap()).unwrap();
    let logs = |v: &Value| (v["stdoutLog"].clone(), v["stderrLog"].clone());
    let rel = |n: u32| {
        let p = |s: &str| Value::from(format!("units/u/attempt-{n}.{s}.log"));
        (p("stdout"), p("stderr"))
    };
    assert_eq!(logs(&stored), rel(1), "the marker stores them relative");
    // As an older vf wrote them: absolute, under the state dir's old place.
    let mut older = stored.clone();
    let old = |s: &str| format!("{}/units/u/attempt-1.{s}.log", env.state().display());
    older["stdoutLog"] = old("stdout").into();
    older["stderrLog"] = old("stderr").into();
    env.write_json("u", &older);

    let moved = env.path().join("elsewhere/state");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(env.state(), &moved).unwrap();
    let run = |args: &[&str]| {
        let mut c = env.cmd(args);
        c.env("VF_STATE_DIR", &moved);
        run_bounded(c, Duration::from_secs(60))
    };
    let abs = |n: u32| {
        let p = |s: &str| Value::from(format!("{}/units/u/attempt-{n}.{s}.log", moved.display()));
        (p("stdout"), p("stderr"))
    };
    let out = run(&["status", "u", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        logs(&row),
        abs(1),
        "status shows them absolute, where they are now"
    );

    let out = run(&["resume", "u", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (result["state"].clone(), result["attempt"].clone()),
        ("done".into(), 2.into())
    );
    assert_eq!(logs(&result), abs(2));
    assert!(
        std::fs::metadata(result["stdoutLog"].as_str().unwrap())
            .unwrap()
            .len()
            > 0
    );
    let stored: Value =
        serde_json::from_slice(&std::fs::read(moved.join("units/u/marker.json")).unwrap()).unwrap();
    assert_eq!(logs(&stored), rel(2));
    let args = std::fs::read_to_string(env.args_log()).unwrap();
    assert!(args.contains("resume"), "{args}");
}

/// Issue 25, 8a: the final marker write fails (here: the markers directory
/// is briefly not one, as a full disk fails it), so the marker keeps saying
/// `running`. Once that vf has exited, `vf status` shows its owner dead and
/// the unit resumable, and `vf resume` continues it.
#[test]
fn a_failed_final_marker_write_shows_a_dead_owner_and_a_resumable_unit() {
    let env = Units::new();
    let go = env.path().join("go");
    // codex that prints its session, then waits for `go` before the rest.
    let engine = write_exe(
        &env.path().join("engine"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo 0.171.0; exit 0; }}\n\
             head -n 1 {cap}\ni=0\n\
             while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n\
             tail -n +2 {cap}\n",
            cap = fixture(CODEX).display(),
            go = go.display()
        ),
    );
    let bin = engine.to_str().unwrap();
    let mut c = env.cmd(&["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"]);
    c.args(["--engine-bin", bin])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut vf = c.spawn().unwrap();
    let state_of = |v: Option<Value>| v.map(|m| m["state"].clone());
    let marker = || -> Option<Value> {
        serde_json::from_slice(&std::fs::read(env.marker_path("u")).ok()?).ok()
    };
    // The session id is durable; the disk "fills" before the run's end.
    wait_for("the running marker", Duration::from_secs(20), || {
        marker().is_some_and(|m| m["state"] == "running" && m["engineSessionId"].is_string())
    });
    let (units, away) = (env.state().join("units"), env.state().join("units.away"));
    std::fs::rename(&units, &away).unwrap();
    std::fs::write(&units, b"not a directory").unwrap();
    std::fs::write(&go, b"").unwrap();
    assert_eq!(wait_exit(&mut vf).code(), Some(5), "the final write failed");
    std::fs::remove_file(&units).unwrap();
    std::fs::rename(&away, &units).unwrap();
    assert_eq!(state_of(marker()), Some("running".into()));

    let out = env.run(&["status", "u", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&row["state"], &row["ownerState"], &row["resumable"]),
        (&"running".into(), &"dead".into(), &true.into()),
        "{row}"
    );
    let out = env.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("u ")).unwrap_or("");
    assert!(
        line.contains(" dead ") && line.contains("resumable: vf resume u"),
        "{text}"
    );
    let out = env.run(&["resume", "u", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(state_of(marker()), Some("done".into()));
}

/// Issue 39: a long version (`claude 2.1.332 capture`, the demo's) pushed
/// the `vf status` columns after it out of line. Each column is as wide as
/// its widest cell: every row's session starts under SESSION, its usage
/// under USAGE.
#[test]
fn status_columns_are_sized_to_their_content() {
    let env = Env::new();
    for unit in ["a", "a-unit-whose-name-is-longer-than-the-old-column"] {
        let out = env.dispatch(
            "codex",
            unit,
            &[fake_stdout("codex/0.171.0/a_json.stdout.jsonl")],
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let mut m = env.marker("a");
    m["engineVersion"] = "2.1.332 capture".into();
    std::fs::write(env.marker_path("a"), serde_json::to_vec(&m).unwrap()).unwrap();
    let out = env.run(&["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let col = |name: &str| header.find(name).unwrap();
    let rows: Vec<(&str, &str)> = lines
        .map(|l| {
            (
                &l[col("VERSION")..col("SESSION")],
                &l[col("SESSION")..col("USAGE")],
            )
        })
        .collect();
    let session = env.marker("a")["engineSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        rows.iter()
            .map(|(v, s)| (v.trim_end(), s.trim_end()))
            .collect::<Vec<_>>(),
        [
            ("2.1.332 capture", session.as_str()),
            ("0.171.0", session.as_str())
        ],
        "{text}"
    );
}
