//! Loading a marker without trusting it: the unit comes from the file name,
//! the log paths must be that unit's own, a newer format is left alone, and
//! every error is one short line (a marker can come from a cloned repository,
//! so nothing of its text reaches the terminal raw).

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{MARKER_FORMAT, Marker, MarkerStore, Problem, Unusable, logs};
use crate::ground::error::Result;
use crate::ground::names;
use crate::ground::text::one_line;
use crate::unit::layout;

/// A marker is a few KB; anything far larger is not one of vf's.
pub const MAX_MARKER_BYTES: u64 = 16 << 20;
/// How much of a path, of a reason, and of serde's reason (before its
/// position in the file) an error shows, escaped.
const PATH_CHARS: usize = 512;
const WHY_CHARS: usize = 400;
const SERDE_CHARS: usize = 200;

impl MarkerStore {
    /// `Ok(None)` when there is no marker; an error (exit 5) when it exists
    /// but cannot be used.
    pub fn load(&self, unit: &str) -> Result<Option<Marker>> {
        Ok(self.load_checked(unit)?)
    }

    /// [`MarkerStore::load`], keeping why a marker cannot be used.
    ///
    /// The unit's name comes from the file name, never from the file: a
    /// marker whose own `unit` disagrees, or whose log paths are not the
    /// unit's own logs, is corrupt. A marker from a newer vf is refused as is.
    /// The log paths come back relative to the state dir.
    pub fn load_checked(&self, unit: &str) -> std::result::Result<Option<Marker>, Unusable> {
        self.load_in_layout(unit, false)
    }

    /// [`MarkerStore::load_checked`]; `dir_checked`: the caller has already
    /// proven the markers directory is no symbolic link (once for a listing).
    fn load_in_layout(
        &self,
        unit: &str,
        dir_checked: bool,
    ) -> std::result::Result<Option<Marker>, Unusable> {
        let checked = names::check("unit name", unit);
        let (path, read) = match &checked {
            Ok(()) => self.read_either(unit),
            Err(_) => (self.path(unit), Ok(None)),
        };
        let shown = one_line(&path.display().to_string(), PATH_CHARS);
        let fail = |problem: Problem, why: &str| {
            let why = one_line(why, WHY_CHARS);
            Unusable {
                unit: unit.to_string(),
                path: path.clone(),
                message: match &problem {
                    Problem::UnsupportedFormat(_) => format!("marker {shown} {why}"),
                    Problem::Unreadable => format!("cannot read marker {shown}: {why}"),
                    Problem::Corrupt => format!(
                        "marker {shown} is corrupt ({why}); vf will not overwrite it: inspect it, then move it aside"
                    ),
                    Problem::OtherCase(other) => format!(
                        "unit {unit} shares its files with unit {other} ({shown}): this file system does not tell upper from lower case, so name it differently"
                    ),
                },
                problem,
            }
        };
        if let Err(e) = checked {
            let why = format!("its file name is unsafe: {e}");
            return Err(fail(Problem::Corrupt, &why));
        }
        let bytes = match read {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(None),
            Err((problem, why)) => return Err(fail(problem, &why)),
        };
        // A newer marker may not parse as this one at all: its format is
        // judged first, read on its own only when the whole does not parse
        // (one parse per marker in the common case).
        let parsed = serde_json::from_slice::<Marker>(&bytes);
        let format = match &parsed {
            Ok(m) => Some(u64::from(m.format)),
            Err(_) => serde_json::from_slice::<FormatOnly>(&bytes)
                .ok()
                .and_then(|f| f.format),
        };
        if let Some(n) = format.filter(|n| *n > u64::from(MARKER_FORMAT)) {
            let why = format!(
                "has format {n}, but this vf reads format {MARKER_FORMAT}; vf leaves it untouched: use a newer vf"
            );
            return Err(fail(Problem::UnsupportedFormat(n), &why));
        }
        let mut marker = parsed.map_err(|e| fail(Problem::Corrupt, &serde_reason(&e)))?;
        if marker.unit != unit && marker.unit.eq_ignore_ascii_case(unit) {
            // `A`'s marker found as `a`'s (macOS, Windows): not corrupt, taken.
            let other = crate::ground::text::shown(&marker.unit, 80);
            return Err(fail(Problem::OtherCase(other), ""));
        }
        self.check_fields(unit, &mut marker)
            .and_then(|()| self.check_layout(unit, dir_checked))
            .map_err(|why| fail(Problem::Corrupt, &why))?;
        Ok(Some(marker))
    }

    /// The unit's marker and where it was read: in its directory, else
    /// where an older vf kept it (unless that is unit `<unit>.json`'s
    /// directory).
    fn read_either(&self, unit: &str) -> (PathBuf, ReadMarker) {
        let path = self.path(unit);
        match read_marker(&path) {
            Ok(None) => {}
            read => return (path, read),
        }
        let old = layout::legacy_marker(self.state_dir(), unit);
        match layout::kind(&old) {
            layout::Kind::Missing | layout::Kind::Dir => (path, Ok(None)),
            _ => {
                let read = read_marker(&old);
                (old, read)
            }
        }
    }

    /// [`MarkerStore::load_checked`] for many units, in their order. Spread
    /// over a few threads: `vf status` over thousands of markers is bound by
    /// opening, reading and parsing them, each independent of the others.
    pub fn load_all(&self, units: &[String]) -> Vec<std::result::Result<Option<Marker>, Unusable>> {
        const PER_THREAD: usize = 256;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4)
            .min(units.len().div_ceil(PER_THREAD));
        // The directory is the same for every marker: proven once here.
        let dir_checked = !super::is_symlink(&self.dir);
        let load = move |part: &[String]| -> Vec<_> {
            part.iter()
                .map(|u| self.load_in_layout(u, dir_checked))
                .collect()
        };
        if threads <= 1 {
            return load(units);
        }
        let chunk = units.len().div_ceil(threads);
        std::thread::scope(|s| {
            let parts: Vec<_> = units
                .chunks(chunk)
                .map(|part| s.spawn(move || load(part)))
                .collect();
            parts
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    /// What a marker says about itself must agree with where it lives; its
    /// log paths are put in their relative form.
    fn check_fields(&self, unit: &str, m: &mut Marker) -> std::result::Result<(), String> {
        if m.format != MARKER_FORMAT {
            return Err(format!("unknown format {}", m.format));
        }
        if m.unit != unit {
            return Err(format!(
                "its unit field {} does not match its file name",
                crate::ground::text::shown(&m.unit, 80)
            ));
        }
        let [out, err] = logs::STREAMS;
        for (key, stream, p) in [
            ("stdoutLog", out, &mut m.stdout_log),
            ("stderrLog", err, &mut m.stderr_log),
        ] {
            if let Some(p) = p {
                *p = logs::accept(unit, stream, p).map_err(|why| {
                    format!(
                        "its {key} {} {why}",
                        crate::ground::text::shown(&p.to_string_lossy(), 80)
                    )
                })?;
            }
        }
        Ok(())
    }

    /// Refuses a unit whose log directory vf would write through a symbolic
    /// link (a cloned repository can bring its own `.vibeflow/`).
    fn check_layout(&self, unit: &str, dir_checked: bool) -> std::result::Result<(), String> {
        let dir = (!dir_checked).then(|| self.dir.clone());
        for p in dir.into_iter().chain([self.logs_dir(unit)]) {
            if super::is_symlink(&p) {
                return Err(format!("{} is a symbolic link", p.display()));
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct FormatOnly {
    format: Option<u64>,
}

type ReadMarker = std::result::Result<Option<Vec<u8>>, (Problem, String)>;

/// The marker's bytes (`None`: no marker). Never through a symbolic link,
/// never blocking on a FIFO, never more than [`MAX_MARKER_BYTES`].
fn read_marker(path: &Path) -> ReadMarker {
    let unreadable = |e: std::io::Error| (Problem::Unreadable, e.to_string());
    let corrupt = |why: &str| (Problem::Corrupt, why.to_string());
    let file = match crate::ground::fsutil::open_state_file(path) {
        Ok(f) => f,
        // Not a directory: an older vf's file where the unit's directory goes.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None);
        }
        Err(e) if crate::sys::is_link_refusal(&e) => {
            return Err(corrupt("it is a symbolic link"));
        }
        Err(e) if crate::ground::fsutil::is_not_regular(&e) => {
            return Err(corrupt("it is not a regular file"));
        }
        Err(e) => return Err(unreadable(e)),
    };
    let meta = file.metadata().map_err(unreadable)?;
    // Sized from the file: one read instead of a growing buffer's many.
    let size = meta.len().min(MAX_MARKER_BYTES);
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(MAX_MARKER_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_MARKER_BYTES {
        return Err(corrupt(&format!(
            "it is over {MAX_MARKER_BYTES} bytes, far larger than any marker"
        )));
    }
    Ok(Some(bytes))
}

/// serde's reason, its quoted value cut, with where it is in the file.
fn serde_reason(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    match full.strip_suffix(&at) {
        Some(reason) => format!("{}{at}", one_line(reason, SERDE_CHARS)),
        None => full,
    }
}

#[cfg(test)]
#[cfg(unix)] // they plant symbolic links
mod tests {
    use super::*;
    use crate::engine::EngineId;

    /// 600 markers (enough for several threads): good ones, torn ones, a
    /// newer format that would parse as this one, one through a symlinked
    /// log directory, and a directory where a marker should be.
    fn mixed_store() -> (tempfile::TempDir, MarkerStore, Vec<String>) {
        let t = tempfile::tempdir().unwrap();
        let store = MarkerStore::new(t.path());
        let mut names = Vec::new();
        for i in 0..600 {
            let unit = format!("u{i:03}");
            let mut m = Marker::new(&unit, EngineId::Codex, t.path());
            store.save(&mut m).unwrap();
            match i % 5 {
                1 => std::fs::write(store.path(&unit), b"{\"format\":1,\"unit\":").unwrap(),
                2 => {
                    m.format = MARKER_FORMAT + 1;
                    std::fs::write(store.path(&unit), serde_json::to_vec(&m).unwrap()).unwrap();
                }
                3 if i < 50 => {
                    let moved = t.path().join(format!("moved-{unit}"));
                    std::fs::rename(store.logs_dir(&unit), &moved).unwrap();
                    std::os::unix::fs::symlink(&moved, store.logs_dir(&unit)).unwrap();
                }
                4 if i < 50 => {
                    std::fs::remove_file(store.path(&unit)).unwrap();
                    std::fs::create_dir(store.path(&unit)).unwrap();
                }
                _ => {}
            }
            names.push(unit);
        }
        names.push("never-written".into());
        (t, store, names)
    }

    #[test]
    fn loading_many_at_once_is_loading_each_in_turn() {
        let (_t, store, names) = mixed_store();
        let one_by_one: Vec<_> = names.iter().map(|u| store.load_checked(u)).collect();
        let all = store.load_all(&names);
        assert_eq!(all, one_by_one);
        let problems = |p: Problem| {
            all.iter()
                .filter(|r| r.as_ref().is_err_and(|u| u.problem == p))
                .count()
        };
        assert_eq!(problems(Problem::Corrupt), 120 + 10 + 10);
        assert_eq!(
            problems(Problem::UnsupportedFormat(u64::from(MARKER_FORMAT) + 1)),
            120
        );
        assert_eq!(all.last(), Some(&Ok(None)));
    }

    #[test]
    fn a_symlinked_markers_directory_is_refused_in_a_listing_too() {
        let (t, store, names) = mixed_store();
        let real = t.path().join("real-units");
        std::fs::rename(t.path().join("units"), &real).unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("units")).unwrap();
        // Markers that are sound in themselves (every fifth one).
        let good: Vec<String> = names[..600].iter().step_by(5).cloned().collect();
        let all = store.load_all(&good);
        assert_eq!(all.len(), 120);
        for r in &all {
            let u = r.as_ref().unwrap_err();
            assert_eq!(u.problem, Problem::Corrupt);
            assert!(u.message.contains("symbolic link"), "{}", u.message);
        }
    }
}
