//! The dispatch runtime: spawn one engine CLI in its own process group,
//! stream its stdout through the projector line by line as it arrives, keep
//! the raw bytes in per-unit logs, keep the marker durable, and never hang.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::engine::{Attachment, EngineId, Invocation, Request};
use crate::error::{Result, VfError, exit};
use crate::frames::{ConversationEvent, Level, Projector, RawRange};
use crate::fsutil::now_rfc3339;
use crate::marker::{Marker, MarkerStore, Owner, UnitState};
use crate::procinfo::{Liveness, ProcIdentity};
use crate::summary::{self, Summary};
use crate::version::Version;
use crate::{binary, state};

/// Lines longer than this are not projected (the raw log still keeps them).
pub const LINE_CAP: usize = 8 * 1024 * 1024;
/// How long `--version` may take before it is reported unreadable.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// Everything one dispatch needs (already validated by the caller).
#[derive(Debug, Clone)]
pub struct UnitSpec {
    pub engine: EngineId,
    pub unit: String,
    /// Never persisted by vf: it may carry private file ranges.
    pub prompt: String,
    /// Exact native session to resume.
    pub session: Option<String>,
    pub cwd: PathBuf,
    pub state_dir: PathBuf,
    pub skip_permissions: bool,
    pub engine_bin: Option<PathBuf>,
    pub attachments: Vec<Attachment>,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    /// Between the forwarded signal and SIGKILL.
    pub kill_grace: Duration,
    /// Engine-specific warnings gathered before the run (e.g. dropped options).
    pub warnings: Vec<String>,
    /// Why this engine (e.g. the `--engine auto` rule that chose it).
    pub engine_reason: Option<String>,
}

impl UnitSpec {
    pub fn default_kill_grace() -> Duration {
        std::env::var("VF_KILL_GRACE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(5))
    }
}

/// Receives events live, as each line is projected.
pub trait EventSink {
    fn event(&mut self, event: &ConversationEvent);
    /// vf's own notices (not engine output).
    fn warning(&mut self, message: &str);
    /// Called a few times a second while the engine runs, when `wants_ticks`.
    fn tick(&mut self, _elapsed: Duration) {}
    fn wants_ticks(&self) -> bool {
        false
    }
}

/// The final result object (`--output json`, and the last line of `jsonl`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchResult {
    pub unit: String,
    pub engine: EngineId,
    pub engine_version: Option<String>,
    pub state: UnitState,
    /// The CLI's exit status (`null` when it was killed or never ran).
    pub exit_code: Option<i32>,
    pub session_id: Option<String>,
    pub summary: Option<Value>,
    pub summary_error: Option<String>,
    pub answer: Option<String>,
    pub unknown_frames: u64,
    pub warnings: Vec<String>,
    pub engine_reason: Option<String>,
    pub error: Option<String>,
    pub reason: Option<String>,
    pub duration_ms: u64,
    pub attempt: u32,
    pub marker: PathBuf,
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
    /// vf's own exit code for this result.
    #[serde(skip)]
    pub vf_exit: i32,
}

enum Msg {
    Line(Vec<u8>),
    Oversized(u64),
    StdoutEof,
    StderrActivity,
    /// stderr closed; carries its last bytes (for a failure's one-line reason).
    StderrEof(Vec<u8>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Stalled,
    TimedOut,
    Signal(i32),
}

/// Runs one unit to completion. Errors are returned only when the unit could
/// not be started (usage, missing engine, state); an engine failure is an
/// `Ok` result with `state: failed`.
pub async fn run(spec: UnitSpec, sink: &mut dyn EventSink) -> Result<DispatchResult> {
    let started = Instant::now();
    let store = MarkerStore::new(&spec.state_dir);
    let mut marker = prepare_marker(&store, &spec)?;
    let mut warnings = spec.warnings.clone();

    macro_rules! fail_before_spawn {
        ($reason:expr, $err:expr) => {{
            let err: VfError = $err;
            marker.state = UnitState::Failed;
            marker.reason = Some($reason.to_string());
            marker.error = Some(err.to_string());
            marker.finished_at = Some(now_rfc3339());
            marker.owner = None;
            store.save(&mut marker)?;
            return Err(err);
        }};
    }

    let program = match binary::resolve_binary(spec.engine, spec.engine_bin.as_deref()) {
        Ok(p) => p,
        Err(e) => fail_before_spawn!(
            "missing",
            VfError::not_ready(format!("{}: {e}", spec.engine))
        ),
    };
    let version = {
        let p = program.clone();
        let state_dir = spec.state_dir.clone();
        match tokio::task::spawn_blocking(move || {
            binary::read_version_cached(&p, &state_dir, VERSION_TIMEOUT)
        })
        .await
        {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                warnings.push(format!(
                    "{}: {e}; proceeding without a verified version",
                    spec.engine
                ));
                None
            }
            Err(e) => {
                warnings.push(format!(
                    "{}: reading the version failed ({e}); proceeding",
                    spec.engine
                ));
                None
            }
        }
    };
    marker.engine_version = version.as_ref().map(Version::to_string);

    let engine = spec.engine.engine();
    let inv = match engine.build(&Request {
        prompt: &spec.prompt,
        session: spec.session.as_deref(),
        skip_permissions: spec.skip_permissions,
        cwd: &spec.cwd,
        in_git_repo: state::in_git_work_tree(&spec.cwd),
        attachments: &spec.attachments,
        unit: &spec.unit,
        state_dir: &spec.state_dir,
        version: version.as_ref(),
        read_only: false,
    }) {
        Ok(inv) => inv,
        Err(e) => fail_before_spawn!("invalid", e),
    };
    warnings.extend(inv.warnings.iter().cloned());
    for w in &warnings {
        sink.warning(w);
    }

    let logs = store.logs_dir(&spec.unit);
    let attempt = marker.attempts;
    let stdout_log = logs.join(format!("attempt-{attempt}.stdout.log"));
    let stderr_log = logs.join(format!("attempt-{attempt}.stderr.log"));
    if let Err(e) = std::fs::create_dir_all(&logs) {
        fail_before_spawn!(
            "state",
            VfError::state(format!("cannot create {}: {e}", logs.display()))
        );
    }
    marker.stdout_log = Some(stdout_log.clone());
    marker.stderr_log = Some(stderr_log.clone());

    if let (Some(path), Some(contents)) = (&inv.prompt_file, &inv.prompt_file_contents)
        && let Err(e) = crate::fsutil::write_atomic(path, contents.as_bytes())
    {
        fail_before_spawn!(
            "state",
            VfError::state(format!("cannot write prompt file {}: {e}", path.display()))
        );
    }

    let mut child = match spawn(&program, &inv) {
        Ok(c) => c,
        Err(e) => {
            remove_prompt_file(&inv);
            fail_before_spawn!(
                "spawn",
                VfError::not_ready(format!(
                    "{}: cannot start {}: {e}",
                    spec.engine,
                    program.display()
                ))
            )
        }
    };
    let pid = child.id().unwrap_or(0);
    let pgid = pid as i32;
    // The owned-process record exists before anything else happens with the child.
    let record_path = crate::owned::record_path(&spec.state_dir, &spec.unit, marker.attempts);
    let mut record =
        crate::owned::ProcRecord::new(&spec.unit, marker.attempts, spec.engine.as_str(), pid);
    if let Err(e) = record.save(&record_path) {
        kill_group(pgid, Signal::SIGKILL);
        let _ = child.wait().await;
        remove_prompt_file(&inv);
        fail_before_spawn!(
            "state",
            VfError::state(format!(
                "cannot write process record {}: {e}",
                record_path.display()
            ))
        );
    }
    marker.state = UnitState::Running;
    marker.started_at = Some(now_rfc3339());
    marker.owner = Some(Owner {
        supervisor: ProcIdentity::current(),
        cli: Some(ProcIdentity::of(pid)),
        pgid: Some(pgid),
    });
    marker.exit_code = None;
    marker.error = None;
    marker.reason = None;
    if let Err(e) = store.save(&mut marker) {
        // Without a durable marker the run could not be resumed: do not run it.
        kill_group(pgid, Signal::SIGKILL);
        let _ = child.wait().await;
        remove_prompt_file(&inv);
        return Err(e);
    }

    // stdin: the prompt, then EOF. Never leave a pipe open for the child to wait on.
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = inv.stdin.clone().unwrap_or_default().into_bytes();
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }

    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let out_task = tokio::spawn(read_stdout(
        child.stdout.take().expect("piped"),
        stdout_log.clone(),
        tx.clone(),
    ));
    let err_task = tokio::spawn(read_stderr(
        child.stderr.take().expect("piped"),
        stderr_log.clone(),
        tx,
    ));

    let transport = engine.output_transport(version.as_ref());
    let mut projector = Projector::new(spec.engine, version.as_ref(), transport);
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;

    let deadline = spec.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut last_activity = tokio::time::Instant::now();
    let mut stop: Option<Stop> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut exit_status: Option<std::process::ExitStatus> = None;
    let mut exited_at: Option<tokio::time::Instant> = None;
    let (mut stdout_open, mut stderr_open) = (true, true);
    let mut session_mismatch: Option<String> = None;
    let mut lines_seen: u64 = 0;
    let mut channel_open = true;
    let mut stderr_tail: Vec<u8> = Vec::new();
    let wants_ticks = sink.wants_ticks();
    let mut ticker = tokio::time::interval(Duration::from_millis(125));

    loop {
        if exit_status.is_some() && !stdout_open && !stderr_open {
            break;
        }
        let stall_at = spec.stall_timeout.map(|s| last_activity + s);
        // After the CLI exits, give its streams a moment to drain, then end the
        // group (an orphaned grandchild may hold the pipes open) and stop waiting.
        let drain_until = exited_at.map(|t| t + Duration::from_secs(3));
        tokio::select! {
            biased;
            msg = rx.recv(), if channel_open => {
                // Both readers gone: stop polling the channel, or `biased` would starve the other arms.
                let Some(msg) = msg else { channel_open = false; stdout_open = false; stderr_open = false; continue };
                last_activity = tokio::time::Instant::now();
                let events = match msg {
                    Msg::Line(raw) => { lines_seen += 1; projector.push_line(&raw) }
                    Msg::Oversized(n) => { lines_seen += 1; projector.push_oversized(n) }
                    Msg::StdoutEof => { stdout_open = false; Vec::new() }
                    Msg::StderrActivity => Vec::new(),
                    Msg::StderrEof(tail) => { stderr_open = false; stderr_tail = tail; Vec::new() }
                };
                for ev in &events {
                    sink.event(ev);
                }
                let tracker = projector.tracker();
                if let Some(id) = tracker.session_id()
                    && marker.engine_session_id.as_deref() != Some(id)
                {
                    match &spec.session {
                        // A resume that reports another id did not find the native session.
                        Some(requested) if requested != id => {
                            session_mismatch.get_or_insert_with(|| id.to_string());
                        }
                        // Stored the moment the engine says the session exists natively.
                        _ if tracker.resumable() => {
                            marker.engine_session_id = Some(id.to_string());
                            if let Err(e) = store.save(&mut marker) {
                                // The run goes on; the final write reports the failure.
                                sink.warning(&e.to_string());
                            }
                        }
                        _ => {}
                    }
                }
            }
            status = child.wait(), if exit_status.is_none() => {
                exit_status = status.ok();
                if exit_status.is_none() {
                    // wait() itself failed: treat as gone, and make sure it is.
                    kill_group(pgid, Signal::SIGKILL);
                }
                exited_at = Some(tokio::time::Instant::now());
            }
            _ = sigint.recv(), if exit_status.is_none() => {
                if stop.is_some() { kill_group(pgid, Signal::SIGKILL); }
                stop.get_or_insert(Stop::Signal(exit::SIGINT));
                kill_group(pgid, Signal::SIGINT);
                kill_at.get_or_insert(tokio::time::Instant::now() + spec.kill_grace);
            }
            _ = sigterm.recv(), if exit_status.is_none() => {
                if stop.is_some() { kill_group(pgid, Signal::SIGKILL); }
                stop.get_or_insert(Stop::Signal(exit::SIGTERM));
                kill_group(pgid, Signal::SIGTERM);
                kill_at.get_or_insert(tokio::time::Instant::now() + spec.kill_grace);
            }
            _ = sleep_until_opt(stall_at), if exit_status.is_none() && stop.is_none() => {
                stop = Some(Stop::Stalled);
                let secs = spec.stall_timeout.unwrap_or_default().as_secs_f64();
                sink.event(&status_row(Level::Error, "stalled", format!("no output for {secs}s; ending the engine"), lines_seen));
                kill_group(pgid, Signal::SIGTERM);
                kill_at = Some(tokio::time::Instant::now() + spec.kill_grace);
            }
            _ = sleep_until_opt(deadline), if exit_status.is_none() && stop.is_none() => {
                stop = Some(Stop::TimedOut);
                let secs = spec.timeout.unwrap_or_default().as_secs_f64();
                sink.event(&status_row(Level::Error, "timed out", format!("wall limit of {secs}s reached; ending the engine"), lines_seen));
                kill_group(pgid, Signal::SIGTERM);
                kill_at = Some(tokio::time::Instant::now() + spec.kill_grace);
            }
            _ = sleep_until_opt(kill_at), if exit_status.is_none() => {
                kill_group(pgid, Signal::SIGKILL);
                kill_at = None;
            }
            _ = ticker.tick(), if wants_ticks && exit_status.is_none() => {
                sink.tick(started.elapsed());
            }
            _ = sleep_until_opt(drain_until) => {
                kill_group(pgid, Signal::SIGKILL);
                // Give the readers a last moment after the kill, then stop waiting.
                let _ = tokio::time::timeout(Duration::from_secs(2), async {
                    while let Some(m) = rx.recv().await {
                        if let Msg::Line(raw) = m { for ev in projector.push_line(&raw) { sink.event(&ev); } }
                    }
                }).await;
                out_task.abort();
                err_task.abort();
                stdout_open = false;
                stderr_open = false;
            }
        }
    }
    // Nothing of the group survives vf.
    kill_group(pgid, Signal::SIGKILL);
    // Exited and drained (or the group was just killed after the drain grace).
    if let Err(e) = crate::owned::release(&record_path) {
        sink.warning(&format!(
            "cannot release process record {}: {e}",
            record_path.display()
        ));
    }
    remove_prompt_file(&inv);
    for ev in projector.finish() {
        sink.event(&ev);
    }

    let exit_code = exit_status.and_then(|s| s.code());
    let outcome = projector.tracker().finish(exit_code);
    let (summary_value, summary_error) = match outcome.answer.as_deref().map(summary::extract) {
        Some(Summary::Valid { value }) => (Some(value), None),
        Some(Summary::Invalid { error }) => (None, Some(error)),
        _ => (None, None),
    };
    let (state, reason, error, vf_exit) = match (stop, &session_mismatch) {
        (Some(Stop::Signal(code)), _) => (
            UnitState::Failed,
            "interrupted",
            Some("interrupted by a signal".to_string()),
            code,
        ),
        (Some(Stop::Stalled), _) => (
            UnitState::Failed,
            "stalled",
            Some(format!(
                "stalled: no output for {}s",
                spec.stall_timeout.unwrap_or_default().as_secs_f64()
            )),
            exit::TIMEOUT,
        ),
        (Some(Stop::TimedOut), _) => (
            UnitState::Failed,
            "timeout",
            Some(format!(
                "timed out after {}s",
                spec.timeout.unwrap_or_default().as_secs_f64()
            )),
            exit::TIMEOUT,
        ),
        (None, Some(got)) => (
            UnitState::Failed,
            "sessionMismatch",
            Some(format!(
                "resumed run reported session {got}, not the requested {}: the native session was not found",
                spec.session.as_deref().unwrap_or("?")
            )),
            exit::ENGINE_FAILED,
        ),
        (None, None) if outcome.failed => (
            UnitState::Failed,
            "engine",
            outcome
                .error
                .clone()
                .map(|e| with_stderr_reason(e, spec.engine, exit_code, &stderr_tail)),
            exit::ENGINE_FAILED,
        ),
        (None, None) => (UnitState::Done, "", None, exit::OK),
    };

    marker.state = state;
    marker.exit_code = exit_code;
    marker.summary = summary_value.clone();
    marker.summary_error = summary_error.clone();
    marker.error = error.clone();
    marker.reason = (!reason.is_empty()).then(|| reason.to_string());
    marker.finished_at = Some(now_rfc3339());
    store.save(&mut marker)?;

    Ok(DispatchResult {
        unit: spec.unit.clone(),
        engine: spec.engine,
        engine_version: marker.engine_version.clone(),
        state,
        exit_code,
        // What the engine reported (shown even when it cannot be resumed), except
        // that a resume never adopts another session's id.
        session_id: match session_mismatch {
            Some(_) => marker.engine_session_id.clone(),
            None => outcome
                .session_id
                .clone()
                .or(marker.engine_session_id.clone()),
        },
        summary: summary_value,
        summary_error,
        answer: outcome.answer,
        unknown_frames: projector.unknown_frames(),
        engine_reason: spec.engine_reason.clone(),
        warnings,
        error,
        reason: marker.reason.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
        attempt,
        marker: store.path(&spec.unit),
        stdout_log: Some(stdout_log),
        stderr_log: Some(stderr_log),
        vf_exit,
    })
}

/// Loads (or creates) the unit's marker and claims it for a new attempt.
fn prepare_marker(store: &MarkerStore, spec: &UnitSpec) -> Result<Marker> {
    let existing = store.load(&spec.unit)?;
    let mut marker = match existing {
        Some(m) => {
            if m.state == UnitState::Done && spec.session.is_none() {
                return Err(VfError::usage(format!(
                    "unit {:?} is already done; pick another --unit name (its marker: {})",
                    spec.unit,
                    store.path(&spec.unit).display()
                )));
            }
            if m.state == UnitState::Running {
                match m.owner_alive() {
                    Liveness::Dead => {}
                    Liveness::Alive => {
                        return Err(VfError::usage(format!(
                            "unit {:?} is running under vf pid {}; not touching it",
                            spec.unit,
                            m.owner.as_ref().map(|o| o.supervisor.pid).unwrap_or(0)
                        )));
                    }
                    Liveness::Unknown => {
                        return Err(VfError::usage(format!(
                            "unit {:?} is marked running and its owner cannot be proven dead; not touching it",
                            spec.unit
                        )));
                    }
                }
            }
            let mut m = m;
            if m.engine != spec.engine {
                // Another engine's session id means nothing here.
                m.engine_session_id = None;
                m.engine = spec.engine;
            }
            m.cwd = spec.cwd.clone();
            m
        }
        None => Marker::new(&spec.unit, spec.engine, &spec.cwd),
    };
    marker.attempts += 1;
    marker.state = UnitState::Pending;
    marker.finished_at = None;
    marker.summary = None;
    marker.summary_error = None;
    if let Some(id) = &spec.session {
        marker.engine_session_id = Some(id.clone());
    }
    // Not written yet: the first durable write is `running` (or the failure
    // that prevented it). A crash before that leaves the previous marker, which
    // resumes the same way; skipping the write keeps fsyncs off the start path.
    Ok(marker)
}

fn spawn(program: &Path, inv: &Invocation) -> std::io::Result<tokio::process::Child> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&inv.args)
        .current_dir(&inv.cwd)
        .stdin(if inv.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so signals and cleanup reach every descendant.
        .process_group(0)
        .kill_on_drop(false);
    cmd.spawn()
}

fn kill_group(pgid: i32, sig: Signal) {
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), sig);
    }
}

fn remove_prompt_file(inv: &Invocation) {
    if let Some(p) = &inv.prompt_file {
        let _ = std::fs::remove_file(p);
    }
}

async fn sleep_until_opt(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn status_row(level: Level, label: &str, detail: String, line: u64) -> ConversationEvent {
    ConversationEvent::Status {
        level,
        label: label.to_string(),
        detail: Some(detail),
        session_id: None,
        usage: None,
        answer: None,
        raw_range: RawRange {
            start: line.max(1),
            end: line.max(1),
        },
    }
}

/// Copies stdout to its log as it arrives and splits it into capped lines.
async fn read_stdout(mut r: tokio::process::ChildStdout, log: PathBuf, tx: mpsc::Sender<Msg>) {
    let mut file = tokio::fs::File::create(&log).await.ok();
    let mut buf = vec![0u8; 64 * 1024];
    let mut cur: Vec<u8> = Vec::new();
    let mut overflow: Option<u64> = None;
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(chunk).await;
        }
        let mut rest = chunk;
        while !rest.is_empty() {
            let (piece, newline) = match memchr(b'\n', rest) {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = if newline {
                &rest[piece.len() + 1..]
            } else {
                &[]
            };
            match overflow.as_mut() {
                Some(count) => *count += piece.len() as u64,
                // Checked before growing: the buffer never passes the cap.
                None if cur.len() + piece.len() > LINE_CAP => {
                    overflow = Some((cur.len() + piece.len()) as u64);
                    cur = Vec::new();
                }
                None => cur.extend_from_slice(piece),
            }
            if newline {
                let msg = match overflow.take() {
                    Some(count) => Msg::Oversized(count),
                    None => Msg::Line(std::mem::take(&mut cur)),
                };
                if tx.send(msg).await.is_err() {
                    return;
                }
            }
        }
    }
    // A last line without its newline is still a line.
    if let Some(count) = overflow {
        let _ = tx.send(Msg::Oversized(count)).await;
    } else if !cur.is_empty() {
        let _ = tx.send(Msg::Line(cur)).await;
    }
    if let Some(f) = file.as_mut() {
        let _ = f.flush().await;
    }
    let _ = tx.send(Msg::StdoutEof).await;
}

/// Drains stderr into its log concurrently, so a chatty stderr never blocks stdout.
async fn read_stderr(mut r: tokio::process::ChildStderr, log: PathBuf, tx: mpsc::Sender<Msg>) {
    let mut file = tokio::fs::File::create(&log).await.ok();
    let mut buf = vec![0u8; 64 * 1024];
    let mut tail: Vec<u8> = Vec::new();
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Some(f) = file.as_mut() {
                    let _ = f.write_all(&buf[..n]).await;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
                // Activity only matters for stall detection; never block on it.
                let _ = tx.try_send(Msg::StderrActivity);
            }
        }
    }
    if let Some(f) = file.as_mut() {
        let _ = f.flush().await;
    }
    let _ = tx.send(Msg::StderrEof(tail)).await;
}

/// How much of stderr's end is kept for a failure's reason.
const STDERR_TAIL: usize = 4096;

/// A bare "exited with status N" says nothing: add the CLI's own last stderr line
/// (e.g. claude refusing `--dangerously-skip-permissions` as root).
fn with_stderr_reason(error: String, engine: EngineId, code: Option<i32>, tail: &[u8]) -> String {
    if error != crate::engine::exit_text(engine, code) {
        return error;
    }
    let text = crate::doctor::strip_ansi(&String::from_utf8_lossy(tail));
    match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
        Some(line) => {
            if engine == EngineId::Claude
                && let Some(hint) = crate::engine::claude::explain_stderr(line)
            {
                return format!("{error}: {hint}");
            }
            let line: String = line.chars().take(300).collect();
            format!("{error}: {line}")
        }
        None => error,
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}
