//! Reader isolation (issue 24). A marker is replaced by writing a temporary,
//! fsyncing it and renaming it over `units/<unit>/marker.json`, so whoever opened
//! the marker, at any instant and however long it holds the descriptor
//! before reading, reads one whole marker of that unit: never another
//! unit's, never a torn one, never zeroed bytes. Each test reads markers
//! while vf writes them and checks every read.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::*;

const CODEX: &str = "codex/0.171.0/b_tool.stdout.jsonl";
const CODEX_FAIL: &str = "codex/0.171.0/d_error500.stdout.jsonl";

/// The plan's size (the figure) and parallelism.
const UNITS: usize = 400;
const JOBS: &str = "8";

/// What one read of `units/<name>/marker.json` returned.
#[derive(Debug, PartialEq)]
enum Seen {
    /// A whole marker of that unit, in this state.
    Whole(String),
    /// A whole marker of another unit.
    Foreign(String),
    /// NUL bytes (a zeroed file).
    Zeroed,
    /// Nothing at all.
    Empty,
    /// Not one JSON object: cut short, or followed by something else.
    Torn,
}

fn classify(name: &str, bytes: &[u8]) -> Seen {
    if bytes.is_empty() {
        return Seen::Empty;
    }
    if bytes.contains(&0) {
        return Seen::Zeroed;
    }
    // from_slice refuses anything but whitespace after the object.
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => match m.get("unit").and_then(Value::as_str) {
            Some(u) if u == name => {
                Seen::Whole(m.get("state").and_then(Value::as_str).unwrap_or("").into())
            }
            Some(u) => Seen::Foreign(u.to_string()),
            None => Seen::Torn,
        },
        _ => Seen::Torn,
    }
}

/// One reader's findings.
#[derive(Default)]
struct Tally {
    /// Reads of a descriptor opened while vf was running.
    live: usize,
    /// Reads of a descriptor opened after vf exited.
    after: usize,
    /// Live reads that found a unit `running`: reads overlapped the units' runs.
    running: usize,
    /// Units whose marker was read whole from a live-opened descriptor.
    units: BTreeSet<String>,
    /// A listed marker that could not be opened (a rename never removes it).
    open_errors: Vec<String>,
    /// Every read that was not a whole marker of its own unit.
    bad: Vec<String>,
}

impl Tally {
    fn read(&mut self, name: &str, mut f: File, opened_live: bool) {
        let mut bytes = Vec::new();
        if let Err(e) = f.read_to_end(&mut bytes) {
            self.bad.push(format!("{name}: read error {e}"));
            return;
        }
        match classify(name, &bytes) {
            Seen::Whole(state) => {
                if opened_live {
                    self.live += 1;
                    self.running += usize::from(state == "running");
                    self.units.insert(name.to_string());
                } else {
                    self.after += 1;
                }
            }
            other => {
                let head = String::from_utf8_lossy(&bytes[..bytes.len().min(160)])
                    .replace('\0', "\\0")
                    .replace('\n', " ");
                self.bad.push(format!(
                    "{name}.json: {other:?}, {} bytes: {head}",
                    bytes.len()
                ));
            }
        }
    }

    fn add(&mut self, o: Tally) {
        self.live += o.live;
        self.after += o.after;
        self.running += o.running;
        self.units.extend(o.units);
        self.open_errors.extend(o.open_errors);
        self.bad.extend(o.bad);
    }

    fn bad_count(&self, what: fn(&str) -> bool) -> usize {
        self.bad.iter().filter(|b| what(b)).count()
    }

    fn summary(&self) -> String {
        format!(
            "{} live reads ({} running, {} units), {} after; bad: {} (foreign {}, torn {}, zeroed {}, empty {}); open errors {}",
            self.live,
            self.running,
            self.units.len(),
            self.after,
            self.bad.len(),
            self.bad_count(|b| b.contains("Foreign")),
            self.bad_count(|b| b.contains("Torn")),
            self.bad_count(|b| b.contains("Zeroed")),
            self.bad_count(|b| b.contains("Empty")),
            self.open_errors.len(),
        )
    }

    /// No foreign, torn, zeroed or empty read, and no listed marker missing.
    fn assert_isolated(&self) {
        let first: Vec<&String> = self.bad.iter().take(8).collect();
        assert!(
            self.bad.is_empty(),
            "{}; first bad reads: {first:#?}",
            self.summary()
        );
        assert!(
            self.open_errors.is_empty(),
            "{}: {:?}",
            self.summary(),
            &self.open_errors[..self.open_errors.len().min(8)]
        );
    }
}

/// A small deterministic generator (xorshift64): which marker, how long to hold.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// The units in `units/` that have a marker (one directory per unit).
fn list_markers(units: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(units) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.path().join("marker.json").exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// How a reader thread reads.
#[derive(Clone, Copy)]
enum Style {
    /// Open and read at once.
    Quick,
    /// Open, hold the descriptor 1-25 ms, then read.
    Hold,
    /// Keep up to 48 descriptors open, opening one every few ms; the oldest is
    /// read when the hoard is full, the rest once vf has exited.
    Hoard,
}

/// Reads markers of `units/` in `style` until `live` drops, then once more
/// (so what vf left behind is read too).
fn reader(units: &Path, style: Style, seed: u64, live: &AtomicBool) -> Tally {
    let mut t = Tally::default();
    let mut rng = Rng(seed);
    let mut names = Vec::new();
    let mut hoard: Vec<(String, File, bool)> = Vec::new();
    let mut last_round = false;
    for n in 0usize.. {
        if !live.load(Ordering::SeqCst) {
            if last_round {
                break;
            }
            last_round = true;
        }
        if names.is_empty() || n % 64 == 0 {
            names = list_markers(units);
            if names.is_empty() {
                thread::sleep(Duration::from_millis(2));
                continue;
            }
        }
        let name = names[rng.below(names.len())].clone();
        let opened_live = live.load(Ordering::SeqCst);
        let f = match File::open(units.join(&name).join("marker.json")) {
            Ok(f) => f,
            Err(e) => {
                t.open_errors.push(format!("{name}/marker.json: {e}"));
                continue;
            }
        };
        match style {
            Style::Quick => {
                t.read(&name, f, opened_live);
                thread::sleep(Duration::from_micros(500));
            }
            Style::Hold => {
                thread::sleep(Duration::from_millis(1 + rng.below(25) as u64));
                t.read(&name, f, opened_live);
            }
            Style::Hoard => {
                hoard.push((name, f, opened_live));
                if hoard.len() > 48 {
                    let (name, f, opened_live) = hoard.remove(0);
                    t.read(&name, f, opened_live);
                }
                thread::sleep(Duration::from_millis(3));
            }
        }
    }
    for (name, f, opened_live) in hoard {
        t.read(&name, f, opened_live);
    }
    t
}

/// An [`Env`] whose fake codex replays `CODEX` (a session id, an answer and
/// its usage) one line every 5 ms: each unit runs for a while, and writes its
/// marker `running`, then with the session id, then finished.
fn plan_env(units: usize) -> (Env, PathBuf) {
    let env = Env::new();
    let bin = env.fake_for("codex");
    env.write(
        "bin/codex.env",
        format!(
            "FAKE_STDOUT={}\nFAKE_DELAY=0.005\nFAKE_SLEEP_BEFORE=1\n",
            fixture(CODEX).display()
        ),
    );
    let mut plan = String::new();
    for i in 0..units {
        plan.push_str(&format!(
            "[[unit]]\nname = \"u{i:03}\"\nengine = \"codex\"\nprompt = \"task {i}\"\n\n"
        ));
    }
    env.write("plan.toml", plan);
    (env, bin)
}

/// Runs `vf` to the end (bounded) while `readers` read `units/`, and returns
/// its output and what the readers found.
fn run_while_reading(env: &Env, c: Command, readers: &[Style]) -> (Output, Tally, Duration) {
    let units = env.state().join("units");
    let live = AtomicBool::new(true);
    let started = Instant::now();
    let (out, tally) = thread::scope(|s| {
        let threads: Vec<_> = readers
            .iter()
            .enumerate()
            .map(|(i, &style)| {
                let (units, live) = (&units, &live);
                s.spawn(move || reader(units, style, 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1), live))
            })
            .collect();
        let out = run_bounded(c, Duration::from_secs(120));
        live.store(false, Ordering::SeqCst);
        let mut tally = Tally::default();
        for t in threads {
            tally.add(t.join().unwrap());
        }
        (out, tally)
    });
    (out, tally, started.elapsed())
}

/// Many readers during a 400-unit plan: every read, quick or held for a
/// while (up to the plan's end), is a whole marker of the file's own unit.
#[test]
fn readers_during_a_plan_never_see_another_units_marker_or_a_torn_one() {
    let (env, bin) = plan_env(UNITS);
    let plan = env.path().join("plan.toml");
    let mut c = env.cmd(&[
        "orchestrate",
        plan.to_str().unwrap(),
        "--jobs",
        JOBS,
        "--output",
        "json",
    ]);
    c.env("VF_CODEX_BIN", &bin);
    let readers = [
        Style::Quick,
        Style::Quick,
        Style::Hold,
        Style::Hold,
        Style::Hold,
        Style::Hoard,
    ];
    let (out, tally, took) = run_while_reading(&env, c, &readers);
    eprintln!("{UNITS}-unit plan in {took:.1?}: {}", tally.summary());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result = last_json(&out);
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["units"].as_array().map(Vec::len), Some(UNITS));
    tally.assert_isolated();
    // Not vacuous: the readers read markers throughout the plan, while
    // units ran, and of many units.
    assert!(tally.live >= 2 * UNITS, "{}", tally.summary());
    assert!(tally.running >= 20, "{}", tally.summary());
    assert!(tally.units.len() >= UNITS / 2, "{}", tally.summary());
    for i in 0..UNITS {
        let unit = format!("u{i:03}");
        assert_eq!(
            classify(&unit, &env.marker_bytes(&unit)),
            Seen::Whole("done".into())
        );
    }
}

/// The reproduction: unit `u` fails once; then `u`, `v` and `w` are
/// dispatched at once while a reader opens `units/u/marker.json` 20 times and
/// holds each descriptor until they exit. Each descriptor then reads a whole
/// marker of `u` (the failed one or a later one). Several trials.
#[test]
fn descriptors_held_across_concurrent_dispatches_read_whole_markers() {
    const TRIALS: usize = 6;
    let mut tally = Tally::default();
    let mut live_opens = 0;
    for _ in 0..TRIALS {
        let env = Env::new();
        let out = env.dispatch(
            "codex",
            "u",
            &[fake_stdout(CODEX_FAIL), ("FAKE_EXIT", "1".into())],
            &[],
        );
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let path = env.marker_path("u");
        let mut held = Vec::new();
        let outs = thread::scope(|s| {
            let runs: Vec<_> = ["u", "v", "w"]
                .map(|unit| {
                    let mut c = env.command("codex", unit, "do the thing", "json", &[]);
                    c.env("FAKE_STDOUT", fixture(CODEX))
                        .env("FAKE_DELAY", "0.002");
                    s.spawn(move || run_bounded(c, Duration::from_secs(60)))
                })
                .into_iter()
                .collect();
            while held.len() < 20 {
                let running = runs.iter().any(|r| !r.is_finished());
                held.push((File::open(&path).unwrap(), running));
                live_opens += usize::from(running);
                thread::sleep(Duration::from_millis(2));
            }
            runs.into_iter()
                .map(|r| r.join().unwrap())
                .collect::<Vec<_>>()
        });
        for out in &outs {
            assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        }
        for (f, running) in held {
            tally.read("u", f, running);
        }
    }
    eprintln!(
        "{TRIALS} trials, {live_opens} descriptors opened while vf ran: {}",
        tally.summary()
    );
    tally.assert_isolated();
    assert!(live_opens >= TRIALS * 5, "{}", tally.summary());
}
