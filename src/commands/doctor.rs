//! `vf doctor`: each engine's readiness on this machine, as a table or JSON.

use std::io::Write;
use std::time::Duration;

use crate::cli::DoctorArgs;
use crate::doctor::{self, EngineReport, Options, Verdict};
use crate::engine::EngineId;
use crate::error::{Result, exit};

/// The auxiliary runtime reported alongside the engines.
const AUX_RUNTIME: &str = "bun";

pub fn run(args: &DoctorArgs) -> Result<i32> {
    let mut ids: Vec<EngineId> = Vec::new();
    for &e in &args.engine {
        if !ids.contains(&e) {
            ids.push(e);
        }
    }
    if ids.is_empty() {
        ids = EngineId::ALL.to_vec();
    }
    let opts = Options {
        timeout: Duration::from_secs(args.timeout),
    };

    let code = |reports: &[EngineReport]| {
        if reports.iter().all(EngineReport::passes) {
            exit::OK
        } else {
            exit::ENGINE_FAILED
        }
    };
    let state_dir =
        crate::state::resolve_state_dir(args.state_dir.as_deref(), &std::env::current_dir()?)?;
    if args.fix {
        return fix(&state_dir, args.json);
    }
    let probe_timeout = args.probe.then(|| Duration::from_secs(args.probe_timeout));
    if args.json {
        let mut reports = doctor::check(&ids, &opts);
        run_probes(&mut reports, probe_timeout)?;
        super::print_json(&reports)?;
        return Ok(code(&reports));
    }
    let (mut reports, aux) = std::thread::scope(|s| {
        let aux = s.spawn(|| doctor::auxiliary(AUX_RUNTIME, &opts));
        let reports = doctor::check(&ids, &opts);
        (
            reports,
            aux.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        )
    });
    run_probes(&mut reports, probe_timeout)?;
    print_table(&reports, &aux)?;
    let orphans = crate::orphans::scan(&state_dir)
        .into_iter()
        .filter(|f| f.class == crate::orphans::Class::Orphan)
        .count();
    if orphans > 0 {
        writeln!(
            std::io::stdout(),
            "{orphans} orphaned engine process group(s) under {}: run `vf doctor --fix` to end them.",
            state_dir.display()
        )?;
    }
    Ok(code(&reports))
}

/// `vf doctor --fix`: end proven orphans, release stale records, leave the rest.
fn fix(state_dir: &std::path::Path, json: bool) -> Result<i32> {
    use crate::orphans::{Action, Class};
    let findings = crate::orphans::fix(state_dir, crate::dispatch::UnitSpec::default_kill_grace());
    if json {
        super::print_json(&findings)?;
    } else {
        let mut out = std::io::stdout().lock();
        if findings.is_empty() {
            writeln!(out, "no process records under {}", state_dir.display())?;
        }
        for f in &findings {
            let class = match f.class {
                Class::Owned => "owned",
                Class::Orphan => "orphan",
                Class::Stale => "stale",
                Class::Unproven => "unproven",
                Class::Corrupt => "corrupt",
            };
            let action = match f.action {
                Action::None => "left alone",
                Action::Ended => "ended",
                Action::Released => "released",
                Action::Failed => "FAILED",
            };
            writeln!(
                out,
                "{:<24} {:<9} {:<10} pgid {:<8} {}{}",
                f.unit.as_deref().unwrap_or("?"),
                class,
                action,
                f.pgid.map_or("-".to_string(), |p| p.to_string()),
                f.reason,
                f.detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )?;
        }
    }
    Ok(if findings.iter().any(|f| f.action == Action::Failed) {
        exit::ENGINE_FAILED
    } else {
        exit::OK
    })
}

/// The canary stage: every `ready` engine is probed, concurrently.
fn run_probes(reports: &mut [EngineReport], timeout: Option<Duration>) -> Result<()> {
    let Some(timeout) = timeout else {
        return Ok(());
    };
    // Local tasks: a dispatch's event sink need not be Send.
    let local = tokio::task::LocalSet::new();
    let results = super::block_on(local.run_until(async {
        let mut set = tokio::task::JoinSet::new();
        for (i, r) in reports.iter().enumerate() {
            if r.verdict != Verdict::Ready {
                continue;
            }
            let Some(path) = r.path.clone() else { continue };
            let (engine, version) = (r.engine, r.version.clone());
            set.spawn_local(async move {
                (
                    i,
                    crate::probe::probe(engine, path.into(), version, timeout).await,
                )
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(pair) = joined {
                out.push(pair);
            }
        }
        out
    }))?;
    for (i, p) in results {
        reports[i].probe = Some(p);
    }
    Ok(())
}

fn print_table(reports: &[EngineReport], aux: &doctor::Auxiliary) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<9} {:<9} {:<10} {:<18} PATH",
        "ENGINE", "VERDICT", "VERSION", "VERIFICATION"
    )?;
    for r in reports {
        let version = match (&r.version, r.verdict) {
            (Some(v), _) => v.to_string(),
            (None, Verdict::Missing) => "-".into(),
            (None, _) => "?".into(),
        };
        writeln!(
            out,
            "{:<9} {:<9} {:<10} {:<18} {}",
            r.engine.as_str(),
            r.verdict.as_str(),
            version,
            r.verification.map_or("-", |v| v.as_str()),
            r.path.as_deref().unwrap_or("-"),
        )?;
        for reason in &r.reasons {
            writeln!(out, "          - {reason}")?;
        }
        for w in &r.warnings {
            writeln!(out, "          ! {w}")?;
        }
        for n in &r.notes {
            writeln!(out, "          note: {n}")?;
        }
        match &r.probe {
            Some(p) if p.result == doctor::ProbeVerdict::Pass => writeln!(
                out,
                "          probe: pass (session {})",
                p.session_id.as_deref().unwrap_or("-")
            )?,
            Some(p) => writeln!(
                out,
                "          probe: FAIL: {}",
                p.reason.as_deref().unwrap_or("?")
            )?,
            None => {}
        }
    }
    writeln!(out)?;
    match &aux.found {
        None => writeln!(
            out,
            "{} (auxiliary runtime): not found on PATH (optional)",
            aux.name
        )?,
        Some((path, Ok(v))) => writeln!(
            out,
            "{} (auxiliary runtime): {v} at {}",
            aux.name,
            path.display()
        )?,
        Some((path, Err(e))) => writeln!(
            out,
            "{} (auxiliary runtime): at {}, but `{} --version` {e}",
            aux.name,
            path.display(),
            aux.name
        )?,
    }
    let ready = reports.iter().filter(|r| r.passes()).count();
    writeln!(out, "{ready} of {} engines ready.", reports.len())?;
    if reports.iter().any(|r| r.timed_out) {
        writeln!(
            out,
            "A call that timed out may only be slow on a busy machine: rerun with a larger --timeout."
        )?;
    }
    Ok(())
}
