//! What travels through Temporal's payloads: the plan the workflow runs,
//! one unit's order to a worker, what the worker returns and heartbeats.
//! Everything here is JSON (Temporal's default converter), and every value
//! that carries user text is checked against [`PAYLOAD_CAP`] before it is
//! sent, never cut.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::ground::held::HeldBy;
use crate::plan::scheduler::UnitReport;
use crate::unit::history::Response;

/// Temporal's default limit of one payload: the server refuses a bigger one
/// (`limit.blobSize.error`, 2 MiB).
pub const PAYLOAD_CAP: usize = 2 * 1024 * 1024;

/// The workflow's input: a checked plan, each unit resolved by the submitter.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanInput {
    /// The plan file as the submitter named it (reported back; the base of
    /// its relative paths on the workers).
    pub plan: PathBuf,
    /// In dependency order.
    pub units: Vec<UnitInput>,
    /// Units run at once.
    pub parallel: u32,
    /// The shared queue `Q`; a host's queue is `Q@<host-id>`.
    pub task_queue: String,
    /// `[budget]`: no new unit starts once the plan's usage reaches it.
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
    /// How long a retry that resumes a session waits for its host.
    pub affinity_ms: u64,
    /// Past this many history events the workflow continues as new.
    pub history_limit: u32,
    /// What the runs before a continue-as-new settled, by unit.
    #[serde(default)]
    pub carried: Vec<Option<UnitState>>,
    /// Runs of the workflow before this one (continue-as-new).
    #[serde(default)]
    pub runs_before: u32,
    /// What the runs before learned of each engine account's quota.
    #[serde(default)]
    pub quota: super::holds::Governor,
}

/// One unit, resolved: its engine chosen, its keys as one `[[unit]]` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitInput {
    pub name: String,
    pub depends_on: Vec<String>,
    pub engine: EngineId,
    /// The unit's keys after `[defaults]` and the user config, its prompt
    /// inline and without `depends_on`: the plan a worker parses for it.
    pub toml: String,
    /// `retries`: more starts after an engine failure (1), stall or timeout (4).
    pub retries: u32,
    /// Its `stall_timeout`, the activity's heartbeat timeout.
    pub stall_ms: Option<u64>,
    /// Its `timeout`: bounds one attempt.
    pub timeout_ms: Option<u64>,
    pub rate_limit: crate::plan::ratelimit::Policy,
    /// Dependencies whose `vf/<unit>` branch its worktree merges.
    pub merge: Vec<String>,
    /// Of those, each one's `push` remote: fetched first (it may have run
    /// on another machine).
    #[serde(default)]
    pub fetch_from: std::collections::BTreeMap<String, String>,
    pub model: Option<String>,
    /// Its `stagger` (ms, scaled): held units start at most one per this
    /// long after a hold; absent: the default.
    #[serde(default)]
    pub stagger_ms: Option<u64>,
}

/// A unit's place in the workflow (carried across a continue-as-new).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitState {
    pub row: UnitReport,
    /// Starts so far in this workflow.
    pub tries: u32,
    /// Engine failures and stalls retried so far.
    pub retried: u32,
    /// Time spent waiting out rate limits, and how many waits.
    pub waited_ms: u64,
    pub waits: u32,
    /// Where its session lives and the public responses so far.
    pub host: Option<String>,
    pub answers: Vec<Response>,
}

/// One attempt at a unit, for a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitOrder {
    pub workflow_id: String,
    pub plan: PathBuf,
    pub unit: String,
    pub toml: String,
    /// The engine of this attempt (a rate-limit fallback changes it).
    pub engine: EngineId,
    pub merge: Vec<String>,
    #[serde(default)]
    pub fetch_from: std::collections::BTreeMap<String, String>,
    pub start: Start,
    /// This attempt's number in the workflow (1: the first).
    pub attempt: u32,
    /// The accounts of its engine the workflow holds: the worker does not
    /// choose them (none left: the attempt is refused, not run).
    #[serde(default)]
    pub held: Vec<HeldBy>,
}

/// How an attempt starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "mode")]
pub enum Start {
    Fresh,
    /// Only on the host that holds the session (its own queue).
    /// `answers`: the replay, should that host not hold the session any more.
    #[serde(rename_all = "camelCase")]
    Exact {
        session_id: String,
        host: String,
        answers: Vec<Response>,
    },
    /// A fresh session primed with the earlier attempts' public responses.
    Replay {
        answers: Vec<Response>,
    },
}

/// What a worker returns for an attempt that vf judged (any state).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub row: UnitReport,
    /// vf's exit code for the attempt (the retry table reads it).
    pub exit: i32,
    pub host: String,
    /// When a rate limit resets, if the engine said (RFC 3339).
    pub retry_at: Option<String>,
    /// The unit's recent public responses on that host (bounded).
    pub answers: Vec<Response>,
    /// The worker's quota ledger refused the start (or no account was
    /// open): not an attempt; the workflow holds the account as long.
    #[serde(default)]
    pub held: Option<HeldBy>,
}

/// An attempt's heartbeat: where it runs and what the workflow needs to
/// retry it if the worker dies (the session id as soon as it is known).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    pub host: String,
    pub session_id: Option<String>,
    pub answers: Vec<Response>,
}

/// What the workflow returns, and what its `progress` query answers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub plan: PathBuf,
    pub units: Vec<UnitReport>,
    /// True once every unit has settled.
    pub ended: bool,
    /// The workflow's runs so far: more than one after a continue-as-new.
    #[serde(default)]
    pub runs: u32,
}

impl Progress {
    /// A plan none of whose units has run yet: what a follower shows before
    /// a worker first answers.
    pub fn waiting(input: &PlanInput) -> Progress {
        Progress {
            plan: input.plan.clone(),
            units: input
                .units
                .iter()
                .map(|u| UnitReport::waiting(&u.name, u.engine, u.model.clone()))
                .collect(),
            ended: false,
            runs: 0,
        }
    }
}

/// `what`'s JSON size when it is over [`PAYLOAD_CAP`].
pub fn over_cap<T: Serialize>(what: &T) -> Option<usize> {
    let n = serde_json::to_vec(what).map_or(usize::MAX, |v| v.len());
    (n > PAYLOAD_CAP).then_some(n)
}
