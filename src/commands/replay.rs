//! `vf replay`: project a recorded log, streaming, with a line-length cap.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};

use crate::cli::{ReplayArgs, ReplayOutput};
use crate::engine::frames::reader::{Line, LineReader, MAX_LINE_BYTES};
use crate::engine::frames::{ConversationEvent, Projector, render};
use crate::ground::error::{Result, VfError};
use crate::ground::version::Version;

pub fn run(a: &ReplayArgs) -> Result<i32> {
    let version = match &a.cli_version {
        None => None,
        Some(s) => Some(
            Version::parse(s)
                .or_else(|| Version::find_in(s))
                .ok_or_else(|| VfError::usage(format!("--cli-version: {s:?} is not X.Y.Z")))?,
        ),
    };
    let transport = a
        .transport
        .unwrap_or_else(|| a.cli.engine().output_transport(version.as_ref()));
    let input: Box<dyn BufRead> = if a.file == "-" {
        Box::new(BufReader::with_capacity(256 << 10, io::stdin()))
    } else {
        let f = File::open(&a.file)
            .map_err(|e| VfError::usage(format!("cannot read {}: {e}", a.file)))?;
        // Opening a directory succeeds; reading it would fail mid-way as exit 1.
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(VfError::usage(format!(
                "cannot read {}: it is a directory (give the attempt's stdout log)",
                a.file
            )));
        }
        Box::new(BufReader::with_capacity(256 << 10, f))
    };
    let mut out = BufWriter::with_capacity(256 << 10, super::stdio::out());
    if a.cli.engine().speaks_acp() {
        return replay_acp(input, &mut out, a.output);
    }
    let mut lines = LineReader::new(input, MAX_LINE_BYTES);
    let mut p = Projector::new(a.cli, version.as_ref(), transport);
    while let Some(line) = lines.next_line().map_err(anyhow::Error::from)? {
        let events = match line {
            Line::Text(raw) => p.push_line(raw),
            Line::Oversized(n) => p.push_oversized(n),
        };
        emit(&mut out, &events, a.output)?;
    }
    emit(&mut out, &p.finish(), a.output)?;
    out.flush()?;
    Ok(0)
}

/// An ACP unit's raw log (tagged JSON-RPC lines, both directions),
/// projected as the live run projected it (`acp::project_log`).
fn replay_acp(
    mut input: Box<dyn BufRead>,
    out: &mut impl Write,
    mode: ReplayOutput,
) -> Result<i32> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let (events, _) = crate::engine::acp::project_log(&String::from_utf8_lossy(&bytes));
    emit(out, &events, mode)?;
    out.flush()?;
    Ok(0)
}

fn emit(w: &mut impl Write, events: &[ConversationEvent], mode: ReplayOutput) -> Result<()> {
    for ev in events {
        match mode {
            ReplayOutput::Jsonl => {
                serde_json::to_writer(&mut *w, ev).map_err(io::Error::from)?;
                w.write_all(b"\n")?;
            }
            ReplayOutput::Human => render::write_human(w, ev)?,
        }
    }
    Ok(())
}
