//! `vf status [UNIT]`: what every unit is doing, from its marker.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::StatusArgs;
use crate::ground::error::{Result, VfError, exit};
use crate::ground::held::HeldBy;
use crate::ground::names;
use crate::ground::procinfo::Liveness;
use crate::unit::marker::resume_rule::{resolve_resume_id, state_refusal};
use crate::unit::marker::{Marker, MarkerStore, Problem, UnitState, Unusable};

/// A validated `vf status` request.
struct Request {
    state_dir: PathBuf,
    unit: Option<String>,
    json: bool,
    /// Epoch seconds: only units that finished at or after it.
    since: Option<u64>,
    total: bool,
    /// The quota governor's limits a unit's hold is shown for (the user
    /// config's `pause_at`).
    limits: crate::quota::Limits,
}

fn resolve(args: &StatusArgs) -> Result<Request> {
    if let Some(u) = &args.unit {
        names::check("unit name", u)?;
    }
    let cwd = std::env::current_dir()?;
    let cfg = crate::plan::config::load()?;
    let state_dir = super::config::state_dir_of(args.state.state_dir.as_deref(), &cwd, &cfg)?.0;
    Ok(Request {
        state_dir,
        limits: crate::quota::Limits {
            pause_at: cfg.get::<f64>("pause_at"),
            ..Default::default()
        },
        unit: args.unit.clone(),
        json: args.json,
        since: args.since.as_deref().map(parse_since).transpose()?,
        total: args.total,
    })
}

/// `--since`: an RFC 3339 time, or an age before now (`90m`, `12h`, `7d`).
pub(super) fn parse_since(s: &str) -> Result<u64> {
    if let Some(t) = crate::ground::fsutil::parse_rfc3339(s) {
        return Ok(t);
    }
    let bad = || {
        VfError::usage(format!(
            "invalid --since {:?}: expected an RFC 3339 UTC time or an age like 12h",
            crate::ground::text::cut(s, 64)
        ))
    };
    let unit = match s.chars().last() {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3600,
        Some('d') => 86_400,
        _ => return Err(bad()),
    };
    let n: u64 = s[..s.len() - 1].parse().map_err(|_| bad())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    Ok(now.saturating_sub(n.saturating_mul(unit)))
}

/// Whether a unit finished at or after `since` (a unit still running has not).
fn finished_since(m: &Marker, since: u64) -> bool {
    m.finished_at
        .as_deref()
        .and_then(crate::ground::fsutil::parse_rfc3339)
        .is_some_and(|t| t >= since)
}

/// `vf status --total`: how many units, and what they consumed together.
#[derive(Serialize)]
struct Total<'a> {
    units: usize,
    since: Option<&'a str>,
    usage: Option<crate::engine::usage::Usage>,
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
        /// The vf of a `running` marker, or of one whose loop is open (a
        /// review pending): `alive`, `dead` (killed, or its final marker
        /// write failed) or `unknown`.
        #[serde(rename = "ownerState", skip_serializing_if = "Option::is_none")]
        owner_state: Option<&'static str>,
        /// What holds its engine's account in the quota ledger, when it
        /// waits on it or its latest attempt was rate-limited.
        #[serde(rename = "heldBy", skip_serializing_if = "Option::is_none")]
        held_by: Option<HeldBy>,
        /// A running plan holds it on the quota governor (the ledger lists
        /// it as waiting for this state dir).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        waiting: bool,
        /// Its state lets it be continued (the resume policy's state rule:
        /// `orchestrate --resume`, or `vf resume` with its session id or
        /// recorded answers): not done, and no live or unprovable owner.
        resumable: bool,
        /// The units its engine started through vf (`unit::lineage`),
        /// sorted; absent when none.
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        children: &'a [String],
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
    /// A unit of a running plan held on the quota governor before its
    /// first run (no marker yet).
    Held {
        unit: &'a str,
        engine: &'a str,
        state: &'static str,
        #[serde(rename = "heldBy")]
        held_by: HeldBy,
    },
}

impl<'a> Row<'a> {
    fn of(
        entry: &'a std::result::Result<Marker, Unusable>,
        q: &Quota,
        tree: &'a crate::unit::lineage::Tree,
    ) -> Row<'a> {
        match entry {
            Ok(m) => {
                let (held_by, waiting) = q.of_marker(m);
                Row::unit(m, held_by, waiting, tree.children(&m.unit))
            }
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

    fn unit(
        m: &'a Marker,
        held_by: Option<HeldBy>,
        waiting: bool,
        children: &'a [String],
    ) -> Row<'a> {
        Row::Unit {
            children,
            marker: m,
            last_error: m.error.as_deref(),
            owner_state: (m.state == UnitState::Running || m.loop_open).then(|| {
                match m.owner_alive() {
                    Liveness::Alive => "alive",
                    Liveness::Dead => "dead",
                    Liveness::Unknown => "unknown",
                }
            }),
            held_by,
            waiting,
            resumable: state_refusal(m).is_none(),
        }
    }
}

/// The quota ledger as `vf status` reads it: who waits on which account.
struct Quota {
    entries: Vec<crate::quota::Entry>,
    /// This state dir, as the waiters name theirs.
    dirs: Vec<String>,
    now: u64,
    limits: crate::quota::Limits,
}

impl Quota {
    fn read(req: &Request) -> Quota {
        let (entries, w) = crate::report::quota::entries();
        if let Some(w) = w {
            super::stdio::eprint_line(format_args!("vf: warning: {w}"));
        }
        let mut dirs = vec![req.state_dir.display().to_string()];
        if let Ok(c) = req.state_dir.canonicalize() {
            dirs.push(c.display().to_string());
        }
        Quota {
            entries,
            dirs,
            now: crate::quota::now_ms(),
            limits: req.limits,
        }
    }

    fn held(&self, e: &crate::quota::Entry) -> Option<HeldBy> {
        crate::report::quota::held_by(e, self.now, &self.limits)
    }

    /// The hold on `unit` of this state dir a running plan waits on.
    fn waiting_on(&self, unit: &str) -> Option<HeldBy> {
        self.entries
            .iter()
            .filter(|e| {
                e.waiting
                    .iter()
                    .any(|w| w.unit == unit && self.dirs.contains(&w.state_dir))
            })
            .find_map(|e| self.held(e))
    }

    /// What holds `m`'s account: it waits on it, or its latest attempt was
    /// rate-limited and the ledger still holds its engine's account.
    fn of_marker(&self, m: &Marker) -> (Option<HeldBy>, bool) {
        if let Some(h) = self.waiting_on(&m.unit) {
            return (Some(h), true);
        }
        if m.reason != Some(crate::ground::error::Reason::RateLimited) || m.state == UnitState::Done
        {
            return (None, false);
        }
        let account = m
            .account
            .as_deref()
            .unwrap_or(crate::quota::DEFAULT_ACCOUNT);
        let held = self
            .entries
            .iter()
            .find(|e| e.key() == (m.engine.as_str(), account))
            .and_then(|e| self.held(e));
        (held, false)
    }

    /// The units of this state dir waiting with no marker yet.
    fn unmarked<'a>(&'a self, markers: &[&str]) -> Vec<Row<'a>> {
        let mut rows: Vec<Row> = Vec::new();
        for e in &self.entries {
            let Some(h) = self.held(e) else { continue };
            for w in &e.waiting {
                let known = markers.contains(&w.unit.as_str())
                    || rows
                        .iter()
                        .any(|r| matches!(r, Row::Held { unit, .. } if *unit == w.unit));
                if !known && self.dirs.contains(&w.state_dir) {
                    rows.push(Row::Held {
                        unit: &w.unit,
                        engine: &e.engine,
                        state: "waiting",
                        held_by: h.clone(),
                    });
                }
            }
        }
        rows
    }
}

pub fn run(args: &StatusArgs) -> Result<i32> {
    show(&resolve(args)?, args.since.as_deref())
}

/// The table of every unit of `state_dir`, read without the user config
/// (`vf demo`).
pub fn table_of(state_dir: &std::path::Path) -> Result<i32> {
    let req = Request {
        state_dir: state_dir.to_path_buf(),
        unit: None,
        json: false,
        since: None,
        total: false,
        limits: crate::quota::Limits::default(),
    };
    show(&req, None)
}

/// `since_text`: `--since` as given, for the totals.
fn show(req: &Request, since_text: Option<&str>) -> Result<i32> {
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
        super::stdio::eprint_line(format_args!("vf: {}", e.message));
    }
    if let Some(since) = req.since {
        entries.retain(|e| e.as_ref().is_ok_and(|m| finished_since(m, since)));
    }
    let quota = Quota::read(req);
    // Every unit's children: from the listing, or for one unit a scan.
    let tree = match &req.unit {
        Some(_) => crate::unit::lineage::Tree::scan(&req.state_dir),
        None => crate::unit::lineage::Tree::of(entries.iter().filter_map(|e| e.as_ref().ok())),
    };
    let mut rows: Vec<Row> = entries.iter().map(|e| Row::of(e, &quota, &tree)).collect();
    if req.since.is_none() {
        let names: Vec<&str> = entries.iter().map(e_unit).collect();
        let extra = quota.unmarked(&names);
        rows.extend(extra.into_iter().filter(|r| match (r, &req.unit) {
            (Row::Held { unit, .. }, Some(u)) => unit == u,
            _ => true,
        }));
    }
    if req.total {
        let markers: Vec<&Marker> = entries.iter().filter_map(|e| e.as_ref().ok()).collect();
        let total = Total {
            units: markers.len(),
            since: since_text,
            usage: crate::engine::usage::total(markers.iter().filter_map(|m| m.usage.as_ref())),
        };
        print_total(&total, req.json)?;
    } else if req.json {
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

fn e_unit(e: &std::result::Result<Marker, Unusable>) -> &str {
    match e {
        Ok(m) => &m.unit,
        Err(u) => &u.unit,
    }
}

fn print_total(t: &Total, json: bool) -> Result<()> {
    if json {
        return super::print_json(t);
    }
    let used = t
        .usage
        .as_ref()
        .map_or("no usage reported".into(), |u| u.short());
    writeln!(super::stdio::out(), "{} unit(s): {used}", t.units)?;
    Ok(())
}

/// The fixed columns' headers; the last, free-width one is SUMMARY / ERROR.
const HEADERS: [&str; 6] = ["UNIT", "STATE", "ENGINE", "VERSION", "SESSION", "USAGE"];

fn print_table(rows: &[Row], state_dir: &std::path::Path) -> Result<()> {
    let mut out = super::stdio::out();
    if rows.is_empty() {
        writeln!(out, "no units under {}", state_dir.display())?;
        return Ok(());
    }
    // A child under its parent, indented a step per level below it.
    let cells: Vec<Cells> = tree_order(rows)
        .into_iter()
        .map(|(i, level)| {
            let mut c = cells(&rows[i]);
            if let Some(unit) = c.fixed.first_mut() {
                *unit = format!("{}{unit}", "  ".repeat(level));
            }
            c
        })
        .collect();
    // Each column as wide as its widest cell: a long version or unit name
    // never pushes the columns after it out of line.
    let mut widths = HEADERS.map(|h| h.chars().count());
    for c in &cells {
        for (w, cell) in widths.iter_mut().zip(c.fixed.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |fixed: &[String], last: &str| {
        let mut l = String::new();
        for (cell, w) in fixed.iter().zip(widths) {
            l.push_str(&format!("{cell:<w$}   "));
        }
        l.push_str(last);
        l.trim_end().to_string()
    };
    let headers = HEADERS.map(String::from);
    writeln!(out, "{}", line(&headers, "SUMMARY / ERROR"))?;
    for c in &cells {
        writeln!(out, "{}", line(&c.fixed, &c.last))?;
    }
    Ok(())
}

/// The rows' order in the table, each with its level: a unit whose parent
/// is no row here at the top, in the listing's order, each followed by its
/// children's rows (depth first). A cycle of parents, never reached from a
/// top row, shows at the top where it stands.
fn tree_order<'a>(rows: &[Row<'a>]) -> Vec<(usize, usize)> {
    let unit_of = |r: &Row<'a>| -> Option<&'a str> {
        match r {
            Row::Unit { marker, .. } => Some(marker.unit.as_str()),
            _ => None,
        }
    };
    let index: std::collections::HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| unit_of(r).map(|u| (u, i)))
        .collect();
    let parent_shown = |r: &Row| match r {
        Row::Unit { marker, .. } => marker
            .parent
            .as_deref()
            .is_some_and(|p| index.contains_key(p)),
        _ => false,
    };
    let mut seen = vec![false; rows.len()];
    let mut out = Vec::with_capacity(rows.len());
    let tops: Vec<usize> = (0..rows.len())
        .filter(|i| !parent_shown(&rows[*i]))
        .collect();
    let rest = (0..rows.len()).filter(|i| parent_shown(&rows[*i]));
    for top in tops.into_iter().chain(rest) {
        let mut stack = vec![(top, 0)];
        while let Some((i, level)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            out.push((i, level));
            if let Row::Unit { children, .. } = &rows[i] {
                let below = children.iter().rev().filter_map(|c| index.get(c.as_str()));
                stack.extend(below.map(|c| (*c, level + 1)));
            }
        }
    }
    out
}

/// One row of the table: the fixed columns (an unusable marker fills only
/// the first) and the free-width last.
struct Cells {
    fixed: Vec<String>,
    last: String,
}

fn cells(r: &Row) -> Cells {
    let (marker, owner_state, held_by, waiting) = match r {
        Row::Unit {
            marker,
            owner_state,
            held_by,
            waiting,
            ..
        } => (marker, owner_state, held_by, *waiting),
        Row::Held {
            unit,
            engine,
            state,
            held_by,
        } => {
            let fixed = [unit, *state, engine, "-", "-", "-"];
            return Cells {
                fixed: fixed.map(|c| c.to_string()).to_vec(),
                last: held_by.short(),
            };
        }
        Row::Unusable { unit, problem, .. } => {
            return Cells {
                fixed: vec![unit.to_string()],
                last: problem.to_string(),
            };
        }
    };
    let m = marker;
    // A dead vf's `running` marker: the run is over, not running.
    let dead = *owner_state == Some("dead");
    let detail = match (&m.summary, &m.error) {
        _ if dead && m.state == UnitState::Running => format!(
            "its vf (pid {}) is dead; resumable: {}",
            m.owner.as_ref().map_or(0, |o| o.supervisor.pid),
            // `status` runs no CLI: the recorded version stands in.
            match resolve_resume_id(m, recorded_version(m).as_ref()) {
                Ok(_) => format!("vf resume {}", m.unit),
                Err(_) => "dispatch it again".to_string(),
            }
        ),
        (_, Some(e)) => format!("error: {e}"),
        (Some(s), None) => format!("summary: {s}"),
        (None, None) => String::new(),
    };
    let detail = rounds_detail(m, dead, detail);
    let detail = match &m.command {
        Some(c) => format!(
            "command: {} {detail}",
            crate::ground::text::one_line(&c.line, 60)
        ),
        None => detail,
    };
    let detail = match &m.workspace {
        Some(w) => format!("{} {detail}", w.short()).trim_end().to_string(),
        None => detail,
    };
    let detail = quota_detail(m, held_by.as_ref(), detail);
    Cells {
        fixed: vec![
            m.unit.clone(),
            if waiting {
                "waiting"
            } else {
                state_word(m, dead)
            }
            .to_string(),
            m.engine.as_str().to_string(),
            m.engine_version.as_deref().unwrap_or("-").to_string(),
            m.engine_session_id.as_deref().unwrap_or("-").to_string(),
            m.usage.as_ref().map_or("-".into(), |u| u.short()),
        ],
        last: detail,
    }
}

/// The unit's account and the hold on it ahead of `detail`
/// (`account work; quota: claude/work until 14:05:09; …`).
fn quota_detail(m: &Marker, held_by: Option<&HeldBy>, detail: String) -> String {
    use crate::ground::text::one_line;
    let mut head = Vec::new();
    if let Some(a) = &m.account {
        head.push(format!("account {}", one_line(a, 64)));
    }
    if let Some(h) = held_by {
        head.push(one_line(&h.short(), 200));
    }
    if head.is_empty() {
        return detail;
    }
    head.push(detail);
    head.join("; ").trim_end_matches([';', ' ']).to_string()
}

/// The STATE column: a dead vf's `running` marker is `dead`; a unit whose
/// author is done while its loop is open is `done, review pending`, never
/// plain done.
fn state_word(m: &Marker, dead: bool) -> &'static str {
    match m.state {
        UnitState::Running if dead => "dead",
        UnitState::Done if m.loop_open => "done, review pending",
        s => s.as_str(),
    }
}

/// The unit's rounds ahead of `detail` (`rounds: fix 1/2 done, review 1/1
/// approve`); a round still `running` under a dead vf was interrupted.
fn rounds_detail(m: &Marker, dead: bool, detail: String) -> String {
    use super::output::{round_name, rounds_summary};
    use crate::unit::marker::rounds::RoundOutcome;
    if m.rounds.is_empty() {
        return detail;
    }
    let under_way = m
        .rounds
        .iter()
        .rfind(|r| r.outcome == RoundOutcome::Running);
    let text = crate::ground::text::one_line(&rounds_summary(&m.rounds), 200);
    match under_way {
        Some(r) if dead => {
            let resumable = if state_refusal(m).is_none() {
                "; resumable"
            } else {
                ""
            };
            format!(
                "interrupted in {}{resumable}; rounds: {text}; {detail}",
                round_name(r.kind.as_str(), r.n, r.of)
            )
        }
        _ => format!("rounds: {text}; {detail}"),
    }
    .trim_end_matches([';', ' '])
    .to_string()
}

fn recorded_version(m: &Marker) -> Option<crate::ground::version::Version> {
    m.engine_version
        .as_deref()
        .and_then(crate::ground::version::Version::parse)
}
