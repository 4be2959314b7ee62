//! `vf status [UNIT]`: what every unit is doing, from its marker.

use std::io::Write;

use serde::Serialize;

use crate::cli::StatusArgs;
use crate::error::{Result, VfError, exit};
use crate::marker::{Marker, MarkerStore};
use crate::{names, state};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    #[serde(flatten)]
    marker: &'a Marker,
    /// The marker's last error, under a stable name.
    last_error: Option<&'a str>,
}

pub fn run(args: &StatusArgs) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    let state_dir = state::resolve_state_dir(args.state_dir.as_deref(), &cwd)?;
    let store = MarkerStore::new(&state_dir);
    let (markers, corrupt): (Vec<Marker>, Vec<VfError>) = match &args.unit {
        Some(u) => {
            names::check("unit name", u)?;
            match store.load(u)? {
                Some(m) => (vec![m], vec![]),
                None => {
                    return Err(VfError::usage(format!(
                        "no unit {u:?} under {}",
                        state_dir.display()
                    )));
                }
            }
        }
        None => {
            let mut ok = Vec::new();
            let mut bad = Vec::new();
            for m in store.list()? {
                match m {
                    Ok(m) => ok.push(m),
                    Err(e) => bad.push(e),
                }
            }
            (ok, bad)
        }
    };
    for e in &corrupt {
        eprintln!("vf: {e}");
    }
    let rows: Vec<Row> = markers
        .iter()
        .map(|m| Row {
            marker: m,
            last_error: m.error.as_deref(),
        })
        .collect();
    if args.json {
        if args.unit.is_some() {
            super::print_json(&rows[0])?;
        } else {
            super::print_json(&rows)?;
        }
    } else {
        let mut out = std::io::stdout().lock();
        if rows.is_empty() {
            writeln!(out, "no units under {}", state_dir.display())?;
        } else {
            writeln!(
                out,
                "{:<24} {:<8} {:<9} {:<9} {:<38} SUMMARY / ERROR",
                "UNIT", "STATE", "ENGINE", "VERSION", "SESSION"
            )?;
        }
        for r in &rows {
            let m = r.marker;
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
    }
    Ok(if corrupt.is_empty() {
        exit::OK
    } else {
        exit::STATE
    })
}
