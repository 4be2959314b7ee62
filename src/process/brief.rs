//! Running a child briefly: contained (`sys::contain`, so it dies with vf),
//! bounded by a timeout, its output captured within limits. [`run`] for a
//! command whose output vf reads (a CLI's `--version`/`--help`, `git`);
//! [`start`] and [`wait`] for a `setup`/`verify` step or a notification
//! hook, whose output goes to its log file and which vf's signals end with
//! the grace ([`crate::process::grace`]).

use std::io::Read;
use std::process::{Command, ExitStatus};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::{self, Container, Sig, Signals};

/// How long readers may lag behind the process's exit (or kill) before
/// their output is taken as is. Bounds the wait when an escaped grandchild
/// keeps a pipe open.
const READER_GRACE: Duration = Duration::from_millis(500);

/// The longest pause between two looks at whether the leader exited.
const POLL_MAX: Duration = Duration::from_millis(10);

/// How much of one stream is kept; the rest is drained and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first bytes, at most this many.
    Head(usize),
    /// The last bytes, at most this many.
    Tail(usize),
}

/// The bounds of a brief run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `None`: as long as it takes (the group still ends with vf).
    pub timeout: Option<Duration>,
    pub stdout: Keep,
    pub stderr: Keep,
}

/// What a brief command printed (within its [`Keep`]s), and how it ended.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when it could not be waited for.
    pub status: Option<ExitStatus>,
}

/// Why a brief command gave no output.
#[derive(Debug)]
pub enum Failed {
    /// It could not be started, contained or adopted.
    Start(StartError),
    /// Still running after the timeout; its whole group was killed.
    TimedOut,
}

/// Which part of starting a contained child failed.
#[derive(Debug)]
pub enum StartError {
    Contain(std::io::Error),
    Spawn(std::io::Error),
    Adopt(std::io::Error),
}

impl StartError {
    /// The system's words, whichever part failed.
    pub fn io(&self) -> &std::io::Error {
        match self {
            StartError::Contain(e) | StartError::Spawn(e) | StartError::Adopt(e) => e,
        }
    }
}

/// Runs `cmd` (stdin as the caller set it, stdout and stderr piped here)
/// contained, and returns what it printed. After `timeout` the whole group
/// is killed and [`Failed::TimedOut`] returned: a hung child is never
/// waited on. What is left of the group once the leader exits is killed
/// too: nothing it started outlives it.
pub fn run(cmd: &mut Command, limits: Limits) -> Result<Output, Failed> {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (mut child, group) = start_sync(cmd).map_err(Failed::Start)?;
    let out = Reader::start(child.stdout.take(), limits.stdout);
    let err = Reader::start(child.stderr.take(), limits.stderr);
    let timed_out = !leader_exits_within(&group, limits.timeout);
    group.kill();
    let status = child.wait().ok();
    // The group is dead now, so the pipes close unless something escaped it.
    let grace = Instant::now() + READER_GRACE;
    let stdout = out.finish(grace);
    let stderr = err.finish(grace);
    if timed_out {
        return Err(Failed::TimedOut);
    }
    Ok(Output {
        stdout,
        stderr,
        status,
    })
}

/// Whether the group's leader exits before `timeout` (`None`: it is waited
/// for). The leader is not reaped here: the group is killed first.
fn leader_exits_within(group: &Container, timeout: Option<Duration>) -> bool {
    let Some(timeout) = timeout else {
        // No deadline (git): block until it exits, seen at once.
        group.wait_leader_exit();
        return true;
    };
    let deadline = Some(Instant::now() + timeout);
    // Short commands (a `git rev-parse`) end in a millisecond or two: look
    // often at first, then every POLL_MAX.
    let mut pause = Duration::from_millis(1);
    loop {
        if group.leader_exited() {
            return true;
        }
        let mut nap = pause;
        if let Some(deadline) = deadline {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            nap = nap.min(deadline - now);
        }
        std::thread::sleep(nap);
        pause = (pause * 2).min(POLL_MAX);
    }
}

/// Spawns the contained `cmd` on this thread; the caller kills the group.
/// A file just written (an install in progress) can be briefly busy
/// (`ETXTBSY`), so that is tried again a few times.
fn start_sync(cmd: &mut Command) -> Result<(std::process::Child, Container), StartError> {
    let made = sys::contain(cmd).map_err(StartError::Contain)?;
    let mut attempt = 0;
    let mut child = loop {
        match cmd.spawn() {
            Ok(c) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && attempt < 5 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20 * attempt));
            }
            Err(e) => return Err(StartError::Spawn(e)),
        }
    };
    match Container::adopt(&child, made) {
        Ok(group) => Ok((child, group)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(StartError::Adopt(e))
        }
    }
}

/// Starts the contained `cmd` (its stdio as the caller set it) for
/// [`wait`]; a child that could not be contained is killed, never left
/// running.
pub fn start(
    cmd: Command,
    confine: Option<crate::process::child::Confine>,
) -> Result<(tokio::process::Child, Container), StartError> {
    let mut cmd = cmd;
    let made = sys::contain(&mut cmd).map_err(StartError::Contain)?;
    crate::process::child::confine_after_contain(&mut cmd, confine);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(false);
    let mut child = cmd.spawn().map_err(StartError::Spawn)?;
    match Container::adopt(&child, made) {
        Ok(group) => Ok((child, group)),
        Err(e) => {
            let _ = child.start_kill();
            Err(StartError::Adopt(e))
        }
    }
}

/// How a [`wait`]ed child ended.
#[derive(Debug)]
pub enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Interrupted(Sig),
}

/// Waits for a [`start`]ed child, or ends its group with the grace
/// ([`grace::end_group`](crate::process::grace::end_group)) at its
/// timeout (SIGTERM) or at a signal to vf (forwarded). `None`: it could
/// not be waited for, or vf's signals not listened to. The caller kills
/// what is left of the group.
pub async fn wait(
    child: &mut tokio::process::Child,
    group: &Container,
    timeout: Option<Duration>,
    grace: Duration,
) -> Option<Ended> {
    let mut signals = Signals::new().ok()?;
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let (end, sig) = tokio::select! {
        status = child.wait() => return Some(Ended::Exited(status.ok()?)),
        _ = deadline => (Ended::TimedOut, Sig::Terminate),
        sig = signals.recv() => (Ended::Interrupted(sig), sig),
    };
    super::grace::end_group(child, group, sig, grace, &mut signals).await;
    Some(end)
}

/// Drains one pipe on its own thread into a shared buffer, so output can be
/// taken even if the pipe never reaches EOF.
struct Reader {
    buf: Arc<Mutex<Vec<u8>>>,
    keep: Keep,
    /// Disconnected once the thread is done.
    done: Option<mpsc::Receiver<()>>,
}

impl Reader {
    fn start(pipe: Option<impl Read + Send + 'static>, keep: Keep) -> Reader {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let Some(mut pipe) = pipe else {
            return Reader {
                buf,
                keep,
                done: None,
            };
        };
        let (tx, rx) = mpsc::channel::<()>();
        let shared = Arc::clone(&buf);
        let spawned = std::thread::Builder::new()
            .name("vf-pipe".into())
            .spawn(move || {
                let _tx = tx;
                let mut chunk = [0u8; 8192];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => {
                            let mut b = shared.lock().unwrap_or_else(|p| p.into_inner());
                            keep_part(&mut b, &chunk[..n], keep);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            });
        Reader {
            buf,
            keep,
            done: spawned.is_ok().then_some(rx),
        }
    }

    /// Waits for EOF until `until` at the latest, then takes what was read.
    fn finish(self, until: Instant) -> Vec<u8> {
        if let Some(rx) = self.done {
            let left = until.saturating_duration_since(Instant::now());
            // Timeout: the thread stays blocked on a pipe some escaped process
            // holds; it ends when that process does. Take what was read so far.
            let _: Result<(), RecvTimeoutError> = rx.recv_timeout(left);
        }
        let mut b = std::mem::take(&mut *self.buf.lock().unwrap_or_else(|p| p.into_inner()));
        if let Keep::Tail(n) = self.keep {
            b.drain(..b.len().saturating_sub(n));
        }
        b
    }
}

/// Adds `chunk` to `buf` within `keep`. A tail is trimmed only once it is
/// twice its size, so each byte is moved a bounded number of times.
fn keep_part(buf: &mut Vec<u8>, chunk: &[u8], keep: Keep) {
    match keep {
        Keep::Head(n) => {
            let room = n.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        Keep::Tail(n) => {
            buf.extend_from_slice(chunk);
            if buf.len() > n.saturating_mul(2) {
                buf.drain(..buf.len() - n);
            }
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};

    /// `body` run by the system shell, stdin closed, stdout piped.
    fn shell(body: &str) -> Command {
        let mut cmd = sys::shell(body);
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        cmd
    }

    /// The first line the child prints: it has done what came before.
    async fn first_line(child: &mut tokio::process::Child) -> String {
        let out = child.stdout.take().expect("stdout piped");
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).await.unwrap();
        line.trim().to_string()
    }

    /// Whether `pid` is gone (or a zombie nobody reaped yet), within a bound.
    fn gone_within(pid: u32, limit: Duration) -> bool {
        let alive = || matches!(sys::process(pid), Ok(Some(s)) if !s.zombie);
        let deadline = Instant::now() + limit;
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        !alive()
    }

    #[tokio::test]
    async fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
        let (mut child, group) =
            start(shell("trap '' TERM; echo ready; exec sleep 300"), None).unwrap();
        assert_eq!(first_line(&mut child).await, "ready");
        let grace = Duration::from_millis(300);
        let mut signals = Signals::new().unwrap();
        let began = Instant::now();
        let ended = tokio::time::timeout(
            Duration::from_secs(15),
            super::super::grace::end_group(&mut child, &group, Sig::Terminate, grace, &mut signals),
        )
        .await;
        assert!(ended.is_ok(), "the group was not ended within 15 s");
        // SIGTERM was ignored: only the SIGKILL after the whole grace ended it.
        assert!(began.elapsed() >= grace, "{:?}", began.elapsed());
        let status = child.wait().await.unwrap();
        assert_eq!(
            (status.success(), status.code()),
            (false, None),
            "{status:?}"
        );
    }

    #[tokio::test]
    async fn a_child_that_exits_on_sigterm_is_not_held_for_the_grace() {
        let (mut child, group) = start(shell("echo ready; exec sleep 300"), None).unwrap();
        assert_eq!(first_line(&mut child).await, "ready");
        let mut signals = Signals::new().unwrap();
        let hour = Duration::from_secs(3600);
        let ended = tokio::time::timeout(
            Duration::from_secs(15),
            super::super::grace::end_group(&mut child, &group, Sig::Terminate, hour, &mut signals),
        )
        .await;
        assert!(
            ended.is_ok(),
            "waited for the grace though the child exited"
        );
    }

    #[tokio::test]
    async fn a_step_that_outlives_its_timeout_is_ended_with_its_whole_group() {
        let script = "sleep 300 & echo $!; exec sleep 300";
        let (mut child, group) = start(shell(script), None).unwrap();
        let grandchild: u32 = first_line(&mut child).await.parse().unwrap();
        let timeout = Some(Duration::from_millis(100));
        let end = wait(&mut child, &group, timeout, Duration::from_millis(100)).await;
        assert!(matches!(end, Some(Ended::TimedOut)), "{end:?}");
        assert!(
            gone_within(grandchild, Duration::from_secs(15)),
            "{grandchild} survived"
        );
    }

    #[test]
    fn a_brief_child_that_outlives_its_timeout_is_ended_with_its_whole_group() {
        // The grandchild's pid goes to stdout before the leader hangs; the
        // timeout gives up on the leader, the group's kill takes both.
        let mut cmd = shell("sleep 300 & echo $!; exec sleep 300");
        let limits = Limits {
            timeout: Some(Duration::from_millis(300)),
            stdout: Keep::Head(100),
            stderr: Keep::Head(100),
        };
        let (mut child, group) = start_sync(&mut cmd).unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        assert!(!leader_exits_within(&group, limits.timeout));
        group.kill();
        let _ = child.wait();
        assert!(
            gone_within(grandchild, Duration::from_secs(15)),
            "{grandchild} survived"
        );
        // And through `run`, the whole path: the timeout is the answer.
        let r = run(&mut shell("exec sleep 300"), limits);
        assert!(matches!(r, Err(Failed::TimedOut)), "{r:?}");
    }

    #[test]
    fn without_a_timeout_the_leaders_end_is_awaited_and_its_group_ended() {
        // No timeout (git's case): the leader's exit is waited for, not
        // polled; a grandchild left in its group holding stdout is killed
        // with the group, so the run returns instead of waiting on the pipe.
        let limits = Limits {
            timeout: None,
            stdout: Keep::Head(100),
            stderr: Keep::Tail(100),
        };
        let mut cmd = shell("sleep 300 & echo $!; echo err >&2; exit 3");
        let started = Instant::now();
        let out = run(&mut cmd, limits).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "it waited on the pipe"
        );
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
        assert_eq!(out.stderr, b"err\n");
        let grandchild: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(
            gone_within(grandchild, Duration::from_secs(15)),
            "{grandchild} survived"
        );
    }

    #[test]
    fn a_child_that_prints_more_than_the_tail_keeps_only_the_last_bytes() {
        // 300 000 bytes of `x` between a head and a tail marker.
        let body = "printf HEAD; i=0; while [ $i -lt 3000 ]; do \
                    printf %0100d 0 | tr 0 x; i=$((i+1)); done; printf TAIL-END; \
                    printf 'err-head' >&2; printf %09000d 0 >&2; printf 'err-end' >&2";
        let mut cmd = shell(body);
        cmd.stderr(std::process::Stdio::piped());
        let limits = Limits {
            timeout: Some(Duration::from_secs(60)),
            stdout: Keep::Tail(12),
            stderr: Keep::Head(8),
        };
        let out = run(&mut cmd, limits).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "xxxxTAIL-END");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err-head");
        assert!(out.status.is_some_and(|s| s.success()));
    }

    #[test]
    fn a_tail_is_trimmed_as_it_grows() {
        let mut buf = Vec::new();
        for chunk in [&b"abcdef"[..], b"ghij", b"klmnopqrstu"] {
            keep_part(&mut buf, chunk, Keep::Tail(4));
            assert!(buf.len() <= 8 + chunk.len(), "{}", buf.len());
        }
        assert!(buf.ends_with(b"rstu"));
        let mut head = Vec::new();
        for chunk in [&b"abc"[..], b"defgh"] {
            keep_part(&mut head, chunk, Keep::Head(5));
        }
        assert_eq!(head, b"abcde");
    }
}
