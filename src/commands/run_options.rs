//! `--model`, `--effort`, `--summary-schema` (dispatch and resume): turned
//! into the engine's [`RunOptions`] and vf's own schema check, every check
//! made before anything is written (exit 2).

use std::path::Path;
use std::sync::Arc;

use crate::cli::ModelArgs;
use crate::engine::{EngineId, RunOptions};
use crate::error::{Result, VfError};
use crate::summary::schema::SummarySchema;

/// The options for one run, checked against its engine.
#[derive(Debug, Clone, Default)]
pub struct Chosen {
    pub options: RunOptions,
    pub schema: Option<Arc<SummarySchema>>,
}

/// Reads the flags; `fallback` fills a model/effort not given (`vf resume`
/// keeps the unit's recorded ones). A relative schema path is taken from the
/// current directory, as `--prompt-file` is.
pub fn resolve(
    engine: EngineId,
    args: &ModelArgs,
    fallback: Option<&RunOptions>,
) -> Result<Chosen> {
    let schema = match &args.summary_schema {
        Some(p) => Some(Arc::new(load_schema(p)?)),
        None => None,
    };
    let pick = |given: &Option<String>, kept: Option<&Option<String>>| {
        given.clone().or_else(|| kept.cloned().flatten())
    };
    let options = RunOptions::new(
        pick(&args.model, fallback.map(|f| &f.model)),
        pick(&args.effort, fallback.map(|f| &f.effort)),
        schema.as_deref(),
    );
    crate::engine::options::check(engine.engine().spec(), &options)?;
    Ok(Chosen { options, schema })
}

/// A schema file, refused (exit 2) when unreadable, not JSON or not a schema.
pub fn load_schema(path: &Path) -> Result<SummarySchema> {
    let abs = crate::state::absolute(path)?;
    SummarySchema::load(&abs).map_err(VfError::usage)
}
