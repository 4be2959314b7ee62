//! Memory at scale (issue 24): of a finished unit, `vf orchestrate` keeps its
//! row of the result and nothing else (not its answer, events or dispatch
//! result), and the whole command needs about what reading its plan needs.
//!
//! Plans run in this process, its heap counted by the allocator below:
//! bytes, not timings. The tests take turns, so each counts only its own.

#![cfg(unix)] // stdout redirected with dup2 (docs/PLATFORMS.md)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use clap::Parser;
use vf::dispatch::DispatchResult;
use vf::engine::frames::ConversationEvent;
use vf::plan::scheduler::{self, Job, PlanResult, Reporter, RunState, UnitReport};

#[path = "it/common/mod.rs"]
mod common;
use common::*;

/// Live heap bytes, and their highest mark since the last reset.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

struct Counting;

fn grew(by: isize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call goes to `System`; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grew(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        grew(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grew(l.size() as isize);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        grew(new as isize - l.size() as isize);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// The live heap as each unit finished; the result printed nowhere, as the
/// JSON reporter prints it.
#[derive(Default)]
struct Sampler {
    at_finish: Vec<isize>,
    done: usize,
}

impl Reporter for Sampler {
    fn started(&mut self, _: usize, _: &UnitReport) {}
    fn event(&mut self, _: usize, _: &ConversationEvent) {}
    fn warning(&mut self, _: usize, _: &str) {}
    fn finished(&mut self, _: usize, r: &UnitReport, _: Option<&DispatchResult>) {
        self.done += usize::from(r.state == RunState::Done);
        self.at_finish.push(LIVE.load(Relaxed));
    }
    fn blocked(&mut self, _: usize, _: &UnitReport) {}
    fn waiting(&mut self, _: usize, _: &UnitReport, _: &DispatchResult) {}
    fn plan_result(&mut self, result: &PlanResult) {
        serde_json::to_writer(std::io::sink(), result).unwrap();
    }
}

/// A codex run whose answer (16 KB) is far larger than its summary.
fn capture() -> String {
    let answer = format!(
        "{}\n\n```json\n{{\"confidence\":1.0}}\n```\n",
        "an answer line that a row never keeps\n".repeat(420)
    );
    let item = serde_json::json!({"type": "item.completed",
        "item": {"id": "item_0", "type": "agent_message", "text": answer}});
    format!(
        "{}\n{}\n{item}\n{}\n",
        r#"{"type":"thread.started","thread_id":"01a229fa-c269-71a3-a12b-439065dbf14b"}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0}}"#,
    )
}

/// Runs a plan of `n` instant units one at a time: the live heap at each finish.
fn run_plan(env: &Env, name: &str, n: usize) -> Vec<isize> {
    let text: String = (0..n)
        .map(|i| {
            format!("[[unit]]\nname = \"{name}{i:04}\"\nengine = \"codex\"\nprompt = \"p\"\n\n")
        })
        .collect();
    let jobs: Vec<Job> = vf::plan::parse(&text, env.path())
        .unwrap()
        .into_iter()
        .map(|plan| Job {
            engine: vf::engine::EngineId::Codex,
            attachments: Vec::new(),
            steps: Default::default(),
            origins: None,
            lineage: Default::default(),
            plan,
        })
        .collect();
    let req = scheduler::Request {
        plan: env.path().join(format!("{name}.toml")),
        state_dir: env.state(),
        jobs,
        parallel: 1,
        resume: false,
        budget: Default::default(),
        kill_grace: Duration::from_millis(500),
    };
    let sampler = Rc::new(RefCell::new(Sampler {
        at_finish: Vec::with_capacity(n),
        done: 0,
    }));
    let result = scheduler::open(req)
        .unwrap()
        .execute(sampler.clone())
        .unwrap();
    assert_eq!(result.exit_code(), 0);
    drop(result);
    let s = sampler.borrow();
    assert_eq!(s.done, n);
    s.at_finish.clone()
}

/// The tests count one heap: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// An env whose fake codex prints [`capture`], named by `VF_CODEX_BIN`.
fn setup() -> (MutexGuard<'static, ()>, Env) {
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let env = Env::new();
    let fake = env.fake_for("codex");
    std::fs::write(env.path().join("capture.jsonl"), capture()).unwrap();
    let settings = format!(
        "FAKE_STDOUT={}\n",
        env.path().join("capture.jsonl").display()
    );
    std::fs::write(fake.with_extension("env"), settings).unwrap();
    // SAFETY: set while no plan runs (the lock above); nothing else in this
    // test binary reads the environment.
    unsafe {
        std::env::set_var("VF_CODEX_BIN", &fake);
        std::env::set_var("XDG_CACHE_HOME", env.path().join("cache"));
    }
    (guard, env)
}

#[test]
fn a_finished_unit_keeps_about_its_row() {
    let (_one, env) = setup();
    run_plan(&env, "w", 4); // the doctor cache and the runtime's first allocations
    let live = run_plan(&env, "l", 60);
    // Retained per finished unit, from the 10th to the 60th: its row.
    let kept = (live[59] - live[9]) / 50;
    eprintln!("kept {kept} B per finished unit");
    assert!(kept < 1024, "{kept} bytes kept per finished unit");
}

/// `vf orchestrate` of a plan of `n` units (`<name>.toml`), each already
/// done (its marker written here), with `--resume --output json` in this
/// process, its output dropped: the plan is read, each marker becomes its
/// row, and the result is printed; no engine runs. The peak of the heap over
/// the command, less the heap before it.
fn resume_done(env: &Env, name: &str, n: usize) -> isize {
    let units = env.state().join("units");
    std::fs::create_dir_all(&units).unwrap();
    let mut text = String::new();
    for i in 0..n {
        let unit = format!("{name}{i:04}");
        text.push_str(&format!(
            "[[unit]]\nname = \"{unit}\"\nengine = \"codex\"\nprompt = \"p\"\n\n"
        ));
        std::fs::create_dir_all(units.join(&unit)).unwrap();
        std::fs::write(
            units.join(&unit).join("marker.json"),
            done_marker(&unit, env),
        )
        .unwrap();
    }
    let plan = env.write(&format!("{name}.toml"), text);
    let state = env.state();
    let (plan, state) = (plan.to_str().unwrap(), state.to_str().unwrap());
    let args = [
        "vf",
        "orchestrate",
        plan,
        "--resume",
        "--output",
        "json",
        "--state-dir",
        state,
    ];
    let cli = vf::cli::Cli::try_parse_from(args).unwrap();
    let saved = stdout_to_null();
    let (code, peak) = peak_of(|| vf::commands::run(cli).unwrap());
    restore_stdout(saved);
    assert_eq!(code, 0);
    peak
}

fn done_marker(unit: &str, env: &Env) -> String {
    serde_json::json!({
        "format": 1, "unit": unit, "engine": "codex", "engineVersion": "0.171.0",
        "state": "done", "engineSessionId": "01a229fa-c269-71a3-a12b-439065dbf14b",
        "attempts": 1, "cwd": env.path(), "owner": null,
        "createdAt": "2026-12-01T14:37:54.292Z", "updatedAt": "2026-12-01T14:37:54.350Z",
        "startedAt": "2026-12-01T14:37:54.298Z", "finishedAt": "2026-12-01T14:37:54.350Z",
        "exitCode": 0, "summary": {"confidence": 1.0, "files_changed": ["src/a.rs", "src/b.rs"]},
        "summaryError": null, "error": null, "reason": null,
        "usage": {"inputTokens": 100, "cachedInputTokens": 0, "outputTokens": 20,
            "reasoningTokens": 0, "totalTokens": 120, "costUsd": 0.0012, "source": "turn.completed.usage"},
        "stdoutLog": format!("units/{unit}/attempt-1.stdout.log"),
        "stderrLog": format!("units/{unit}/attempt-1.stderr.log"),
    })
    .to_string()
}

/// Points descriptor 1 at /dev/null; the descriptor it had, to restore.
fn stdout_to_null() -> i32 {
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .unwrap();
    // SAFETY: plain descriptor calls on descriptors this process owns.
    unsafe {
        let saved = libc::dup(1);
        assert!(saved >= 0 && libc::dup2(null.as_raw_fd(), 1) == 1);
        saved
    }
}

fn restore_stdout(saved: i32) {
    let _ = std::io::stdout().flush();
    // SAFETY: `saved` came from `dup` above and is closed once.
    unsafe {
        libc::dup2(saved, 1);
        libc::close(saved);
    }
}

/// The peak of the heap while `f` runs, less the heap before it.
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, isize) {
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let r = f();
    (r, PEAK.load(Relaxed) - before)
}

/// The whole command needs about what reading its plan needs (the parse of
/// the plan's TOML is its peak): no copy of the plan, of every row, nor a
/// tree of the whole result, each of which adds a KB or more a unit.
#[test]
fn the_command_needs_little_more_than_its_plan() {
    let (_one, env) = setup();
    resume_done(&env, "w", 4);
    let short = resume_done(&env, "s", 100);
    let long = resume_done(&env, "l", 1100);
    let command = (long - short) / 1000;
    let load = |name: &str| peak_of(|| vf::plan::load(&env.path().join(name)).unwrap()).1;
    let plan = (load("l.toml") - load("s.toml")) / 1000;
    eprintln!("orchestrate: peak {command} B per unit; reading its plan: {plan} B per unit");
    assert!(command < plan + 512, "{command} bytes of peak per unit");
}
