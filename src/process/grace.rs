//! Ending a group: the polite signal, one grace, then SIGKILL (on Windows
//! Ctrl-Break, then the job's termination). The one place the rule is
//! written; see the signal rules in [`crate::process`].

use std::time::{Duration, Instant};

use tokio::time::Instant as TokioInstant;

use crate::sys::{self, Container, Sig, Signals};

/// How long a recorded group may take to go after its SIGKILL.
const AFTER_KILL: Duration = Duration::from_secs(2);

/// How often a recorded group's members are looked up while it ends.
const POLL: Duration = Duration::from_millis(25);

/// Ends a live child's group: `sig` to the group, then up to `grace` for
/// the leader to exit (a further signal to vf cuts it short), then SIGKILL
/// to the whole group, whatever is left of it.
pub async fn end_group(
    child: &mut tokio::process::Child,
    group: &Container,
    sig: Sig,
    grace: Duration,
    signals: &mut Signals,
) {
    group.signal(sig);
    tokio::select! {
        _ = child.wait() => {}
        _ = tokio::time::sleep(grace) => {}
        _ = signals.recv() => {}
    }
    group.kill();
}

/// The grace of a group signalled by a supervisor that waits for many
/// things at once: when its SIGKILL is due. The supervisor polls
/// [`expiry`] of [`KillTimer::due`] and calls [`KillTimer::fire`].
#[derive(Debug, Default)]
pub struct KillTimer {
    at: Option<TokioInstant>,
}

impl KillTimer {
    /// `sig` to the group; its SIGKILL is due one grace from now, unless an
    /// earlier signal made it due already.
    pub fn signal(&mut self, group: &Container, sig: Sig, grace: Duration) {
        group.signal(sig);
        self.start(grace);
    }

    /// The SIGKILL is due one grace from now, unless it is due already (a
    /// stop that reached the child by other means, e.g. an ACP cancel).
    pub fn start(&mut self, grace: Duration) {
        self.at.get_or_insert(TokioInstant::now() + grace);
    }

    /// vf's own stop: SIGTERM to the group, its SIGKILL due one full grace
    /// from now (whatever was due before).
    pub fn stop(&mut self, group: &Container, grace: Duration) {
        group.signal(Sig::Terminate);
        self.at = Some(TokioInstant::now() + grace);
    }

    /// When the SIGKILL is due; `None`: no group was signalled.
    pub fn due(&self) -> Option<TokioInstant> {
        self.at
    }

    /// The grace ran out: SIGKILL to the group.
    pub fn fire(&mut self, group: &Container) {
        group.kill();
        self.at = None;
    }
}

/// Sleeps until `at`; never, for `None`.
pub async fn expiry(at: Option<TokioInstant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Ends a group known only by its recorded id (an orphan `vf doctor --fix`
/// or a take-over proved): SIGTERM, up to `grace` for every member to go,
/// then SIGKILL and a short wait. How it ended, in words, or why not.
pub fn end_recorded_group(pgid: i32, grace: Duration) -> Result<String, String> {
    match sys::signal_recorded(pgid, Sig::Terminate) {
        Ok(true) => {}
        Ok(false) => return Ok("the group was already gone".into()),
        Err(e) => return Err(format!("cannot signal group {pgid}: {e}")),
    }
    if wait_group_gone(pgid, grace) {
        return Ok(format!("group {pgid} ended by SIGTERM"));
    }
    let _ = sys::signal_recorded(pgid, Sig::Kill);
    if wait_group_gone(pgid, AFTER_KILL) {
        Ok(format!("group {pgid} ended by SIGKILL"))
    } else {
        Err(format!("group {pgid} still has members after SIGKILL"))
    }
}

/// Whether the group has no live member within `limit` (its members are
/// no process vf can wait for: they are looked up).
fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        if sys::group_members(pgid).is_empty() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(POLL);
    }
}
