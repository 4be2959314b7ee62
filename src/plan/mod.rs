//! Plans for `vf orchestrate`: a TOML list of `[[unit]]` tables forming a DAG,
//! validated whole before anything starts (each problem one clear usage error).
//!
//! The domain's map: this file parses and validates a plan (`defaults` the
//! `[defaults]` merge, `worktree_keys` the worktree keys and `retries`,
//! `loop_keys` the closed loops' keys, `sandbox_keys` the sandbox's keys,
//! `prompt_keys` a unit's `prompt` or `prompt_file`,
//! `order` the dependency order); `config` the
//! user config file (`accounts_keys` its `[[accounts]]` and the quota keys); `ratelimit` the `on_rate_limit` policy and back-off;
//! `scheduler` the local DAG executor (reporting through `Reporter`);
//! `temporal` the same plan as a Temporal workflow (cargo feature `temporal`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::engine::choice::EngineChoice;
use crate::engine::summary::schema::SummarySchema;
use crate::engine::{EngineCommand, EngineId, RunOptions};
use crate::ground::error::{Result, VfError};
use crate::ground::names;
use crate::ground::text::{one_line, shown};

pub mod accounts_keys;
pub mod config;
mod defaults;
mod loop_keys;
mod order;
mod prompt_keys;
pub mod ratelimit;
mod sandbox_keys;
pub mod scheduler;
#[cfg(feature = "temporal")]
pub mod temporal;
pub mod worktree_keys;

pub use defaults::{Layer, UserDefaults, check_config_key};
pub use loop_keys::config_loops;
use order::{cycle_message, dependency_order};
use worktree_keys::worktree_of;
pub use worktree_keys::{MAX_RETRIES, PlanWorktree};

/// Largest `mcp` file a plan unit names (as `--mcp`).
const MCP_FILE_MAX: u64 = 1 << 20;

/// Per unit, the layer that set each of its keys (`[defaults]`, user config).
pub type Layers = std::collections::BTreeMap<String, std::collections::BTreeMap<String, Layer>>;

/// Plan files larger than this are refused (a plan is a short list).
pub const MAX_PLAN_BYTES: u64 = 4 * 1024 * 1024;
/// A dependency cycle's message names at most this many of its units.
const CYCLE_NAMES: usize = 10;
/// How much of a path or value from the plan an error shows (escaped).
const SHOWN_CHARS: usize = 200;

/// A path for a one-line error: control characters escaped, cut.
fn show_path(p: &Path) -> String {
    one_line(&p.display().to_string(), SHOWN_CHARS)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    /// Keys every unit gets unless it sets them itself (see `plan/defaults.rs`).
    #[serde(default)]
    defaults: Option<toml::Table>,
    #[serde(default)]
    /// Spanned, so that a unit's error can name its line.
    unit: Vec<toml::Spanned<toml::Table>>,
    #[serde(default)]
    budget: crate::engine::usage::Budget,
    /// Run after the plan, its result JSON on stdin (`crate::dispatch::notify`).
    on_plan_finish: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUnit {
    name: String,
    engine: EngineChoice,
    prompt: Option<String>,
    prompt_file: Option<PathBuf>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    attachments: Vec<String>,
    #[serde(default)]
    skip_permissions: bool,
    stall_timeout: Option<f64>,
    timeout: Option<f64>,
    model: Option<String>,
    effort: Option<String>,
    summary_schema: Option<PathBuf>,
    on_rate_limit: Option<crate::plan::ratelimit::OnRateLimit>,
    #[serde(default)]
    fallback: Vec<crate::engine::EngineId>,
    max_wait: Option<f64>,
    #[serde(default)]
    worktree: bool,
    base: Option<String>,
    commit: Option<bool>,
    /// A git remote's name (checked as it is read).
    #[serde(default, deserialize_with = "worktree_keys::remote")]
    push: Option<String>,
    /// 0 to [`MAX_RETRIES`] (checked as it is read).
    #[serde(default, deserialize_with = "worktree_keys::retries")]
    retries: Option<u32>,
    setup: Option<String>,
    verify: Option<String>,
    #[serde(default)]
    deny_paths: Vec<String>,
    #[serde(default)]
    allow_paths: Vec<String>,
    on_finish: Option<String>,
    on_fail: Option<String>,
    bridge: Option<String>,
    bridge_output: Option<crate::engine::EngineId>,
    acp: Option<String>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    allow_tools: Vec<String>,
    #[serde(default)]
    deny_tools: Vec<String>,
    #[serde(default)]
    require_enforced: bool,
    /// MCP servers' JSON file (relative: the plan's directory).
    mcp: Option<PathBuf>,
    /// agy's `--agent NAME`.
    agent: Option<String>,
    /// 0 to `MAX_FIX_ROUNDS` (checked as it is read, as the other loop keys).
    #[serde(default, deserialize_with = "loop_keys::fix_rounds")]
    fix_rounds: Option<u32>,
    #[serde(default, deserialize_with = "loop_keys::review")]
    review: Option<crate::unit::marker::asked::ReviewKeys>,
    #[serde(default, deserialize_with = "loop_keys::on_conflict")]
    on_conflict: Option<crate::unit::marker::asked::ConflictKey>,
    #[serde(default, deserialize_with = "loop_keys::resolver")]
    resolver: Option<EngineId>,
    /// Percent 1–100 (checked as it is read, as the other quota keys).
    #[serde(default, deserialize_with = "accounts_keys::pause_at")]
    pause_at: Option<f64>,
    #[serde(default, deserialize_with = "accounts_keys::stagger")]
    stagger: Option<f64>,
    rotate: Option<bool>,
    /// A declared account of the unit's engine (checked with the user's accounts).
    account: Option<String>,
    /// `off`, `workspace`, `read-only` (checked as it is read).
    #[serde(default, deserialize_with = "sandbox_keys::mode")]
    sandbox: Option<crate::engine::sandbox_policy::SandboxMode>,
    #[serde(default)]
    deny_read: Vec<String>,
    #[serde(default)]
    writable: Vec<String>,
    verify_sandbox: Option<bool>,
}

/// One validated unit of a plan.
#[derive(Debug, Clone)]
pub struct PlanUnit {
    pub name: String,
    pub engine: EngineChoice,
    /// The prompt text (read from `prompt_file` if given).
    pub prompt: String,
    /// Absolute; relative `cwd` values are taken from the plan file's directory.
    pub cwd: PathBuf,
    pub depends_on: Vec<String>,
    pub attachments: Vec<String>,
    pub skip_permissions: bool,
    pub stall_timeout: Option<Duration>,
    pub timeout: Option<Duration>,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// Loaded and compiled from `summary_schema` (relative: the plan's directory).
    pub summary_schema: Option<Arc<SummarySchema>>,
    /// `on_rate_limit`, `fallback`, `max_wait` (see [`crate::plan::ratelimit`]).
    pub rate_limit: crate::plan::ratelimit::Policy,
    /// `worktree = true`: run in the unit's git worktree (docs/WORKSPACES.md).
    pub worktree: Option<PlanWorktree>,
    /// `retries`: how many more times a unit whose engine failed (exit 1) or
    /// stalled or timed out (exit 4) is started again (default 0).
    pub retries: u32,
    pub setup: Option<String>,
    pub verify: Option<String>,
    /// Path guards checked after the run (globs compiled once at parse).
    pub deny_paths: Vec<String>,
    pub allow_paths: Vec<String>,
    /// Notification hooks (`on_finish`, `on_fail`).
    pub hooks: crate::dispatch::notify::Hooks,
    /// A command engine's command: the key `bridge` (else `VIBEFLOW_AI`).
    pub command: Option<crate::engine::EngineCommand>,
    /// `read_only`, `allow_tools`, `deny_tools`, `require_enforced`.
    pub policy: crate::engine::tool_policy::ToolPolicy,
    /// `sandbox`, `deny_read`, `writable`, `verify_sandbox`: resolved, and
    /// as the marker records them.
    pub sandbox: crate::dispatch::confine::Sandbox,
    pub sandbox_asked: crate::unit::Asked,
    /// `mcp`: the servers, read and checked for the unit's engine.
    pub mcp: Option<crate::engine::mcp::McpServers>,
    /// `mcp`'s file, canonical (recorded in the marker's `asked`).
    pub mcp_file: Option<PathBuf>,
    /// `agent`: agy's `--agent NAME`.
    pub agent: Option<String>,
    /// `fix_rounds`, `review`, `on_conflict`, `resolver` (checked).
    pub loops: crate::unit::marker::asked::LoopKeys,
    /// The quota governor's keys for it (`account`, `rotate`, `pause_at`,
    /// `stagger`) and the user config's accounts (docs/QUOTA.md).
    pub quota: crate::quota::Ask,
}

impl PlanUnit {
    /// The unit's model, effort and schema as the engine takes them.
    pub fn run_options(&self) -> RunOptions {
        RunOptions::new(
            self.model.clone(),
            self.effort.clone(),
            self.summary_schema.as_deref(),
        )
        .with_agent(self.agent.clone())
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub path: PathBuf,
    /// Units in a dependency order (each after all of its dependencies),
    /// otherwise in the order of the file.
    pub units: Vec<PlanUnit>,
    /// `[budget]`: `cost_usd`, `tokens`.
    pub budget: crate::engine::usage::Budget,
    /// `on_plan_finish`: run after the plan, its result JSON on stdin.
    pub on_plan_finish: Option<String>,
    /// Which layer set each unit's keys (unit, `[defaults]`, user config).
    pub layers: Layers,
}

impl Plan {
    pub fn get(&self, name: &str) -> Option<&PlanUnit> {
        self.units.iter().find(|u| u.name == name)
    }
}

/// Reads and validates a plan file.
pub fn load(path: &Path) -> Result<Plan> {
    load_with(path, &UserDefaults::default())
}

/// [`load`], the user config's defaults merged below the plan's `[defaults]`.
pub fn load_with(path: &Path, user: &UserDefaults) -> Result<Plan> {
    let path = crate::ground::state::absolute(path)?;
    let shown = show_path(&path);
    let meta = std::fs::metadata(&path)
        .map_err(|e| VfError::usage(format!("cannot read plan {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(VfError::usage(format!("plan {shown} is not a file")));
    }
    if meta.len() > MAX_PLAN_BYTES {
        return Err(VfError::usage(format!(
            "plan {shown} is {} bytes; at most {MAX_PLAN_BYTES} are allowed",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| VfError::usage(format!("cannot read plan {shown}: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    match parse_with_budget(&text, &dir, user) {
        Ok((units, budget, on_plan_finish, layers)) => Ok(Plan {
            path,
            units,
            budget,
            on_plan_finish,
            layers,
        }),
        Err(e) => Err(VfError::usage(format!("plan {shown}: {e}"))),
    }
}

/// Parses and validates plan text; relative paths are taken from `dir`.
/// Errors are plain messages (the caller names the file).
pub fn parse(text: &str, dir: &Path) -> std::result::Result<Vec<PlanUnit>, String> {
    parse_with_budget(text, dir, &UserDefaults::default()).map(|(units, _, _, _)| units)
}

/// What a plan file holds besides its units: `[budget]`, `on_plan_finish`,
/// and the layer of each unit's keys.
type PlanParts = (
    Vec<PlanUnit>,
    crate::engine::usage::Budget,
    Option<String>,
    Layers,
);

/// [`parse`], and the plan's `[budget]` and `on_plan_finish`.
fn parse_with_budget(
    text: &str,
    dir: &Path,
    user: &UserDefaults,
) -> std::result::Result<PlanParts, String> {
    // One line: `line N: message` (toml's own rendering spans several lines).
    let mut raw: RawPlan = toml::from_str(text).map_err(|e| {
        let msg = toml_message(&e);
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: {msg}")
            }
            None => msg,
        }
    })?;
    if raw.unit.is_empty() {
        return Err("no units: add at least one [[unit]] table".into());
    }
    let raw_budget = std::mem::take(&mut raw.budget);
    let on_plan_finish = raw.on_plan_finish.take();
    let (raw_units, layers) = raw_units(raw, text, user)?;
    let mut units = Vec::with_capacity(raw_units.len());
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut folded: HashMap<String, String> = HashMap::new();
    for (i, u) in raw_units.into_iter().enumerate() {
        names::check("unit name", &u.name).map_err(|e| format!("unit #{}: {e}", i + 1))?;
        if index.insert(u.name.clone(), i).is_some() {
            return Err(format!("duplicate unit name {:?}", u.name));
        }
        // On macOS and Windows they would share every file: refused everywhere,
        // so a plan means the same on each.
        if let Some(other) = folded.insert(u.name.to_ascii_lowercase(), u.name.clone()) {
            return Err(format!(
                "unit names {other:?} and {:?} differ only in case; a file system that does not tell cases apart (macOS, Windows) would give them the same files",
                u.name
            ));
        }
        let name = u.name.clone();
        let mut unit = checked_unit(u, dir).map_err(|msg| format!("unit {name:?}: {msg}"))?;
        unit.quota.accounts = user.accounts.clone();
        units.push(unit);
    }
    for u in &units {
        for d in &u.depends_on {
            if !index.contains_key(d) {
                return Err(format!(
                    "unit {:?} depends on unknown unit {}",
                    u.name,
                    shown(d, 80)
                ));
            }
        }
    }
    let order = dependency_order(&units, &index).map_err(|c| cycle_message(&units, &c))?;
    worktree_keys::link_pushes(&mut units);
    let mut slots: Vec<Option<PlanUnit>> = units.into_iter().map(Some).collect();
    let budget = raw_budget.checked().map_err(|e| format!("[budget]: {e}"))?;
    Ok((
        order.into_iter().filter_map(|i| slots[i].take()).collect(),
        budget,
        on_plan_finish,
        layers,
    ))
}

/// Each unit's table as it runs: its `[defaults]` and the user config's
/// merged in, in file order (a Temporal plan sends each unit to a worker as
/// a one-unit plan of it). The plan was checked by [`load_with`] first.
pub fn unit_tables(
    text: &str,
    user: &UserDefaults,
) -> std::result::Result<Vec<toml::Table>, String> {
    let raw: toml::Table = toml::from_str(text).map_err(|e| toml_message(&e))?;
    let defaults = match raw.get("defaults") {
        Some(toml::Value::Table(t)) => t.clone(),
        _ => toml::Table::new(),
    };
    let Some(toml::Value::Array(units)) = raw.get("unit") else {
        return Err("no units".into());
    };
    let mut out = Vec::with_capacity(units.len());
    for u in units {
        let mut table = u.as_table().cloned().ok_or("a unit is not a table")?;
        defaults::merge(&defaults, user, &mut table);
        out.push(table);
    }
    Ok(out)
}

/// toml's message on one line (its own rendering spans several).
fn toml_message(e: &toml::de::Error) -> String {
    one_line(&e.message().trim().replace('\n', " "), SHOWN_CHARS)
}

/// Each unit table with the plan's `[defaults]` merged in, deserialized.
fn raw_units(
    raw: RawPlan,
    text: &str,
    user: &UserDefaults,
) -> std::result::Result<(Vec<RawUnit>, Layers), String> {
    let defaults = raw.defaults.unwrap_or_default();
    defaults::check(&defaults)?;
    let mut units = Vec::with_capacity(raw.unit.len());
    let mut all_layers = Layers::new();
    for (i, spanned) in raw.unit.into_iter().enumerate() {
        let start = spanned.span().start.min(text.len());
        let mut table = spanned.into_inner();
        let layers = defaults::merge(&defaults, user, &mut table);
        if let Some(name) = defaults::unit_name(&table) {
            all_layers.insert(name.to_string(), layers);
        }
        // Named only on error: counting lines for every unit would be quadratic.
        let who = match defaults::unit_name(&table) {
            Some(name) => format!("unit {}", shown(name, 80)),
            None => format!("unit #{}", i + 1),
        };
        let line = || text[..start].matches('\n').count() + 1;
        let unit = RawUnit::deserialize(toml::Value::Table(table))
            .map_err(|e| format!("line {}: {who}: {}", line(), toml_message(&e)))?;
        if let Some(a) = &unit.account {
            accounts_keys::check_account(a, unit.engine.engine(), &user.accounts)
                .map_err(|m| format!("line {}: {who}: {m}", line()))?;
        }
        units.push(unit);
    }
    Ok((units, all_layers))
}

/// One unit's own checks (the caller names the unit in the error).
fn checked_unit(u: RawUnit, dir: &Path) -> std::result::Result<PlanUnit, String> {
    let worktree = worktree_of(&u)?;
    let command = command_of(&u)?;
    let loops = loop_keys::loops_of(&u)?;
    let prompt = prompt_keys::prompt_of(u.prompt, u.prompt_file, dir)?;
    let cwd = match (&u.cwd, &worktree) {
        (Some(c), None) => dir.join(c),
        _ => dir.to_path_buf(),
    };
    if !cwd.is_dir() {
        return Err(format!("cwd {} is not a directory", show_path(&cwd)));
    }
    let secs = |key: &str, v: Option<f64>| match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(format!(
            "`{key}` must be a positive number of seconds, not {s}"
        )),
    };
    let mut seen = HashSet::new();
    for d in &u.depends_on {
        if *d == u.name {
            return Err("depends on itself".into());
        }
        if !seen.insert(d.as_str()) {
            return Err(format!("depends on {} twice", shown(d, 80)));
        }
    }
    let summary_schema = match u.summary_schema {
        Some(p) => Some(Arc::new(SummarySchema::load(&dir.join(p))?)),
        None => None,
    };
    if let Some(e) = u.fallback.iter().find(|e| EngineId::COMMANDS.contains(e)) {
        return Err(format!(
            "`fallback` cannot name {e}: it has no command of its own (name a CLI vf knows)"
        ));
    }
    let mcp = match &u.mcp {
        Some(f) => {
            let text = crate::ground::fsutil::read_user_text("mcp", &dir.join(f), MCP_FILE_MAX)
                .map_err(|e| e.to_string())?;
            let servers = crate::engine::mcp::parse(&text).map_err(|e| e.to_string())?;
            // The unit's engine and each engine of its `fallback`.
            for e in u.engine.engine().iter().chain(&u.fallback) {
                crate::engine::mcp::check(*e, &servers).map_err(|e| e.to_string())?;
            }
            let file = std::fs::canonicalize(dir.join(f)).map_err(|e| format!("mcp: {e}"))?;
            Some((servers, file))
        }
        None => None,
    };
    let (mcp, mcp_file) = mcp.unzip();
    let rate_limit =
        crate::plan::ratelimit::Policy::from_plan(u.on_rate_limit, u.fallback, u.max_wait)?;
    let mut policy = crate::engine::tool_policy::ToolPolicy {
        read_only: u.read_only,
        allow_tools: u.allow_tools,
        deny_tools: u.deny_tools,
        require_enforced: u.require_enforced,
        sandbox_holds_read_only: false,
        in_sandbox: false,
    };
    crate::engine::tool_policy::check(&policy, u.skip_permissions).map_err(|e| e.to_string())?;
    let keys = (u.sandbox, u.deny_read, u.writable, u.verify_sandbox);
    let (sandbox, sandbox_asked) = sandbox_keys::resolve(keys, &mut policy, &cwd)?;
    crate::workspace::guard::PathGuards::new(&u.deny_paths, &u.allow_paths)
        .map_err(|e| format!("deny_paths / allow_paths: {e}"))?;
    Ok(PlanUnit {
        sandbox,
        sandbox_asked,
        loops,
        // Every declared account is added by the caller; the scheduler
        // chooses one per start.
        quota: crate::quota::Ask {
            account: None,
            limits: accounts_keys::limits(u.pause_at, u.stagger),
            accounts: Vec::new(),
            rule: crate::quota::Rule {
                pinned: u.account,
                no_rotate: u.rotate == Some(false),
            },
            admitted: Default::default(),
        },
        mcp,
        mcp_file,
        agent: u.agent,
        policy,
        command,
        summary_schema,
        model: u.model,
        effort: u.effort,
        rate_limit,
        stall_timeout: secs("stall_timeout", u.stall_timeout)?,
        timeout: secs("timeout", u.timeout)?,
        name: u.name,
        engine: u.engine,
        prompt,
        cwd,
        depends_on: u.depends_on,
        attachments: u.attachments,
        skip_permissions: u.skip_permissions,
        worktree,
        retries: u.retries.unwrap_or(0),
        setup: u.setup,
        verify: u.verify,
        deny_paths: u.deny_paths,
        allow_paths: u.allow_paths,
        hooks: crate::dispatch::notify::Hooks {
            on_finish: u.on_finish,
            on_fail: u.on_fail,
        },
    })
}

/// A bridge unit's command: its key `bridge`, else `VIBEFLOW_AI`; the keys
/// are refused on a unit of another engine.
fn command_of(u: &RawUnit) -> std::result::Result<Option<EngineCommand>, String> {
    let id = u.engine.engine();
    if id != Some(EngineId::Bridge) && (u.bridge.is_some() || u.bridge_output.is_some()) {
        return Err("`bridge` and `bridge_output` go with engine = \"bridge\"".into());
    }
    if id != Some(EngineId::Acp) && u.acp.is_some() {
        return Err("`acp` goes with engine = \"acp\"".into());
    }
    let Some((engine, src)) = id.and_then(|e| e.engine().spec().command.map(|src| (e, src))) else {
        return Ok(None);
    };
    let given = match engine {
        EngineId::Acp => &u.acp,
        _ => &u.bridge,
    };
    let (line, what) = match (given, u.engine.preset(), src.from_env()) {
        (Some(line), _, _) => (line.clone(), format!("`{}`", src.plan_key)),
        (None, Some(preset), _) => return preset.command().map(Some).map_err(|e| e.to_string()),
        (None, None, Some(line)) => (line, src.env.to_string()),
        (None, None, None) => {
            return Err(format!(
                "{engine} has no command: set `{}` or {}",
                src.plan_key, src.env
            ));
        }
    };
    let cmd = EngineCommand::new(line, u.bridge_output, &what).map_err(|e| e.to_string())?;
    Ok(Some(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let t = tempfile::tempdir().unwrap();
        parse(text, t.path()).unwrap_err()
    }

    #[test]
    fn valid_plan_in_dependency_order() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        std::fs::write(t.path().join("p.md"), "from a file").unwrap();
        let units = parse(
            r#"
[[unit]]
name = "api"
engine = "claude"
prompt_file = "p.md"
depends_on = ["schema"]
cwd = "sub"
stall_timeout = 30

[[unit]]
name = "schema"
engine = "auto"
prompt = "x"
timeout = 1.5
"#,
            t.path(),
        )
        .unwrap();
        let names: Vec<&str> = units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["schema", "api"]);
        assert_eq!(units[1].prompt, "from a file");
        assert_eq!(units[1].cwd, t.path().join("sub"));
        assert_eq!(units[1].stall_timeout, Some(Duration::from_secs(30)));
        assert_eq!(units[0].engine, EngineChoice::Auto);
        assert_eq!(units[0].cwd, t.path());
    }

    #[test]
    fn each_error_is_named() {
        let u = |extra: &str| format!("[[unit]]\nname = \"a\"\nengine = \"codex\"\n{extra}\n");
        assert!(err(&u("prompt = \"x\"\ncolour = 1")).contains("unknown field `colour`"));
        assert!(err(&u("")).contains("no `prompt` or `prompt_file`"));
        assert!(err(&u("prompt = \"x\"\nprompt_file = \"f\"")).contains("both"));
        assert!(
            err("[[unit]]\nname = \"a\"\nengine = \"gpt\"\nprompt = \"x\"")
                .contains("unknown engine \"gpt\"")
        );
        assert!(err(&u("prompt = \"x\"\ndepends_on = [\"zz\"]")).contains("unknown unit \"zz\""));
        assert!(err(&u("prompt = \"x\"\ndepends_on = [\"a\"]")).contains("itself"));
        assert!(
            err(&format!("{}{}", u("prompt = \"x\""), u("prompt = \"y\"")))
                .contains("duplicate unit name \"a\"")
        );
        let upper = "[[unit]]\nname = \"A\"\nengine = \"codex\"\nprompt = \"x\"\n";
        assert!(
            err(&format!("{}{upper}", u("prompt = \"x\"")))
                .contains("unit names \"a\" and \"A\" differ only in case")
        );
        assert!(
            err("[[unit]]\nname = \"../x\"\nengine = \"codex\"\nprompt = \"x\"")
                .contains("invalid unit name")
        );
        assert!(err("").contains("no units"));
        assert!(err(&u("prompt = \"  \"")).contains("empty"));
        assert!(err(&u("prompt = \"x\"\nstall_timeout = -1")).contains("positive"));
        assert!(err(&u("prompt_file = \"missing.md\"")).contains("cannot read prompt_file"));
        assert!(err(&u("prompt = \"x\"\ncwd = \"nope\"")).contains("not a directory"));
        let cyc = err(
            "[[unit]]\nname=\"a\"\nengine=\"codex\"\nprompt=\"x\"\ndepends_on=[\"b\"]\n\
             [[unit]]\nname=\"b\"\nengine=\"codex\"\nprompt=\"x\"\ndepends_on=[\"c\"]\n\
             [[unit]]\nname=\"c\"\nengine=\"codex\"\nprompt=\"x\"\ndepends_on=[\"a\"]\n",
        );
        assert!(cyc.contains("dependency cycle: a -> b -> c -> a"), "{cyc}");
    }

    #[cfg(unix)]
    #[test]
    fn a_prompt_file_that_is_not_a_regular_file_or_too_large_is_refused_unread() {
        let u = |f: &str| {
            format!("[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt_file = \"{f}\"\n")
        };
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [
            "/dev/zero",
            fifo.to_str().unwrap(),
            t.path().to_str().unwrap(),
        ] {
            let e = err(&u(p));
            assert!(e.contains("is not a regular file"), "{p}: {e}");
        }
        let big = t.path().join("big.md");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(crate::dispatch::MAX_PROMPT_BYTES as u64 + 1)
            .unwrap();
        let e = err(&u(big.to_str().unwrap()));
        assert!(e.contains("over the prompt limit"), "{e}");
        let bad = t.path().join("bad.md");
        std::fs::write(&bad, b"\xff\xfe").unwrap();
        assert!(err(&u(bad.to_str().unwrap())).contains("not UTF-8"));
    }

    /// `n` units named `u0..`, unit `i` depending on `deps(i)`.
    fn units(n: usize, deps: impl Fn(usize) -> Vec<usize>) -> String {
        (0..n)
            .map(|i| {
                let d: Vec<String> = deps(i).iter().map(|j| format!("\"u{j}\"")).collect();
                format!(
                    "[[unit]]\nname=\"u{i}\"\nengine=\"codex\"\nprompt=\"x\"\ndepends_on=[{}]\n",
                    d.join(",")
                )
            })
            .collect()
    }

    fn order_of(text: &str) -> Vec<String> {
        let t = tempfile::tempdir().unwrap();
        parse(text, t.path())
            .unwrap()
            .into_iter()
            .map(|u| u.name)
            .collect()
    }

    #[test]
    fn ready_units_keep_their_file_order() {
        // u0 needs u2; u3 needs u0 and u1.
        let deps = |i| match i {
            0 => vec![2],
            3 => vec![0, 1],
            _ => vec![],
        };
        assert_eq!(order_of(&units(4, deps)), ["u1", "u2", "u0", "u3"]);
    }

    #[test]
    fn long_chains_and_cycles_are_handled_without_recursion() {
        // Each unit needs the next: the reverse of the file order.
        let n = 30_000;
        let order = order_of(&units(n, |i| if i + 1 < n { vec![i + 1] } else { vec![] }));
        assert_eq!(order.first().map(String::as_str), Some("u29999"));
        assert_eq!(order.last().map(String::as_str), Some("u0"));
        // A cycle of them all: named, cut.
        let e = err(&units(n, |i| vec![(i + 1) % n]));
        let names: Vec<String> = (0..10).map(|i| format!("u{i}")).collect();
        assert_eq!(
            e,
            format!(
                "dependency cycle of {n} units: {} -> … ({} more) -> u0",
                names.join(" -> "),
                n - 10
            )
        );
        let e = err(&units(
            4,
            |i| if i == 0 { vec![1] } else { vec![1 + i % 3] },
        ));
        assert_eq!(e, "dependency cycle: u1 -> u2 -> u3 -> u1");
    }

    #[test]
    fn paths_and_values_from_the_plan_are_shown_on_one_line() {
        let u = |extra: &str| format!("[[unit]]\nname = \"a\"\nengine = \"codex\"\n{extra}\n");
        for (extra, part) in [
            (
                "prompt = \"x\"\ncwd = \"a\\nb\\u001b[2J\"",
                r"a\nb\u{1b}[2J is not a directory",
            ),
            (
                "prompt_file = \"a\\nb\\u001b[2J\"",
                r"cannot read prompt_file",
            ),
            ("prompt_file = \"a\\nb\\u001b[2J\"", r"a\nb\u{1b}[2J"),
            (
                "prompt = \"x\"\ndepends_on = [\"z\\nz\\u001b\"]",
                r#"unknown unit "z\nz\u{1b}""#,
            ),
        ] {
            let e = err(&u(extra));
            assert!(e.contains(part), "{e}");
            assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e:?}");
        }
        let long = "y".repeat(20_000);
        let e = err(&u(&format!("prompt = \"x\"\ndepends_on = [\"{long}\"]")));
        assert!(e.len() < 300, "{} bytes", e.len());
    }
}
