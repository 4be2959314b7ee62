//! STUB (the integrator replaces this file): a review or resolve round's
//! nested unit, run through the same runtime as any unit under
//! `<state>/units/<u>/rounds`.

use std::path::PathBuf;

use crate::dispatch::{DispatchResult, EventSink, UnitSpec};
use crate::engine::EngineId;
use crate::ground::Result;

pub struct Nested<'a> {
    pub parent: &'a UnitSpec,
    /// `resolve-1`, `review-2`.
    pub name: String,
    pub engine: EngineId,
    pub model: Option<String>,
    pub prompt: String,
    pub read_only: bool,
    pub cwd: PathBuf,
    /// Resume the nested unit's session (its marker has it).
    pub resume: bool,
}

pub async fn run(n: Nested<'_>, sink: &mut dyn EventSink) -> Result<DispatchResult> {
    let state_dir = crate::unit::UnitDir::new(&n.parent.state_dir, &n.parent.unit).rounds_dir();
    let mut spec = n.parent.clone();
    if n.resume {
        let dir = crate::unit::UnitDir::new(&state_dir, &n.name);
        spec.session = dir.load_marker()?.and_then(|m| m.engine_session_id);
    } else {
        spec.session = None;
    }
    if spec.engine != n.engine {
        spec.engine_bin = None;
    }
    spec.unit = n.name;
    spec.engine = n.engine;
    spec.prompt = n.prompt;
    spec.cwd = n.cwd;
    spec.state_dir = state_dir;
    spec.steps = Default::default();
    spec.loops = Default::default();
    spec.options.model = n.model;
    Box::pin(crate::dispatch::run(spec, sink)).await
}
