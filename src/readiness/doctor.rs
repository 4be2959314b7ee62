//! `vf doctor`: is each engine installed, at a verified version, with the
//! flags vf relies on?
//!
//! The checks run in stages, so the live canary (`--probe`, which needs the
//! dispatch runtime) stays out of them:
//! 1. [`gather`] runs the binary (`--version`, each distinct help invocation),
//!    every call bounded by the timeout: all I/O is here.
//! 2. [`judge`] turns those facts into an [`EngineReport`]: pure, no I/O.
//! 3. `crate::readiness::probe` runs a canary on the `ready` reports and fills
//!    [`EngineReport::probe`]; [`EngineReport::passes`] accounts for it.
//!
//! [`check`] does 1 and 2 for several engines, each on its own thread, so a
//! few hung CLIs cost one timeout each in parallel rather than in sequence.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub mod acp_check;
pub mod acp_handshake;
mod auxiliary;
pub mod cache;

pub use auxiliary::{Auxiliary, VERIFIED_BUN, auxiliary};

use crate::engine::{Engine, EngineCommand, EngineId, Spec};
use crate::ground::text::strip_ansi;
use crate::ground::version::{self, Verification, Version};
use crate::process::binary::{self, Captured, ResolveError, RunError, VersionError};

/// Default limit for each `--version` / `--help` call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Limit for each single call of the CLI.
    pub timeout: Duration,
    /// Run every CLI again instead of using what `doctor::cache` remembers.
    pub refresh: bool,
    /// `-e KIND:PRESET`: that command engine's command is the preset's.
    pub preset: Option<(EngineId, &'static crate::engine::Preset)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: DEFAULT_TIMEOUT,
            refresh: false,
            preset: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Installed, verified version, every required flag present (warnings allowed).
    Ready,
    /// Installed, but something vf relies on is off (see `reasons`).
    Degraded,
    /// No usable binary.
    Missing,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::Degraded => "degraded",
            Verdict::Missing => "missing",
        }
    }
}

/// The result of a live canary run (`vf doctor --probe`, filled in by the probe stage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub result: ProbeVerdict,
    pub reason: Option<String>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeVerdict {
    Pass,
    Fail,
}

/// One engine's readiness, as printed by `vf doctor --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineReport {
    pub engine: EngineId,
    /// The resolved binary (null when missing).
    pub path: Option<String>,
    /// The version parsed from `--version` (null when missing or unreadable).
    pub version: Option<Version>,
    /// How that version relates to the verified ones (null when missing).
    pub verification: Option<Verification>,
    /// Labels of required flags the CLI's help does not mention.
    pub missing_flags: Vec<&'static str>,
    pub verdict: Verdict,
    /// Why the verdict is not `ready`.
    pub reasons: Vec<String>,
    /// Things worth knowing that do not change the verdict.
    pub warnings: Vec<String>,
    /// Facts about this machine that change how the engine behaves (claude as root).
    pub notes: Vec<String>,
    /// How to install the engine (only when missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<&'static str>,
    /// The live canary's result (only with `--probe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeResult>,
    /// An ACP agent's handshake (`initialize`): who answered, and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acp: Option<acp_check::AcpReport>,
    /// A call was cut off by the timeout (a busy machine can cause that, too).
    #[serde(skip)]
    pub timed_out: bool,
}

impl EngineReport {
    /// Ready, and the probe (when one ran) passed: what the exit code reflects.
    pub fn passes(&self) -> bool {
        self.verdict == Verdict::Ready
            && self
                .probe
                .as_ref()
                .is_none_or(|p| p.result == ProbeVerdict::Pass)
    }
}

/// One help invocation and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpRun {
    pub args: &'static [&'static str],
    pub output: Result<Captured, RunError>,
}

/// What running an engine's binary established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facts {
    Missing(ResolveError),
    Found {
        path: PathBuf,
        version: Result<Version, VersionError>,
        /// One per distinct `help_args` of the spec's required flags, in order.
        helps: Vec<HelpRun>,
    },
}

/// Resolves and runs `id`'s binary: `--version`, then each distinct help invocation.
pub fn gather(id: EngineId, opts: &Options) -> Facts {
    let path = match binary::resolve_binary(id, None) {
        Ok(p) => p,
        Err(e) => return Facts::Missing(e),
    };
    let help_args = distinct_help_args(id.engine());
    if !opts.refresh
        && let Some(facts) = cache::load_facts(id, &path, &help_args)
    {
        return facts;
    }
    let before = cache::Identity::of(&path);
    let version = binary::read_version(&path, opts.timeout);
    let helps = help_args
        .into_iter()
        .map(|args| HelpRun {
            args,
            output: binary::run_briefly(&path, args, opts.timeout),
        })
        .collect();
    let facts = Facts::Found {
        path,
        version,
        helps,
    };
    cache::store_facts(id, before, &facts);
    facts
}

/// Each help invocation once, in first-use order (several flags share one).
fn distinct_help_args(engine: &dyn Engine) -> Vec<&'static [&'static str]> {
    let mut out: Vec<&'static [&'static str]> = Vec::new();
    for f in engine.spec().required_flags {
        if !out.contains(&f.help_args) {
            out.push(f.help_args);
        }
    }
    out
}

/// Turns `facts` about `engine` into a report.
pub fn judge(engine: &dyn Engine, facts: Facts) -> EngineReport {
    let spec = engine.spec();
    let (path, version, helps) = match facts {
        Facts::Missing(e) => return missing_report(spec, &e),
        Facts::Found {
            path,
            version,
            helps,
        } => (path, version, helps),
    };
    let verification = version::verify(version.as_ref().ok(), spec.verified_versions);
    let mut f = Findings::default();
    f.judge_version(engine, &version, verification);
    for help in &helps {
        f.judge_help(spec, help);
    }
    f.name_missing_flags();
    let timed_out = matches!(version, Err(VersionError::Run(RunError::TimedOut(_))))
        || helps
            .iter()
            .any(|h| matches!(h.output, Err(RunError::TimedOut(_))));
    EngineReport {
        engine: spec.id,
        path: Some(path.to_string_lossy().into_owned()),
        version: version.ok(),
        verification: Some(verification),
        verdict: if f.reasons.is_empty() {
            Verdict::Ready
        } else {
            Verdict::Degraded
        },
        missing_flags: f.missing_flags,
        reasons: f.reasons,
        warnings: f.warnings,
        notes: Vec::new(),
        install_hint: None,
        probe: None,
        acp: None,
        timed_out,
    }
}

/// The report of an engine whose binary was not found.
fn missing_report(spec: &Spec, e: &ResolveError) -> EngineReport {
    EngineReport {
        engine: spec.id,
        path: None,
        version: None,
        verification: None,
        missing_flags: Vec::new(),
        verdict: Verdict::Missing,
        reasons: vec![e.to_string()],
        warnings: Vec::new(),
        notes: Vec::new(),
        install_hint: Some(spec.install_hint),
        probe: None,
        acp: None,
        timed_out: false,
    }
}

/// What [`judge`] found wrong with an installed engine, in the order it looked.
#[derive(Default)]
struct Findings {
    reasons: Vec<String>,
    warnings: Vec<String>,
    missing_flags: Vec<&'static str>,
}

impl Findings {
    /// The version read (or not) against the verified ones.
    fn judge_version(
        &mut self,
        engine: &dyn Engine,
        version: &Result<Version, VersionError>,
        verification: Verification,
    ) {
        let spec = engine.spec();
        let reason = match (version, verification) {
            (_, Verification::Verified) => return,
            (Err(e), _) => {
                let msg = format!("{} {e}", shown(spec, &["--version"]));
                if engine.tolerates_unreadable_version() {
                    self.warnings.push(format!(
                        "{msg} (a warning only: vf can run {} without knowing its version)",
                        spec.id
                    ));
                    return;
                }
                msg
            }
            (Ok(v), Verification::NewerUnverified) => format!(
                "version {v} is newer than the newest verified version ({}); its output may have changed",
                spec.verified_versions.first().copied().unwrap_or("none")
            ),
            (Ok(v), Verification::Older) => format!(
                "version {v} is older than the oldest verified version ({}); upgrade it",
                spec.verified_versions.last().copied().unwrap_or("none")
            ),
            (Ok(v), _) if spec.verified_versions.is_empty() => format!(
                "version {v} is unverified: no version of {} has been verified yet",
                spec.id
            ),
            (Ok(v), _) => format!(
                "version {v} is not a verified version ({})",
                spec.verified_versions.join(", ")
            ),
        };
        self.reasons.push(reason);
    }

    /// One help invocation: the required flags it should mention, or why they
    /// could not be checked (unchecked is not missing).
    fn judge_help(&mut self, spec: &Spec, help: &HelpRun) {
        let checks: Vec<_> = spec
            .required_flags
            .iter()
            .filter(|f| f.help_args == help.args)
            .collect();
        let labels = || {
            let l: Vec<_> = checks.iter().map(|f| f.label).collect();
            l.join(", ")
        };
        match &help.output {
            Err(e) => self.reasons.push(format!(
                "could not check {}: {} {e}",
                labels(),
                shown(spec, help.args)
            )),
            Ok(c) if c.stdout.trim().is_empty() && c.stderr.trim().is_empty() => {
                self.reasons.push(format!(
                    "could not check {}: {} printed nothing{}",
                    labels(),
                    shown(spec, help.args),
                    match c.code {
                        Some(0) => String::new(),
                        Some(n) => format!(" (exit status {n})"),
                        None => " (killed by a signal)".into(),
                    }
                ))
            }
            Ok(c) => {
                let text = strip_ansi(&format!("{}\n{}", c.stdout, c.stderr));
                self.missing_flags.extend(
                    checks
                        .iter()
                        .filter(|f| !mentions_flag(&text, f.flag))
                        .map(|f| f.label),
                );
            }
        }
    }

    /// One reason naming every flag the help output lacks.
    fn name_missing_flags(&mut self) {
        if self.missing_flags.is_empty() {
            return;
        }
        let what = if self.missing_flags.len() == 1 {
            "a flag vf uses"
        } else {
            "flags vf uses"
        };
        self.reasons.push(format!(
            "the help output lacks {what}: {}",
            self.missing_flags.join(", ")
        ));
    }
}

/// `` `binary args...` `` as the user would type it.
fn shown(spec: &Spec, args: &[&str]) -> String {
    let mut s = format!("`{}", spec.binary);
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s.push('`');
    s
}

/// A command engine (the bridge) with its configured command (its variable,
/// `VIBEFLOW_AI`): unverifiable, so the report says what can be known, the
/// command's first token resolved to a path, or why not. No version check.
pub fn command_report(id: EngineId, line: Option<String>) -> EngineReport {
    let spec = id.engine().spec();
    let mut r = missing_report(
        spec,
        &ResolveError::NotFound {
            engine: id,
            binary: "",
        },
    );
    let Some(src) = spec.command else {
        return r;
    };
    let command = match line {
        None => Err(format!(
            "no {id} is configured: set {} to its command",
            src.env
        )),
        Some(line) => EngineCommand::new(line, None, src.env).map_err(|e| e.to_string()),
    };
    let resolved = command.and_then(|c| {
        let token = c.first_token();
        binary::resolve_program(&token)
            .map_err(|why| format!("the command's first token does not resolve: {why}"))
            .map(|path| (token, path))
    });
    match resolved {
        Err(why) => r.reasons = vec![why],
        Ok((token, path)) => {
            r.path = Some(path.to_string_lossy().into_owned());
            r.verdict = Verdict::Ready;
            r.reasons.clear();
            r.install_hint = None;
            r.warnings.push(format!(
                "unverifiable: vf resolved the first token {} of {}; it checks no version or flags",
                crate::ground::text::shown(&token, 80),
                src.env
            ));
        }
    }
    r
}

/// Gathers and judges each engine, concurrently; reports come back in `ids` order.
pub fn check(ids: &[EngineId], opts: &Options) -> Vec<EngineReport> {
    let host = Host::current();
    std::thread::scope(|s| {
        let handles: Vec<_> = ids
            .iter()
            .map(|&id| {
                let host = &host;
                s.spawn(move || {
                    if let Some(src) = id.engine().spec().command {
                        let preset = opts.preset.filter(|(e, _)| *e == id);
                        let line = preset.map(|(_, p)| p.command.to_string());
                        let env = preset.and_then(|(_, p)| p.command().ok());
                        let env = env.map(|c| c.env).unwrap_or_default();
                        let line = line.or_else(|| src.from_env());
                        let r = command_report(id, line.clone());
                        return acp_check::with_handshake(r, line, &env, opts.timeout);
                    }
                    let mut r = judge(id.engine(), gather(id, opts));
                    if r.verdict != Verdict::Missing {
                        r.notes = notes(id, host);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// What about this machine matters to an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// vf runs with effective uid 0 (and so does the engine it starts).
    pub root: bool,
    /// The user's `IS_SANDBOX` (claude reads it; vf only passes it on).
    pub is_sandbox: Option<String>,
}

impl Host {
    pub fn current() -> Host {
        Host {
            root: crate::sys::is_superuser(),
            is_sandbox: std::env::var("IS_SANDBOX").ok(),
        }
    }
}

/// Notes for `id` on `host`: claude refuses `--dangerously-skip-permissions` as
/// root unless `IS_SANDBOX=1` (ENGINES.md, "claude as root").
pub fn notes(id: EngineId, host: &Host) -> Vec<String> {
    if id != EngineId::Claude || !host.root {
        return Vec::new();
    }
    vec![match host.is_sandbox.as_deref() {
        Some("1") => "running as root: IS_SANDBOX=1 is set, so claude accepts \
            --dangerously-skip-permissions (vf --skip-permissions)"
            .to_string(),
        _ => "running as root: claude refuses --dangerously-skip-permissions (vf \
            --skip-permissions) unless IS_SANDBOX=1 is set; in a container or CI set it \
            yourself (vf never sets it for you)"
            .to_string(),
    }]
}

/// True when `flag` appears in `text` as a whole option: not as part of a
/// longer one (`--json` does not match `--json-schema`, `-p` not `--prompt`).
pub fn mentions_flag(text: &str, flag: &str) -> bool {
    if flag.is_empty() {
        return false;
    }
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(flag).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + flag.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(args: &'static [&'static str], text: &str) -> HelpRun {
        HelpRun {
            args,
            output: Ok(Captured {
                stdout: text.into(),
                stderr: String::new(),
                code: Some(0),
            }),
        }
    }

    /// Help runs mentioning every required flag of `id`.
    fn full_helps(id: EngineId) -> Vec<HelpRun> {
        let e = id.engine();
        distinct_help_args(e)
            .into_iter()
            .map(|args| {
                let text: Vec<String> = e
                    .spec()
                    .required_flags
                    .iter()
                    .filter(|f| f.help_args == args)
                    .map(|f| format!("  {}, --other  does things", f.flag))
                    .collect();
                help(args, &text.join("\n"))
            })
            .collect()
    }

    fn found(id: EngineId, v: &str) -> Facts {
        Facts::Found {
            path: PathBuf::from("/opt/bin/x"),
            version: Ok(Version::parse(v).unwrap()),
            helps: full_helps(id),
        }
    }

    #[test]
    fn flag_matching_respects_option_boundaries() {
        assert!(mentions_flag("  --json   Print JSON", "--json"));
        assert!(mentions_flag("[--json]", "--json"));
        assert!(mentions_flag("--resume=<id>", "--resume"));
        assert!(mentions_flag("-p, --prompt <text>", "-p"));
        assert!(mentions_flag("--json", "--json"));
        assert!(!mentions_flag("--json-schema <s>", "--json"));
        assert!(!mentions_flag("--prompt", "-p"));
        assert!(!mentions_flag("--no-resume", "--resume"));
        assert!(!mentions_flag("anything", ""));
        assert!(mentions_flag(
            &strip_ansi("\u{1b}[1m--json\u{1b}[0m  print"),
            "--json"
        ));
        assert_eq!(
            strip_ansi("a\u{1b}]8;;http://x\u{7}b\u{1b}]8;;\u{1b}\\c"),
            "abc"
        );
    }

    #[test]
    fn verified_version_with_all_flags_is_ready() {
        for id in [EngineId::Codex, EngineId::Claude, EngineId::Opencode] {
            let v = id.engine().spec().verified_versions[0];
            let r = judge(id.engine(), found(id, v));
            assert_eq!(r.verdict, Verdict::Ready, "{r:?}");
            assert_eq!(r.verification, Some(Verification::Verified));
            assert!(r.reasons.is_empty() && r.missing_flags.is_empty());
        }
    }

    #[test]
    fn seed_versions_are_verified_and_ready() {
        // Once "older -> degraded": the versions the contract was first verified against.
        for (id, v) in [
            (EngineId::Codex, "0.144.1"),
            (EngineId::Claude, "2.1.207"),
            (EngineId::Gemini, "0.47.0"),
        ] {
            let r = judge(id.engine(), found(id, v));
            assert_eq!(r.verification, Some(Verification::Verified), "{r:?}");
            assert_eq!(r.verdict, Verdict::Ready, "{r:?}");
        }
    }

    #[test]
    fn version_classes_degrade_with_reasons() {
        let r = judge(EngineId::Codex.engine(), found(EngineId::Codex, "99.0.0"));
        assert_eq!(r.verdict, Verdict::Degraded);
        assert_eq!(r.verification, Some(Verification::NewerUnverified));
        assert!(
            r.reasons[0].contains("newer than the newest verified"),
            "{r:?}"
        );
        let r = judge(EngineId::Codex.engine(), found(EngineId::Codex, "0.0.1"));
        assert_eq!(r.verification, Some(Verification::Older));
        assert!(r.reasons[0].contains("older"), "{r:?}");
        // agy has no verified version at all.
        let r = judge(EngineId::Agy.engine(), found(EngineId::Agy, "1.0.0"));
        assert_eq!(r.verdict, Verdict::Degraded);
        assert!(r.reasons[0].contains("no version of agy"), "{r:?}");
    }

    #[test]
    fn missing_flag_is_named() {
        let mut facts = found(EngineId::Codex, "0.171.0");
        if let Facts::Found { helps, .. } = &mut facts {
            helps[0] = help(
                &["exec", "--help"],
                "--json\n--image <FILE>\n--json-schema\n-m, --model\n--output-schema <FILE>\n-c, --config <k=v>",
            );
        }
        let r = judge(EngineId::Codex.engine(), facts);
        assert_eq!(r.verdict, Verdict::Degraded);
        assert_eq!(
            r.missing_flags,
            [
                "exec --skip-git-repo-check",
                "exec --dangerously-bypass-approvals-and-sandbox"
            ]
        );
    }

    #[test]
    fn failed_help_leaves_flags_unchecked_not_missing() {
        let mut facts = found(EngineId::Codex, "0.171.0");
        if let Facts::Found { helps, .. } = &mut facts {
            helps[1].output = Err(RunError::TimedOut(Duration::from_secs(3)));
        }
        let r = judge(EngineId::Codex.engine(), facts);
        assert_eq!(r.verdict, Verdict::Degraded);
        assert!(r.missing_flags.is_empty());
        assert!(r.timed_out);
        assert_eq!(
            r.reasons,
            ["could not check exec resume --json, \
                 exec resume SESSION_ID (positional, before PROMPT), exec resume -m/--model, \
                 exec resume --output-schema, exec resume -c/--config: \
                 `codex exec resume --help` timed out after 3s"]
        );
    }

    /// Every finding at once, compared as one whole report (order included).
    #[test]
    fn all_findings_in_one_report() {
        let mut facts = found(EngineId::Codex, "99.0.0");
        if let Facts::Found { helps, .. } = &mut facts {
            helps[0] = help(
                &["exec", "--help"],
                "--json\n--image <FILE>\n-m, --model <M>\n--output-schema <F>\n-c, --config <k=v>",
            );
            helps[1].output = Ok(Captured {
                stdout: " \n".into(),
                stderr: String::new(),
                code: Some(3),
            });
        }
        let r = judge(EngineId::Codex.engine(), facts);
        let newest = EngineId::Codex.engine().spec().verified_versions[0];
        let want = EngineReport {
            engine: EngineId::Codex,
            path: Some("/opt/bin/x".into()),
            version: Some(Version::parse("99.0.0").unwrap()),
            verification: Some(Verification::NewerUnverified),
            missing_flags: vec![
                "exec --skip-git-repo-check",
                "exec --dangerously-bypass-approvals-and-sandbox",
            ],
            verdict: Verdict::Degraded,
            reasons: vec![
                format!(
                    "version 99.0.0 is newer than the newest verified version ({newest}); \
                     its output may have changed"
                ),
                "could not check exec resume --json, \
                 exec resume SESSION_ID (positional, before PROMPT), exec resume -m/--model, \
                 exec resume --output-schema, exec resume -c/--config: `codex exec resume \
                 --help` printed nothing (exit status 3)"
                    .into(),
                "the help output lacks flags vf uses: exec --skip-git-repo-check, \
                 exec --dangerously-bypass-approvals-and-sandbox"
                    .into(),
            ],
            warnings: Vec::new(),
            notes: Vec::new(),
            install_hint: None,
            probe: None,
            acp: None,
            timed_out: false,
        };
        assert_eq!(r, want);
    }

    #[test]
    fn unreadable_version_warns_only_where_the_engine_tolerates_it() {
        let unreadable = |id: EngineId| Facts::Found {
            path: PathBuf::from("/x"),
            version: Err(VersionError::NoVersion {
                excerpt: "garbage".into(),
                code: Some(0),
            }),
            helps: full_helps(id),
        };
        let r = judge(EngineId::Copilot.engine(), unreadable(EngineId::Copilot));
        assert_eq!(r.verdict, Verdict::Ready, "{r:?}");
        assert_eq!(r.verification, Some(Verification::Unreadable));
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].starts_with("`copilot --version` printed no version"));
        let r = judge(EngineId::Gemini.engine(), unreadable(EngineId::Gemini));
        assert_eq!(r.verdict, Verdict::Degraded);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn missing_engine_carries_install_hint() {
        let facts = Facts::Missing(ResolveError::NotFound {
            engine: EngineId::Gemini,
            binary: "gemini",
        });
        let reason = match &facts {
            Facts::Missing(e) => e.to_string(),
            Facts::Found { .. } => unreachable!(),
        };
        let r = judge(EngineId::Gemini.engine(), facts);
        let want = EngineReport {
            engine: EngineId::Gemini,
            path: None,
            version: None,
            verification: None,
            missing_flags: Vec::new(),
            verdict: Verdict::Missing,
            reasons: vec![reason],
            warnings: Vec::new(),
            notes: Vec::new(),
            install_hint: Some("npm install -g @google/gemini-cli"),
            probe: None,
            acp: None,
            timed_out: false,
        };
        assert_eq!(r, want);
        assert!(!r.passes());
    }

    #[test]
    fn claude_as_root_gets_a_note_about_is_sandbox() {
        let host = |root, sb: Option<&str>| Host {
            root,
            is_sandbox: sb.map(str::to_string),
        };
        let n = notes(EngineId::Claude, &host(true, None));
        assert_eq!(n.len(), 1);
        assert!(n[0].contains("unless IS_SANDBOX=1 is set"), "{n:?}");
        assert_eq!(notes(EngineId::Claude, &host(true, Some("0"))), n);
        let n = notes(EngineId::Claude, &host(true, Some("1")));
        assert!(n[0].contains("IS_SANDBOX=1 is set"), "{n:?}");
        assert!(notes(EngineId::Claude, &host(false, None)).is_empty());
        assert!(notes(EngineId::Codex, &host(true, None)).is_empty());
    }

    #[test]
    fn json_shape_and_probe_field() {
        let mut r = judge(EngineId::Codex.engine(), found(EngineId::Codex, "0.171.0"));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["engine"], "codex");
        assert_eq!(v["verification"], "verified");
        assert_eq!(v["verdict"], "ready");
        assert_eq!(v["missingFlags"], serde_json::json!([]));
        assert!(v.get("probe").is_none() && v.get("installHint").is_none());
        assert!(r.passes());
        r.probe = Some(ProbeResult {
            result: ProbeVerdict::Fail,
            reason: Some("auth missing".into()),
            session_id: None,
        });
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["probe"]["result"], "fail");
        assert_eq!(v["probe"]["sessionId"], serde_json::Value::Null);
        assert!(!r.passes());
    }
}
