//! `vf doctor --probe`: a live canary per ready engine, dispatched through the
//! normal runtime in a scratch directory that is removed afterwards.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dispatch::resolve::Resolved;
use crate::dispatch::{self, DispatchResult, EventSink, UnitSpec};
use crate::engine::EngineId;
use crate::engine::frames::ConversationEvent;
use crate::ground::error::Reason;
use crate::ground::version::Version;
use crate::readiness::doctor::{ProbeResult, ProbeVerdict};
use crate::unit::marker::UnitState;

pub const PROBE_PROMPT: &str = "This is a readiness check. Do not run any tools. Reply with exactly a fenced json block \
containing {\"confidence\":1.0} and nothing else:\n\n```json\n{\"confidence\":1.0}\n```";

pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// Collects nothing: the probe judges the final result only.
struct Quiet;

impl EventSink for Quiet {
    fn event(&mut self, _event: &ConversationEvent) {}
    fn warning(&mut self, _message: &str) {}
}

/// Runs one canary; never panics, never outlives `timeout` by more than the kill grace.
pub async fn probe(
    engine: EngineId,
    program: PathBuf,
    version: Option<Version>,
    timeout: Duration,
) -> ProbeResult {
    let fail = |reason: String| ProbeResult {
        result: ProbeVerdict::Fail,
        reason: Some(reason),
        session_id: None,
    };
    let scratch = match tempfile::Builder::new().prefix("vf-probe-").tempdir() {
        Ok(d) => d,
        Err(e) => return fail(format!("cannot create a scratch directory: {e}")),
    };
    let spec = canary(engine, program, scratch.path(), timeout);
    // `scratch` is removed when dropped, after the run has ended.
    match dispatch::run(spec, &mut Quiet).await {
        Ok(r) => {
            let reason = canary_failure(engine, version.as_ref(), timeout, &r);
            ProbeResult {
                result: match reason {
                    None => ProbeVerdict::Pass,
                    Some(_) => ProbeVerdict::Fail,
                },
                reason,
                session_id: r.session_id,
            }
        }
        Err(e) => fail(e.to_string()),
    }
}

/// The canary unit: [`PROBE_PROMPT`] in the scratch directory `dir`.
fn canary(engine: EngineId, program: PathBuf, dir: &Path, timeout: Duration) -> UnitSpec {
    let state_dir = dir.join(crate::ground::state::STATE_DIR_NAME);
    let run = Resolved {
        engine_bin: Some(program),
        timeout: Some(timeout),
        kill_grace: Duration::from_secs(2),
        ..Resolved::new(engine, "probe".into(), dir.to_path_buf(), state_dir)
    };
    run.spec(PROBE_PROMPT.into(), None)
}

/// Why a finished canary run does not pass, if it does not.
fn canary_failure(
    engine: EngineId,
    version: Option<&Version>,
    timeout: Duration,
    r: &DispatchResult,
) -> Option<String> {
    if r.state != UnitState::Done {
        return Some(match r.reason {
            Some(Reason::Timeout) => {
                format!("timeout: no answer within {}s", timeout.as_secs_f64())
            }
            _ => classify_failure(r.error.as_deref().unwrap_or("the engine failed")),
        });
    }
    if r.unknown_frames > 0 {
        return Some(format!(
            "{} unknown frame(s): the CLI's output format drifted (see `vf replay`)",
            r.unknown_frames
        ));
    }
    if engine.engine().exact_resume(version) && r.session_id.is_none() {
        return Some("no valid session id was reported".into());
    }
    match (&r.summary, &r.summary_error) {
        (Some(_), _) => None,
        (None, Some(e)) => Some(format!("the summary did not parse: {e}")),
        (None, None) => Some("the answer had no fenced json summary".into()),
    }
}

/// Names the likely cause of a failed canary, keeping the engine's own words.
pub fn classify_failure(error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    const AUTH: [&str; 10] = [
        "401",
        "403",
        "unauthorized",
        "authentication",
        "api key",
        "api_key",
        "not logged in",
        "log in",
        "login",
        "credential",
    ];
    if AUTH.iter().any(|k| lower.contains(k)) {
        format!("auth missing or rejected: {error}")
    } else {
        format!("API error: {error}")
    }
}

#[cfg(test)]
mod tests {
    use super::classify_failure;

    #[test]
    fn auth_is_named() {
        assert!(
            classify_failure("Invalid API key · Please run /login").starts_with("auth missing")
        );
        assert!(classify_failure("HTTP 401 Unauthorized").starts_with("auth missing"));
        assert!(
            classify_failure("API Error: 500 server_error")
                .starts_with("API error: API Error: 500")
        );
    }
}
