//! A round's own engine run (a reviewer, a resolver) as a nested unit: the
//! same runtime as any unit (`dispatch::run`: its lock, marker, raw logs,
//! usage and policy), with the parent unit's folder as its state dir
//! (`<state>/units/<unit>/rounds/units/<name>/`), so its files are the
//! unit's own and can never take another unit's name.

use std::path::PathBuf;

use crate::engine::{EngineId, EventSink};
use crate::ground::Result;
use crate::unit::UnitDir;

use super::super::resolve::Resolved;
use super::super::{DispatchResult, UnitSpec};

/// One nested run of a round.
pub struct Nested<'a> {
    /// The unit the round belongs to: its limits, grace, budget and cancel apply.
    pub parent: &'a UnitSpec,
    /// `review-<attempt>`, `resolve-<attempt>.<n>`: unique across the unit's loops.
    pub name: String,
    pub engine: EngineId,
    pub model: Option<String>,
    pub prompt: String,
    /// The reviewer's: read-only, enforced where the engine can.
    pub read_only: bool,
    pub cwd: PathBuf,
    /// Continue the nested unit's own session (a round a crash interrupted,
    /// or a reviewer asked again), when it has one.
    pub resume: bool,
}

/// The state dir of `parent`'s nested units.
pub fn state_dir(parent: &UnitSpec) -> PathBuf {
    UnitDir::new(&parent.state_dir, &parent.unit).rounds_dir()
}

/// The session nested unit `name` of `engine` holds, if it ran far enough
/// to have one: a round a crash interrupted is continued in it, else
/// started again whole.
pub fn session_of(parent: &UnitSpec, name: &str, engine: EngineId) -> Option<String> {
    // A name read from a hostile marker is never a path.
    crate::ground::names::check("unit name", name).ok()?;
    UnitDir::new(&state_dir(parent), name)
        .load_marker()
        .ok()
        .flatten()
        .filter(|m| m.engine == engine)
        .and_then(|m| m.engine_session_id)
}

/// The nested unit's spec: the parent's limits, this round's engine, model,
/// prompt and policy; no steps, no worktree, no loops of its own.
pub fn spec(n: &Nested<'_>) -> Result<UnitSpec> {
    let p = n.parent;
    let state_dir = state_dir(p);
    let session = match n.resume {
        true => session_of(p, &n.name, n.engine),
        false => None,
    };
    // The author's sandbox; a read-only round's working directory read-only too.
    let mut sandbox = p.sandbox.clone();
    if n.read_only && sandbox.is_on() {
        sandbox.mode = crate::engine::sandbox_policy::SandboxMode::ReadOnly;
    }
    let mut policy = crate::engine::ToolPolicy {
        read_only: n.read_only,
        require_enforced: p.policy.require_enforced,
        ..Default::default()
    };
    sandbox.mark(&mut policy);
    let mut r = Resolved::new(n.engine, n.name.clone(), n.cwd.clone(), state_dir);
    // A read-only reviewer never inherits the author's skip-permissions:
    // together they are refused (read-only contradicts approving every tool).
    r.skip_permissions = p.skip_permissions && !n.read_only;
    // The unit's own engine (a resolver by default) runs the binary it runs.
    if n.engine == p.engine {
        r.engine_bin = p.engine_bin.clone();
    }
    (r.stall_timeout, r.timeout, r.kill_grace) = (p.stall_timeout, p.timeout, p.kill_grace);
    r.options.model = n.model.clone();
    r.asked = crate::unit::Asked::new(&policy, (&[], &[]), (None, None));
    r.policy = policy;
    r.sandbox = sandbox;
    (r.budget_stop, r.cancel) = (p.budget_stop.clone(), p.cancel.clone());
    r.quota = account(p, n.engine)?;
    Ok(r.spec(n.prompt.clone(), session))
}

/// The nested unit's account: the author's when it runs the author's
/// engine and that account is open, else the first open one of its engine;
/// every one held is the governor's refusal (the unit waits, exit 75 alone).
fn account(p: &UnitSpec, engine: EngineId) -> Result<crate::quota::Ask> {
    let prefer = (engine == p.engine).then(|| p.quota.account.as_ref().map(|a| a.name.as_str()));
    let (chosen, _) = crate::quota::choose(&p.quota, engine, prefer.flatten());
    Ok(crate::quota::Ask {
        account: chosen.map_err(crate::ground::error::VfError::Held)?,
        admitted: crate::quota::Admitted::default(),
        ..p.quota.clone()
    })
}

/// Runs the nested unit to its end (see [`crate::dispatch::run`]).
pub async fn run(n: Nested<'_>, sink: &mut dyn EventSink) -> Result<DispatchResult> {
    let spec = spec(&n)?;
    Box::pin(super::super::run(spec, sink)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_round_drops_the_authors_skip_permissions_a_resolver_keeps_them() {
        let mut r = Resolved::new(EngineId::Claude, "u".into(), "/w".into(), "/s".into());
        r.skip_permissions = true;
        let parent = r.spec("task".into(), None);
        for (read_only, skip) in [(true, false), (false, true)] {
            let n = Nested {
                parent: &parent,
                name: "review-1".into(),
                engine: EngineId::Codex,
                model: None,
                prompt: "p".into(),
                read_only,
                cwd: "/w".into(),
                resume: false,
            };
            let s = spec(&n).unwrap();
            assert_eq!((s.skip_permissions, s.policy.read_only), (skip, read_only));
        }
    }
}
