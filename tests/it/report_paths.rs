//! What `vf report` writes and reads besides the page's content: `-o` on each
//! kind of path (a new or regular file is replaced; a FIFO, `/dev/null` or a
//! terminal is written as a stream; a link, a device or a FIFO without a
//! reader is never replaced), and a raw log that is a FIFO (a cloned state
//! dir can carry one) is never waited on.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::common;
use common::*;

/// `vf report ARGS` over `env`'s state dir, bounded: a hang is a failure.
fn report(env: &Env, args: &[&str]) -> Output {
    let mut c = env.cmd(&["report"]);
    c.args(args);
    run_bounded(c, Duration::from_secs(60))
}

/// An empty state dir: the page has no unit, which is all `-o` needs.
fn empty() -> Env {
    let env = Env::new();
    std::fs::create_dir_all(env.state().join("units")).unwrap();
    env
}

fn mkfifo(p: &Path) {
    nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn is_fifo(p: &Path) -> bool {
    std::fs::symlink_metadata(p).unwrap().file_type().is_fifo()
}

fn is_char_device(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

#[test]
fn a_new_or_regular_output_is_written_whole() {
    let env = empty();
    let page = env.path().join("page.html");
    for round in ["new", "regular"] {
        let out = report(&env, &["-o", page.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{round}: {}", stderr(&out));
        assert!(stdout(&out).starts_with("wrote "), "{round}");
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(text.starts_with("<!DOCTYPE html>"), "{round}: {text:.40}");
    }
}

#[test]
fn a_link_is_refused_and_left_a_link() {
    let env = empty();
    let target = env.write("target.txt", "keep");
    let link = env.path().join("page.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = report(&env, &["-o", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is a symbolic link"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn a_fifo_is_streamed_to_its_reader_or_refused_without_one() {
    let env = empty();
    let fifo = env.path().join("page.fifo");
    mkfifo(&fifo);
    // No reader: refused at once, never waited on.
    let out = report(&env, &["-o", fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no process reads"),
        "{}",
        stderr(&out)
    );
    assert!(is_fifo(&fifo));
    // A reader, there before vf opens; a writer of the test's own keeps its
    // reads waiting (no writer would be an end of file) until the page's end.
    let (reader, keeper) = {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        fcntl(&f, FcntlArg::F_SETFL(OFlag::empty())).unwrap();
        let keeper = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let (mut page, mut buf) = (Vec::new(), [0u8; 64 << 10]);
            while !String::from_utf8_lossy(&page).contains("</html>") {
                match f.read(&mut buf).unwrap() {
                    0 => break,
                    n => page.extend_from_slice(&buf[..n]),
                }
            }
            String::from_utf8(page).unwrap()
        });
        (reader, keeper)
    };
    let out = report(&env, &["-o", fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    drop(keeper);
    let page = reader.join().unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page:.40}");
    // The line that says so is on stderr: the page may be stdout itself.
    assert!(stderr(&out).contains("wrote "), "{}", stderr(&out));
    assert!(is_fifo(&fifo));
}

/// The device `/dev/NAME` (major 1, `minor`) to write to. As root, a copy of
/// the test's own (`mknod`): a vf that replaced what it writes would replace
/// the system's `/dev/null` otherwise, as the old vf did. Not root: the
/// system's, which vf cannot replace. `None`: root without `mknod`.
fn device(env: &Env, name: &str, minor: u64) -> Option<PathBuf> {
    // SAFETY: geteuid only reads this process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        return Some(Path::new("/dev").join(name));
    }
    device_copy(env, name, minor)
}

#[cfg(target_os = "linux")]
fn device_copy(env: &Env, name: &str, minor: u64) -> Option<PathBuf> {
    use nix::sys::stat::{Mode, SFlag, makedev, mknod};
    let p = env.path().join(name);
    let mode = Mode::from_bits_truncate(0o666);
    mknod(&p, SFlag::S_IFCHR, mode, makedev(1, minor)).ok()?;
    Some(p)
}

/// Elsewhere the device numbers differ (and `makedev` is Linux's): as root
/// the system's devices are not risked.
#[cfg(not(target_os = "linux"))]
fn device_copy(_: &Env, _: &str, _: u64) -> Option<PathBuf> {
    None
}

#[test]
fn devices_are_streams_never_replaced_and_a_full_one_is_exit_74() {
    let env = empty();
    let (Some(null), Some(full)) = (device(&env, "null", 3), device(&env, "full", 7)) else {
        eprintln!("skipped: root without mknod, and the system's devices are not to be risked");
        return;
    };
    let out = report(&env, &["-o", null.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(is_char_device(&null));
    let out = report(&env, &["-o", full.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(74), "{}", stderr(&out));
    let want = format!("cannot write {}: No space left on device", full.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    assert!(is_char_device(&full));
    // A link to the pipe the test reads, as /dev/stdout is (a link of the
    // test's own: the system's is not to be risked either).
    let to_stdout = env.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &to_stdout).unwrap();
    let out = report(&env, &["-o", to_stdout.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("<!DOCTYPE html>"));
    assert!(!stdout(&out).contains("wrote "));
    assert!(
        std::fs::symlink_metadata(&to_stdout)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// The page's default place is vf's own file in the state dir: a FIFO there
/// is refused, not written into nor replaced.
#[test]
fn a_fifo_at_the_default_page_is_refused() {
    let env = empty();
    let fifo = env.state().join("report.html");
    mkfifo(&fifo);
    let out = report(&env, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("it is a FIFO, not a regular file"));
    assert!(is_fifo(&fifo));
}

/// A unit's raw log that is a FIFO: the report finishes, the unit shown with
/// a warning that says what the log is.
#[test]
fn a_fifo_raw_log_is_a_warning_not_a_hang() {
    let env = Env::new();
    let mut c = env.cmd(&[
        "dispatch", "--engine", "copilot", "--unit", "u", "--prompt", "x",
    ]);
    c.args(["--engine-bin", env.fake_for("copilot").to_str().unwrap()])
        .env(
            "FAKE_STDOUT",
            fixture("copilot/1.0.102/a_json.stdout.jsonl"),
        );
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = env.state().join("units/u/attempt-1.stdout.log");
    std::fs::remove_file(&log).unwrap();
    mkfifo(&log);
    let out = report(&env, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    let text = v.to_string();
    assert!(
        text.contains("cannot read its raw log") && text.contains("it is a FIFO"),
        "{text}"
    );
    let out = report(&env, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(is_fifo(&log));
}
