//! A plan's `[defaults]` table: every key it sets applies to each unit that
//! does not set that key itself. The merge happens on the TOML tables, before
//! a unit is deserialized, so every unit key (today's and any added later)
//! works in `[defaults]` the same way, and an unknown key in `[defaults]` is
//! the same error as in a unit.

use toml::{Table, Value};

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

/// `unit` with every key of `defaults` it does not set itself.
pub fn apply(defaults: &Table, unit: &mut Table) {
    for (key, value) in defaults {
        if unit.contains_key(key) || sets_alternative(unit, key) {
            continue;
        }
        unit.insert(key.clone(), value.clone());
    }
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
