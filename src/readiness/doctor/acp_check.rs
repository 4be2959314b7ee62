//! `vf doctor` for an ACP agent command: the `initialize` handshake (no
//! session, no prompt: no tokens) gathered, then judged (pure).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::Verdict;
use super::acp_handshake::HandshakeError;
use crate::engine::acp::AgentFacts;

/// One ACP agent command's readiness.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcpReport {
    /// The agent command, as split by the launch rules.
    pub command: Vec<String>,
    /// Who answered `initialize` (null when nobody did).
    pub agent: Option<AgentFacts>,
    pub verdict: Verdict,
    /// Why the verdict is not `ready`.
    pub reasons: Vec<String>,
    /// Worth knowing; the verdict stays.
    pub warnings: Vec<String>,
}

/// The ACP protocol version vf speaks.
pub const PROTOCOL: u64 = 1;

/// Runs the handshake on a runtime of its own: call it from a plain thread
/// (as [`super::check`] runs each engine), never from async code. `name` is
/// the agent's program, for messages (empty: `argv[0]`).
pub fn gather_acp(
    name: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    timeout: Duration,
) -> Result<AgentFacts, HandshakeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HandshakeError::Spawn("tokio".to_string(), e.to_string()))?;
    rt.block_on(crate::readiness::doctor::acp_handshake::handshake(
        name, argv, env, cwd, timeout,
    ))
}

/// What the handshake's result means.
pub fn judge_acp(argv: &[String], facts: Result<AgentFacts, HandshakeError>) -> AcpReport {
    let mut report = AcpReport {
        command: argv.to_vec(),
        agent: None,
        verdict: Verdict::Ready,
        reasons: Vec::new(),
        warnings: Vec::new(),
    };
    let agent = match facts {
        Ok(a) => a,
        Err(e) => {
            report.verdict = match e {
                HandshakeError::Empty | HandshakeError::Missing(_) => Verdict::Missing,
                _ => Verdict::Degraded,
            };
            report.reasons.push(e.to_string());
            return report;
        }
    };
    match agent.protocol_version {
        Some(PROTOCOL) => {}
        other => {
            report.verdict = Verdict::Degraded;
            let v = other.map_or("none".to_string(), |v| v.to_string());
            report
                .reasons
                .push(format!("protocol version {v}: vf speaks ACP {PROTOCOL}"));
        }
    }
    if !agent.load_session {
        report
            .warnings
            .push("no loadSession: no exact resume, a re-run gets the bounded replay".to_string());
    }
    if agent.name == "unknown" {
        report
            .warnings
            .push("the agent does not name itself (agentInfo)".to_string());
    }
    report.agent = Some(agent);
    report
}

/// A command engine's report, completed for an agent that speaks ACP (its
/// command resolved, run with the variables a dispatch adds: a preset's):
/// the handshake's facts and verdict.
pub fn with_handshake(
    mut r: super::EngineReport,
    line: Option<String>,
    env: &[(String, String)],
    timeout: Duration,
) -> super::EngineReport {
    let command = line.and_then(|l| crate::engine::EngineCommand::new(l, None, "the command").ok());
    let argv = command.as_ref().and_then(|c| c.argv_here().ok());
    let Some(argv) = argv.filter(|_| r.verdict == Verdict::Ready && r.engine.engine().speaks_acp())
    else {
        return r;
    };
    // Messages name the agent's program, not the shell that runs its line.
    let name = command.map(|c| c.first_token()).unwrap_or_default();
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    let report = judge_acp(&argv, gather_acp(&name, &argv, env, &cwd, timeout));
    r.verdict = report.verdict;
    r.reasons.extend(report.reasons.iter().cloned());
    r.warnings = report.warnings.clone();
    if let Some(agent) = &report.agent {
        // The agent's own version stands for the command's (it has no
        // `--version` vf could read).
        r.version = crate::ground::version::Version::parse(&agent.version);
        r.notes.push(format!("agent: {}", agent.describe()));
    }
    r.notes.push(
        "read-only and permissions are enforced by vf: it answers the agent's permission requests"
            .to_string(),
    );
    r.acp = Some(report);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(protocol: Option<u64>, load: bool, name: &str) -> AgentFacts {
        AgentFacts {
            name: name.to_string(),
            version: "1.0".to_string(),
            protocol_version: protocol,
            load_session: load,
            prompt: vec![],
            capabilities: json!({}),
        }
    }

    fn verdict(facts: Result<AgentFacts, HandshakeError>) -> (Verdict, Vec<String>, Vec<String>) {
        let r = judge_acp(&["agent".to_string()], facts);
        (r.verdict, r.reasons, r.warnings)
    }

    #[test]
    fn the_judge_table() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            verdict(Ok(agent(Some(1), true, "a"))),
            (Verdict::Ready, s(&[]), s(&[]))
        );
        assert_eq!(
            verdict(Ok(agent(Some(1), false, "unknown"))),
            (
                Verdict::Ready,
                s(&[]),
                s(&[
                    "no loadSession: no exact resume, a re-run gets the bounded replay",
                    "the agent does not name itself (agentInfo)"
                ])
            )
        );
        assert_eq!(
            verdict(Ok(agent(Some(2), true, "a"))),
            (
                Verdict::Degraded,
                s(&["protocol version 2: vf speaks ACP 1"]),
                s(&[])
            )
        );
        assert_eq!(
            verdict(Ok(agent(None, true, "a"))),
            (
                Verdict::Degraded,
                s(&["protocol version none: vf speaks ACP 1"]),
                s(&[])
            )
        );
        assert_eq!(
            verdict(Err(HandshakeError::Missing("x".into()))),
            (Verdict::Missing, s(&["x: not found on PATH"]), s(&[]))
        );
        assert_eq!(
            verdict(Err(HandshakeError::Hung("x".into(), 2.0, String::new()))),
            (
                Verdict::Degraded,
                s(&["x: no answer to initialize within 2.0 s"]),
                s(&[])
            )
        );
    }
}
