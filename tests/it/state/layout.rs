//! Unit names never share files (issue 25): `x` and `x.json`, `a` and
//! `a.lock` each keep their own marker, lock and logs, alone, together, in a
//! plan, and in a state dir an older vf laid out (marker and lock next to the
//! unit's directory: `units/<unit>.json`, `units/<unit>.lock`).

use std::collections::BTreeMap;

use super::*;

fn dispatch(env: &Units, unit: &str) -> Output {
    env.run(&[
        "dispatch", "-e", "codex", "--unit", unit, "--prompt", "x", "--output", "json",
    ])
}

/// `vf status --json`: its exit code and each unit's state (or problem).
fn status(env: &Units) -> (Option<i32>, BTreeMap<String, String>) {
    let out = env.run(&["status", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let units = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let what = r.get("problem").unwrap_or(&r["state"]);
            (r["unit"].as_str().unwrap().to_string(), what.to_string())
        })
        .collect();
    (out.status.code(), units)
}

fn all_done(units: &[&str]) -> (Option<i32>, BTreeMap<String, String>) {
    let done = units
        .iter()
        .map(|u| (u.to_string(), "\"done\"".to_string()));
    (Some(0), done.collect())
}

#[test]
fn a_name_and_its_marker_or_lock_suffix_are_two_units() {
    let env = Units::new();
    // Each order: the suffixed one second, and first.
    for unit in ["report", "report.json", "a.lock", "a"] {
        let out = dispatch(&env, unit);
        assert_eq!(out.status.code(), Some(0), "{unit}: {}", stderr(&out));
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["unit"], unit);
    }
    assert_eq!(
        status(&env),
        all_done(&["a", "a.lock", "report", "report.json"])
    );
    // Each one's own marker and log.
    for unit in ["report", "report.json", "a.lock", "a"] {
        let marker: Value =
            serde_json::from_slice(&std::fs::read(env.marker_path(unit)).unwrap()).unwrap();
        assert_eq!(marker["unit"], unit);
        let log = env
            .state()
            .join(format!("units/{unit}/attempt-1.stdout.log"));
        assert_eq!(
            std::fs::read(log).unwrap(),
            std::fs::read(fixture(CODEX)).unwrap()
        );
    }
}

/// The repro: after `--unit report.json` alone, no phantom `report`.
#[test]
fn a_json_suffixed_unit_alone_shows_as_itself() {
    let env = Units::new();
    let out = dispatch(&env, "report.json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status(&env), all_done(&["report.json"]));
}

#[test]
fn a_plan_holding_both_names_runs_both() {
    let env = Units::new();
    let unit = |name: &str, deps: &str| {
        format!(
            "[[unit]]\nname = \"{name}\"\nengine = \"codex\"\nprompt = \"x\"\ndepends_on = [{deps}]\n\n"
        )
    };
    let plan = [
        unit("x", ""),
        unit("x.json", "\"x\""),
        unit("b.lock", ""),
        unit("b", "\"b.lock\""),
    ];
    env.base.write("plan.toml", plan.concat());
    let out = env.run(&["orchestrate", "plan.toml", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(status(&env), all_done(&["b", "b.lock", "x", "x.json"]));
}

/// Unit `unit` as an older vf left it: a failed codex run with an exact
/// session, its marker and lock next to its log directory.
fn legacy_unit(env: &Units, unit: &str) -> Vec<u8> {
    let mut m = env.marker(unit, vf::unit::marker::UnitState::Failed);
    m.point_at_logs();
    let units = env.state().join("units");
    std::fs::create_dir_all(units.join(unit)).unwrap();
    std::fs::copy(
        fixture(CODEX),
        units.join(format!("{unit}/attempt-1.stdout.log")),
    )
    .unwrap();
    std::fs::write(units.join(format!("{unit}/attempt-1.stderr.log")), b"").unwrap();
    std::fs::write(units.join(format!("{unit}.lock")), b"4242           \n").unwrap();
    let bytes = serde_json::to_vec_pretty(&m).unwrap();
    std::fs::write(units.join(format!("{unit}.json")), &bytes).unwrap();
    bytes
}

#[test]
fn an_older_state_dir_is_shown_resumed_and_moved_into_place() {
    let env = Units::new();
    let old_u = legacy_unit(&env, "u");
    legacy_unit(&env, "x");
    let units = env.state().join("units");
    let failed = |u: &str| (u.to_string(), "\"failed\"".to_string());
    assert_eq!(status(&env), (Some(0), [failed("u"), failed("x")].into()));
    let out = env.run(&["status", "u", "--json"]);
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = units.join("u/attempt-1.stdout.log");
    assert_eq!(row["stdoutLog"], log.display().to_string());
    // Reading moves nothing.
    assert_eq!(std::fs::read(units.join("u.json")).unwrap(), old_u);

    // Resumed on its exact session; its files move into its directory.
    let out = env.run(&["resume", "u", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&result["state"], &result["attempt"]),
        (&"done".into(), &2.into())
    );
    let args = std::fs::read_to_string(env.args_log()).unwrap();
    assert!(args.contains(&capture_session_id(CODEX)), "{args}");
    assert!(!units.join("u.json").exists() && !units.join("u.lock").exists());
    assert!(env.marker_path("u").is_file());
    assert!(log.is_file(), "the older attempt's log went");

    // Units whose directories land on `x`'s marker and lock: `x` moves aside.
    for unit in ["x.json", "x.lock"] {
        let out = dispatch(&env, unit);
        assert_eq!(out.status.code(), Some(0), "{unit}: {}", stderr(&out));
    }
    let mut want = all_done(&["u", "x.json", "x.lock"]);
    want.1.extend([failed("x")]);
    assert_eq!(status(&env), want);
    let out = env.run(&["resume", "x", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status(&env), all_done(&["u", "x", "x.json", "x.lock"]));
}

#[test]
fn an_older_plan_state_resumes() {
    let env = Units::new();
    legacy_unit(&env, "a");
    let mut done = env.marker("b", vf::unit::marker::UnitState::Done);
    done.point_at_logs();
    let b = serde_json::to_vec_pretty(&done).unwrap();
    std::fs::write(env.state().join("units/b.json"), &b).unwrap();
    let plan = "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"x\"\n\n\
        [[unit]]\nname = \"b\"\nengine = \"codex\"\nprompt = \"x\"\n";
    env.base.write("plan.toml", plan);
    let out = env.run(&["orchestrate", "plan.toml", "--output", "json"]);
    assert_eq!(out.status.code(), Some(2), "markers exist: --resume");
    let out = env.run(&["orchestrate", "plan.toml", "--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ran: Vec<&Value> = result["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["ran"])
        .collect();
    assert_eq!(ran, [&Value::Bool(true), &Value::Bool(false)], "{result}");
    assert_eq!(status(&env), all_done(&["a", "b"]));
}

/// An older vf that still runs the unit holds its old lock: not touched.
#[test]
fn a_unit_an_older_vf_runs_is_refused() {
    let env = Units::new();
    let before = legacy_unit(&env, "u");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.state().join("units/u.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let marker = env.state().join("units/u.json");
    refused(&env, "u", "vf pid 4242 (an older vf)", &marker, &before);
}

/// A dispatch of `unit` is refused (exit 2, saying `says`): no engine runs,
/// `marker` keeps its bytes.
fn refused(env: &Units, unit: &str, says: &str, marker: &Path, before: &[u8]) {
    let out = dispatch(env, unit);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(says), "{}", stderr(&out));
    assert!(!env.args_log().exists(), "an engine was started");
    assert_eq!(std::fs::read(marker).unwrap(), before);
}

/// On a file system that does not tell cases apart, `a`'s files are `A`'s:
/// vf finds `A`'s marker where `a`'s would be, and refuses (simulated here).
#[test]
fn a_name_that_differs_only_in_case_is_refused_where_files_are_shared() {
    let env = Units::new();
    let mut m = env.marker("A", vf::unit::marker::UnitState::Failed);
    env.save(&mut m);
    let dir = env.state().join("units");
    std::fs::rename(dir.join("A"), dir.join("a")).unwrap();
    let before = std::fs::read(env.marker_path("a")).unwrap();
    let says = "unit a shares its files with unit \"A\"";
    refused(&env, "a", says, &env.marker_path("a"), &before);
    // A plan with both is refused before anything runs, on every system.
    env.base.write(
        "plan.toml",
        "[[unit]]\nname = \"B\"\nengine = \"codex\"\nprompt = \"x\"\n\n\
         [[unit]]\nname = \"b\"\nengine = \"codex\"\nprompt = \"x\"\n",
    );
    let out = env.run(&["orchestrate", "plan.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("differ only in case"),
        "{}",
        stderr(&out)
    );
}
