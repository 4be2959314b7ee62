//! `vf worker` and `vf orchestrate --temporal` against a real Temporal dev
//! server (docs/DISTRIBUTED.md), with the fake engine as codex: the DAG runs
//! each unit once across two workers, a failure blocks its dependents, a
//! worker killed mid-unit is survived (exact resume on its host, else a
//! fresh start with the replay), a cancel leaves no engine behind, the same
//! plan again attaches, an oversized unit is refused before anything starts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::common::*;

mod lost;
mod quota;
mod sandbox;
#[path = "temporal/server.rs"]
mod server;
mod tls;
use server::{Worker, lines, server};

const CAPTURE: &str = "codex/0.171.0/b_tool.stdout.jsonl";

/// A plan's directory: the fake as codex, each unit's settings, the fake's
/// run log, and a task queue of its own on the shared server.
struct Lab {
    env: Env,
    address: String,
    queue: String,
}

impl Lab {
    fn new(queue: &str) -> Option<Lab> {
        Some(Lab::on(&server()?.address, queue))
    }

    /// A lab on the server at `address` (a proxy, a server of its own).
    fn on(address: &str, queue: &str) -> Lab {
        let env = Env::new();
        std::fs::create_dir_all(env.path().join("runs")).unwrap();
        env.fake_for("codex");
        Lab {
            env,
            address: address.to_string(),
            queue: queue.to_string(),
        }
    }

    fn path(&self) -> &Path {
        self.env.path()
    }

    fn unit(&self, name: &str, extra: &str) {
        self.env.write(
            &format!("{name}/fake.env"),
            format!("FAKE_STDOUT={}\n{extra}\n", fixture(CAPTURE).display()),
        );
    }

    fn with_env(&self, mut c: Command) -> Command {
        c.env("FAKE_RUN_DIR", self.path().join("runs"))
            .env("VF_CODEX_BIN", self.env.fake_for("codex"));
        c
    }

    fn worker(&self, name: &str) -> Worker {
        self.worker_jobs(name, "4")
    }

    fn worker_env(&self, name: &str, envs: &[(&str, &str)]) -> Worker {
        self.worker_with(name, "4", envs)
    }

    fn worker_jobs(&self, name: &str, jobs: &str) -> Worker {
        self.worker_with(name, jobs, &[])
    }

    fn worker_with(&self, name: &str, jobs: &str, envs: &[(&str, &str)]) -> Worker {
        let state = self.path().join(name);
        let args = [
            "worker",
            "--temporal",
            &self.address,
            "--task-queue",
            &self.queue,
            "--state-dir",
            state.to_str().unwrap(),
            "--jobs",
            jobs,
        ];
        let log = self.path().join(format!("{name}.log"));
        let mut c = self.with_env(self.env.cmd(&args));
        c.envs(envs.iter().copied());
        Worker::start(c, &log)
    }

    fn orchestrate(&self, extra: &[&str]) -> Command {
        let plan = self.path().join("plan.toml");
        let mut c = self.env.cmd(&["orchestrate", plan.to_str().unwrap()]);
        c.args(["--temporal", &self.address, "--task-queue", &self.queue])
            .args(extra);
        self.with_env(c)
    }

    /// `--follow --json` to the plan's end: its exit code checked, its result.
    fn follow(&self, code: i32) -> Value {
        let out = run_bounded(
            self.orchestrate(&["--follow", "--json"]),
            Duration::from_secs(180),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        result(&out)
    }

    fn control(&self, flag: &str, id: &str) -> Output {
        run_bounded(self.control_cmd(flag, id), Duration::from_secs(120))
    }

    /// `orchestrate --temporal … FLAG ID --json` (`--status`, `--cancel`).
    fn control_cmd(&self, flag: &str, id: &str) -> Command {
        let mut c = self.env.cmd(&[
            "orchestrate",
            "--temporal",
            &self.address,
            flag,
            id,
            "--json",
        ]);
        c.args(["--task-queue", &self.queue]);
        c
    }

    /// `(kind, unit, pid)` of each line of the fake's event log.
    fn events(&self) -> Vec<(String, String, String)> {
        lines(&self.path().join("runs/events.log"))
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0].into(), f[1].into(), f[2].into())
            })
            .collect()
    }

    fn starts(&self, unit: &str) -> Vec<String> {
        let e = self.events().into_iter();
        e.filter(|(k, u, _)| k == "start" && u == unit)
            .map(|(_, _, p)| p)
            .collect()
    }

    fn submit_detached(&self) -> String {
        let out = run_bounded(
            self.orchestrate(&["--detach", "--json"]),
            Duration::from_secs(60),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["workflowId"].as_str().unwrap().to_string()
    }
}

fn plan_units(units: &[(&str, &[&str])], keys: &str) -> String {
    let mut s = String::new();
    for (name, deps) in units {
        let deps: Vec<String> = deps.iter().map(|d| format!("{d:?}")).collect();
        s.push_str(&format!(
            "[[unit]]\nname = {name:?}\nengine = \"codex\"\nprompt = \"do {name}\"\ncwd = {name:?}\ndepends_on = [{}]\n{keys}\n",
            deps.join(", ")
        ));
    }
    s
}

fn result(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    serde_json::from_str(last).unwrap()
}

fn row<'a>(r: &'a Value, unit: &str) -> &'a Value {
    r["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["unit"] == unit)
        .unwrap()
}

fn pid_alive(pid: &str) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists()
}

#[test]
fn a_six_unit_dag_runs_each_unit_once_across_two_workers() {
    let Some(lab) = Lab::new("six") else { return };
    let units: [(&str, &[&str]); 6] = [
        ("a", &[]),
        ("b", &["a"]),
        ("c", &["a"]),
        ("d", &["b", "c"]),
        ("e", &[]),
        ("f", &["e"]),
    ];
    for (u, _) in &units {
        lab.unit(u, "FAKE_DELAY=0.1");
    }
    lab.env.write("plan.toml", plan_units(&units, ""));
    let (w1, w2) = (lab.worker("w1"), lab.worker("w2"));
    let r = lab.follow(0);
    assert_eq!(r["kind"], "orchestrate.result");
    assert_eq!(r["ok"], true);
    for (u, _) in &units {
        let row = row(&r, u);
        assert_eq!(
            (row["state"].as_str(), row["start"].as_str()),
            (Some("done"), Some("fresh")),
            "{row}"
        );
        assert!(row["sessionId"].is_string(), "{row}");
        let host = row["host"].as_str().unwrap();
        assert!(host == w1.host || host == w2.host, "{host}");
        assert_eq!(
            lab.starts(u).len(),
            1,
            "unit {u} ran once: {:?}",
            lab.events()
        );
        // Its marker is in the state dir of the worker that ran it.
        let dir = if host == w1.host { "w1" } else { "w2" };
        assert!(walk_has(
            &lab.path().join(dir).join("temporal"),
            &format!("units/{u}/marker.json")
        ));
    }
    // d ran after both of its dependencies ended.
    let ev = lab.events();
    let at = |k: &str, u: &str| {
        ev.iter()
            .position(|(kk, uu, _)| kk == k && uu == u)
            .unwrap()
    };
    assert!(at("start", "d") > at("end", "b") && at("start", "d") > at("end", "c"));
}

fn walk_has(dir: &Path, tail: &str) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| e.path().join(tail).is_file())
}

#[test]
fn an_engine_failure_is_not_retried_by_default_and_blocks_its_dependents() {
    let Some(lab) = Lab::new("fail") else { return };
    lab.unit("a", "FAKE_EXIT=1");
    lab.unit("b", "");
    lab.unit("c", "");
    lab.unit("m", "");
    lab.unit("n", "");
    let mut plan = plan_units(&[("a", &[]), ("b", &["a"]), ("c", &[])], "");
    // An engine missing on the worker (exit 3) is not retried, even with retries left.
    let missing = plan_units(&[("m", &[]), ("n", &["m"])], "retries = 2");
    plan.push_str(&missing.replace("\"codex\"", "\"claude\""));
    lab.env.write("plan.toml", plan);
    let _w = lab.worker_env("w1", &[("VF_CLAUDE_BIN", "/nonexistent/claude")]);
    let r = lab.follow(1);
    assert_eq!(row(&r, "a")["state"], "failed");
    assert_eq!(row(&r, "a")["reason"], "engine");
    assert_eq!(row(&r, "b")["state"], "blocked");
    assert_eq!(row(&r, "b")["reason"], "dependency");
    assert_eq!(row(&r, "b")["error"], "dependency \"a\" is failed");
    assert_eq!(row(&r, "c")["state"], "done");
    assert_eq!((lab.starts("a").len(), lab.starts("b").len()), (1, 0));
    let m = row(&r, "m");
    assert_eq!(
        (m["state"].as_str(), m["reason"].as_str()),
        (Some("failed"), Some("missing")),
        "{m}"
    );
    assert_eq!(row(&r, "n")["error"], "dependency \"m\" is failed");
}

#[test]
fn the_same_plan_again_attaches_to_its_running_workflow() {
    let Some(lab) = Lab::new("attach") else {
        return;
    };
    lab.unit("a", "FAKE_DELAY=0.3");
    lab.env.write("plan.toml", plan_units(&[("a", &[])], ""));
    let w = lab.worker("w1");
    let first = lab.submit_detached();
    let out = run_bounded(
        lab.orchestrate(&["--detach", "--json"]),
        Duration::from_secs(60),
    );
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (again["workflowId"].as_str(), again["attached"].as_bool()),
        (Some(first.as_str()), Some(true))
    );
    let out = run_bounded(
        lab.orchestrate(&["--follow", "--json"]),
        Duration::from_secs(120),
    );
    assert_eq!(result(&out)["ok"], true);
    assert_eq!(lab.starts("a").len(), 1, "{:?}", lab.events());
    // Once it completed, the same plan again shows that run: nothing runs
    // twice. No worker is needed for it, and none holds it up: it comes
    // from the workflow's result (a query would wait for a worker).
    drop(w);
    let out = run_bounded(
        lab.orchestrate(&["--follow", "--json"]),
        Duration::from_secs(20),
    );
    assert_eq!(result(&out)["ok"], true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ran this plan to its end before"), "{err}");
    assert_eq!(lab.starts("a").len(), 1, "{:?}", lab.events());
    let out = run_bounded(lab.control_cmd("--status", &first), Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(row(&result(&out), "a")["state"], "done");
}

#[test]
fn cancelling_the_workflow_ends_the_engine_and_records_interrupted() {
    let Some(lab) = Lab::new("cancel") else {
        return;
    };
    lab.unit("a", "FAKE_MODE=hang");
    lab.unit("b", "");
    lab.env.write(
        "plan.toml",
        plan_units(&[("a", &[]), ("b", &["a"])], "stall_timeout = 30"),
    );
    let _w = lab.worker("w1");
    let id = lab.submit_detached();
    wait_for("the engine to start", Duration::from_secs(60), || {
        !lab.starts("a").is_empty()
    });
    let pid = lab.starts("a")[0].clone();
    let out = lab.control("--cancel", &id);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = result(&out);
    assert_eq!(
        (
            row(&r, "a")["state"].as_str(),
            row(&r, "a")["reason"].as_str()
        ),
        (Some("failed"), Some("interrupted"))
    );
    assert_ne!(row(&r, "b")["state"], "done");
    wait_for("the engine to be gone", Duration::from_secs(10), || {
        !pid_alive(&pid)
    });
}

/// Unit `a` prints its session id and a first answer, then hangs until its
/// worker is killed; its next run prints the whole capture.
fn hanging_unit(lab: &Lab) {
    let head: Vec<String> = read_text(&fixture(CAPTURE))
        .lines()
        .take(3)
        .map(String::from)
        .collect();
    lab.env.write("head.jsonl", head.join("\n") + "\n");
    let head = lab.path().join("head.jsonl");
    lab.env.write(
        "a/fake.env",
        format!("FAKE_STDOUT={}\nFAKE_MODE=hang\n", head.display()),
    );
    lab.env
        .write("plan.toml", plan_units(&[("a", &[])], "stall_timeout = 3"));
}

/// Waits until the hanging run's answer was seen (and heartbeated), then
/// kills its worker; the next run of `a` completes.
fn kill_mid_unit(lab: &Lab, w: &mut Worker) -> String {
    wait_for(
        "the first answer in the raw log",
        Duration::from_secs(60),
        || {
            has_session(&walk_text(
                &lab.path().join("w1/temporal"),
                "units/a/marker.json",
            )) && walk_any(&lab.path().join("w1/temporal"), "I will run the command.")
        },
    );
    // The SDK sends a heartbeat at most every 0.8 x its timeout (3 s).
    std::thread::sleep(Duration::from_secs(3));
    w.kill9();
    lab.unit("a", "");
    lab.starts("a")[0].clone()
}

#[test]
fn a_worker_killed_mid_unit_is_retried_exactly_on_its_host() {
    let Some(lab) = Lab::new("kill-exact") else {
        return;
    };
    hanging_unit(&lab);
    let mut w = lab.worker("w1");
    lab.submit_detached();
    let orphan = kill_mid_unit(&lab, &mut w);
    // The same state dir again: the same host id, the session it holds.
    let w = lab.worker("w1");
    let out = run_bounded(
        lab.orchestrate(&["--follow", "--json"]),
        Duration::from_secs(180),
    );
    let r = result(&out);
    let a = row(&r, "a");
    assert_eq!(
        (a["state"].as_str(), a["start"].as_str()),
        (Some("done"), Some("exactResume")),
        "{a}"
    );
    assert_eq!(a["host"].as_str(), Some(w.host.as_str()));
    let starts = lab.starts("a");
    assert_eq!(starts.len(), 2, "{:?}", lab.events());
    let args = read_text(&lab.path().join(format!("runs/a.{}.args", starts[1])));
    assert!(args.contains(a["sessionId"].as_str().unwrap()), "{args}");
    // The killed worker's engine was ended before the unit ran again.
    assert!(!pid_alive(&orphan));
}

#[test]
fn a_worker_killed_mid_unit_with_its_host_gone_starts_fresh_with_the_replay() {
    let Some(lab) = Lab::new("kill-replay") else {
        return;
    };
    hanging_unit(&lab);
    let mut w1 = lab.worker("w1");
    let mut sub = lab.orchestrate(&["--detach", "--json"]);
    sub.env("VF_TEMPORAL_AFFINITY_MS", "2000");
    let out = run_bounded(sub, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let orphan = kill_mid_unit(&lab, &mut w1);
    // Another state dir: another host, which does not hold the session.
    let w2 = lab.worker("w2");
    let out = run_bounded(
        lab.orchestrate(&["--follow", "--json"]),
        Duration::from_secs(180),
    );
    let _ = Command::new("kill").args(["-9", &orphan]).status();
    let r = result(&out);
    let a = row(&r, "a");
    assert_eq!(
        (a["state"].as_str(), a["start"].as_str()),
        (Some("done"), Some("replay")),
        "{a}"
    );
    assert_eq!(a["host"].as_str(), Some(w2.host.as_str()));
    let starts = lab.starts("a");
    assert_eq!(starts.len(), 2, "{:?}", lab.events());
    let args = read_text(&lab.path().join(format!("runs/a.{}.args", starts[1])));
    let argv = args.split("--stdin--").next().unwrap();
    assert!(!argv.lines().any(|l| l == "resume"), "{args}");
    assert!(
        args.contains("vf replay") && args.contains("I will run the command."),
        "{args}"
    );
}

/// A marker's text that carries a session id.
fn has_session(marker: &str) -> bool {
    serde_json::from_str::<Value>(marker).is_ok_and(|m| m["engineSessionId"].is_string())
}

/// Some file under `dir` contains `needle`.
fn walk_any(dir: &Path, needle: &str) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let p = e.path();
        match p.is_dir() {
            true => walk_any(&p, needle),
            false => std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle)),
        }
    })
}

fn walk_text(dir: &Path, tail: &str) -> String {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return String::new();
    };
    rd.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join(tail)).ok())
        .next()
        .unwrap_or_default()
}

#[test]
fn a_unit_over_the_payload_cap_is_refused_before_anything_starts() {
    let Some(lab) = Lab::new("cap") else { return };
    lab.env.write("big.txt", "x".repeat(3 * 1024 * 1024));
    lab.env.write(
        "plan.toml",
        "[[unit]]\nname = \"big\"\nengine = \"codex\"\nprompt_file = \"big.txt\"\n",
    );
    let out = run_bounded(lab.orchestrate(&["--detach"]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unit \"big\": its prompt and keys are") && err.contains("at most 2097152"),
        "{err}"
    );
    assert!(!lab.env.state().exists());
}

/// A plan of thousands of units (the 2,000 by default;
/// `VF_TEMPORAL_UNITS` to change it) runs to its end through several
/// continue-as-new runs of its workflow, each unit exactly once.
#[test]
fn a_plan_of_two_thousand_units_runs_through_continue_as_new() {
    let Some(lab) = Lab::new("many") else { return };
    let n: usize = std::env::var("VF_TEMPORAL_UNITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    lab.unit("w", "");
    let mut plan = String::from("[defaults]\nengine = \"codex\"\ncwd = \"w\"\n");
    for k in 0..n {
        let dep = match k >= 50 {
            true => format!("depends_on = [\"u{}\"]\n", k - 50),
            false => String::new(),
        };
        plan.push_str(&format!(
            "[[unit]]\nname = \"u{k}\"\nprompt = \"do {k}\"\n{dep}"
        ));
    }
    lab.env.write("plan.toml", plan);
    let (_w1, _w2) = (lab.worker_jobs("w1", "8"), lab.worker_jobs("w2", "8"));
    let mut c = lab.orchestrate(&["--follow", "--json", "--jobs", "16"]);
    // A short history per run: about six events a unit, so several continue-as-new.
    c.env("VF_TEMPORAL_HISTORY_EVENTS", "3000");
    let started = std::time::Instant::now();
    let out = run_bounded(c, Duration::from_secs(1500));
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = result(&out);
    let rows = r["units"].as_array().unwrap();
    assert_eq!(rows.len(), n);
    assert!(rows.iter().all(|u| u["state"] == "done"), "not all done");
    let starts = lab.events().into_iter().filter(|e| e.0 == "start").count();
    assert_eq!(starts, n, "each unit exactly once");
    let err = String::from_utf8_lossy(&out.stderr);
    let runs: u32 = err
        .split(" ran as ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    assert!(
        n < 1000 || runs > 1,
        "a long history continues as new: {err}"
    );
    eprintln!(
        "{n} units through two workers in {secs:.1} s ({:.0} units/min)",
        n as f64 * 60.0 / secs
    );
}

#[test]
fn a_worker_stopped_by_sigterm_hands_its_unit_back() {
    let Some(lab) = Lab::new("sigterm") else {
        return;
    };
    hanging_unit(&lab);
    let mut w = lab.worker("w1");
    lab.submit_detached();
    wait_for("the session id", Duration::from_secs(60), || {
        has_session(&walk_text(
            &lab.path().join("w1/temporal"),
            "units/a/marker.json",
        ))
    });
    let pid = w.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = w.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the worker did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(read_text(&lab.path().join("w1.log")).contains("vf worker: stopped"));
    // Its engine was ended, not left behind.
    let engine = lab.starts("a")[0].clone();
    wait_for("the engine to be gone", Duration::from_secs(10), || {
        !pid_alive(&engine)
    });
    lab.unit("a", "");
    let w = lab.worker("w1");
    let out = run_bounded(
        lab.orchestrate(&["--follow", "--json"]),
        Duration::from_secs(180),
    );
    let r = result(&out);
    let a = row(&r, "a");
    assert_eq!(
        (a["state"].as_str(), a["start"].as_str(), a["host"].as_str()),
        (Some("done"), Some("exactResume"), Some(w.host.as_str())),
        "{a}"
    );
    assert_eq!(lab.starts("a").len(), 2);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Worktree units on two workers: `a` pushes `vf/a`, `b` (on whichever
/// worker takes it) fetches and merges it; without `push` the plan is refused.
#[test]
fn worktree_units_push_their_branches_for_their_dependents_on_any_worker() {
    let Some(lab) = Lab::new("worktrees") else {
        return;
    };
    let (repo, remote) = (lab.path().join("repo"), lab.path().join("remote.git"));
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(
        &repo,
        &[
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    );
    git(
        lab.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    // The fake writes `<unit>.txt` in its worktree (the fake reads its own `.env`).
    let fake = lab.env.fake_for("codex");
    let settings = format!(
        "FAKE_STDOUT={}\nFAKE_WRITE=@NAME@.txt\n",
        fixture(CAPTURE).display()
    );
    std::fs::write(fake.with_extension("env"), settings).unwrap();
    let keys = "[defaults]\nengine = \"codex\"\nworktree = true\n";
    let units = "[[unit]]\nname = \"a\"\nprompt = \"a\"\n[[unit]]\nname = \"b\"\nprompt = \"b\"\ndepends_on = [\"a\"]\n";
    let plan = repo.join("plan.toml");
    // Without `push`: refused before anything is submitted.
    std::fs::write(&plan, format!("{keys}{units}")).unwrap();
    let run = |extra: &[&str]| {
        let mut c = lab.env.cmd(&[
            "orchestrate",
            plan.to_str().unwrap(),
            "--temporal",
            &lab.address,
        ]);
        c.args(["--task-queue", &lab.queue])
            .args(extra)
            .current_dir(&repo);
        run_bounded(lab.with_env(c), Duration::from_secs(180))
    };
    let out = run(&["--detach"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs `push = \"REMOTE\"`"));
    std::fs::write(&plan, format!("{keys}push = \"origin\"\n{units}")).unwrap();
    let (w1, w2) = (lab.worker_jobs("w1", "1"), lab.worker_jobs("w2", "1"));
    let out = run(&["--follow", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = result(&out);
    let (a, b) = (row(&r, "a"), row(&r, "b"));
    for u in [a, b] {
        assert_eq!(
            (u["state"].as_str(), u["workspace"]["pushed"].as_str()),
            (Some("done"), Some("origin")),
            "{u}"
        );
        assert!([&w1.host, &w2.host].contains(&&u["host"].as_str().unwrap().to_string()));
    }
    // b's branch on the remote holds a's work and its own.
    let files = git(&remote, &["ls-tree", "--name-only", "vf/b"]);
    assert_eq!(files.lines().collect::<Vec<_>>(), ["a.txt", "b.txt"]);
    assert_eq!(
        git(&remote, &["rev-parse", "vf/a"]),
        a["workspace"]["head"].as_str().unwrap()
    );
}

#[test]
fn a_units_fix_rounds_run_inside_its_activity_and_its_row_carries_them() {
    let Some(lab) = Lab::new("loops") else { return };
    lab.unit("a", "");
    lab.unit("b", "");
    // `verify` fails the first time it checks `a`, then passes.
    let verify = "verify = \"[ -e .checked ] || { touch .checked; echo not yet; exit 1; }\"";
    let mut plan = plan_units(&[("a", &[])], &format!("fix_rounds = 2\n{verify}"));
    plan.push_str(&plan_units(&[("b", &["a"])], ""));
    lab.env.write("plan.toml", plan);
    let _w = lab.worker("w1");
    let r = lab.follow(0);
    let a = row(&r, "a");
    assert_eq!(a["state"], "done", "{a}");
    let rounds = a["rounds"].as_array().expect("the row's rounds");
    assert_eq!(rounds.len(), 1, "{a}");
    assert_eq!(
        (rounds[0]["kind"].as_str(), rounds[0]["outcome"].as_str()),
        (Some("fix"), Some("done"))
    );
    assert_eq!(rounds[0]["verify"]["passed"], true);
    assert_eq!(row(&r, "b")["state"], "done");
    // One activity: the first attempt and its round, on the worker that holds the session.
    assert_eq!((lab.starts("a").len(), lab.starts("b").len()), (2, 1));
    let marker = walk_text(&lab.path().join("w1/temporal"), "units/a/marker.json");
    assert!(
        marker.contains("\"kind\": \"fix\"") || marker.contains("\"kind\":\"fix\""),
        "{marker}"
    );
}
