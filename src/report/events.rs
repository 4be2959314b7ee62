//! A unit's events for the page: its latest attempt's raw log projected as
//! `vf replay` projects it, rendered as `vf replay --output human` renders
//! each event, and the raw lines each embedded event points to. What is
//! embedded is capped per unit (the page stays a few MB for 1,000 units);
//! the count of every event and of every unknown frame is not.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::frames::reader::{Line, LineReader, MAX_LINE_BYTES};
use crate::engine::frames::{ConversationEvent, Projector, render};
use crate::ground::version::Version;
use crate::unit::marker::{Marker, MarkerStore};

/// One event as `vf replay --output human` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    pub kind: &'static str,
    /// 1-based inclusive lines of the raw log (`[0, 0]`: none).
    pub raw_range: [u64; 2],
    pub text: String,
}

/// What the page shows of a unit's raw log.
#[derive(Debug, Default)]
pub struct Projected {
    pub events: Vec<EventRow>,
    pub total: usize,
    pub unknown: BTreeMap<String, u64>,
    /// The raw lines the embedded events point to, by line number.
    pub raw: BTreeMap<u64, String>,
    pub warning: Option<String>,
}

const EVENT_TEXT_BYTES: usize = 4 << 10;
const RAW_LINE_BYTES: usize = 1 << 10;
const RAW_LINES_PER_EVENT: u64 = 20;

/// Projects `m`'s latest raw log, embedding at most about `budget` bytes.
pub fn project(store: &MarkerStore, m: &Marker, budget: usize) -> Projected {
    let mut out = Projected::default();
    if m.attempts == 0 || m.stdout_log.is_none() {
        return out;
    }
    let path = store.log_path(&m.unit, m.attempts, "stdout");
    let bytes = match crate::ground::fsutil::read_no_follow(&path) {
        Ok(b) => b,
        Err(e) => {
            out.warning = Some(format!("cannot read its raw log {}: {e}", path.display()));
            return out;
        }
    };
    let all = events_of(m, &bytes);
    out.total = all.len();
    let mut used = 0;
    let mut wanted: Vec<(u64, u64)> = Vec::new();
    for ev in &all {
        if let ConversationEvent::UnknownFrame { frame_kind, .. } = ev {
            *out.unknown.entry(frame_kind.clone()).or_default() += 1;
        }
        if used > budget {
            continue;
        }
        let r = ev.raw_range();
        let mut text = Vec::new();
        let _ = render::write_human(&mut text, ev);
        let text = String::from_utf8_lossy(&text);
        let text = crate::ground::text::cut(text.trim_end(), EVENT_TEXT_BYTES).to_string();
        let lines = match r.start {
            0 => 0,
            s => (r.end.max(s) - s + 1).min(RAW_LINES_PER_EVENT),
        };
        used += text.len() + lines as usize * 200;
        if lines > 0 {
            wanted.push((r.start, r.start + lines - 1));
        }
        out.events.push(EventRow {
            kind: ev.kind(),
            raw_range: [r.start, r.end],
            text,
        });
    }
    out.raw = raw_lines(&bytes, &wanted);
    out
}

fn events_of(m: &Marker, bytes: &[u8]) -> Vec<ConversationEvent> {
    let engine = m.engine.engine();
    if engine.speaks_acp() {
        return crate::engine::acp::project_log(&String::from_utf8_lossy(bytes)).0;
    }
    let version = m.engine_version.as_deref().and_then(Version::parse);
    let (family, transport) = engine.frames(m.command.as_ref(), version.as_ref());
    let mut p = Projector::for_unit(m.engine, family, version.as_ref(), transport);
    let mut lines = LineReader::new(bytes, MAX_LINE_BYTES);
    let mut events = Vec::new();
    while let Ok(Some(line)) = lines.next_line() {
        events.extend(match line {
            Line::Text(raw) => p.push_line(raw),
            Line::Oversized(n) => p.push_oversized(n),
        });
    }
    events.extend(p.finish());
    events
}

/// The lines in `ranges` (1-based, inclusive, ascending starts), each cut.
fn raw_lines(bytes: &[u8], ranges: &[(u64, u64)]) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let Some(last) = ranges.iter().map(|r| r.1).max() else {
        return out;
    };
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i as u64 + 1;
        if n > last {
            break;
        }
        if ranges.iter().any(|&(a, b)| a <= n && n <= b) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let cut = &line[..line.len().min(RAW_LINE_BYTES)];
            let mut text = String::from_utf8_lossy(cut).into_owned();
            if cut.len() < line.len() {
                text.push_str(&format!(" … ({} bytes)", line.len()));
            }
            out.insert(n, text);
        }
    }
    out
}
