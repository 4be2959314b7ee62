//! `vf doctor`: each engine's readiness on this machine, as a table or JSON.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::stdio::eprint_line;
use crate::cli::DoctorArgs;
use crate::engine::EngineId;
use crate::ground::error::{Result, exit};
use crate::process::orphans::{self, Class, Finding};
use crate::readiness::doctor::{self, EngineReport, Options, Verdict};

/// The auxiliary runtime reported alongside the engines.
const AUX_RUNTIME: &str = "bun";

pub fn run(args: &DoctorArgs) -> Result<i32> {
    let given: Vec<EngineId> = args.engine.iter().filter_map(|c| c.engine()).collect();
    let ids = selected(&given);
    let preset = args.engine.iter().find_map(|c| c.engine().zip(c.preset()));
    let opts = Options {
        timeout: Duration::from_secs(args.timeout),
        refresh: args.refresh,
        preset,
    };
    let state_dir =
        super::config::state_dir(args.state.state_dir.as_deref(), &std::env::current_dir()?)?;
    if args.fix {
        return fix(&state_dir, args.json);
    }
    let probe_timeout = args.probe.then(|| Duration::from_secs(args.probe_timeout));
    let findings = orphans::scan(&state_dir);
    if args.json {
        let mut reports = doctor::check(&ids, &opts);
        run_probes(&mut reports, probe_timeout)?;
        let sandbox = sandbox_fact();
        let shown: Vec<Reported> = reports
            .iter()
            .map(|r| Reported {
                report: r,
                leftover_groups: leftovers(&findings, Some(r.engine)).collect(),
                sandbox: &sandbox,
            })
            .collect();
        super::print_json(&shown)?;
        return Ok(exit_code(&reports));
    }
    let (mut reports, aux) = std::thread::scope(|s| {
        let aux = s.spawn(|| doctor::auxiliary(AUX_RUNTIME, doctor::VERIFIED_BUN, &opts));
        let reports = doctor::check(&ids, &opts);
        (
            reports,
            aux.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        )
    });
    run_probes(&mut reports, probe_timeout)?;
    print_table(&reports, &aux)?;
    print_sandbox(&sandbox_fact())?;
    print_orphans(&findings, &ids, &state_dir)?;
    Ok(exit_code(&reports))
}

/// `--engine` as given, each once, in order; every engine when none is given.
fn selected(given: &[EngineId]) -> Vec<EngineId> {
    let mut ids: Vec<EngineId> = Vec::new();
    for &e in given {
        if !ids.contains(&e) {
            ids.push(e);
        }
    }
    if ids.is_empty() {
        // Every CLI, and each command engine that is configured (`VIBEFLOW_AI`).
        let configured = EngineId::COMMANDS.into_iter().filter(|e| {
            e.engine()
                .spec()
                .command
                .is_some_and(|s| s.from_env().is_some())
        });
        ids = EngineId::ALL.into_iter().chain(configured).collect();
    }
    ids
}

/// 0 when every engine passes (probe included), else the engine-failed code.
fn exit_code(reports: &[EngineReport]) -> i32 {
    if reports.iter().all(EngineReport::passes) {
        exit::OK
    } else {
        exit::ENGINE_FAILED
    }
}

/// An engine's report, with the process groups its dead vf left behind that
/// vf cannot prove are its own (listed so they can be ended by hand).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Reported<'a> {
    #[serde(flatten)]
    report: &'a EngineReport,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    leftover_groups: Vec<&'a Finding>,
    /// Whether this machine can hold a unit's `--sandbox` (the same for every engine).
    sandbox: &'a SandboxFact,
}

/// This machine's sandbox (docs/SANDBOX.md): `enforced` with its
/// mechanism, or `unenforced` and what is missing.
#[derive(Serialize)]
struct SandboxFact {
    state: &'static str,
    mechanism: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missing: Vec<String>,
}

fn sandbox_fact() -> SandboxFact {
    let support = crate::dispatch::confine::support();
    let missing = crate::dispatch::confine::missing(&support);
    SandboxFact {
        state: if missing.is_empty() {
            "enforced"
        } else {
            "unenforced"
        },
        mechanism: support.mechanism(),
        missing,
    }
}

/// One line after the table: can `--sandbox` be enforced here.
fn print_sandbox(f: &SandboxFact) -> Result<()> {
    let mut out = super::stdio::out();
    let by = f.mechanism.as_deref().unwrap_or("no mechanism");
    match f.missing.is_empty() {
        true => writeln!(out, "sandbox (--sandbox): enforced here by {by}")?,
        false => writeln!(
            out,
            "sandbox (--sandbox): unenforced here ({by}): {}",
            f.missing.join("; ")
        )?,
    }
    Ok(())
}

/// Findings of leaderless groups (of `engine`'s records, when given).
fn leftovers(findings: &[Finding], engine: Option<EngineId>) -> impl Iterator<Item = &Finding> {
    findings
        .iter()
        .filter(move |f| f.leftover.is_some() && engine.is_none_or(|e| f.engine == Some(e)))
}

/// After the table: proven orphans (for `--fix`) and the leftover groups of
/// the engines checked, with the command that ends each by hand.
fn print_orphans(findings: &[Finding], ids: &[EngineId], state_dir: &Path) -> Result<()> {
    let mut out = super::stdio::out();
    let proven = findings.iter().filter(|f| f.class == Class::Orphan).count();
    if proven > 0 {
        writeln!(
            out,
            "{proven} orphaned engine process group(s) under {}: run `vf doctor --fix` to end them.",
            state_dir.display()
        )?;
    }
    for f in leftovers(findings, None).filter(|f| f.engine.is_some_and(|e| ids.contains(&e))) {
        writeln!(
            out,
            "Process group {} of unit {} (attempt {}) outlived its vf and its CLI; vf cannot prove it is its own, so it leaves it alone:",
            f.pgid.unwrap_or(0),
            f.unit.as_deref().unwrap_or("?"),
            f.attempt.unwrap_or(0)
        )?;
        write_leftover(&mut out, f)?;
    }
    Ok(())
}

/// The members of a finding's leftover group and how to end it by hand.
fn write_leftover(out: &mut impl Write, f: &Finding) -> Result<()> {
    let Some(left) = &f.leftover else {
        return Ok(());
    };
    for m in &left.members {
        let age = m.age_secs.map_or("?".to_string(), human_age);
        writeln!(out, "  pid {:<8} up {:<8} {}", m.pid, age, m.command)?;
    }
    writeln!(
        out,
        "  end it by hand once you have checked it: {}",
        left.manual
    )?;
    Ok(())
}

fn human_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

/// `vf doctor --fix`: end proven orphans, release stale records, leave the rest.
fn fix(state_dir: &Path, json: bool) -> Result<i32> {
    use crate::process::orphans::{Action, Class};
    let findings = orphans::fix(state_dir, crate::process::child::kill_grace_from_env()?);
    // Private text a killed run left in a prompt file goes with its orphans.
    match crate::dispatch::remove_stale_prompt_files(state_dir) {
        Ok(removed) => {
            for p in removed {
                eprint_line(format_args!(
                    "vf: removed a stale prompt file {}",
                    p.display()
                ));
            }
        }
        Err(e) => eprint_line(format_args!(
            "vf: warning: cannot clean stale prompt files: {e}"
        )),
    }
    if json {
        super::print_json(&findings)?;
    } else {
        let mut out = super::stdio::out();
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
            write_leftover(&mut out, f)?;
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
            // A command engine has no canary: vf cannot know what it answers.
            if r.verdict != Verdict::Ready || r.engine.engine().spec().command.is_some() {
                continue;
            }
            let Some(path) = r.path.clone() else { continue };
            let (engine, version) = (r.engine, r.version.clone());
            set.spawn_local(async move {
                (
                    i,
                    crate::readiness::probe::probe(engine, path.into(), version, timeout).await,
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
    let mut out = super::stdio::out();
    writeln!(
        out,
        "{:<9} {:<9} {:<10} {:<18} PATH",
        "ENGINE", "VERDICT", "VERSION", "VERIFICATION"
    )?;
    for r in reports {
        print_report(&mut out, r)?;
    }
    writeln!(out)?;
    print_aux(&mut out, aux)?;
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

/// One engine's table row and the indented lines under it.
fn print_report(out: &mut impl Write, r: &EngineReport) -> Result<()> {
    let version = match (&r.version, r.verdict) {
        (Some(v), _) => v.to_string(),
        (None, Verdict::Missing) => "-".into(),
        // A command engine has no version to read.
        (None, _) if r.engine.engine().spec().command.is_some() => "-".into(),
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
    Ok(())
}

/// The auxiliary runtime's line: its verdict, version and path, and why it
/// is degraded (it changes no engine's verdict, nor the exit status).
fn print_aux(out: &mut impl Write, aux: &doctor::Auxiliary) -> Result<()> {
    let name = aux.name;
    let Some(((path, version), (verdict, why))) = aux.found.as_ref().zip(aux.verdict()) else {
        writeln!(
            out,
            "{name} (auxiliary runtime): not found on PATH (optional)"
        )?;
        return Ok(());
    };
    let version = version.as_ref().map_or("?".to_string(), |v| v.to_string());
    writeln!(
        out,
        "{name} (auxiliary runtime): {}, {version} at {} (verified: {})",
        verdict.as_str(),
        path.display(),
        aux.verified
    )?;
    if let Some(why) = why {
        writeln!(out, "          - {why}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// cli.rs may not import doctor or probe: their defaults are restated
    /// there as the flags' own; this keeps the two equal.
    #[test]
    fn the_flags_defaults_are_the_cores_defaults() {
        use std::time::Duration;
        assert_eq!(
            Duration::from_secs(crate::cli::DOCTOR_TIMEOUT_SECS),
            crate::readiness::doctor::DEFAULT_TIMEOUT
        );
        assert_eq!(
            Duration::from_secs(crate::cli::PROBE_TIMEOUT_SECS),
            crate::readiness::probe::DEFAULT_PROBE_TIMEOUT
        );
        assert_eq!(super::human_age(59), "59s");
        assert_eq!(super::human_age(61), "1m01s");
        assert_eq!(super::human_age(7260), "2h01m");
    }
}
