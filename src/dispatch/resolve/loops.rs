//! A unit's closed loops (issue 41), resolved with its other options: the
//! flags of `vf dispatch` / `vf resume` over what the unit kept in its
//! marker (else the user config's keys), or a plan unit's keys; checked as
//! a whole ([`check`]) and turned into the run's [`Loops`] once its engine
//! is known ([`resolve`]: the resolver defaults to it; a reviewer of the
//! same engine is a warning).

use crate::dispatch::rounds::RoundBudget;
use crate::dispatch::rounds::{Loops, MAX_FIX_ROUNDS, MAX_REVIEW_ROUNDS, OnConflict, Review};
use crate::engine::EngineId;
use crate::engine::tool_policy::{self, Enforcement, ToolPolicy};
use crate::ground::{Result, VfError};
use crate::unit::marker::asked::{ConflictKey, LoopKeys, ReviewKeys};

/// The loops' flags as given, each unset when not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopFlags {
    pub fix_rounds: Option<u32>,
    pub review_engine: Option<EngineId>,
    pub review_rounds: Option<u32>,
    pub review_model: Option<String>,
    pub review_prompt: Option<String>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl LoopFlags {
    /// Whether any review flag is given.
    fn any_review(&self) -> bool {
        self.review_engine.is_some()
            || self.review_rounds.is_some()
            || self.review_model.is_some()
            || self.review_prompt.is_some()
    }
}

/// The flags over `keys` (kept in the unit's marker, else the user
/// config's): each given value replaces its key. `--review-engine` starts a
/// review of its own (the other review flags, else one round); without it,
/// `--review-rounds`, `--review-model`, `--review-prompt` change the review
/// in effect, and are refused (exit 2) when there is none.
pub fn over(given: &LoopFlags, keys: &mut LoopKeys) -> Result<()> {
    if let Some(n) = given.fix_rounds {
        if n > MAX_FIX_ROUNDS {
            return Err(VfError::usage(format!(
                "--fix-rounds must be from 0 to {MAX_FIX_ROUNDS}, not {n}"
            )));
        }
        keys.fix_rounds = n;
    }
    if let Some(n) = given.review_rounds
        && !(1..=MAX_REVIEW_ROUNDS).contains(&n)
    {
        return Err(VfError::usage(format!(
            "--review-rounds must be from 1 to {MAX_REVIEW_ROUNDS}, not {n}"
        )));
    }
    if let Some(engine) = given.review_engine {
        keys.review = Some(ReviewKeys {
            engine,
            model: None,
            rounds: 1,
            prompt: None,
        });
    }
    match &mut keys.review {
        Some(r) => {
            r.rounds = given.review_rounds.unwrap_or(r.rounds);
            r.model = given.review_model.clone().or(r.model.take());
            r.prompt = given.review_prompt.clone().or(r.prompt.take());
        }
        None if given.any_review() => {
            return Err(VfError::usage(
                "--review-rounds, --review-model and --review-prompt need --review-engine \
                 (no review is kept for the unit or set in the user config)",
            ));
        }
        None => {}
    }
    if let Some(t) = given.max_tokens {
        if t == 0 {
            return Err(VfError::usage("--max-tokens must be at least 1"));
        }
        keys.max_tokens = Some(t);
    }
    keys.max_cost_usd = given.max_cost.or(keys.max_cost_usd);
    Ok(())
}

/// The engines a reviewer or resolver may be: the CLIs vf knows (a command
/// engine has no command of its own for the round).
fn known() -> String {
    let names: Vec<&str> = EngineId::ALL.iter().map(|e| e.as_str()).collect();
    names.join(", ")
}

/// `what`'s engine, refused unless it is a CLI vf knows.
pub fn engine_of(what: &str, name: &str) -> std::result::Result<EngineId, String> {
    match EngineId::parse(name).filter(|e| EngineId::ALL.contains(e)) {
        Some(e) => Ok(e),
        None => Err(format!(
            "{what}: unknown engine {} (known: {})",
            crate::ground::text::shown(name, 80),
            known()
        )),
    }
}

/// Whether `engine` runs read-only by a verified mechanism (a review round
/// is a fresh run).
fn reviews_read_only(engine: EngineId) -> bool {
    let p = ToolPolicy {
        read_only: true,
        ..Default::default()
    };
    tool_policy::apply(engine, None, false, &p).status.read_only == Enforcement::Enforced
}

/// The loops' checks across keys (each value's own range is checked where
/// it is read): the rounds in range, the reviewer and resolver CLIs vf
/// knows, a `resolver` only with `on_conflict = "resolve"`, and with
/// `require_enforced` a reviewer that can run read-only.
pub fn check(keys: &LoopKeys, require_enforced: bool) -> std::result::Result<(), String> {
    if keys.fix_rounds > MAX_FIX_ROUNDS {
        return Err(format!(
            "`fix_rounds` must be a whole number from 0 to {MAX_FIX_ROUNDS}, not {}",
            keys.fix_rounds
        ));
    }
    if let Some(r) = &keys.review {
        engine_of("review.engine", r.engine.as_str())?;
        if !(1..=MAX_REVIEW_ROUNDS).contains(&r.rounds) {
            return Err(format!(
                "`review.rounds` must be a whole number from 1 to {MAX_REVIEW_ROUNDS}, not {}",
                r.rounds
            ));
        }
        if require_enforced && !reviews_read_only(r.engine) {
            let able: Vec<&str> = EngineId::ALL
                .into_iter()
                .filter(|e| reviews_read_only(*e))
                .map(EngineId::as_str)
                .collect();
            return Err(format!(
                "require-enforced: the reviewer {} cannot run read-only (no verified read-only mode); \
                 review with one that can ({}) or drop require-enforced",
                r.engine,
                able.join(", ")
            ));
        }
    }
    if let Some(e) = keys.resolver {
        engine_of("resolver", e.as_str())?;
        if keys.on_conflict != ConflictKey::Resolve {
            return Err("`resolver` goes with `on_conflict = \"resolve\"`".into());
        }
    }
    Ok(())
}

/// [`check`] as a command's refusal (exit 2).
pub fn checked(keys: &LoopKeys, require_enforced: bool) -> Result<()> {
    check(keys, require_enforced).map_err(VfError::usage)
}

/// The run's loops for a unit of `author`, and the warnings they bring:
/// the resolver is the unit's own engine unless named; a reviewer of the
/// author's own engine is allowed, with a warning.
pub fn resolve(keys: &LoopKeys, author: EngineId) -> (Loops, Vec<String>) {
    let mut warnings = Vec::new();
    let review = keys.review.as_ref().map(|r| Review {
        engine: r.engine,
        model: r.model.clone(),
        rounds: r.rounds,
        prompt: r.prompt.clone(),
    });
    if review.as_ref().is_some_and(|r| r.engine == author) {
        warnings.push(format!("{author} is reviewing its own work"));
    }
    let conflict = match keys.on_conflict {
        ConflictKey::Fail => OnConflict::Fail,
        ConflictKey::Resolve => OnConflict::Resolve {
            engine: keys.resolver.unwrap_or(author),
        },
    };
    let loops = Loops {
        fix_rounds: keys.fix_rounds,
        review,
        conflict,
        budget: RoundBudget {
            cost_usd: keys.max_cost_usd,
            tokens: keys.max_tokens,
        },
    };
    (loops, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(engine: EngineId, rounds: u32) -> ReviewKeys {
        ReviewKeys {
            engine,
            model: None,
            rounds,
            prompt: None,
        }
    }

    /// Flags over kept keys: each given value replaces its key; a review
    /// engine given starts a review of its own.
    #[test]
    fn flags_replace_what_they_give_and_keep_the_rest() {
        let kept = LoopKeys {
            fix_rounds: 3,
            review: Some(ReviewKeys {
                model: Some("kept-model".into()),
                prompt: Some("be strict".into()),
                ..review(EngineId::Codex, 2)
            }),
            on_conflict: ConflictKey::Resolve,
            max_tokens: Some(9),
            ..Default::default()
        };
        let mut keys = kept.clone();
        over(&LoopFlags::default(), &mut keys).unwrap();
        assert_eq!(keys, kept);
        let given = LoopFlags {
            fix_rounds: Some(0),
            review_rounds: Some(4),
            max_cost: Some(1.5),
            ..Default::default()
        };
        let mut keys = kept.clone();
        over(&given, &mut keys).unwrap();
        let want = LoopKeys {
            fix_rounds: 0,
            review: Some(ReviewKeys {
                rounds: 4,
                ..kept.review.clone().unwrap()
            }),
            max_cost_usd: Some(1.5),
            ..kept.clone()
        };
        assert_eq!(keys, want);
        // A new reviewer: none of the kept one's model or prompt.
        let given = LoopFlags {
            review_engine: Some(EngineId::Gemini),
            ..Default::default()
        };
        let mut keys = kept.clone();
        over(&given, &mut keys).unwrap();
        assert_eq!(keys.review, Some(review(EngineId::Gemini, 1)));
    }

    #[test]
    fn bad_flags_are_refused_naming_the_flag() {
        let refused = |given: LoopFlags| {
            over(&given, &mut LoopKeys::default())
                .unwrap_err()
                .to_string()
        };
        let e = refused(LoopFlags {
            fix_rounds: Some(21),
            ..Default::default()
        });
        assert_eq!(e, "--fix-rounds must be from 0 to 20, not 21");
        for n in [0, 11] {
            let e = refused(LoopFlags {
                review_engine: Some(EngineId::Codex),
                review_rounds: Some(n),
                ..Default::default()
            });
            assert_eq!(e, format!("--review-rounds must be from 1 to 10, not {n}"));
        }
        let e = refused(LoopFlags {
            review_model: Some("m".into()),
            ..Default::default()
        });
        assert!(e.contains("need --review-engine"), "{e}");
        let e = refused(LoopFlags {
            max_tokens: Some(0),
            ..Default::default()
        });
        assert_eq!(e, "--max-tokens must be at least 1");
    }

    #[test]
    fn the_checks_across_keys() {
        let with = |r: ReviewKeys| LoopKeys {
            review: Some(r),
            ..Default::default()
        };
        assert_eq!(check(&with(review(EngineId::Codex, 1)), true), Ok(()));
        let e = check(&with(review(EngineId::Copilot, 1)), true).unwrap_err();
        assert_eq!(
            e,
            "require-enforced: the reviewer copilot cannot run read-only (no verified read-only mode); \
             review with one that can (claude, codex, gemini) or drop require-enforced"
        );
        assert_eq!(check(&with(review(EngineId::Copilot, 1)), false), Ok(()));
        let e = check(&with(review(EngineId::Bridge, 1)), false).unwrap_err();
        assert_eq!(
            e,
            "review.engine: unknown engine \"bridge\" (known: claude, codex, copilot, opencode, gemini, agy)"
        );
        let e = check(&with(review(EngineId::Codex, 11)), false).unwrap_err();
        assert!(e.contains("from 1 to 10, not 11"), "{e}");
        let lone = LoopKeys {
            resolver: Some(EngineId::Claude),
            ..Default::default()
        };
        let e = check(&lone, false).unwrap_err();
        assert_eq!(e, "`resolver` goes with `on_conflict = \"resolve\"`");
    }

    #[test]
    fn the_resolver_is_the_authors_engine_unless_named_and_self_review_warns() {
        let keys = LoopKeys {
            fix_rounds: 2,
            review: Some(review(EngineId::Claude, 3)),
            on_conflict: ConflictKey::Resolve,
            max_tokens: Some(100),
            ..Default::default()
        };
        let (loops, warnings) = resolve(&keys, EngineId::Claude);
        let want = Loops {
            fix_rounds: 2,
            review: Some(Review {
                engine: EngineId::Claude,
                model: None,
                rounds: 3,
                prompt: None,
            }),
            conflict: OnConflict::Resolve {
                engine: EngineId::Claude,
            },
            budget: RoundBudget {
                cost_usd: None,
                tokens: Some(100),
            },
        };
        assert_eq!(loops, want);
        assert_eq!(warnings, ["claude is reviewing its own work"]);
        let named = LoopKeys {
            resolver: Some(EngineId::Codex),
            ..keys
        };
        let (loops, warnings) = resolve(&named, EngineId::Codex);
        let codex = EngineId::Codex;
        assert_eq!(loops.conflict, OnConflict::Resolve { engine: codex });
        assert!(warnings.is_empty(), "{warnings:?}");
        // Nothing asked: the default loops, no warning.
        assert_eq!(
            resolve(&LoopKeys::default(), codex),
            (Loops::default(), Vec::new())
        );
    }
}
