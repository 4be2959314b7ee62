//! Where a marker says the raw logs of its latest attempt are.
//!
//! vf never reads or writes through these paths (it derives a log's path from
//! the unit and the attempt); they are a pointer for people and tools. They are
//! stored relative to the state dir (`units/<unit>/attempt-N.stdout.log`), so a
//! moved repository or a CI workspace at another path keeps its markers.
//! Older markers stored them absolute: such a path is accepted when its tail
//! is exactly this unit's log of that stream, wherever the state dir was.

use std::path::{Component, Path, PathBuf};

/// The two raw logs of an attempt, in marker-key order (`stdoutLog`, `stderrLog`).
pub const STREAMS: [&str; 2] = ["stdout", "stderr"];

/// A log's path as the marker stores it: relative to the state dir.
pub fn relative(unit: &str, attempt: u32, stream: &str) -> PathBuf {
    // Written with `/` on every OS (Windows takes it too), so a marker reads
    // the same wherever the state dir was written.
    PathBuf::from(format!("units/{unit}/attempt-{attempt}.{stream}.log"))
}

/// The stored path `p` of `unit`'s `stream` log in its relative form, or why
/// it is not one of that unit's logs (another unit's, `/etc/passwd`, `..`).
pub fn accept(unit: &str, stream: &str, p: &Path) -> Result<PathBuf, String> {
    let parts: Vec<Component> = p.components().collect();
    // Relative: exactly the tail. Absolute: the old state dir is any prefix
    // (even with `..`, as `--state-dir ../s` was stored); it is never used.
    let whole = parts.len() == 3 || p.has_root();
    let attempt = match parts.as_slice() {
        [
            ..,
            Component::Normal(d),
            Component::Normal(u),
            Component::Normal(f),
        ] if whole && d.to_str() == Some("units") && u.to_str() == Some(unit) => {
            f.to_str().and_then(|f| attempt_of(f, stream))
        }
        _ => None,
    };
    match attempt {
        Some(n) => Ok(relative(unit, n, stream)),
        None => Err(format!(
            "is not units/{unit}/attempt-N.{stream}.log in its state dir"
        )),
    }
}

/// `N` of `attempt-N.<stream>.log`, written as vf writes it (no sign, no
/// leading zero).
fn attempt_of(file: &str, stream: &str) -> Option<u32> {
    let digits = file
        .strip_prefix("attempt-")?
        .strip_suffix(".log")?
        .strip_suffix(stream)?
        .strip_suffix('.')?;
    let n: u32 = digits.parse().ok()?;
    (n > 0 && n.to_string() == digits).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_units_own_logs_are_accepted() {
        let rel = |s: &str| Ok(PathBuf::from(s));
        let ok = [
            ("units/u1/attempt-2.stdout.log", "stdout"),
            (
                "/old/repo/.vibeflow/units/u1/attempt-2.stdout.log",
                "stdout",
            ),
            ("/units/u1/attempt-2.stdout.log", "stdout"),
            ("/work/../s/units/u1/attempt-2.stdout.log", "stdout"),
        ];
        for (p, stream) in ok {
            assert_eq!(
                accept("u1", stream, Path::new(p)),
                rel("units/u1/attempt-2.stdout.log"),
                "{p}"
            );
        }
        let bad = [
            ("/etc/passwd", "stdout"),
            ("../../x", "stdout"),
            ("units/u2/attempt-2.stdout.log", "stdout"),
            ("units/u1/attempt-2.stdout.log", "stderr"),
            ("x/units/u1/attempt-2.stdout.log", "stdout"),
            ("./units/u1/attempt-2.stdout.log", "stdout"),
            ("/a/units/u1/../u1/attempt-2.stdout.log", "stdout"),
            ("units/u1/attempt-02.stdout.log", "stdout"),
            ("units/u1/attempt-0.stdout.log", "stdout"),
            ("units/u1/attempt-+2.stdout.log", "stdout"),
            ("units/u1/attempt-2.stdout.log/x", "stdout"),
            ("units/u1/attempt-.stdout.log", "stdout"),
            ("units/u1", "stdout"),
            ("", "stdout"),
        ];
        for (p, stream) in bad {
            assert!(accept("u1", stream, Path::new(p)).is_err(), "{p}");
        }
    }
}
