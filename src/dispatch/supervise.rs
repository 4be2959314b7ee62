//! Phase 3, supervise: the engine's lines through the projector as they
//! arrive, the session id made durable before any event shows it, signals
//! forwarded, stall/timeout enforced, and the grace rules of [`crate::process`].

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tokio::time::Instant as TokioInstant;

use super::acp_session::{AcpRun, SessionMsg};
use super::launch::Launched;
use super::pump::{Msg, Piece};
use super::{EventSink, UnitSpec};
use crate::process::KillTimer;
use crate::process::grace::expiry;
use crate::process::{Group, Signals};
use crate::unit::UnitLife;

use crate::engine::{ConversationEvent, Level, Projector, RawRange};
use crate::sys::Sig;

/// After the group is SIGKILLed, how long vf still reads what is left in the
/// pipes (a process that left the group may hold them open).
const READ_AFTER_KILL: Duration = Duration::from_secs(2);

/// Why vf ended the engine itself.
pub(super) enum Stop {
    Stalled,
    TimedOut,
    /// The plan's hard budget was reached (the words say by what).
    Budget(String),
    Signal(Sig),
    LogFailed(String),
}

/// What the run left for settling.
pub(super) struct Ended {
    pub launched: Launched,
    pub projector: Projector,
    pub stop: Option<Stop>,
    pub exit_status: Option<ExitStatus>,
    pub session_mismatch: Option<String>,
    pub stderr_tail: Vec<u8>,
}

/// The loop's state, apart from the futures it polls.
struct Supervisor<'a> {
    spec: &'a UnitSpec,
    sink: &'a mut dyn EventSink,
    projector: Projector,
    stop: Option<Stop>,
    kill: KillTimer,
    exit_status: Option<ExitStatus>,
    exited_at: Option<TokioInstant>,
    /// Set once the group was SIGKILLed after the drain grace.
    read_until: Option<TokioInstant>,
    stdout_open: bool,
    stderr_open: bool,
    session_mismatch: Option<String>,
    lines_seen: u64,
    stderr_tail: Vec<u8>,
    last_activity: TokioInstant,
    /// The unit's life: its session id, the events held until it is durable.
    life: &'a mut UnitLife,
    /// The governor's turn: the quota frames the engine prints go to it.
    quota: Option<&'a super::governor::Turn>,
}

pub(super) async fn supervise(
    spec: &UnitSpec,
    mut l: Launched,
    life: &mut UnitLife,
    (sink, quota): (&mut dyn EventSink, &super::governor::Turn),
    started: Instant,
) -> Ended {
    let mut signals = l.signals.take();
    let mut s = Supervisor::new(spec, sink, life, &l);
    s.quota = Some(quota);
    if signals.is_none() {
        s.sink
            .warning("cannot listen for signals; a signal to vf will not reach the engine");
    }
    let deadline = spec.timeout.map(|t| TokioInstant::now() + t);
    let wants_ticks = s.sink.wants_ticks();
    let mut ticker = tokio::time::interval(Duration::from_millis(125));
    let group = l.group.clone();
    let mut budget_stop = spec.budget_stop.as_ref().map(|w| w.stop.clone());
    let mut cancel = spec.cancel.clone();
    // An ACP session's end is waited for too: its task sends `Done` before
    // it closes the stdout side, but the biased select may see the streams
    // close and the agent exit first (found under load: a done session
    // judged "did not end"). Its channel always ends: `Done`, or closed.
    let session_open = |l: &Launched| l.acp.as_ref().is_some_and(|a| a.done.is_none());
    while s.exit_status.is_none() || s.stdout_open || s.stderr_open || session_open(&l) {
        let stall_at = spec.stall_timeout.map(|t| s.last_activity + t);
        let drain_until = s
            .exited_at
            .filter(|_| s.read_until.is_none())
            .map(|t| t + spec.kill_grace);
        let running = s.exit_status.is_none();
        tokio::select! {
            biased;
            msg = l.rx.recv(), if s.stdout_open || s.stderr_open => s.on_msg(msg, &mut l).await,
            status = l.child.wait(), if running => s.on_exit(status.ok(), &group),
            m = recv_session(&mut l.acp) => s.on_session(m, &mut l, &group),
            sig = recv_signal(&mut signals) => s.on_signal(sig, &group, l.acp.as_ref()),
            _ = cancelled(&mut cancel), if s.stop.is_none() => s.on_signal(Sig::Terminate, &group, l.acp.as_ref()),
            _ = sleep_until_opt(stall_at), if running && s.stop.is_none() => {
                let secs = spec.stall_timeout.unwrap_or_default().as_secs_f64();
                s.end(Stop::Stalled, "stalled", format!("no output for {secs}s; ending the engine"), &group);
            }
            _ = sleep_until_opt(deadline), if running && s.stop.is_none() => {
                let secs = spec.timeout.unwrap_or_default().as_secs_f64();
                s.end(Stop::TimedOut, "timed out", format!("wall limit of {secs}s reached; ending the engine"), &group);
            }
            why = super::budget_watch::reached(&mut budget_stop), if running && s.stop.is_none() => {
                s.end(Stop::Budget(why.clone()), "budget", format!("{why}; ending the engine"), &group);
            }
            _ = expiry(s.kill.due()), if running => s.kill.fire(&group),
            _ = ticker.tick(), if wants_ticks && running => s.sink.tick(started.elapsed()),
            // The leader exited; the rest of its group had its grace to close the streams.
            _ = sleep_until_opt(drain_until) => {
                group.kill();
                s.read_until = Some(TokioInstant::now() + READ_AFTER_KILL);
            }
            _ = sleep_until_opt(s.read_until) => {
                l.pumps.iter().for_each(|t| t.abort());
                s.stdout_open = false;
                s.stderr_open = false;
            }
            _ = sleep_until_opt(s.life.hold_deadline()) => s.life.make_session_durable(s.sink).await,
        }
    }
    Ended {
        launched: l,
        projector: s.projector,
        stop: s.stop,
        exit_status: s.exit_status,
        session_mismatch: s.session_mismatch,
        stderr_tail: s.stderr_tail,
    }
}

impl<'a> Supervisor<'a> {
    fn new(
        spec: &'a UnitSpec,
        sink: &'a mut dyn EventSink,
        life: &'a mut UnitLife,
        l: &Launched,
    ) -> Self {
        let version = l.prepared.version.as_ref();
        let (family, transport) = spec.engine.engine().frames(spec.command.as_ref(), version);
        Supervisor {
            spec,
            sink,
            projector: Projector::for_unit(spec.engine, family, version, transport),
            stop: None,
            kill: KillTimer::default(),
            exit_status: None,
            exited_at: None,
            read_until: None,
            stdout_open: true,
            stderr_open: true,
            session_mismatch: None,
            lines_seen: 0,
            stderr_tail: Vec::new(),
            last_activity: TokioInstant::now(),
            life,
            quota: None,
        }
    }

    async fn on_msg(&mut self, msg: Option<Msg>, l: &mut Launched) {
        self.last_activity = TokioInstant::now();
        match msg {
            // Both readers gone.
            None => {
                self.stdout_open = false;
                self.stderr_open = false;
            }
            Some(Msg::Lines(pieces)) => self.on_lines(pieces).await,
            Some(Msg::StdoutEof) => self.stdout_open = false,
            Some(Msg::StderrActivity) => {}
            Some(Msg::StderrEof(tail)) => {
                self.stderr_open = false;
                self.stderr_tail = tail;
            }
            Some(Msg::LogFailed(e)) => {
                if self.stop.is_none() {
                    self.end(Stop::LogFailed(e.clone()), "raw log failed", e, &l.group);
                }
            }
        }
    }

    async fn on_lines(&mut self, pieces: Vec<Piece>) {
        for piece in pieces {
            self.lines_seen += 1;
            let events = match piece {
                Piece::Text(raw) => self.projector.push_line(&raw),
                Piece::Oversized(n) => self.projector.push_oversized(n),
            };
            // Held until durable: no event shows an id before that.
            self.record_session();
            for ev in &events {
                self.life.emit(self.sink, ev);
            }
        }
        if let (Some(turn), Some(signal)) = (self.quota, self.projector.take_quota()) {
            turn.signal(&signal, self.sink);
        }
        if self.life.hold_overdue() {
            self.life.make_session_durable(self.sink).await;
        }
        let resumed = self.spec.session.is_some();
        super::budget_watch::report(self.spec.budget_stop.as_ref(), resumed, &self.projector);
    }

    /// Tells the unit's life of the session the moment the engine says it
    /// exists natively (its events are held until the marker is durable).
    fn record_session(&mut self) {
        let tracker = self.projector.tracker();
        let Some(id) = tracker.session_id() else {
            return;
        };
        if self.life.marker().engine_session_id.as_deref() == Some(id) {
            return;
        }
        match &self.spec.session {
            // A resume that reports another id did not find the native session.
            Some(requested) if requested != id => {
                self.session_mismatch.get_or_insert_with(|| id.to_string());
            }
            _ if tracker.resumable() => self.life.session_known(id),
            _ => {}
        }
    }

    fn on_exit(&mut self, status: Option<ExitStatus>, group: &Group) {
        self.exit_status = status;
        if status.is_none() {
            // wait() itself failed: treat as gone, and make sure it is.
            group.kill();
        }
        self.exited_at = Some(TokioInstant::now());
    }

    /// What an ACP session says: events (its id already durable), its end.
    /// Once it has ended the agent has nothing more to do: its group is
    /// ended, with the usual grace.
    fn on_session(&mut self, m: Option<SessionMsg>, l: &mut Launched, group: &Group) {
        self.last_activity = TokioInstant::now();
        let Some(acp) = l.acp.as_mut() else { return };
        match m {
            Some(SessionMsg::Event(ev)) => {
                self.lines_seen = self.lines_seen.max(ev.raw_range().end);
                if matches!(ev, ConversationEvent::UnknownFrame { .. }) {
                    acp.unknown += 1;
                }
                self.life.emit(self.sink, &ev);
            }
            Some(SessionMsg::Session(id)) => self.life.session_durable(id),
            Some(SessionMsg::Heard) => {}
            Some(SessionMsg::AgentVersion(v)) => acp.agent_version = Some(v),
            Some(SessionMsg::Done(ended)) => {
                acp.done = Some(*ended);
                if self.exit_status.is_none() {
                    self.kill
                        .signal(group, Sig::Terminate, self.spec.kill_grace);
                }
            }
            None => {
                acp.done
                    .get_or_insert(Err(crate::engine::AcpError::Closed(None)));
            }
        }
    }

    /// Forwarded to the group (an ACP session: `session/cancel`, the group
    /// ended after the grace); a second signal means SIGKILL now.
    fn on_signal(&mut self, sig: Sig, group: &Group, acp: Option<&AcpRun>) {
        if self.stop.is_some() {
            group.kill();
        }
        self.stop.get_or_insert(Stop::Signal(sig));
        match acp {
            Some(run) if run.done.is_none() => {
                let _ = run.cancel.send(true);
            }
            _ => group.signal(sig),
        }
        self.kill.start(self.spec.kill_grace);
    }

    /// vf's own stop: SIGTERM to the group, SIGKILL after the grace.
    fn end(&mut self, stop: Stop, label: &str, detail: String, group: &Group) {
        self.stop = Some(stop);
        let row = status_row(Level::Error, label, detail, self.lines_seen);
        self.life.emit(self.sink, &row);
        self.kill.stop(group, self.spec.kill_grace);
    }
}

/// The session's next message; never, without a session or once it ended.
async fn recv_session(acp: &mut Option<AcpRun>) -> Option<SessionMsg> {
    match acp {
        Some(run) if run.done.is_none() => run.rx.recv().await,
        _ => std::future::pending().await,
    }
}

async fn recv_signal(signals: &mut Option<Signals>) -> Sig {
    match signals {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// Once the unit's runner cancels it; never, without a cancel watch or
/// once its sender is gone.
async fn cancelled(cancel: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    if let Some(rx) = cancel
        && rx.wait_for(|c| *c).await.is_ok()
    {
        return;
    }
    *cancel = None;
    std::future::pending().await
}

async fn sleep_until_opt(t: Option<TokioInstant>) {
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
