//! A plan unit's closed-loop keys (issue 41): `fix_rounds`, `review`,
//! `on_conflict`, `resolver`, each checked as it is read so that a bad
//! value is refused naming the unit and its line; the checks across keys
//! are `crate::dispatch::resolve::loops::check`'s (as for the flags).

use serde::{Deserialize, Deserializer, de::Error as _};

use crate::dispatch::resolve::loops::engine_of;
use crate::dispatch::rounds::{MAX_FIX_ROUNDS, MAX_REVIEW_ROUNDS};
use crate::engine::EngineId;
use crate::unit::marker::asked::{ConflictKey, LoopKeys, ReviewKeys};

use super::RawUnit;

/// `fix_rounds`: a whole number from 0 to [`MAX_FIX_ROUNDS`].
pub(super) fn fix_rounds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = i64::deserialize(d)?;
    match u32::try_from(n) {
        Ok(n) if n <= MAX_FIX_ROUNDS => Ok(Some(n)),
        _ => Err(D::Error::custom(format!(
            "`fix_rounds` must be a whole number from 0 to {MAX_FIX_ROUNDS}, not {n}"
        ))),
    }
}

/// `review = { engine, model, rounds, prompt }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReview {
    engine: Option<String>,
    model: Option<String>,
    rounds: Option<i64>,
    prompt: Option<String>,
}

/// `review`: `engine` a CLI vf knows (required), `rounds` from 1 to
/// [`MAX_REVIEW_ROUNDS`] (default 1), `model` and `prompt` optional.
pub(super) fn review<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ReviewKeys>, D::Error> {
    let raw = RawReview::deserialize(d).map_err(|e| D::Error::custom(format!("`review`: {e}")))?;
    let Some(name) = raw.engine else {
        return Err(D::Error::custom(
            "`review` needs `engine`: the reviewer's engine (review = { engine = \"codex\" })",
        ));
    };
    let engine = engine_of("`review.engine`", &name).map_err(D::Error::custom)?;
    let rounds = match raw.rounds.map(u32::try_from) {
        None => 1,
        Some(Ok(n)) if (1..=MAX_REVIEW_ROUNDS).contains(&n) => n,
        _ => {
            return Err(D::Error::custom(format!(
                "`review.rounds` must be a whole number from 1 to {MAX_REVIEW_ROUNDS}, not {}",
                raw.rounds.unwrap_or_default()
            )));
        }
    };
    Ok(Some(ReviewKeys {
        engine,
        model: raw.model,
        rounds,
        prompt: raw.prompt,
    }))
}

/// `on_conflict`: `"fail"` or `"resolve"`.
pub(super) fn on_conflict<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<ConflictKey>, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "fail" => Ok(Some(ConflictKey::Fail)),
        "resolve" => Ok(Some(ConflictKey::Resolve)),
        _ => Err(D::Error::custom(format!(
            "`on_conflict` must be \"fail\" or \"resolve\", not {}",
            crate::ground::text::shown(&s, 80)
        ))),
    }
}

/// `resolver`: a CLI vf knows.
pub(super) fn resolver<'de, D: Deserializer<'de>>(d: D) -> Result<Option<EngineId>, D::Error> {
    let s = String::deserialize(d)?;
    engine_of("`resolver`", &s)
        .map(Some)
        .map_err(D::Error::custom)
}

/// The unit's loop keys, checked across keys (a reviewer that cannot run
/// read-only is refused when the unit has `require_enforced`).
pub(super) fn loops_of(u: &RawUnit) -> Result<LoopKeys, String> {
    let keys = LoopKeys {
        fix_rounds: u.fix_rounds.unwrap_or(0),
        review: u.review.clone(),
        on_conflict: u.on_conflict.unwrap_or_default(),
        resolver: u.resolver,
        max_cost_usd: None,
        max_tokens: None,
    };
    crate::dispatch::resolve::loops::check(&keys, u.require_enforced)?;
    Ok(keys)
}

/// The loop keys a user config's `[defaults]` sets, as a first run of
/// `vf dispatch` takes them (each checked when the config was read; a
/// `resolver` without `on_conflict = "resolve"` is a default for plans only).
pub fn config_loops(defaults: &toml::Table) -> LoopKeys {
    let mut t = toml::Table::new();
    for (k, v) in [("name", "config"), ("prompt", "x"), ("engine", "auto")] {
        t.insert(k.into(), v.into());
    }
    for k in ["fix_rounds", "review", "on_conflict", "resolver"] {
        if let Some(v) = defaults.get(k) {
            t.insert(k.into(), v.clone());
        }
    }
    let Ok(u) = RawUnit::deserialize(toml::Value::Table(t)) else {
        return LoopKeys::default();
    };
    let on_conflict = u.on_conflict.unwrap_or_default();
    LoopKeys {
        fix_rounds: u.fix_rounds.unwrap_or(0),
        review: u.review,
        on_conflict,
        resolver: u.resolver.filter(|_| on_conflict == ConflictKey::Resolve),
        max_cost_usd: None,
        max_tokens: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn unit(extra: &str) -> String {
        format!("[[unit]]\nname = \"a\"\nengine = \"claude\"\nprompt = \"x\"\n{extra}\n")
    }

    fn parsed(text: &str) -> Result<LoopKeys, String> {
        let t = tempfile::tempdir().unwrap();
        parse(text, t.path()).map(|mut u| u.remove(0).loops)
    }

    #[test]
    fn the_keys_are_read_whole_with_their_defaults() {
        assert_eq!(parsed(&unit("")).unwrap(), LoopKeys::default());
        let got = parsed(&unit(
            "fix_rounds = 20\non_conflict = \"resolve\"\nresolver = \"codex\"\n\
             review = { engine = \"codex\", model = \"m\", rounds = 10, prompt = \"p\" }",
        ))
        .unwrap();
        let want = LoopKeys {
            fix_rounds: 20,
            review: Some(ReviewKeys {
                engine: EngineId::Codex,
                model: Some("m".into()),
                rounds: 10,
                prompt: Some("p".into()),
            }),
            on_conflict: ConflictKey::Resolve,
            resolver: Some(EngineId::Codex),
            ..Default::default()
        };
        assert_eq!(got, want);
        let one = parsed(&unit("review = { engine = \"gemini\" }")).unwrap();
        assert_eq!(one.review.map(|r| r.rounds), Some(1));
    }

    #[test]
    fn each_bad_value_is_refused_naming_the_unit_and_its_line() {
        let known = "(known: claude, codex, copilot, opencode, gemini, agy)";
        for (extra, why) in [
            (
                "fix_rounds = -1",
                "`fix_rounds` must be a whole number from 0 to 20, not -1".to_string(),
            ),
            (
                "fix_rounds = 21",
                "`fix_rounds` must be a whole number from 0 to 20, not 21".into(),
            ),
            (
                "fix_rounds = 1.5",
                "invalid type: floating point `1.5`, expected i64".into(),
            ),
            (
                "review = { engine = \"codex\", rounds = 0 }",
                "`review.rounds` must be a whole number from 1 to 10, not 0".into(),
            ),
            (
                "review = { engine = \"codex\", rounds = 11 }",
                "`review.rounds` must be a whole number from 1 to 10, not 11".into(),
            ),
            (
                "review = { rounds = 2 }",
                "`review` needs `engine`: the reviewer's engine (review = { engine = \"codex\" })"
                    .into(),
            ),
            (
                "review = { engine = \"gpt\" }",
                format!("`review.engine`: unknown engine \"gpt\" {known}"),
            ),
            (
                "review = { engine = \"bridge\" }",
                format!("`review.engine`: unknown engine \"bridge\" {known}"),
            ),
            (
                "review = { engine = \"codex\", colour = 1 }",
                "`review`: unknown field `colour`".into(),
            ),
            (
                "on_conflict = \"merge\"",
                "`on_conflict` must be \"fail\" or \"resolve\", not \"merge\"".into(),
            ),
            (
                "on_conflict = \"resolve\"\nresolver = \"acp\"",
                format!("`resolver`: unknown engine \"acp\" {known}"),
            ),
            (
                "resolver = \"codex\"",
                "unit \"a\": `resolver` goes with `on_conflict = \"resolve\"`".into(),
            ),
            (
                "require_enforced = true\nreview = { engine = \"opencode\" }",
                "unit \"a\": require-enforced: the reviewer opencode cannot run read-only".into(),
            ),
        ] {
            let e = parsed(&format!("\n{}", unit(extra))).unwrap_err();
            assert!(e.contains(&why), "{extra}: {e}");
            assert!(
                e.starts_with("line 2: unit \"a\": ") || e.starts_with("unit \"a\": "),
                "{e}"
            );
        }
    }
}
