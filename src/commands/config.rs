//! `vf config` (the effective settings and where each comes from), `vf config
//! path`, and the user config applied below the flags of the commands that
//! take its settings (docs/CONFIG.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::cli::{AfterRunArgs, ConfigArgs, ConfigCommand, ModelArgs, PolicyArgs};
use crate::engine::EngineId;
use crate::engine::choice::EngineChoice;
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
use crate::plan::config::{self, Config, DEFAULT_KEYS, Origin};
use crate::unit::marker::Asked;

/// Each effective setting of a run and where it came from.
pub type Origins = BTreeMap<&'static str, Origin>;

/// The state dir: `--state-dir` (or `VF_STATE_DIR`), else the user config's
/// `state_dir`, else the nearest `.vibeflow/` upwards, else `./.vibeflow`.
pub fn state_dir(explicit: Option<&Path>, cwd: &Path) -> Result<PathBuf> {
    Ok(state_dir_of(explicit, cwd, &config::load()?)?.0)
}

/// [`state_dir`] with the config already read, and the origin.
pub fn state_dir_of(
    explicit: Option<&Path>,
    cwd: &Path,
    cfg: &Config,
) -> Result<(PathBuf, Origin)> {
    if let Some(p) = explicit {
        // clap folds the variable into the flag: the variable when they agree.
        let env = std::env::var_os(EnvVars::VF_STATE_DIR).is_some_and(|v| Path::new(&v) == p);
        let origin = if env { Origin::Env } else { Origin::Flag };
        return Ok((crate::ground::state::absolute(p)?, origin));
    }
    if let Some(p) = &cfg.state_dir {
        return Ok((p.clone(), cfg.origin()));
    }
    Ok((
        crate::ground::state::resolve_state_dir(None, cwd)?,
        Origin::Builtin,
    ))
}

/// `--engine`, else the config's `engine`; neither is exit 2.
pub fn engine_choice(given: Option<EngineChoice>, cfg: &Config) -> Result<(EngineChoice, Origin)> {
    if let Some(e) = given {
        return Ok((e, Origin::Flag));
    }
    match cfg.get::<EngineChoice>("engine") {
        Some(e) => Ok((e, cfg.origin())),
        None => Err(VfError::usage(format!(
            "no engine: give --engine NAME, or set `engine` in [defaults] of {} (docs/CONFIG.md)",
            cfg.path.display()
        ))),
    }
}

/// `--model` / `--effort`, each else the config's for `engine`.
pub fn model_args(a: &ModelArgs, engine: EngineId, cfg: &Config, o: &mut Origins) -> ModelArgs {
    let keys = cfg.engines.get(&engine).cloned().unwrap_or_default();
    let mut out = a.clone();
    for (key, given, from_cfg, slot) in [
        ("model", a.model.is_some(), keys.model, &mut out.model),
        ("effort", a.effort.is_some(), keys.effort, &mut out.effort),
    ] {
        let origin = match (given, from_cfg) {
            (true, _) => Origin::Flag,
            (false, Some(v)) => {
                *slot = Some(v);
                cfg.origin()
            }
            (false, None) => Origin::Builtin,
        };
        o.insert(key, origin);
    }
    out
}

/// The config's policy, path guards and hooks, as a unit's recorded request.
pub fn asked_of(cfg: &Config) -> Asked {
    Asked {
        read_only: cfg.get("read_only").unwrap_or(false),
        allow_tools: cfg.get("allow_tools").unwrap_or_default(),
        deny_tools: cfg.get("deny_tools").unwrap_or_default(),
        require_enforced: cfg.get("require_enforced").unwrap_or(false),
        deny_paths: cfg.get("deny_paths").unwrap_or_default(),
        allow_paths: cfg.get("allow_paths").unwrap_or_default(),
        on_finish: cfg.get("on_finish"),
        on_fail: cfg.get("on_fail"),
        // The config has no `mcp` key: a server file is per unit.
        mcp: None,
        loops: crate::plan::config_loops(&cfg.defaults),
        verify: None,
        sandbox: cfg.get("sandbox"),
        deny_read: cfg.get("deny_read").unwrap_or_default(),
        writable: cfg.get("writable").unwrap_or_default(),
        steps_unsandboxed: !cfg.get("verify_sandbox").unwrap_or(true),
    }
}

/// A part of the request: its key, whether a flag gives it, whether a marker's request sets it.
type Part = (&'static str, bool, fn(&Asked) -> bool);

/// The origin of each part of the request: a flag, else the unit's marker
/// (a re-run keeps what it asked for), else the config, else built-in.
pub fn asked_origins(
    (p, after): (&PolicyArgs, &AfterRunArgs),
    kept: Option<&Asked>,
    cfg: &Config,
    o: &mut Origins,
) {
    let t = &p.tools;
    let given: [Part; 8] = [
        ("read_only", p.read_only, |a| a.read_only),
        ("allow_tools", !t.allow_tool.is_empty(), |a| {
            !a.allow_tools.is_empty()
        }),
        ("deny_tools", !t.deny_tool.is_empty(), |a| {
            !a.deny_tools.is_empty()
        }),
        ("require_enforced", t.require_enforced, |a| {
            a.require_enforced
        }),
        ("deny_paths", !after.deny_path.is_empty(), |a| {
            !a.deny_paths.is_empty()
        }),
        ("allow_paths", !after.allow_path.is_empty(), |a| {
            !a.allow_paths.is_empty()
        }),
        ("on_finish", after.on_finish.is_some(), |a| {
            a.on_finish.is_some()
        }),
        ("on_fail", after.on_fail.is_some(), |a| a.on_fail.is_some()),
    ];
    for (key, flag, set) in given {
        let origin = match kept {
            _ if flag => Origin::Flag,
            Some(k) if set(k) => Origin::Marker,
            Some(_) => Origin::Builtin,
            None if cfg.defaults.contains_key(key) => cfg.origin(),
            None => Origin::Builtin,
        };
        o.insert(key, origin);
    }
}

/// The origin of each loop key: a flag, else the unit's marker, else the
/// config, else built-in (`on_conflict` and `resolver` have no flag).
pub fn loop_origins(a: &crate::cli::LoopArgs, kept: Option<&Asked>, cfg: &Config, o: &mut Origins) {
    let review = a.review_engine.is_some()
        || a.review_rounds.is_some()
        || a.review_model.is_some()
        || a.review_prompt.is_some();
    let given: [Part; 4] = [
        ("fix_rounds", a.fix_rounds.is_some(), |k| {
            k.loops.fix_rounds > 0
        }),
        ("review", review, |k| k.loops.review.is_some()),
        ("on_conflict", false, |k| !k.loops.on_conflict.is_fail()),
        ("resolver", false, |k| k.loops.resolver.is_some()),
    ];
    // What a first run takes of the config (a lone `resolver` is for plans).
    let from_config = asked_of(cfg);
    for (key, flag, set) in given {
        let origin = match kept {
            _ if flag => Origin::Flag,
            Some(k) if set(k) => Origin::Marker,
            Some(_) => Origin::Builtin,
            None if set(&from_config) => cfg.origin(),
            None => Origin::Builtin,
        };
        o.insert(key, origin);
    }
}

/// A flag's value, else the config's `[defaults]` key, with its origin.
pub fn or_config<T: serde::de::DeserializeOwned>(
    given: Option<T>,
    key: &'static str,
    cfg: &Config,
    o: &mut Origins,
) -> Option<T> {
    let (v, origin) = match given {
        Some(v) => (Some(v), Origin::Flag),
        None => match cfg.get::<T>(key) {
            Some(v) => (Some(v), cfg.origin()),
            None => (None, Origin::Builtin),
        },
    };
    o.insert(key, origin);
    v
}

#[derive(Serialize)]
struct Setting {
    key: String,
    value: Value,
    origin: Origin,
}

#[derive(Serialize)]
struct UnitOrigins {
    name: String,
    origins: BTreeMap<String, Origin>,
}

#[derive(Serialize)]
struct Shown {
    path: PathBuf,
    exists: bool,
    settings: Vec<Setting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    units: Option<Vec<UnitOrigins>>,
}

/// vf's own value of a `[defaults]` key nobody set.
fn builtin(key: &str) -> Value {
    match key {
        "on_rate_limit" => Value::from("fail"),
        "read_only" | "require_enforced" => Value::Bool(false),
        "retries" | "fix_rounds" => Value::from(0),
        "on_conflict" => Value::from("fail"),
        "fallback" | "allow_tools" | "deny_tools" | "deny_paths" | "allow_paths" => {
            Value::Array(Vec::new())
        }
        _ => Value::Null,
    }
}

fn settings(args: &ConfigArgs, cfg: &Config) -> Result<Vec<Setting>> {
    let cwd = std::env::current_dir()?;
    let (dir, origin) = state_dir_of(args.state.state_dir.as_deref(), &cwd, cfg)?;
    let mut out = vec![Setting {
        key: "state_dir".into(),
        value: Value::from(dir.display().to_string()),
        origin,
    }];
    out.push(match cfg.jobs {
        Some(j) => Setting {
            key: "jobs".into(),
            value: Value::from(j),
            origin: cfg.origin(),
        },
        None => Setting {
            key: "jobs".into(),
            value: Value::from(crate::cli::DEFAULT_JOBS),
            origin: Origin::Builtin,
        },
    });
    for key in DEFAULT_KEYS {
        out.push(match cfg.defaults.get(*key) {
            Some(v) => Setting {
                key: key.to_string(),
                value: serde_json::to_value(v).map_err(anyhow::Error::from)?,
                origin: cfg.origin(),
            },
            None => Setting {
                key: key.to_string(),
                value: builtin(key),
                origin: Origin::Builtin,
            },
        });
    }
    for (id, k) in &cfg.engines {
        for (name, v) in [("model", &k.model), ("effort", &k.effort)] {
            if let Some(v) = v {
                out.push(Setting {
                    key: format!("engines.{id}.{name}"),
                    value: Value::from(v.as_str()),
                    origin: cfg.origin(),
                });
            }
        }
    }
    Ok(out)
}

/// Each unit of the plan: the origin of each key it runs with.
fn unit_origins(plan: &Path, cfg: &Config) -> Result<Vec<UnitOrigins>> {
    let plan = crate::plan::load_with(plan, &cfg.user_defaults())?;
    let keys = DEFAULT_KEYS.iter().chain(&["model", "effort"]);
    Ok(plan
        .units
        .iter()
        .map(|u| {
            let layers = plan.layers.get(&u.name);
            let origins = keys
                .clone()
                .map(|k| {
                    let origin = match layers.and_then(|l| l.get(*k)) {
                        Some(crate::plan::Layer::Unit) => Origin::Unit,
                        Some(crate::plan::Layer::Defaults) => Origin::Defaults,
                        Some(crate::plan::Layer::User) => cfg.origin(),
                        None => Origin::Builtin,
                    };
                    (k.to_string(), origin)
                })
                .collect();
            UnitOrigins {
                name: u.name.clone(),
                origins,
            }
        })
        .collect())
}

pub fn run(args: &ConfigArgs) -> Result<i32> {
    if let Some(ConfigCommand::Path) = args.command {
        let mut out = super::stdio::out();
        writeln!(out, "{}", config::path()?.display())?;
        return Ok(0);
    }
    let cfg = config::load()?;
    let shown = Shown {
        settings: settings(args, &cfg)?,
        units: match &args.plan {
            Some(p) => Some(unit_origins(p, &cfg)?),
            None => None,
        },
        path: cfg.path.clone(),
        exists: cfg.exists,
    };
    if args.json {
        super::print_json(&shown)?;
        return Ok(0);
    }
    let mut out = super::stdio::out();
    let state = if shown.exists {
        ""
    } else {
        " (none: built-ins)"
    };
    writeln!(out, "# config: {}{state}", shown.path.display())?;
    for s in &shown.settings {
        let value = match &s.value {
            Value::Null => "(unset)".to_string(),
            v => v.to_string(),
        };
        writeln!(out, "{}\t{}={value}", s.origin, s.key)?;
    }
    for u in shown.units.iter().flatten() {
        writeln!(out, "# unit {}", u.name)?;
        for (k, o) in u.origins.iter().filter(|(_, o)| **o != Origin::Builtin) {
            writeln!(out, "{o}\t{}.{k}", u.name)?;
        }
    }
    Ok(0)
}
