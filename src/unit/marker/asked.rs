//! What a unit asked for, as its latest run was given it: the read-only
//! and tool policy, the path guards, the notification hooks and the MCP
//! servers' file (its canonical path; the file is read again each run). The
//! marker keeps it so that `vf resume` (and a `vf dispatch` re-run) keeps
//! the unit's restrictions unless they are given again or dropped on
//! purpose (docs/CLI.md, "Resume keeps what a unit
//! asked for"). A marker of an older vf has none: nothing asked. The closed
//! loops it asked for ([`LoopKeys`]) are kept too, so a `vf resume` after a
//! crash goes on with the same rounds and budget.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::engine::sandbox_policy::SandboxMode;
use crate::engine::tool_policy::ToolPolicy;

/// The unit's request (`asked` in the marker; absent when nothing was asked).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Asked {
    pub read_only: bool,
    pub allow_tools: Vec<String>,
    pub deny_tools: Vec<String>,
    pub require_enforced: bool,
    pub deny_paths: Vec<String>,
    pub allow_paths: Vec<String>,
    pub on_finish: Option<String>,
    pub on_fail: Option<String>,
    /// `--mcp FILE` (plan `mcp`): canonical and absolute, never the servers
    /// themselves (their env and headers stay in the user's file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp: Option<PathBuf>,
    /// The closed loops (`fix_rounds`, `review`, `on_conflict`, `resolver`,
    /// the rounds' budget); absent when none.
    #[serde(skip_serializing_if = "LoopKeys::is_empty")]
    pub loops: LoopKeys,
    /// `--verify`, kept so that a `vf resume` of a unit with loops checks
    /// its fix rounds as the dispatch did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// `--sandbox` (plan key `sandbox`); absent when not asked (off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// `--deny-read` (key `deny_read`), as given (`~/` kept).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_read: Vec<String>,
    /// `--writable` (key `writable`), as given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// `verify_sandbox = false`: `setup` and `verify` run outside the sandbox.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub steps_unsandboxed: bool,
}

/// The closed loops a unit asked for, before its engine is known (the
/// resolver defaults to it): the plan keys, the user config's, the flags'.
/// Checked by `crate::dispatch::resolve::loops`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoopKeys {
    /// `fix_rounds`: times a failed `verify` goes back to the author.
    #[serde(skip_serializing_if = "is_zero")]
    pub fix_rounds: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewKeys>,
    /// `on_conflict`: `fail` (the default) or `resolve`.
    #[serde(skip_serializing_if = "ConflictKey::is_fail")]
    pub on_conflict: ConflictKey,
    /// `resolver`: the engine that resolves (default: the unit's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolver: Option<EngineId>,
    /// `--max-cost`: what all rounds together may cost (USD).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// `--max-tokens`: the tokens all rounds together may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl LoopKeys {
    pub fn is_empty(&self) -> bool {
        *self == LoopKeys::default()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `review = { engine, model, rounds, prompt }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewKeys {
    pub engine: EngineId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// 1 to `MAX_REVIEW_ROUNDS`.
    pub rounds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// `on_conflict`: what a dependency merge that conflicts does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictKey {
    #[default]
    Fail,
    Resolve,
}

impl ConflictKey {
    pub fn is_fail(&self) -> bool {
        *self == ConflictKey::Fail
    }
}

impl Asked {
    /// True when nothing was asked (the marker then omits the field).
    pub fn is_empty(&self) -> bool {
        *self == Asked::default()
    }

    /// The read-only and tool part, as the engine's argv builder takes it.
    pub fn policy(&self) -> ToolPolicy {
        ToolPolicy {
            read_only: self.read_only,
            allow_tools: self.allow_tools.clone(),
            deny_tools: self.deny_tools.clone(),
            require_enforced: self.require_enforced,
            sandbox_holds_read_only: false,
            in_sandbox: false,
        }
    }

    /// `policy`'s parts, the guards' globs and the hooks' commands.
    pub fn new(
        policy: &ToolPolicy,
        (deny_paths, allow_paths): (&[String], &[String]),
        (on_finish, on_fail): (Option<&str>, Option<&str>),
    ) -> Asked {
        Asked {
            read_only: policy.read_only,
            allow_tools: policy.allow_tools.clone(),
            deny_tools: policy.deny_tools.clone(),
            require_enforced: policy.require_enforced,
            deny_paths: deny_paths.to_vec(),
            allow_paths: allow_paths.to_vec(),
            on_finish: on_finish.map(str::to_string),
            on_fail: on_fail.map(str::to_string),
            mcp: None,
            loops: LoopKeys::default(),
            verify: None,
            ..Asked::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An older marker's request has no loops; one with loops keeps them
    /// under `loops`, in camelCase, each absent part left out.
    #[test]
    fn the_loops_asked_round_trip_and_an_older_marker_has_none() {
        let old: Asked = serde_json::from_str(r#"{"readOnly":true}"#).unwrap();
        assert_eq!(old.loops, LoopKeys::default());
        let a = Asked {
            loops: LoopKeys {
                fix_rounds: 2,
                review: Some(ReviewKeys {
                    engine: EngineId::Codex,
                    model: None,
                    rounds: 3,
                    prompt: None,
                }),
                on_conflict: ConflictKey::Resolve,
                max_tokens: Some(5),
                ..Default::default()
            },
            ..Default::default()
        };
        let json = serde_json::to_value(&a).unwrap();
        let want = serde_json::json!({
            "fixRounds": 2, "review": {"engine": "codex", "rounds": 3},
            "onConflict": "resolve", "maxTokens": 5,
        });
        assert_eq!(json["loops"], want);
        assert_eq!(serde_json::from_value::<Asked>(json).unwrap(), a);
        let none = serde_json::to_value(Asked::default()).unwrap();
        assert!(none.get("loops").is_none(), "{none}");
    }
}
