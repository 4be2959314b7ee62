//! The user config's `[[accounts]]` (docs/CONFIG.md, "Accounts"): each a
//! unit-style name, an engine, and the variables that point that engine at
//! the account's credentials. Checked whole at load; an error is its line.
//!
//! Names are unique per engine, not globally: "work" on claude and "work" on
//! codex are the same person's two accounts, and every place that names an
//! account (a plan's `account`, `--account`, the ledger) names its engine too.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::engine::EngineId;
use crate::ground::text::one_line;
use crate::quota::Account;

/// One `[[accounts]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAccount {
    name: Spanned<String>,
    engine: Spanned<String>,
    #[serde(default)]
    env: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// An error: the line (1-based) and the message.
type LineError = (usize, String);

/// The accounts, checked in file order; `line` maps a byte offset to its line.
pub(super) fn accounts(
    raw: Vec<RawAccount>,
    line: &dyn Fn(usize) -> usize,
    home: Option<&Path>,
) -> Result<Vec<Account>, LineError> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for a in raw {
        let at = line(a.name.span().start);
        let name = a.name.get_ref();
        crate::ground::names::check("account name", name)
            .map_err(|e| (at, format!("[[accounts]] {e}")))?;
        let engine = EngineId::parse(a.engine.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = EngineId::every().map(EngineId::as_str).collect();
            (
                line(a.engine.span().start),
                format!(
                    "[[accounts]] {name:?}: unknown engine {:?} (known: {})",
                    one_line(a.engine.get_ref(), 80),
                    known.join(", ")
                ),
            )
        })?;
        if !seen.insert((engine, name.clone())) {
            return Err((
                at,
                format!("[[accounts]] {name:?} is declared twice for {engine}"),
            ));
        }
        let allowed = engine.engine().spec().account_env;
        let mut env = Vec::with_capacity(a.env.len());
        for (k, v) in a.env {
            crate::quota::accounts::check_env_key(engine, allowed, k.get_ref())
                .map_err(|e| (line(k.span().start), format!("[[accounts]] {name:?}: {e}")))?;
            env.push((k.into_inner(), expand_home(v.get_ref(), home)));
        }
        out.push(Account {
            name: name.clone(),
            engine,
            env,
        });
    }
    Ok(out)
}

/// `~` or a leading `~/` is the home dir (when there is one); the rest as written.
fn expand_home(v: &str, home: Option<&Path>) -> String {
    match (v, home) {
        ("~", Some(h)) => h.display().to_string(),
        (_, Some(h)) if v.starts_with("~/") => h.join(&v[2..]).display().to_string(),
        _ => v.to_string(),
    }
}

/// The user's home dir, for `~` in an account's values.
pub(super) fn home() -> Option<std::path::PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf())
}

/// `pause_at`: a percent, 1 to 100.
pub fn check_pause_at(v: f64) -> Result<f64, String> {
    if v.is_finite() && (1.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "`pause_at` must be a percent from 1 to 100, not {v}"
        ))
    }
}

/// `stagger`: seconds between two starts after a hold, 0 to an hour.
pub fn check_stagger(v: f64) -> Result<f64, String> {
    let max = crate::quota::gate::MAX_STAGGER.as_secs_f64();
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "`stagger` must be from 0 to {max} seconds, not {v}"
        ))
    }
}

/// A plan key `pause_at`, checked as it is read (so the error has its line).
pub(super) fn pause_at<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)?
        .map(check_pause_at)
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// A plan key `stagger`, checked as it is read.
pub(super) fn stagger<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)?
        .map(check_stagger)
        .transpose()
        .map_err(serde::de::Error::custom)
}

/// The governor's limits of `pause_at` and `stagger` (seconds; default 5 s).
pub fn limits(pause_at: Option<f64>, stagger: Option<f64>) -> crate::quota::Limits {
    let stagger = stagger.map_or(crate::quota::gate::DEFAULT_STAGGER, |s| {
        std::time::Duration::from_secs_f64(s)
    });
    crate::quota::Limits {
        pause_at,
        stagger_ms: crate::quota::scaled(stagger).as_millis() as u64,
    }
}

/// A unit's `account` must name a declared account of its engine.
pub fn check_account(name: &str, engine: Option<EngineId>, all: &[Account]) -> Result<(), String> {
    let mine: Vec<&str> = all
        .iter()
        .filter(|a| Some(a.engine) == engine)
        .map(|a| a.name.as_str())
        .collect();
    if mine.contains(&name) {
        return Ok(());
    }
    let engine = engine.map_or("auto".to_string(), |e| e.to_string());
    let known = match mine.is_empty() {
        true => format!("none is declared for {engine} in the user config's [[accounts]]"),
        false => format!("{engine}'s accounts: {}", mine.join(", ")),
    };
    Err(format!(
        "`account` {:?} is not an account of {engine} ({known})",
        one_line(name, 80)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Account>, LineError> {
        #[derive(Deserialize)]
        struct T {
            accounts: Vec<RawAccount>,
        }
        let t: T = toml::from_str(text).unwrap();
        let line = |at: usize| text[..at].matches('\n').count() + 1;
        accounts(t.accounts, &line, Some(Path::new("/home/u")))
    }

    #[test]
    fn home_is_expanded_only_at_the_start() {
        let a = parse(
            "[[accounts]]\nname = \"work\"\nengine = \"claude\"\n\
             env = { CLAUDE_CONFIG_DIR = \"~/.claude-work\", ANTHROPIC_BASE_URL = \"x~/y\" }\n",
        )
        .unwrap();
        assert_eq!(a[0].engine, EngineId::Claude);
        assert_eq!(
            a[0].env,
            [
                ("ANTHROPIC_BASE_URL".to_string(), "x~/y".to_string()),
                // The platform's own separator after the home (`\` on Windows).
                (
                    "CLAUDE_CONFIG_DIR".into(),
                    Path::new("/home/u")
                        .join(".claude-work")
                        .display()
                        .to_string()
                )
            ]
        );
        assert_eq!(expand_home("~", Some(Path::new("/h"))), "/h");
        assert_eq!(expand_home("~user/x", Some(Path::new("/h"))), "~user/x");
        assert_eq!(expand_home("~/x", None), "~/x");
    }

    #[test]
    fn each_bad_account_names_its_line() {
        let head = "[[accounts]]\nname = \"a\"\nengine = \"claude\"\n";
        let bad_name = parse("[[accounts]]\n\nname = \"../x\"\nengine = \"claude\"\n");
        assert_eq!(bad_name.unwrap_err().0, 3);
        let (l, m) = parse(&format!(
            "{head}[[accounts]]\nname = \"a\"\nengine = \"claude\"\n"
        ))
        .unwrap_err();
        assert_eq!(
            (l, m.contains("declared twice for claude")),
            (5, true),
            "{m}"
        );
        // The same name on another engine is another account.
        assert!(
            parse(&format!(
                "{head}[[accounts]]\nname = \"a\"\nengine = \"codex\"\n"
            ))
            .is_ok()
        );
        let (l, m) = parse("[[accounts]]\nname = \"a\"\n\nengine = \"gpt\"\n").unwrap_err();
        assert_eq!((l, m.contains("unknown engine")), (4, true), "{m}");
        let (l, m) = parse(&format!("{head}env = {{ PATH = \"/x\" }}\n")).unwrap_err();
        assert_eq!((l, m.contains("may not set `PATH`")), (4, true), "{m}");
        let (l, m) = parse(&format!("{head}env = {{ VF_STATE_DIR = \"/x\" }}\n")).unwrap_err();
        assert_eq!((l, m.contains("VF_STATE_DIR")), (4, true), "{m}");
        let (_, m) = parse(&format!("{head}env = {{ OPENAI_API_KEY = \"k\" }}\n")).unwrap_err();
        assert!(m.contains("claude does not read"), "{m}");
    }

    #[test]
    fn a_plan_units_quota_keys_over_its_defaults_over_the_user_config() {
        let dir = tempfile::tempdir().unwrap();
        let work = parse("[[accounts]]\nname = \"w\"\nengine = \"claude\"\n").unwrap();
        let user = crate::plan::UserDefaults {
            defaults: toml::from_str("pause_at = 50\nstagger = 1\nrotate = false").unwrap(),
            accounts: work.clone(),
            ..Default::default()
        };
        let unit = |name: &str, keys: &str| {
            format!("[[unit]]\nname = \"{name}\"\nengine = \"claude\"\nprompt = \"p\"\n{keys}\n")
        };
        let text = format!(
            "[defaults]\nstagger = 2\n{}{}",
            unit("a", "pause_at = 70\naccount = \"w\"\nrotate = true"),
            unit("b", "")
        );
        let (units, ..) = super::super::parse_with_budget(&text, dir.path(), &user).unwrap();
        let q = |n: &str| units.iter().find(|u| u.name == n).unwrap().quota.clone();
        let (a, b) = (q("a"), q("b"));
        assert_eq!((a.limits.pause_at, a.limits.stagger_ms), (Some(70.0), 2000));
        assert_eq!((b.limits.pause_at, b.limits.stagger_ms), (Some(50.0), 2000));
        assert_eq!(a.rule.pinned.as_deref(), Some("w"));
        assert!(!a.rule.no_rotate && b.rule.no_rotate && b.rule.pinned.is_none());
        // Every declared account; the scheduler chooses one per start.
        assert_eq!((a.accounts, a.account), (work, None));
        let bad = format!("[defaults]\n{}", unit("c", "account = \"x\""));
        let err = super::super::parse_with_budget(&bad, dir.path(), &user).unwrap_err();
        assert!(
            err.starts_with("line 2: unit \"c\": `account` \"x\""),
            "{err}"
        );
    }
}
