//! Helpers shared by the integration tests that drive the `vf` binary.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn vf() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vf"))
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fake/fake-engine`: replays a recorded stdout (see its header).
pub fn fake() -> PathBuf {
    root().join("tests/fake/fake-engine")
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// The first session id a CLI printed in `text` (any engine's key), read
/// independently of vf's own parsers.
pub fn first_session_id(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| {
            ["thread_id", "session_id", "sessionID", "sessionId"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
        })
}

/// The session id a genuine capture states.
pub fn capture_session_id(rel: &str) -> String {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    first_session_id(&text).unwrap_or_else(|| panic!("no session id in {rel}"))
}

/// Runs a command, draining its output, but never lets a test hang on it.
pub fn run_bounded(mut c: Command, limit: Duration) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            signal(pid as i32, libc::SIGKILL);
            panic!("command did not finish within {limit:?}: {c:?}");
        }
    }
}

/// Polls `f` until it holds; fails the test after `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// kill(2); a negative pid names a process group.
pub fn signal(pid: i32, sig: i32) -> bool {
    assert!(pid != 0 && pid != -1, "refusing to signal pid {pid}");
    unsafe { libc::kill(pid, sig) == 0 }
}

/// While any process of the group exists (kill(-pgid, 0) succeeds).
pub fn group_alive(pgid: i32) -> bool {
    signal(-pgid, 0)
}

/// A child that has exited and is not reaped: a zombie with the identity it had.
pub fn zombie() -> std::process::Child {
    let child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    wait_for("a zombie", Duration::from_secs(10), || {
        vf::procinfo::stat(pid).is_some_and(|s| s.is_zombie())
    });
    child
}

/// A process group whose leader has exited (and been reaped, as init does
/// once vf is gone) while its child runs on: `(pgid, the child's pid)`.
pub fn leaderless_group() -> (i32, u32) {
    use std::os::unix::process::CommandExt;
    let mut leader = Command::new("sh");
    leader
        .args(["-c", "sleep 300 & exit 0"])
        .stdout(Stdio::null())
        .process_group(0);
    let mut leader = leader.spawn().unwrap();
    let pgid = leader.id() as i32;
    leader.wait().unwrap();
    let mut child = 0;
    wait_for(
        "the grandchild",
        Duration::from_secs(10),
        || match vf::orphans::group_members(pgid)[..] {
            [pid] => {
                child = pid;
                true
            }
            _ => false,
        },
    );
    (pgid, child)
}
