//! The rounds of a unit's closed loops (issue 41), as its marker keeps them:
//! a `fix` round resumes the author's session (after a failed `verify`, or a
//! reviewer's `changes`), a `review` round runs the reviewer and a `resolve`
//! round the resolver of a dependency's merge conflict, each a nested unit
//! under the unit's own folder. Oldest first; a round still `running` in a
//! saved marker is one a crash interrupted, which a resume continues.

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::engine::usage::Usage;
use crate::ground::error::Reason;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundKind {
    Fix,
    Review,
    Resolve,
}

impl RoundKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RoundKind::Fix => "fix",
            RoundKind::Review => "review",
            RoundKind::Resolve => "resolve",
        }
    }

    /// The live table's word for a round of this kind under way.
    pub fn doing(self) -> &'static str {
        match self {
            RoundKind::Fix => "fixing",
            RoundKind::Review => "reviewing",
            RoundKind::Resolve => "resolving",
        }
    }
}

/// Why a `fix` round ran: a failed `verify`, or a reviewer's `changes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Verify,
    Review,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundOutcome {
    /// Under way; in a saved marker after a crash: interrupted.
    Running,
    Done,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictKind {
    Approve,
    Changes,
}

/// One comment of a reviewer's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub text: String,
}

/// A reviewer's verdict, validated against the built-in schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub verdict: VerdictKind,
    #[serde(default)]
    pub comments: Vec<Comment>,
}

/// `verify` as it ran after a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyCheck {
    pub command: String,
    pub exit_code: Option<i32>,
    pub passed: bool,
}

/// One round of a unit's loops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Round {
    pub kind: RoundKind,
    /// 1-based, within its kind (a revision after review counts in the review's).
    pub n: u32,
    /// The rounds its kind allows (`fix_rounds`, `review.rounds`; 1 for resolve).
    pub of: u32,
    pub engine: EngineId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub session_id: Option<String>,
    /// A review or resolve round's nested unit, under `units/<unit>/rounds/units/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// A fix round's attempt of the unit itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    pub outcome: RoundOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyCheck>,
    /// A resolve round's dependency, whose branch conflicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
    /// A resolve round's conflicted paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl Round {
    /// A round that starts now.
    pub fn start(kind: RoundKind, (n, of): (u32, u32), engine: EngineId) -> Round {
        Round {
            kind,
            n,
            of,
            engine,
            model: None,
            session_id: None,
            unit: None,
            attempt: None,
            trigger: None,
            outcome: RoundOutcome::Running,
            reason: None,
            error: None,
            usage: None,
            verdict: None,
            verify: None,
            dependency: None,
            paths: Vec::new(),
            started_at: crate::ground::fsutil::now_rfc3339(),
            finished_at: None,
        }
    }
}
