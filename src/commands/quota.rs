//! `vf quota`: the quota governor's ledger as this process sees it (each
//! engine account's state, utilization, reset, waiting units, where the
//! figure came from); `vf quota clear` drops holds by hand. A ledger vf
//! cannot use is a warning on stderr: the command answers from what it has.

use std::io::Write;

use serde::Serialize;

use crate::cli::{QuotaArgs, QuotaClearArgs, QuotaCommand};
use crate::engine::EngineId;
use crate::ground::error::{Result, VfError};
use crate::ground::names;
use crate::ground::text::one_line;
use crate::plan::config::{self, Config};
use crate::quota::{self, Account, Entry, Limits};
use crate::report::quota::{View, reset_of, utc, utilization, views};

use super::stdio::eprint_line;

pub fn run(args: &QuotaArgs) -> Result<i32> {
    match &args.command {
        Some(QuotaCommand::Clear(c)) => clear(c, args.json),
        None => show(args),
    }
}

/// The `pause_at` to show states for: the flag, else the user config's
/// `[defaults]`; outside 1–100 is a usage error.
fn pause_at(args: &QuotaArgs, cfg: &Config) -> Result<Option<f64>> {
    let p = args.pause_at.or_else(|| cfg.get::<f64>("pause_at"));
    match p {
        Some(p) if !(1.0..=100.0).contains(&p) => Err(VfError::usage(format!(
            "invalid --pause-at {p}: a percent from 1 to 100"
        ))),
        _ => Ok(p),
    }
}

/// The accounts the user config declares (`[[accounts]]`): each is listed,
/// `open` when the ledger knows nothing of it.
fn declared(cfg: &Config) -> Vec<Account> {
    cfg.accounts.clone()
}

fn warn(w: quota::Warning) {
    if let Some(w) = w {
        eprint_line(format_args!("vf: warning: {w}"));
    }
}

#[derive(Serialize)]
struct Shown<'a> {
    /// The ledger's file (absent: none could be found).
    ledger: Option<String>,
    #[serde(rename = "pauseAt")]
    pause_at: Option<f64>,
    entries: &'a [View],
}

fn show(args: &QuotaArgs) -> Result<i32> {
    let cfg = config::load()?;
    let lim = Limits {
        pause_at: pause_at(args, &cfg)?,
        ..Limits::default()
    };
    let (entries, w) = crate::report::quota::entries();
    warn(w);
    let shown = views(&entries, &declared(&cfg), quota::now_ms(), &lim);
    let ledger = quota::ledger::path().map(|p| p.display().to_string());
    if args.json {
        super::print_json(&Shown {
            ledger,
            pause_at: lim.pause_at,
            entries: &shown,
        })?;
    } else {
        let text = table(&shown, ledger.as_deref());
        super::stdio::out().write_all(text.as_bytes())?;
    }
    Ok(0)
}

/// The human table: a row per account, its waiting units below it.
fn table(views: &[View], ledger: Option<&str>) -> String {
    let ledger = one_line(ledger.unwrap_or("(none)"), 200);
    if views.is_empty() {
        return format!("no engine account in the quota ledger {ledger}: every one is open\n");
    }
    let mut s = format!(
        "{:<9} {:<16} {:<10} {:>5}  {:<10} {:<20} SOURCE\n",
        "ENGINE", "ACCOUNT", "STATE", "USED", "WINDOW", "RESET (UTC)"
    );
    for v in views {
        s.push_str(&row(v));
        for w in &v.entry.waiting {
            s.push_str(&format!(
                "  waiting: {} ({}) since {}\n",
                one_line(&w.unit, 64),
                one_line(&w.state_dir, 200),
                utc(w.since)
            ));
        }
    }
    s
}

fn row(v: &View) -> String {
    let e = &v.entry;
    let window = e.window.as_ref().and_then(|w| w.name.as_deref());
    let source = match (&e.source, &e.unit, e.learned_at) {
        (None, _, _) => "-".to_string(),
        (Some(src), unit, at) => format!(
            "{}{}{}",
            one_line(src, 60),
            unit.as_deref()
                .map(|u| format!(", unit {}", one_line(u, 64)))
                .unwrap_or_default(),
            at.map(|t| format!(", at {}", utc(t))).unwrap_or_default()
        ),
    };
    format!(
        "{:<9} {:<16} {:<10} {:>5}  {:<10} {:<20} {}\n",
        one_line(&e.engine, 20),
        one_line(&e.account, 64),
        v.state.as_str(),
        utilization(e),
        one_line(window.unwrap_or("-"), 20),
        reset_of(v).map_or_else(|| "-".into(), utc),
        source
    )
}

/// `ENGINE` or `ENGINE/ACCOUNT`, checked: a known engine, a valid name.
fn target(t: &str) -> Result<(String, Option<String>)> {
    let (engine, account) = match t.split_once('/') {
        Some((e, a)) => (e, Some(a)),
        None => (t, None),
    };
    if EngineId::parse(engine).is_none() {
        return Err(VfError::usage(format!(
            "unknown engine {} in {}: expected one of {}",
            crate::ground::text::shown(engine, 40),
            crate::ground::text::shown(t, 80),
            EngineId::every()
                .map(|e| e.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(a) = account {
        names::check("account name", a)?;
    }
    Ok((engine.to_string(), account.map(String::from)))
}

#[derive(Serialize)]
struct Cleared<'a> {
    cleared: &'a [Entry],
}

fn clear(args: &QuotaClearArgs, json: bool) -> Result<i32> {
    let (engine, account) = match args.target.as_deref() {
        Some(t) => {
            let (e, a) = target(t)?;
            (Some(e), a)
        }
        None => (None, None),
    };
    let (gone, w) = quota::clear(engine.as_deref(), account.as_deref());
    warn(w);
    if json {
        return super::print_json(&Cleared { cleared: &gone }).map(|()| 0);
    }
    let mut s = String::new();
    for e in &gone {
        let what = match (e.held_until, e.hold) {
            (Some(t), Some(k)) => format!(" ({} until {} UTC)", k.name(), utc(t)),
            _ => String::new(),
        };
        s.push_str(&format!(
            "dropped {}/{}{what}\n",
            one_line(&e.engine, 20),
            one_line(&e.account, 64)
        ));
    }
    if gone.is_empty() {
        s.push_str("nothing to drop: no such entry in the quota ledger\n");
    }
    super::stdio::out().write_all(s.as_bytes())?;
    Ok(0)
}
