//! Loading a marker without trusting it: the unit comes from the file name,
//! the log paths must be that unit's own, a newer format is left alone, and
//! every error is one short line (a marker can come from a cloned repository,
//! so nothing of its text reaches the terminal raw).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::Deserialize;

use super::{MARKER_FORMAT, Marker, MarkerStore, Problem, Unusable, logs};
use crate::error::Result;
use crate::names;
use crate::text::one_line;

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
        let path = self.path(unit);
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
                },
                problem,
            }
        };
        if let Err(e) = names::check("unit name", unit) {
            let why = format!("its file name is unsafe: {e}");
            return Err(fail(Problem::Corrupt, &why));
        }
        let bytes = match read_marker(&path) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(None),
            Err((problem, why)) => return Err(fail(problem, &why)),
        };
        // The format first: a newer marker may not parse as this one at all.
        if let Ok(FormatOnly { format: Some(n) }) = serde_json::from_slice(&bytes)
            && n > u64::from(MARKER_FORMAT)
        {
            let why = format!(
                "has format {n}, but this vf reads format {MARKER_FORMAT}; vf leaves it untouched: use a newer vf"
            );
            return Err(fail(Problem::UnsupportedFormat(n), &why));
        }
        let mut marker: Marker = serde_json::from_slice(&bytes)
            .map_err(|e| fail(Problem::Corrupt, &serde_reason(&e)))?;
        self.check_fields(unit, &mut marker)
            .and_then(|()| self.check_layout(unit))
            .map_err(|why| fail(Problem::Corrupt, &why))?;
        Ok(Some(marker))
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
                crate::text::shown(&m.unit, 80)
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
                        crate::text::shown(&p.to_string_lossy(), 80)
                    )
                })?;
            }
        }
        Ok(())
    }

    /// Refuses a unit whose log directory vf would write through a symbolic
    /// link (a cloned repository can bring its own `.vibeflow/`).
    fn check_layout(&self, unit: &str) -> std::result::Result<(), String> {
        for p in [self.dir.clone(), self.logs_dir(unit)] {
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

/// The marker's bytes (`None`: no marker). Never through a symbolic link,
/// never blocking on a FIFO, never more than [`MAX_MARKER_BYTES`].
fn read_marker(path: &Path) -> std::result::Result<Option<Vec<u8>>, (Problem, String)> {
    let unreadable = |e: std::io::Error| (Problem::Unreadable, e.to_string());
    let corrupt = |why: &str| (Problem::Corrupt, why.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(corrupt("it is a symbolic link"));
        }
        Err(e) => return Err(unreadable(e)),
    };
    let kind = file.metadata().map_err(unreadable)?.file_type();
    if !kind.is_file() {
        return Err(corrupt("it is not a regular file"));
    }
    let mut bytes = Vec::new();
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
