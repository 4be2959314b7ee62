//! `vf report`: one self-contained HTML page of the state dir (or, with
//! `--json`, its data model). Every check comes first: a refused command
//! writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::cli::ReportArgs;
use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::user_file::{self, OutputError, Streams};
use crate::ground::{names, state};
use crate::report::{self, Request};

struct Resolved {
    req: Request,
    streams: Streams,
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
    // A page in the state dir is vf's own file; a path named with -o may be
    // a stream (a FIFO, a terminal, /dev/null).
    let streams = match a.output {
        Some(_) => Streams::Allowed,
        None => Streams::Refused,
    };
    if !a.json {
        check_output(&output, streams)?;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Resolved {
        streams,
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

/// `-o` must name a file in an existing directory, and one vf may write
/// (fsutil::output: never a link, a device or a FIFO replaced).
fn check_output(output: &std::path::Path, streams: Streams) -> Result<()> {
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
    user_file::check(output, streams).map_err(|e| unwritable(output, e))?;
    Ok(())
}

/// A refusal is the user's (exit 2); a failed write is the output's (74).
fn unwritable(path: &std::path::Path, e: OutputError) -> VfError {
    match e {
        OutputError::Refused(why) => VfError::usage(format!("-o {}: {why}", path.display())),
        OutputError::Io(e) => VfError::OutputFile(format!("cannot write {}: {e}", path.display())),
    }
}

pub fn run(a: &ReportArgs) -> Result<i32> {
    let r = resolve(a)?;
    if r.json {
        super::print_json(&report::build(&r.req)?)?;
        return Ok(0);
    }
    let (line, how) = write(&r)?;
    match how {
        // The page may be on stdout itself (`-o /dev/stdout`): the line
        // must not end up inside it.
        user_file::How::Stream { .. } => super::stdio::eprint_line(format_args!("{line}")),
        user_file::How::Replace => {
            std::io::Write::write_all(&mut super::stdio::out(), format!("{line}\n").as_bytes())?
        }
    }
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
    Ok(write(&resolve(a)?)?.0)
}

fn write(r: &Resolved) -> Result<(String, user_file::How)> {
    let model = report::build(&r.req)?;
    let page = report::html::render(&model);
    let how = user_file::write(&r.output, page.as_bytes(), r.streams)
        .map_err(|e| unwritable(&r.output, e))?;
    let line = format!(
        "wrote {} ({} unit(s), {} bytes)",
        r.output.display(),
        model.units.len(),
        page.len()
    );
    Ok((line, how))
}
