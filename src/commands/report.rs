//! `vf report`: one self-contained HTML page of the state dir (or, with
//! `--json`, its data model). Every check comes first: a refused command
//! writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::cli::ReportArgs;
use crate::error::{Result, VfError};
use crate::report::{self, Request};
use crate::{names, state};

struct Resolved {
    req: Request,
    output: PathBuf,
    json: bool,
    open: bool,
}

fn resolve(a: &ReportArgs) -> Result<Resolved> {
    let cwd = std::env::current_dir()?;
    let state_dir = state::resolve_state_dir(a.state.state_dir.as_deref(), &cwd)?;
    if !state_dir.is_dir() {
        return Err(VfError::usage(format!(
            "no state dir at {}: run units first, or give --state-dir",
            state_dir.display()
        )));
    }
    for u in &a.units {
        names::check("unit name", u)?;
    }
    let since = a
        .since
        .as_deref()
        .map(super::status::parse_since)
        .transpose()?;
    let (plan, depends_on) = match &a.plan {
        None => (None, BTreeMap::new()),
        Some(p) => {
            let plan = crate::plan::load(p)?;
            let deps = plan
                .units
                .iter()
                .map(|u| (u.name.clone(), u.depends_on.clone()))
                .collect();
            (Some(state::absolute(p)?), deps)
        }
    };
    let output = state::absolute(
        &a.output
            .clone()
            .unwrap_or_else(|| state_dir.join("report.html")),
    )?;
    let page_dir = output.parent().map(PathBuf::from);
    if !a.json {
        check_output(&output)?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Resolved {
        req: Request {
            state_dir,
            depends_on,
            plan,
            units: (!a.units.is_empty()).then(|| a.units.iter().cloned().collect::<BTreeSet<_>>()),
            since,
            page_dir,
            now_ms: now.as_millis() as u64,
        },
        output,
        json: a.json,
        open: a.open,
    })
}

/// `-o` must name a file in an existing directory.
fn check_output(output: &std::path::Path) -> Result<()> {
    let parent = output.parent().unwrap_or(std::path::Path::new("/"));
    if !parent.is_dir() {
        return Err(VfError::usage(format!(
            "-o {}: the directory {} does not exist",
            output.display(),
            parent.display()
        )));
    }
    if output.is_dir() {
        return Err(VfError::usage(format!(
            "-o {}: is a directory (give a file name)",
            output.display()
        )));
    }
    Ok(())
}

pub fn run(a: &ReportArgs) -> Result<i32> {
    let r = resolve(a)?;
    if r.json {
        super::print_json(&report::build(&r.req)?)?;
        return Ok(0);
    }
    let line = write(&r)?;
    std::io::Write::write_all(&mut super::stdio::out(), format!("{line}\n").as_bytes())?;
    if r.open {
        // The viewer is the user's; failing to start it is said, not fatal.
        if let Err(e) = crate::sys::opener(&r.output).spawn() {
            super::stdio::eprint_line(format_args!("vf report: cannot open the page: {e}"));
        }
    }
    Ok(0)
}

/// Writes the page `a` asks for; the line that says so (`vf demo`).
pub fn write_page(a: &ReportArgs) -> Result<String> {
    write(&resolve(a)?)
}

fn write(r: &Resolved) -> Result<String> {
    let model = report::build(&r.req)?;
    let page = report::html::render(&model);
    crate::fsutil::write_atomic(&r.output, page.as_bytes())
        .map_err(|e| VfError::usage(format!("cannot write {}: {e}", r.output.display())))?;
    Ok(format!(
        "wrote {} ({} unit(s), {} bytes)",
        r.output.display(),
        model.units.len(),
        page.len()
    ))
}
