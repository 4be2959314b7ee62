//! Accounts per engine (the user config's `[[accounts]]`): a name, the
//! engine, and the variables that point the engine at that account's
//! credentials. Which one a unit runs on is chosen here, against the ledger.

use std::fmt;

use crate::engine::EngineId;

/// The account of an engine the user declared none for.
pub const DEFAULT_ACCOUNT: &str = "default";

/// One declared account. Its `env` values may be secrets: `Debug` never
/// prints them, and nothing else shows them.
#[derive(Clone, PartialEq)]
pub struct Account {
    pub name: String,
    pub engine: EngineId,
    /// Set for the engine's process (already expanded: `~` is the home).
    pub env: Vec<(String, String)>,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Account")
            .field("name", &self.name)
            .field("engine", &self.engine)
            .field("env", &keys)
            .finish()
    }
}

/// Variables no account may set, whatever the engine: those that change
/// what runs rather than whose account it is (and vf's own, `EnvVars::PREFIX`).
const NEVER: &[&str] = &["PATH", "LD_*", "DYLD_*", "NODE_OPTIONS"];

fn matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == pattern,
    }
}

/// Whether an account of an engine that reads `allowed` (names, or
/// prefixes ending in `*`) may set `key`; the error says why not.
pub fn check_env_key(engine: EngineId, allowed: &[&str], key: &str) -> Result<(), String> {
    let vfs = crate::ground::env::EnvVars::is_vfs(key);
    if vfs || NEVER.iter().any(|p| matches(p, key)) {
        return Err(format!("an account's `env` may not set `{key}`"));
    }
    if !allowed.iter().any(|p| matches(p, key)) {
        return Err(format!(
            "{engine} does not read `{key}`; an account of {engine} may set {}",
            allowed.join(", ")
        ));
    }
    Ok(())
}

/// Which accounts a unit may run on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    /// The plan's `account`: only this one (it waits for its own reset).
    pub pinned: Option<String>,
    /// `rotate = false`: the first open account at the start, never another.
    pub no_rotate: bool,
}

/// The accounts `engine`'s unit may try, in order: `prefer` (the account
/// its session belongs to) first, then the declared order. Empty when none
/// is declared: the unit runs on the default account.
pub fn candidates<'a>(
    all: &'a [Account],
    engine: EngineId,
    rule: &Rule,
    prefer: Option<&str>,
) -> Vec<&'a Account> {
    let mine = all.iter().filter(|a| a.engine == engine);
    if let Some(pin) = &rule.pinned {
        return mine.filter(|a| &a.name == pin).collect();
    }
    let mut out: Vec<&Account> = mine.collect();
    if let Some(p) = prefer
        && let Some(i) = out.iter().position(|a| a.name == p)
    {
        let first = out.remove(i);
        out.insert(0, first);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acct(name: &str, engine: EngineId) -> Account {
        Account {
            name: name.into(),
            engine,
            env: vec![("CLAUDE_CONFIG_DIR".into(), "/secret/path".into())],
        }
    }

    #[test]
    fn debug_never_shows_a_value() {
        let text = format!("{:?}", acct("work", EngineId::Claude));
        assert!(
            text.contains("CLAUDE_CONFIG_DIR") && !text.contains("/secret"),
            "{text}"
        );
    }

    #[test]
    fn env_keys_are_the_engines_own_and_never_vfs() {
        let allowed = ["CLAUDE_CONFIG_DIR", "ANTHROPIC_*"];
        let c = |k| check_env_key(EngineId::Claude, &allowed, k);
        assert!(c("CLAUDE_CONFIG_DIR").is_ok() && c("ANTHROPIC_API_KEY").is_ok());
        assert!(c("PATH").unwrap_err().contains("may not set `PATH`"));
        assert!(c("VF_STATE_DIR").is_err() && c("LD_PRELOAD").is_err());
        assert!(
            c("OPENAI_API_KEY")
                .unwrap_err()
                .contains("claude does not read")
        );
    }

    #[test]
    fn candidates_put_the_sessions_account_first_and_a_pin_alone() {
        let all = [
            acct("a", EngineId::Claude),
            acct("x", EngineId::Codex),
            acct("b", EngineId::Claude),
        ];
        let names = |v: Vec<&Account>| v.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
        let free = Rule::default();
        assert_eq!(
            names(candidates(&all, EngineId::Claude, &free, None)),
            ["a", "b"]
        );
        assert_eq!(
            names(candidates(&all, EngineId::Claude, &free, Some("b"))),
            ["b", "a"]
        );
        let pin = Rule {
            pinned: Some("b".into()),
            no_rotate: false,
        };
        assert_eq!(
            names(candidates(&all, EngineId::Claude, &pin, Some("a"))),
            ["b"]
        );
        assert!(candidates(&all, EngineId::Gemini, &free, None).is_empty());
    }
}
