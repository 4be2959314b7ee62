//! `vf orchestrate` killed and resumed: the kill -9 crash loop, owned-process
//! records, and the orphans a killed vf leaves behind.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// xorshift64*: reproducible "random" kill moments from a printed seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Parses every marker file; panics on any that does not parse.
fn all_markers_parse(state: &Path) -> HashMap<String, vf::unit::marker::Marker> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir(state.join("units")) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Ok(bytes) = std::fs::read(e.path().join("marker.json")) else {
            continue;
        };
        let m: vf::unit::marker::Marker = serde_json::from_slice(&bytes)
            .unwrap_or_else(|err| panic!("marker {name} does not parse: {err}"));
        out.insert(name, m);
    }
    out
}

/// Ends what a killed vf left behind with `orphans::fix`, until nothing is left.
fn clean_orphans(state: &Path) -> usize {
    let start = Instant::now();
    let mut ended = 0;
    loop {
        let f = vf::process::orphans::fix(state, Duration::from_millis(300));
        ended += f
            .iter()
            .filter(|f| f.action == vf::process::orphans::Action::Ended)
            .count();
        let open = f
            .iter()
            .filter(|f| {
                !matches!(
                    f.action,
                    vf::process::orphans::Action::Ended | vf::process::orphans::Action::Released
                )
            })
            .count();
        if open == 0 {
            return ended;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "orphans left: {f:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether any unit's marker says `done`.
fn any_done(state: &std::path::Path) -> bool {
    all_markers_parse(state)
        .values()
        .any(|m| m.state == vf::unit::marker::UnitState::Done)
}

#[test]
fn crash_loop_kill_9_and_resume() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX, "0.2", "");
    env.unit_dir("b", CLAUDE, "0.2", "");
    env.unit_dir("c", COPILOT, "0.08", "");
    env.unit_dir("d", CODEX, "0.2", "");
    env.unit_dir("e", CODEX, "0.2", "");
    env.plan(&format!(
        "{}{}{}{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "claude", &["a"]),
        unit_toml("c", "copilot", &["a"]),
        unit_toml("d", "codex", &["b", "c"]),
        unit_toml("e", "codex", &[])
    ));
    let exact: HashMap<&str, String> = [
        ("a", capture_session_id(CODEX)),
        ("b", capture_session_id(CLAUDE)),
        ("d", capture_session_id(CODEX)),
        ("e", capture_session_id(CODEX)),
    ]
    .into();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash loop seed: {seed}");
    let mut rng = Rng(seed);
    // Runs the fake completed while vf never learnt of it (killed in between).
    let mut unrecorded: HashMap<String, usize> = HashMap::new();
    // (events index, unit) from which every start must be an exact resume.
    let mut id_from: Vec<(usize, String)> = Vec::new();
    let (mut kills, mut groups_ended) = (0, 0);
    for round in 0..12 {
        let mut c = env.orchestrate(if round == 0 {
            &["--output", "jsonl"]
        } else {
            &["--resume", "--output", "jsonl"]
        });
        c.stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        // Kill moments: a random instant, shortly after the next run starts,
        // or shortly after the next run ends (right in the window where vf
        // records a completion). Event-driven moments guarantee progress.
        let seen = env.events().len();
        // The first three rounds kill soon after a run starts (every unit runs
        // longer than that), so the loop always has its kills; later rounds
        // pick any moment, and may let the plan finish.
        let moment = if round < 3 { 1 } else { rng.next() % 3 };
        let (trigger, delay_ms) = match moment {
            0 => (None, 100 + rng.next() % 1200),
            1 => (Some("start"), rng.next() % 400),
            _ => (Some("end"), rng.next() % 300),
        };
        let t = Instant::now();
        let mut fired: Option<Instant> = trigger.is_none().then(Instant::now);
        let mut finished = false;
        loop {
            if child.try_wait().unwrap().is_some() {
                finished = true;
                break;
            }
            if fired.is_none()
                && env.events()[seen..]
                    .iter()
                    .any(|e| Some(e.0.as_str()) == trigger)
            {
                fired = Some(Instant::now());
            }
            // On a loaded machine every kill can land before vf records a
            // completion; the late rounds wait for one, so progress is certain.
            let waiting_for_progress = round >= 8 && !any_done(&env.state());
            if (!waiting_for_progress
                && fired.is_some_and(|f| f.elapsed() >= Duration::from_millis(delay_ms)))
                || t.elapsed() > Duration::from_secs(10)
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if finished {
            break;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        groups_ended += clean_orphans(&env.state());
        let markers = all_markers_parse(&env.state());
        let ev = env.events();
        for (unit, m) in &markers {
            let ends = ev
                .iter()
                .filter(|e| e.0 == "end" && &e.1 == unit && e.3 == Some(0))
                .count();
            let known = unrecorded.get(unit).copied().unwrap_or(0);
            if m.state != vf::unit::marker::UnitState::Done && ends > known {
                eprintln!("round {round}: {unit} completed but vf was killed before recording it");
                unrecorded.insert(unit.clone(), ends);
            }
            if exact.contains_key(unit.as_str()) && m.engine_session_id.is_some() {
                id_from.push((ev.len(), unit.clone()));
            }
        }
    }
    // The loop must have made progress under kills (done units then skipped).
    let done_in_loop = all_markers_parse(&env.state())
        .values()
        .filter(|m| m.state == vf::unit::marker::UnitState::Done)
        .count();
    eprintln!("units done before the final resume: {done_in_loop}");
    assert!(
        kills >= 3 && done_in_loop >= 1,
        "kills {kills}, done {done_in_loop}"
    );
    // Then let it finish.
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = final_json(&out);
    assert_eq!(fin["ok"], true, "{fin}");
    let markers = all_markers_parse(&env.state());
    let ev = env.events();
    eprintln!(
        "kills: {kills}; orphaned groups ended by orphans::fix: {groups_ended}; fake runs: {}",
        ev.iter().filter(|e| e.0 == "start").count()
    );
    for u in ["a", "b", "c", "d", "e"] {
        assert_eq!(markers[u].state, vf::unit::marker::UnitState::Done, "{u}");
        let ends = ev
            .iter()
            .filter(|e| e.0 == "end" && e.1 == u && e.3 == Some(0))
            .count();
        let extra = unrecorded.get(u).copied().unwrap_or(0);
        assert_eq!(
            ends,
            1 + extra,
            "{u} completed {ends} times (unrecorded {extra})"
        );
    }
    // Never fresh once an exact id was recorded.
    for (from, unit) in &id_from {
        for e in ev[*from..]
            .iter()
            .filter(|e| e.0 == "start" && &e.1 == unit)
        {
            let args = env.args_of(unit, &e.2);
            let argv = args.split("--stdin--").next().unwrap();
            assert!(
                argv.lines().any(|l| l == exact[unit.as_str()]),
                "{unit} ran without its id after it was recorded: {args}"
            );
        }
    }
    // Nothing is left running and no record is left behind.
    assert!(vf::process::orphans::scan(&env.state()).is_empty());
}

#[test]
fn orphan_fix_ends_exactly_the_orphaned_group() {
    use vf::process::orphans::{Action, Class};
    let env = Env::new();
    let state = env.path();
    let child_pid_file = env.path().join("child.pid");
    // A fake CLI with a grandchild that ignores SIGTERM, in its own group,
    // as dispatch spawns it.
    let script = format!(
        "( trap '' TERM; sleep 300 ) & echo $! > {}; exec {} ",
        child_pid_file.display(),
        fake().display()
    );
    let mut fake = Command::new("bash");
    fake.arg("-c")
        .arg(&script)
        .env("FAKE_MODE", "hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut fake, 0);
    let mut fake = fake.spawn().unwrap();
    let pid = fake.id();
    // Reap it when it dies, as init would for a real orphan.
    let reaper = std::thread::spawn(move || fake.wait());
    let start = Instant::now();
    while !child_pid_file.exists() || vf::process::orphans::group_members(pid as i32).len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rec = vf::process::owned::ProcRecord::new("orphan", 1, "codex", pid);
    // A supervisor that provably died: this pid with another start time.
    rec.supervisor.start_time = rec.supervisor.start_time.map(|s| s + 1);
    rec.save(&vf::process::owned::record_path(state, "orphan", 1))
        .unwrap();

    // An unrelated live process whose pid "looks recycled": other start time.
    let mut other = Command::new("sleep");
    other.arg("30");
    std::os::unix::process::CommandExt::process_group(&mut other, 0);
    let mut other = other.spawn().unwrap();
    let mut rec2 = vf::process::owned::ProcRecord::new("recycled", 1, "codex", other.id());
    rec2.supervisor.start_time = rec2.supervisor.start_time.map(|s| s + 1);
    rec2.cli.start_time = rec2.cli.start_time.map(|s| s + 5);
    rec2.save(&vf::process::owned::record_path(state, "recycled", 1))
        .unwrap();
    // And one with a live owner (this process).
    let rec3_path = vf::process::owned::record_path(state, "owned", 1);
    vf::process::owned::ProcRecord::new("owned", 1, "codex", other.id())
        .save(&rec3_path)
        .unwrap();

    let found = vf::process::orphans::scan(state);
    let class = |u: &str| {
        found
            .iter()
            .find(|f| f.unit.as_deref() == Some(u))
            .unwrap()
            .class
    };
    assert_eq!(class("orphan"), Class::Orphan);
    assert_eq!(class("recycled"), Class::Unproven);
    assert_eq!(class("owned"), Class::Owned);

    let fixed = vf::process::orphans::fix(state, Duration::from_millis(500));
    let action = |u: &str| {
        fixed
            .iter()
            .find(|f| f.unit.as_deref() == Some(u))
            .unwrap()
            .action
    };
    assert_eq!(action("orphan"), Action::Ended, "{fixed:#?}");
    assert_eq!(action("recycled"), Action::None);
    assert_eq!(action("owned"), Action::None);
    assert!(
        vf::process::orphans::group_members(pid as i32).is_empty(),
        "group survived"
    );
    reaper.join().unwrap().unwrap();
    assert!(
        other.try_wait().unwrap().is_none(),
        "an unrelated process was killed"
    );
    assert!(!vf::process::owned::record_path(state, "orphan", 1).exists());
    assert!(vf::process::owned::record_path(state, "recycled", 1).exists());
    assert!(rec3_path.exists());
    let json = serde_json::to_value(&fixed).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|f| f["action"] == "ended")
    );
    let _ = other.kill();
    let _ = other.wait();
}

#[test]
fn owned_record_lives_exactly_while_the_cli_runs() {
    let env = PlanEnv::new();
    env.unit_dir("a", CODEX, "0.3", "");
    env.plan(&unit_toml("a", "codex", &[]));
    let mut c = env.orchestrate(&["--output", "jsonl"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let rec_path = vf::process::owned::record_path(&env.state(), "a", 1);
    let start = Instant::now();
    while !rec_path.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no record");
        std::thread::sleep(Duration::from_millis(10));
    }
    let rec = vf::process::owned::ProcRecord::load(&rec_path).unwrap();
    assert_eq!(rec.unit, "a");
    assert_eq!(rec.attempt, 1);
    assert_eq!(rec.supervisor.pid, child.id());
    assert!(rec.supervisor.start_time.is_some() && rec.cli.start_time.is_some());
    assert_eq!(rec.pgid, rec.cli.pid as i32);
    assert_eq!(rec.boot_id, vf::ground::procinfo::boot_id());
    // The fake in the run log is that CLI.
    while env.events().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "fake never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let starts = env.events();
    assert_eq!(starts[0].2, rec.cli.pid.to_string());
    let found = vf::process::orphans::scan(&env.state());
    assert_eq!(
        found[0].class,
        vf::process::orphans::Class::Owned,
        "{found:?}"
    );
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(!rec_path.exists(), "record not released");
    assert!(vf::process::orphans::scan(&env.state()).is_empty());
}

#[test]
fn resume_ends_the_exact_orphan_of_its_unit_first() {
    let env = PlanEnv::new();
    // First attempt: prints everything, then hangs without output (no SIGPIPE
    // will end it once vf is gone).
    env.unit_dir("a", CODEX, "0", "FAKE_MODE=hang");
    env.plan(&unit_toml("a", "codex", &[]));
    let mut c = env.orchestrate(&["--output", "jsonl"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    while !std::fs::read_to_string(env.marker_path("a"))
        .is_ok_and(|t| t.contains(&capture_session_id(CODEX)))
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no session id");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Without its watcher the group outlives vf, as one of a vf without a
    // lifeline would (src/sys/lifeline.rs).
    let marker: Value = serde_json::from_str(&read_text(&env.marker_path("a"))).unwrap();
    cut_lifeline(marker["owner"]["pgid"].as_i64().unwrap() as i32);
    child.kill().unwrap();
    child.wait().unwrap();
    let found = vf::process::orphans::scan(&env.state());
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].class,
        vf::process::orphans::Class::Orphan,
        "{found:?}"
    );
    let pgid = found[0].pgid.unwrap();
    assert!(!vf::process::orphans::group_members(pgid).is_empty());

    env.unit_dir("a", CODEX, "0", "");
    let out = env.run_plan(&["--resume", "--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("ended the engine left running"), "{stderr}");
    assert!(
        vf::process::orphans::group_members(pgid).is_empty(),
        "orphan survived"
    );
    let a = resumed("a");
    assert_json_eq(
        &env.normalized(&final_json(&out)),
        &plan_result(true, vec![a]),
    );
    assert!(vf::process::orphans::scan(&env.state()).is_empty());
}
