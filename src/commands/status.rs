//! `vf status [UNIT]`: what every unit is doing, from its marker.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::StatusArgs;
use crate::error::{Result, VfError, exit};
use crate::marker::{Marker, MarkerStore, Problem, Unusable};
use crate::{names, state};

/// A validated `vf status` request.
struct Request {
    state_dir: PathBuf,
    unit: Option<String>,
    json: bool,
}

fn resolve(args: &StatusArgs) -> Result<Request> {
    if let Some(u) = &args.unit {
        names::check("unit name", u)?;
    }
    let cwd = std::env::current_dir()?;
    Ok(Request {
        state_dir: state::resolve_state_dir(args.state.state_dir.as_deref(), &cwd)?,
        unit: args.unit.clone(),
        json: args.json,
    })
}

#[derive(Serialize)]
#[serde(untagged)]
enum Row<'a> {
    Unit {
        #[serde(flatten)]
        marker: &'a Marker,
        /// The marker's last error, under a stable name.
        #[serde(rename = "lastError")]
        last_error: Option<&'a str>,
    },
    /// A marker vf cannot use: shown, never touched.
    Unusable {
        unit: &'a str,
        /// `corrupt`, `unreadable`, or `unsupported format N`.
        problem: String,
        /// The newer format, for `unsupported format N`.
        format: Option<u64>,
        error: &'a str,
    },
}

impl<'a> Row<'a> {
    fn of(entry: &'a std::result::Result<Marker, Unusable>) -> Row<'a> {
        match entry {
            Ok(m) => Row::Unit {
                marker: m,
                last_error: m.error.as_deref(),
            },
            Err(u) => Row::Unusable {
                unit: &u.unit,
                problem: u.label(),
                format: match u.problem {
                    Problem::UnsupportedFormat(n) => Some(n),
                    _ => None,
                },
                error: &u.message,
            },
        }
    }
}

pub fn run(args: &StatusArgs) -> Result<i32> {
    let req = resolve(args)?;
    let store = MarkerStore::new(&req.state_dir);
    let mut entries = match &req.unit {
        Some(u) => match store.load_checked(u).transpose() {
            Some(entry) => vec![entry],
            None => {
                return Err(VfError::usage(format!(
                    "no unit {u:?} under {}",
                    req.state_dir.display()
                )));
            }
        },
        None => store.list()?,
    };
    // The marker stores its log paths relative to the state dir.
    for m in entries.iter_mut().filter_map(|e| e.as_mut().ok()) {
        store.absolute_logs(m);
    }
    for e in entries.iter().filter_map(|e| e.as_ref().err()) {
        eprintln!("vf: {}", e.message);
    }
    let rows: Vec<Row> = entries.iter().map(Row::of).collect();
    if req.json {
        match (&req.unit, rows.first()) {
            (Some(_), Some(row)) => super::print_json(row)?,
            _ => super::print_json(&rows)?,
        }
    } else {
        print_table(&rows, &req.state_dir)?;
    }
    Ok(if entries.iter().all(|e| e.is_ok()) {
        exit::OK
    } else {
        exit::STATE
    })
}

fn print_table(rows: &[Row], state_dir: &std::path::Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if rows.is_empty() {
        writeln!(out, "no units under {}", state_dir.display())?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<24} {:<8} {:<9} {:<9} {:<38} SUMMARY / ERROR",
        "UNIT", "STATE", "ENGINE", "VERSION", "SESSION"
    )?;
    for r in rows {
        match r {
            Row::Unit { marker: m, .. } => {
                let detail = match (&m.summary, &m.error) {
                    (_, Some(e)) => format!("error: {e}"),
                    (Some(s), None) => format!("summary: {s}"),
                    (None, None) => String::new(),
                };
                writeln!(
                    out,
                    "{:<24} {:<8} {:<9} {:<9} {:<38} {}",
                    m.unit,
                    m.state.as_str(),
                    m.engine.as_str(),
                    m.engine_version.as_deref().unwrap_or("-"),
                    m.engine_session_id.as_deref().unwrap_or("-"),
                    detail
                )?;
            }
            Row::Unusable { unit, problem, .. } => writeln!(out, "{unit:<24} {problem}")?,
        }
    }
    Ok(())
}
