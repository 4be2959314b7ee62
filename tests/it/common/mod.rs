//! The one harness of the integration tests (`crate::common`):
//! - paths: the `vf` binary, the repository, `fixtures/`, the fake engine;
//! - `temp.rs`: each test's own temp dir, refused inside a git work tree;
//! - [`Env`] (`workdir.rs`): a temporary working dir with its own state dir,
//!   `vf` commands scrubbed of the caller's environment, copies of the fake;
//! - `compare.rs`: output parsing and whole-object comparison of results and
//!   markers with the volatile fields (times, pids, temp paths) normalised;
//!   `expect.rs`: the whole result and marker a dispatch is expected to leave;
//! - `source.rs`: reading vf's own source for the layer checks;
//! - bounded process helpers: nothing a test starts may hang it.
#![allow(dead_code)] // the Windows build and the two test binaries of their own use a subset

mod compare;
mod expect;
pub mod source;
mod temp;
mod workdir;

#[allow(unused_imports)] // likewise
pub use compare::*;
#[allow(unused_imports)]
pub use expect::*;
#[allow(unused_imports)]
pub use temp::*;
#[allow(unused_imports)]
pub use workdir::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn vf() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vf"))
}

/// A user config path that never exists: every vf a test runs gets it as
/// `VF_CONFIG`, so no test reads the developer's own config (docs/CONFIG.md).
pub fn no_config() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vf-no-config/config.toml")
}

/// `vf` for tests written with `assert_cmd` (`.assert()`, `.write_stdin()`),
/// without the caller's settings ([`callers_settings`]). For commands that
/// need no state dir (help, `replay`): the others run in an [`Env`].
pub fn vf_cli() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(vf());
    for k in callers_settings() {
        c.env_remove(k);
    }
    c.env("VF_CONFIG", no_config());
    c
}

/// The variables of the test's own environment that would change what vf or
/// the fake engine does: `VF_*`, `FAKE_*`, `IS_SANDBOX` and `VIBEFLOW_AI`.
pub fn callers_settings() -> Vec<String> {
    std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .filter(|k| {
            k.starts_with("FAKE_")
                || k.starts_with("VF_")
                || k == "IS_SANDBOX"
                || k == "VIBEFLOW_AI"
        })
        .collect()
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fake/fake-engine`: replays a recorded stdout (see its header).
pub fn fake() -> PathBuf {
    root().join("tests/fake/fake-engine")
}

/// The genuine captures: `fixtures/<engine>/<version>/<case>.*`.
pub fn fixtures() -> PathBuf {
    root().join("fixtures")
}

pub fn fixture(rel: &str) -> PathBuf {
    fixtures().join(rel)
}

/// A file's text; the panic names the file.
pub fn read_text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `# exit_code: N` of a capture's `.cmd.txt` text: how the CLI exited.
pub fn recorded_exit(cmd_txt: &str) -> i32 {
    cmd_txt
        .lines()
        .find_map(|l| l.strip_prefix("# exit_code: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("cmd.txt has an exit_code line")
}

/// Writes an executable script (mode 0755) and returns its path.
#[cfg(unix)]
pub fn write_exe(path: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// Every file under `dir`, recursively (none when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Fails when any file under `dir` holds `secret`.
pub fn assert_nowhere_under(dir: &Path, secret: &str) {
    for f in files_under(dir) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "private text persisted in {}",
            f.display()
        );
    }
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
    let text = read_text(&fixture(rel));
    first_session_id(&text).unwrap_or_else(|| panic!("no session id in {rel}"))
}

/// Git's identity and config for a test's `git`, never the user's.
pub fn git_env(c: &mut Command) {
    c.env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1");
}

/// Runs a command, draining its output, but never lets a test hang on it.
pub fn run_bounded(c: Command, limit: Duration) -> Output {
    run_bounded_to(c, Stdio::piped(), Stdio::piped(), limit)
}

/// [`run_bounded`] with stdout and stderr going where the test says (what
/// is not a pipe is not in the `Output`).
pub fn run_bounded_to(mut c: Command, stdout: Stdio, stderr: Stdio, limit: Duration) -> Output {
    c.stdout(stdout).stderr(stderr);
    let child = c.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            kill_pid(pid);
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

/// Waits (bounded) for `child` to exit.
pub fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let mut status = None;
    wait_for("vf to exit", Duration::from_secs(30), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

/// Ends the process `pid` at once.
#[cfg(unix)]
fn kill_pid(pid: u32) {
    signal(pid as i32, libc::SIGKILL);
}

#[cfg(windows)]
fn kill_pid(pid: u32) {
    let _ = Command::new("taskkill")
        .args(["/f", "/pid", &pid.to_string()])
        .output();
}

/// kill(2); a negative pid names a process group.
#[cfg(unix)]
pub fn signal(pid: i32, sig: i32) -> bool {
    assert!(pid != 0 && pid != -1, "refusing to signal pid {pid}");
    unsafe { libc::kill(pid, sig) == 0 }
}

/// While any process of the group exists (kill(-pgid, 0) succeeds).
#[cfg(unix)]
pub fn group_alive(pgid: i32) -> bool {
    signal(-pgid, 0)
}

/// The lifeline watchers (`vf-lifeline`, src/sys/lifeline.rs) among the
/// live members of group `pgid`.
#[cfg(unix)]
pub fn lifeline_watchers(pgid: i32) -> Vec<u32> {
    vf::process::orphans::group_members(pgid)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"vf-lifeline\0"))
        })
        .collect()
}

/// Kills the lifeline watcher of group `pgid` (it must have exactly one),
/// so that a `kill -9` of its vf leaves the group running: how tests make
/// the orphans that `vf doctor --fix` and a resume are for (a watcher
/// someone killed, a group a vf without a lifeline left).
#[cfg(unix)]
pub fn cut_lifeline(pgid: i32) {
    let watchers = lifeline_watchers(pgid);
    assert_eq!(watchers.len(), 1, "group {pgid}: watchers {watchers:?}");
    signal(watchers[0] as i32, libc::SIGKILL);
    wait_for("the watcher to end", Duration::from_secs(10), || {
        lifeline_watchers(pgid).is_empty()
    });
}

/// Waits until group `pgid` has no live member, at most `limit`; returns
/// how long that took. (A killed member may stay a zombie until init reaps it.)
#[cfg(unix)]
pub fn group_ends_within(pgid: i32, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let left = vf::process::orphans::group_members(pgid);
        if left.is_empty() {
            return start.elapsed();
        }
        if start.elapsed() > limit {
            signal(-pgid, libc::SIGKILL);
            panic!("group {pgid} still runs {limit:?} after its vf died: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A child that has exited and is not reaped: a zombie with the identity it had.
#[cfg(unix)]
pub fn zombie() -> std::process::Child {
    let child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    wait_for(
        "a zombie",
        Duration::from_secs(10),
        || matches!(vf::sys::process(pid), Ok(Some(s)) if s.zombie),
    );
    child
}

/// A process group whose leader has exited (and been reaped, as init does
/// once vf is gone) while its child runs on: `(pgid, the child's pid)`.
#[cfg(unix)]
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
        || match vf::process::orphans::group_members(pgid)[..] {
            [pid] => {
                child = pid;
                true
            }
            _ => false,
        },
    );
    (pgid, child)
}

/// Binds, for the calling scope, where the snapshots live: tests/snapshots,
/// named by the test (`projector__<name>.snap` kept the names they had when
/// tests/it/projector.rs was a test crate of its own; `acp__<name>.snap`).
pub fn snapshot_settings() -> insta::internals::SettingsBindDropGuard {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.bind_to_scope()
}
