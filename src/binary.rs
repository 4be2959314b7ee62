//! Finding an engine's executable and reading its version without ever
//! waiting on a hung CLI.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::engine::EngineId;
use crate::version::Version;

/// Where the binary was found, and how.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    /// `--engine-bin`, `VF_<ENGINE>_BIN`, or `PATH`.
    pub source: &'static str,
}

/// Resolution order: explicit path (`--engine-bin`), `VF_<ENGINE>_BIN`, then `PATH`.
pub fn resolve(engine: EngineId, explicit: Option<&Path>) -> Result<Located, String> {
    let spec = engine.engine().spec();
    if let Some(p) = explicit {
        return check_exec(p).map(|path| Located {
            path,
            source: "--engine-bin",
        });
    }
    let var = engine.bin_env_var();
    if let Some(p) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
        return check_exec(Path::new(&p)).map(|path| Located {
            path,
            source: "env",
        });
    }
    find_on_path(spec.binary)
        .map(|path| Located {
            path,
            source: "PATH",
        })
        .ok_or_else(|| {
            format!(
                "{engine}: `{}` not found on PATH (install it: {}; or set {var} / --engine-bin)",
                spec.binary, spec.install_hint
            )
        })
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn check_exec(p: &Path) -> Result<PathBuf, String> {
    if is_executable(p) {
        Ok(p.to_path_buf())
    } else if p.exists() {
        Err(format!("{} is not an executable file", p.display()))
    } else {
        Err(format!("{} does not exist", p.display()))
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The result of running a short informational command (`--version`, `--help`).
#[derive(Debug, Clone)]
pub enum Captured {
    Output {
        status: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    SpawnFailed(String),
}

/// Runs `program args` with stdin `/dev/null` in its own process group,
/// killing the whole group after `timeout`. Output is capped at 1 MiB per stream.
pub fn capture(program: &Path, args: &[&str], timeout: Duration) -> Captured {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let spawn = || {
        Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
    };
    let mut attempt = 0;
    let mut child = loop {
        match spawn() {
            Ok(c) => break c,
            // A file just written (an install in progress) can be briefly busy.
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt < 5 => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20 * attempt));
            }
            Err(e) => return Captured::SpawnFailed(e.to_string()),
        }
    };
    let pgid = child.id() as i32;
    let read_capped = |mut r: Box<dyn Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut r).take(1 << 20).read_to_end(&mut buf);
            // Keep draining so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
        });
        rx
    };
    let out = read_capped(Box::new(child.stdout.take().expect("piped")));
    let err = read_capped(Box::new(child.stderr.take().expect("piped")));
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if std::time::Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    // Whatever happened, nothing of that group outlives us.
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let Some(status) = status else {
        let _ = child.wait();
        return Captured::TimedOut;
    };
    Captured::Output {
        status: status.code(),
        // A daemonised grandchild may hold a pipe open: never wait on it for long.
        stdout: out.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
        stderr: err.recv_timeout(Duration::from_secs(1)).unwrap_or_default(),
    }
}

/// Reads `<bin> --version`; `None` when it hangs, fails or prints no version.
pub fn read_version(program: &Path, timeout: Duration) -> Option<Version> {
    match capture(program, &["--version"], timeout) {
        Captured::Output { stdout, stderr, .. } => {
            Version::find_in(&stdout).or_else(|| Version::find_in(&stderr))
        }
        _ => None,
    }
}

/// Identity of an executable file: a changed binary (upgrade) invalidates the cache.
fn file_key(p: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let real = std::fs::canonicalize(p).ok()?;
    let m = std::fs::metadata(&real).ok()?;
    Some(format!(
        "{}:{}:{}:{}:{}",
        real.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime_nsec() + m.mtime() * 1_000_000_000
    ))
}

/// Like [`read_version`], but remembers the answer per executable file in
/// `<state>/cache/versions.json`, so a dispatch does not spawn the CLI twice.
/// A file that changed (size, mtime, inode) is read again.
pub fn read_version_cached(program: &Path, state_dir: &Path, timeout: Duration) -> Option<Version> {
    let cache_path = state_dir.join("cache").join("versions.json");
    let key = file_key(program);
    let mut cache: std::collections::BTreeMap<String, String> = std::fs::read(&cache_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if let Some(k) = &key
        && let Some(v) = cache.get(k).and_then(|s| Version::parse(s))
    {
        return Some(v);
    }
    let v = read_version(program, timeout)?;
    if let Some(k) = key {
        cache.insert(k, v.to_string());
        if let Ok(bytes) = serde_json::to_vec_pretty(&cache) {
            // A cache that cannot be written only costs a re-read next time.
            let _ = crate::fsutil::write_atomic(&cache_path, &bytes);
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(p: &Path, body: &str) {
        std::fs::write(p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn version_cache_follows_the_file() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("tool");
        script(&bin, "echo tool 1.2.3");
        let d = Duration::from_secs(5);
        assert_eq!(
            read_version_cached(&bin, t.path(), d),
            Some(Version::new(1, 2, 3))
        );
        // Replaced by an upgrade: a different file, read again.
        std::fs::remove_file(&bin).unwrap();
        script(&bin, "echo 'tool 1.2.40 (upgraded)'");
        assert_eq!(
            read_version_cached(&bin, t.path(), d),
            Some(Version::new(1, 2, 40))
        );
    }

    #[test]
    fn hung_version_is_cut_off() {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("hang");
        script(&bin, "sleep 30");
        assert!(matches!(
            capture(&bin, &["--version"], Duration::from_millis(300)),
            Captured::TimedOut
        ));
        assert_eq!(read_version(&bin, Duration::from_millis(300)), None);
    }
}
