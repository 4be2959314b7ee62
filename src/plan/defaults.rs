//! A plan's `[defaults]` table: every key it sets applies to each unit that
//! does not set that key itself. The merge happens on the TOML tables, before
//! a unit is deserialized, so every unit key (today's and any added later)
//! works in `[defaults]` the same way, and an unknown key in `[defaults]` is
//! the same error as in a unit.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::{Table, Value};

use crate::engine::EngineId;

/// What the user config (`crate::plan::config`) sets below a plan's `[defaults]`:
/// its `[defaults]` table and, per engine, a model and an effort.
#[derive(Debug, Clone, Default)]
pub struct UserDefaults {
    pub defaults: Table,
    pub engines: BTreeMap<EngineId, (Option<String>, Option<String>)>,
    /// `[[accounts]]`: every declared account (a unit's `account` names one).
    pub accounts: Vec<crate::quota::Account>,
}

/// Which layer of a plan set a unit's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// The unit's own table.
    Unit,
    /// The plan's `[defaults]`.
    Defaults,
    /// The user config.
    User,
}

/// `unit` with the plan's `[defaults]`, then the user's defaults and the
/// model and effort the user gives its engine; returns the layer of each key.
pub fn merge(plan: &Table, user: &UserDefaults, unit: &mut Table) -> BTreeMap<String, Layer> {
    let mut layers: BTreeMap<String, Layer> =
        unit.keys().map(|k| (k.clone(), Layer::Unit)).collect();
    apply(plan, unit);
    note(unit, &mut layers, Layer::Defaults);
    // A preset (`acp:NAME`) is the unit's own command: the user's is not for it.
    let engine = unit.get("engine").or(user.defaults.get("engine"));
    if engine
        .and_then(Value::as_str)
        .is_some_and(|e| e.contains(':'))
    {
        let mut d = user.defaults.clone();
        d.retain(|k, _| owner(k).is_none());
        apply(&d, unit);
    } else {
        apply(&user.defaults, unit);
    }
    let kind = unit
        .get("engine")
        .and_then(Value::as_str)
        .and_then(|e| EngineId::parse(e.split(':').next().unwrap_or(e)));
    if let Some((model, effort)) = kind.and_then(|k| user.engines.get(&k)) {
        for (key, v) in [("model", model), ("effort", effort)] {
            if let Some(v) = v
                && !unit.contains_key(key)
            {
                unit.insert(key.into(), Value::String(v.clone()));
            }
        }
    }
    note(unit, &mut layers, Layer::User);
    layers
}

/// Every key of `unit` not yet in `layers` came from `layer`.
fn note(unit: &Table, layers: &mut BTreeMap<String, Layer>, layer: Layer) {
    for k in unit.keys() {
        layers.entry(k.clone()).or_insert(layer);
    }
}

/// One key of the user config's `[defaults]`, checked as a unit's key: its
/// type by the unit's own deserializer, then the unit's own checks, on a unit
/// that sets only it (`dir`: an existing directory for the unit's `cwd`).
pub fn check_config_key(key: &str, value: &Value, dir: &Path) -> Result<(), String> {
    let engine = match key {
        "bridge" | "bridge_output" => "bridge",
        "acp" => "acp",
        _ => "auto",
    };
    let mut t = Table::new();
    t.insert("name".into(), "config".into());
    t.insert("prompt".into(), "x".into());
    t.insert("engine".into(), engine.into());
    if key == "bridge_output" {
        t.insert("bridge".into(), "true".into());
    }
    if WORKTREE_ONLY.contains(&key) {
        t.insert("worktree".into(), true.into());
    }
    if RESOLVE_ONLY.contains(&key) {
        t.insert("on_conflict".into(), "resolve".into());
    }
    t.insert(key.into(), value.clone());
    let unit = super::RawUnit::deserialize(Value::Table(t))
        .map_err(|e| format!("`{key}`: {}", super::toml_message(&e)))?;
    if key == "engine" {
        return Ok(());
    }
    super::checked_unit(unit, dir)
        .map(|_| ())
        .map_err(|e| format!("`{key}`: {e}"))
}

/// Keys whose default reaches worktree units only (a unit's own one without
/// `worktree = true` is refused).
const WORKTREE_ONLY: &[&str] = &["push"];

/// Keys whose default reaches only units with `on_conflict = "resolve"` (a
/// unit's own one without it is refused).
const RESOLVE_ONLY: &[&str] = &["resolver"];

/// Keys that make no sense for every unit at once.
const NOT_DEFAULTABLE: &[&str] = &["name"];

/// Keys that stand for one choice: a unit that sets any of them takes none of
/// the others from `[defaults]` (a unit's `prompt` wins over a default `prompt_file`).
const ONE_OF: &[&[&str]] = &[&["prompt", "prompt_file"]];

/// Refuses a `[defaults]` table that sets a key no unit may share.
pub fn check(defaults: &Table) -> Result<(), String> {
    match NOT_DEFAULTABLE.iter().find(|k| defaults.contains_key(**k)) {
        Some(k) => Err(format!("[defaults] cannot set `{k}`: it is per unit")),
        None => Ok(()),
    }
}

/// `unit` with every key of `defaults` it does not set itself, of a command
/// engine's keys only those of its own engine, `push` only for a worktree
/// unit and `resolver` only for one that resolves its conflicts.
pub fn apply(defaults: &Table, unit: &mut Table) {
    let engine = unit.get("engine").or(defaults.get("engine"));
    let kind = engine
        .and_then(Value::as_str)
        .map(|e| e.split(':').next().unwrap_or(e));
    let kind = kind.map(str::to_string);
    let worktree = unit.get("worktree").or(defaults.get("worktree")) == Some(&Value::Boolean(true));
    let resolves =
        unit.get("on_conflict").or(defaults.get("on_conflict")) == Some(&Value::from("resolve"));
    for (key, value) in defaults {
        if unit.contains_key(key) || sets_alternative(unit, key) {
            continue;
        }
        if owner(key).is_some_and(|e| Some(e.as_str()) != kind.as_deref()) {
            continue;
        }
        if WORKTREE_ONLY.contains(&key.as_str()) && !worktree {
            continue;
        }
        if RESOLVE_ONLY.contains(&key.as_str()) && !resolves {
            continue;
        }
        unit.insert(key.clone(), value.clone());
    }
}

/// The command engine a key belongs to: its plan key (`bridge`, `acp`) and
/// the keys named after it (`bridge_output`). A default for such a key is
/// for that engine's units: `[defaults] bridge` beside codex units is not
/// their error, as the same key in a codex unit itself is.
fn owner(key: &str) -> Option<EngineId> {
    EngineId::COMMANDS.into_iter().find(|e| {
        e.engine().spec().command.is_some_and(|src| {
            let k = src.plan_key;
            key == k
                || key
                    .strip_prefix(k)
                    .is_some_and(|rest| rest.starts_with('_'))
        })
    })
}

/// Whether `unit` sets another key of `key`'s one-choice group.
fn sets_alternative(unit: &Table, key: &str) -> bool {
    ONE_OF
        .iter()
        .filter(|group| group.contains(&key))
        .any(|group| group.iter().any(|k| *k != key && unit.contains_key(*k)))
}

/// The unit's name when it has a string one (for messages before it is checked).
pub fn unit_name(unit: &Table) -> Option<&str> {
    unit.get("name").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(defaults: &str, unit: &str) -> Table {
        let (d, mut u): (Table, Table) = (defaults.parse().unwrap(), unit.parse().unwrap());
        apply(&d, &mut u);
        u
    }

    #[test]
    fn a_command_engines_default_reaches_only_its_own_units() {
        let d = "bridge = \"my-agent\"\nbridge_output = \"codex\"\nacp = \"a --acp\"\nretries = 1";
        let keys = |u: &Table| u.keys().cloned().collect::<Vec<_>>();
        let codex = merged(d, "engine = \"codex\"");
        assert_eq!(keys(&codex), ["engine", "retries"]);
        let bridge = merged(d, "engine = \"bridge\"");
        assert_eq!(
            keys(&bridge),
            ["bridge", "bridge_output", "engine", "retries"]
        );
        let acp = merged(d, "engine = \"acp:gemini\"");
        assert_eq!(keys(&acp), ["acp", "engine", "retries"]);
        // The unit's engine may itself come from [defaults].
        let by_default = merged(&format!("{d}\nengine = \"bridge\""), "x = 1");
        assert!(by_default.contains_key("bridge"), "{by_default:?}");
        assert_eq!(owner("bridgework"), None);
    }

    #[test]
    fn the_user_layer_comes_last_and_never_overrides_a_preset() {
        let user = UserDefaults {
            defaults: table("acp = \"mine --acp\"\ntimeout = 9.0\nread_only = true"),
            engines: BTreeMap::from([(EngineId::Acp, (Some("m".into()), None))]),
            accounts: Vec::new(),
        };
        let plan = table("timeout = 5.0");
        let mut unit = table("engine = \"acp:gemini\"\nread_only = false");
        let layers = merge(&plan, &user, &mut unit);
        assert_eq!(
            unit,
            table("engine = \"acp:gemini\"\nread_only = false\ntimeout = 5.0\nmodel = \"m\"")
        );
        let want = [
            ("engine", Layer::Unit),
            ("model", Layer::User),
            ("read_only", Layer::Unit),
            ("timeout", Layer::Defaults),
        ];
        assert_eq!(
            layers,
            want.map(|(k, l)| (k.to_string(), l)).into_iter().collect()
        );
        let mut plain = table("engine = \"acp\"");
        merge(&plan, &user, &mut plain);
        assert_eq!(plain.get("acp"), Some(&Value::from("mine --acp")));
    }

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_units_own_key_wins_and_one_choice_is_kept_whole() {
        let defaults = table("engine = \"codex\"\nprompt_file = \"p.md\"\ntimeout = 5.0");
        let mut unit = table("name = \"a\"\nengine = \"claude\"\nprompt = \"x\"");
        apply(&defaults, &mut unit);
        assert_eq!(
            unit,
            table("name = \"a\"\nengine = \"claude\"\nprompt = \"x\"\ntimeout = 5.0")
        );
        assert_eq!(
            check(&table("name = \"x\"")).unwrap_err(),
            "[defaults] cannot set `name`: it is per unit"
        );
    }
}
