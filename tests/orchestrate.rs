//! Integration tests of `vf orchestrate` (plans, DAG, --jobs, --resume, the
//! crash loop) and of the orphan finder, against the fake engine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::*;

const CODEX: &str = "codex/0.171.0/b_tool.stdout.jsonl";
const CLAUDE: &str = "claude/2.1.332/b_tool.stdout.jsonl";
const COPILOT: &str = "copilot/1.0.102/a_json.stdout.jsonl";
const CODEX_FAIL: &str = "codex/0.171.0/d_error500.stdout.jsonl";

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let env = Env {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(env.runs()).unwrap();
        let bin = env.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for e in ["codex", "claude", "copilot"] {
            std::fs::copy(root().join("tests/fake/fake-engine"), bin.join(e)).unwrap();
        }
        // Copilot at an unverified version: no exact resume, so it gets a replay.
        std::fs::write(bin.join("copilot.env"), "FAKE_VERSION=1.0.50\n").unwrap();
        std::fs::write(bin.join("claude.env"), "FAKE_VERSION=2.1.332\n").unwrap();
        env
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn runs(&self) -> PathBuf {
        self.path().join("runs")
    }
    fn state(&self) -> PathBuf {
        self.path().join("state")
    }
    /// A unit's working directory, with the fake's per-unit settings.
    fn unit_dir(&self, name: &str, capture: &str, delay: &str, extra: &str) {
        let d = self.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("fake.env"),
            format!(
                "FAKE_STDOUT={}\nFAKE_DELAY={delay}\nFAKE_SLEEP_BEFORE=1\n{extra}\n",
                fixture(capture).display()
            ),
        )
        .unwrap();
    }
    fn plan(&self, text: &str) -> PathBuf {
        let p = self.path().join("plan.toml");
        std::fs::write(&p, text).unwrap();
        p
    }
    fn cmd(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(vf());
        c.arg("orchestrate")
            .arg(self.path().join("plan.toml"))
            .arg("--state-dir")
            .arg(self.state())
            .args(extra)
            .current_dir(self.path())
            .env("VF_KILL_GRACE_MS", "500")
            .env("FAKE_RUN_DIR", self.runs())
            .stdin(Stdio::null());
        for (k, _) in std::env::vars() {
            if k.starts_with("FAKE_") && k != "FAKE_RUN_DIR"
                || k.starts_with("VF_") && k.ends_with("_BIN")
            {
                c.env_remove(k);
            }
        }
        for e in ["codex", "claude", "copilot"] {
            c.env(
                format!("VF_{}_BIN", e.to_uppercase()),
                self.path().join("bin").join(e),
            );
        }
        c
    }
    fn run(&self, extra: &[&str]) -> Output {
        run_bounded(self.cmd(extra), Duration::from_secs(90))
    }
    fn marker(&self, unit: &str) -> Value {
        let p = self.state().join("units").join(format!("{unit}.json"));
        serde_json::from_slice(
            &std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
        .unwrap()
    }
    /// `(kind, unit, pid, exit)` lines written by the fake, in order.
    fn events(&self) -> Vec<(String, String, String, Option<i32>)> {
        let text = std::fs::read_to_string(self.runs().join("events.log")).unwrap_or_default();
        text.lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (
                    f[0].to_string(),
                    f[1].to_string(),
                    f[2].to_string(),
                    f.get(3).and_then(|x| x.parse().ok()),
                )
            })
            .collect()
    }
    fn args_of(&self, unit: &str, pid: &str) -> String {
        std::fs::read_to_string(self.runs().join(format!("{unit}.{pid}.args"))).unwrap_or_default()
    }
}

fn final_json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let v: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}"));
    assert_eq!(v["kind"], "orchestrate.result", "{v}");
    v
}

fn unit_report<'a>(fin: &'a Value, unit: &str) -> &'a Value {
    fin["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["unit"] == unit)
        .unwrap_or_else(|| panic!("no {unit} in {fin}"))
}

fn unit_toml(name: &str, engine: &str, deps: &[&str]) -> String {
    let deps: Vec<String> = deps.iter().map(|d| format!("{d:?}")).collect();
    format!(
        "[[unit]]\nname = {name:?}\nengine = {engine:?}\nprompt = \"task {name}\"\ncwd = {name:?}\ndepends_on = [{}]\n\n",
        deps.join(", ")
    )
}

#[test]
fn plan_validation_errors_start_nothing() {
    let env = Env::new();
    for u in ["a", "b", "c"] {
        env.unit_dir(u, CODEX, "0", "");
    }
    let ok = "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"x\"\ncwd = \"a\"\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("{ok}colour = \"red\"\n"), "unknown field `colour`"),
        (
            "[[unit]]\nname = \"a\"\nengine = \"codex\"\n".into(),
            "no `prompt` or `prompt_file`",
        ),
        (
            format!("{ok}prompt_file = \"p.md\"\n"),
            "both `prompt` and `prompt_file`",
        ),
        (
            "[[unit]]\nname = \"a\"\nengine = \"gpt5\"\nprompt = \"x\"\n".into(),
            "unknown engine \"gpt5\"",
        ),
        (
            format!("{ok}depends_on = [\"ghost\"]\n"),
            "unknown unit \"ghost\"",
        ),
        (format!("{ok}{ok}"), "duplicate unit name \"a\""),
        (
            "[[unit]]\nname = \"../evil\"\nengine = \"codex\"\nprompt = \"x\"\n".into(),
            "invalid unit name",
        ),
        (
            format!(
                "{}{}{}",
                unit_toml("a", "codex", &["c"]),
                unit_toml("b", "codex", &["a"]),
                unit_toml("c", "codex", &["b"])
            ),
            "dependency cycle: a -> c -> b -> a",
        ),
        (
            "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt_file = \"nope.md\"\n".into(),
            "cannot read prompt_file",
        ),
        (
            format!("{ok}attachments = [\"nope.png\"]\n"),
            "unit \"a\": ",
        ),
        ("not toml at all [".into(), "plan"),
        (String::new(), "no units"),
    ];
    for (text, want) in cases {
        env.plan(&text);
        let out = env.run(&["--output", "json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{want}: {stderr}");
        assert!(stderr.contains(want), "wanted {want:?} in {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "one clear error: {stderr}"
        );
        assert!(out.stdout.is_empty());
        assert!(env.events().is_empty(), "something started for {want}");
        assert!(
            !env.state().join("units").exists(),
            "markers written for {want}"
        );
    }
}

#[test]
fn dependency_failure_blocks_dependents() {
    let env = Env::new();
    env.unit_dir("a", CODEX_FAIL, "0", "FAKE_EXIT=1");
    env.unit_dir("b", CODEX, "0", "");
    env.unit_dir("c", CODEX, "0", "");
    env.unit_dir("d", CODEX, "0", "");
    env.unit_dir("g", CODEX, "0", "");
    env.unit_dir("h", CODEX, "0", "");
    env.plan(&format!(
        "{}{}{}{}{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"]),
        unit_toml("c", "codex", &["b"]),
        unit_toml("d", "codex", &[]),
        unit_toml("g", "gemini", &[]),
        unit_toml("h", "codex", &["d", "g"])
    ));
    let mut c = env.cmd(&["--output", "jsonl"]);
    // g's engine cannot start at all.
    c.env("VF_GEMINI_BIN", env.path().join("no-such-gemini"));
    let out = run_bounded(c, Duration::from_secs(90));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = final_json(&out);
    assert_eq!(fin["ok"], false);
    assert_eq!(unit_report(&fin, "a")["state"], "failed");
    assert_eq!(unit_report(&fin, "b")["state"], "blocked");
    assert_eq!(unit_report(&fin, "c")["state"], "blocked");
    assert_eq!(unit_report(&fin, "d")["state"], "done");
    assert_eq!(unit_report(&fin, "g")["state"], "failed");
    assert!(
        unit_report(&fin, "g")["error"]
            .as_str()
            .unwrap()
            .contains("no such file")
    );
    assert_eq!(env.marker("g")["reason"], "missing");
    assert_eq!(unit_report(&fin, "h")["state"], "blocked");
    assert_eq!(env.marker("a")["state"], "failed");
    assert_eq!(env.marker("b")["state"], "blocked");
    assert!(env.marker("b")["error"].as_str().unwrap().contains("\"a\""));
    assert_eq!(env.marker("c")["state"], "blocked");
    let started: Vec<String> = env
        .events()
        .into_iter()
        .filter(|e| e.0 == "start")
        .map(|e| e.1)
        .collect();
    assert!(!started.contains(&"b".to_string()) && !started.contains(&"c".to_string()));
    // Every JSONL event line is tagged with its unit.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["kind"] != "orchestrate.result" {
            assert!(v["unit"].is_string(), "untagged line {line}");
        }
    }
}

/// The largest number of runs in flight at once, from the fake's start/end order.
fn max_concurrency(events: &[(String, String, String, Option<i32>)]) -> usize {
    let (mut cur, mut max) = (0usize, 0usize);
    for e in events {
        if e.0 == "start" {
            cur += 1;
            max = max.max(cur);
        } else {
            cur -= 1;
        }
    }
    max
}

#[test]
fn jobs_bound_concurrency() {
    for (jobs, barrier) in [(1, ""), (2, "FAKE_BARRIER=2"), (4, "FAKE_BARRIER=4")] {
        let env = Env::new();
        let mut plan = String::new();
        for u in ["u1", "u2", "u3", "u4"] {
            env.unit_dir(u, CODEX, "0.02", barrier);
            plan.push_str(&unit_toml(u, "codex", &[]));
        }
        env.plan(&plan);
        let out = env.run(&["--jobs", &jobs.to_string(), "--output", "json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fin = final_json(&out);
        assert_eq!(fin["ok"], true);
        let ev = env.events();
        assert_eq!(ev.len(), 8);
        assert_eq!(max_concurrency(&ev), jobs, "--jobs {jobs}: {ev:?}");
        // json: only the final object.
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    }
}

#[test]
fn existing_markers_need_resume_and_done_units_are_skipped() {
    let env = Env::new();
    env.unit_dir("a", CODEX, "0", "");
    env.unit_dir("b", CLAUDE, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "claude", &["a"])
    ));
    let out = env.run(&["--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.events().len(), 4);
    let out = env.run(&["--output", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
    let out = env.run(&["--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "a")["ran"], false);
    assert_eq!(unit_report(&fin, "b")["state"], "done");
    assert_eq!(env.events().len(), 4, "a done unit ran again");
}

#[test]
fn resume_uses_exact_id_or_a_labelled_replay() {
    let env = Env::new();
    // Both fail after producing output: codex records its id, copilot an answer.
    env.unit_dir("x", CODEX, "0", "FAKE_EXIT=1");
    env.unit_dir("y", COPILOT, "0", "FAKE_EXIT=1");
    env.plan(&format!(
        "{}{}",
        unit_toml("x", "codex", &[]),
        unit_toml("y", "copilot", &[])
    ));
    let out = env.run(&["--output", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        env.marker("x")["engineSessionId"],
        capture_session_id(CODEX)
    );
    let history = std::fs::read_to_string(env.state().join("units/y/responses.jsonl")).unwrap();
    let first: Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    let answer_sha = first["sha256"].as_str().unwrap().to_string();

    env.unit_dir("x", CODEX, "0", "");
    env.unit_dir("y", COPILOT, "0", "");
    let out = env.run(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "x")["start"], "exactResume");
    assert_eq!(unit_report(&fin, "y")["start"], "replay");
    assert_eq!(unit_report(&fin, "y")["replay"]["source"], 1);
    assert_eq!(unit_report(&fin, "y")["replay"]["replayed"], 1);
    let starts: Vec<_> = env
        .events()
        .into_iter()
        .filter(|e| e.0 == "start")
        .collect();
    let last_x = starts.iter().rev().find(|e| e.1 == "x").unwrap();
    let args = env.args_of("x", &last_x.2);
    assert!(
        args.starts_with(&format!("exec\nresume\n{}\n", capture_session_id(CODEX))),
        "{args}"
    );
    let last_y = starts.iter().rev().find(|e| e.1 == "y").unwrap();
    let args = env.args_of("y", &last_y.2);
    assert!(args.contains("NOT a continued session"), "{args}");
    assert!(args.contains(&format!("sha256 {answer_sha}")), "{args}");
    assert!(
        args.contains("unit y · engine copilot · attempt 1"),
        "{args}"
    );
    assert!(args.contains("source responses: 1 · replayed: 1"), "{args}");
    assert!(args.contains("task y"), "the original task is kept: {args}");
    // The answer itself, not the earlier prompt, is what was replayed.
    assert_eq!(args.matches("task y").count(), 1, "{args}");
    assert!(args.contains(first["text"].as_str().unwrap().lines().next().unwrap()));
}

#[test]
fn resume_refuses_a_unit_owned_by_a_live_vf() {
    let env = Env::new();
    env.unit_dir("a", CODEX, "0", "");
    env.unit_dir("b", CODEX, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"])
    ));
    // A marker claimed by a live supervisor: this test process.
    let store = vf::marker::MarkerStore::new(&env.state());
    let mut m = vf::marker::Marker::new("a", vf::engine::EngineId::Codex, env.path());
    m.state = vf::marker::UnitState::Running;
    m.attempts = 1;
    m.owner = Some(vf::marker::Owner {
        supervisor: vf::procinfo::ProcIdentity::current(),
        cli: None,
        pgid: None,
    });
    store.save(&mut m).unwrap();
    let before = std::fs::read(store.path("a")).unwrap();
    let out = env.run(&["--resume", "--output", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "a")["state"], "refused");
    assert!(
        unit_report(&fin, "a")["error"]
            .as_str()
            .unwrap()
            .contains("live vf")
    );
    assert_eq!(unit_report(&fin, "b")["state"], "blocked");
    assert_eq!(
        std::fs::read(store.path("a")).unwrap(),
        before,
        "marker touched"
    );
    assert!(env.events().is_empty());
}

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
fn all_markers_parse(state: &Path) -> HashMap<String, vf::marker::Marker> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir(state.join("units")) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(unit) = name.strip_suffix(".json")
            && !name.starts_with('.')
        {
            let m: vf::marker::Marker = serde_json::from_slice(&std::fs::read(e.path()).unwrap())
                .unwrap_or_else(|err| panic!("marker {name} does not parse: {err}"));
            out.insert(unit.to_string(), m);
        }
    }
    out
}

/// Ends what a killed vf left behind with `orphans::fix`, until nothing is left.
fn clean_orphans(state: &Path) -> usize {
    let start = Instant::now();
    let mut ended = 0;
    loop {
        let f = vf::orphans::fix(state, Duration::from_millis(300));
        ended += f
            .iter()
            .filter(|f| f.action == vf::orphans::Action::Ended)
            .count();
        let open = f
            .iter()
            .filter(|f| {
                !matches!(
                    f.action,
                    vf::orphans::Action::Ended | vf::orphans::Action::Released
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

#[test]
fn crash_loop_kill_9_and_resume() {
    let env = Env::new();
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
        let mut c = env.cmd(if round == 0 {
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
        let (trigger, delay_ms) = match rng.next() % 3 {
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
            if fired.is_some_and(|f| f.elapsed() >= Duration::from_millis(delay_ms))
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
            if m.state != vf::marker::UnitState::Done && ends > known {
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
        .filter(|m| m.state == vf::marker::UnitState::Done)
        .count();
    eprintln!("units done before the final resume: {done_in_loop}");
    assert!(
        kills >= 3 && done_in_loop >= 1,
        "kills {kills}, done {done_in_loop}"
    );
    // Then let it finish.
    let out = env.run(&["--resume", "--output", "json"]);
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
        assert_eq!(markers[u].state, vf::marker::UnitState::Done, "{u}");
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
    assert!(vf::orphans::scan(&env.state()).is_empty());
}

#[test]
fn orphan_fix_ends_exactly_the_orphaned_group() {
    use vf::orphans::{Action, Class};
    let t = tempfile::tempdir().unwrap();
    let state = t.path();
    let child_pid_file = t.path().join("child.pid");
    // A fake CLI with a grandchild that ignores SIGTERM, in its own group,
    // as dispatch spawns it.
    let script = format!(
        "( trap '' TERM; sleep 300 ) & echo $! > {}; exec {} ",
        child_pid_file.display(),
        root().join("tests/fake/fake-engine").display()
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
    while !child_pid_file.exists() || vf::orphans::group_members(pid as i32).len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rec = vf::owned::ProcRecord::new("orphan", 1, "codex", pid);
    // A supervisor that provably died: this pid with another start time.
    rec.supervisor.start_time = rec.supervisor.start_time.map(|s| s + 1);
    rec.save(&vf::owned::record_path(state, "orphan", 1))
        .unwrap();

    // An unrelated live process whose pid "looks recycled": other start time.
    let mut other = Command::new("sleep");
    other.arg("30");
    std::os::unix::process::CommandExt::process_group(&mut other, 0);
    let mut other = other.spawn().unwrap();
    let mut rec2 = vf::owned::ProcRecord::new("recycled", 1, "codex", other.id());
    rec2.supervisor.start_time = rec2.supervisor.start_time.map(|s| s + 1);
    rec2.cli.start_time = rec2.cli.start_time.map(|s| s + 5);
    rec2.save(&vf::owned::record_path(state, "recycled", 1))
        .unwrap();
    // And one with a live owner (this process).
    let rec3_path = vf::owned::record_path(state, "owned", 1);
    vf::owned::ProcRecord::new("owned", 1, "codex", other.id())
        .save(&rec3_path)
        .unwrap();

    let found = vf::orphans::scan(state);
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

    let fixed = vf::orphans::fix(state, Duration::from_millis(500));
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
        vf::orphans::group_members(pid as i32).is_empty(),
        "group survived"
    );
    reaper.join().unwrap().unwrap();
    assert!(
        other.try_wait().unwrap().is_none(),
        "an unrelated process was killed"
    );
    assert!(!vf::owned::record_path(state, "orphan", 1).exists());
    assert!(vf::owned::record_path(state, "recycled", 1).exists());
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
    let env = Env::new();
    env.unit_dir("a", CODEX, "0.3", "");
    env.plan(&unit_toml("a", "codex", &[]));
    let mut c = env.cmd(&["--output", "jsonl"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let rec_path = vf::owned::record_path(&env.state(), "a", 1);
    let start = Instant::now();
    while !rec_path.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no record");
        std::thread::sleep(Duration::from_millis(10));
    }
    let rec = vf::owned::ProcRecord::load(&rec_path).unwrap();
    assert_eq!(rec.unit, "a");
    assert_eq!(rec.attempt, 1);
    assert_eq!(rec.supervisor.pid, child.id());
    assert!(rec.supervisor.start_time.is_some() && rec.cli.start_time.is_some());
    assert_eq!(rec.pgid, rec.cli.pid as i32);
    assert_eq!(rec.boot_id, vf::procinfo::boot_id());
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
    let found = vf::orphans::scan(&env.state());
    assert_eq!(found[0].class, vf::orphans::Class::Owned, "{found:?}");
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(!rec_path.exists(), "record not released");
    assert!(vf::orphans::scan(&env.state()).is_empty());
}

#[test]
fn sigint_stops_the_plan_and_resume_finishes_it() {
    let env = Env::new();
    env.unit_dir("a", CODEX, "0.3", "");
    env.unit_dir("b", CODEX, "0", "");
    env.plan(&format!(
        "{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "codex", &["a"])
    ));
    let mut c = env.cmd(&["--output", "json"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let start = Instant::now();
    // Interrupt once the session id is on record.
    while !std::fs::read_to_string(env.state().join("units/a.json"))
        .is_ok_and(|t| t.contains(&capture_session_id(CODEX)))
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no session id");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(child.id() as i32, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "a")["state"], "failed");
    assert_eq!(unit_report(&fin, "b")["state"], "notStarted");
    assert!(!env.state().join("units/b.json").exists());
    assert_eq!(env.marker("a")["reason"], "interrupted");
    let out = env.run(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "a")["start"], "exactResume");
    assert_eq!(unit_report(&fin, "b")["start"], "fresh");
}

#[test]
fn resume_ends_the_exact_orphan_of_its_unit_first() {
    let env = Env::new();
    // First attempt: prints everything, then hangs without output (no SIGPIPE
    // will end it once vf is gone).
    env.unit_dir("a", CODEX, "0", "FAKE_MODE=hang");
    env.plan(&unit_toml("a", "codex", &[]));
    let mut c = env.cmd(&["--output", "jsonl"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    while !std::fs::read_to_string(env.state().join("units/a.json"))
        .is_ok_and(|t| t.contains(&capture_session_id(CODEX)))
    {
        assert!(start.elapsed() < Duration::from_secs(20), "no session id");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let found = vf::orphans::scan(&env.state());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].class, vf::orphans::Class::Orphan, "{found:?}");
    let pgid = found[0].pgid.unwrap();
    assert!(!vf::orphans::group_members(pgid).is_empty());

    env.unit_dir("a", CODEX, "0", "");
    let out = env.run(&["--resume", "--output", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("ended the engine left running"), "{stderr}");
    assert!(
        vf::orphans::group_members(pgid).is_empty(),
        "orphan survived"
    );
    let fin = final_json(&out);
    assert_eq!(unit_report(&fin, "a")["start"], "exactResume");
    assert!(vf::orphans::scan(&env.state()).is_empty());
}
