//! Which engine runs a dispatch: one named with `--engine`, or `auto`, chosen
//! from the attachments' kinds (`Spec::attachment_kinds`) and the engines'
//! readiness. This module only selects and explains its choice.

use std::fmt;
use std::str::FromStr;

use clap::builder::TypedValueParser;

use super::{AttachmentKind, EngineId, Preset, check_attachment_kinds, engine_list};
use crate::ground::error::{Result, VfError};

/// `--engine` (and a plan unit's `engine`): one engine, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineChoice {
    Auto,
    Engine(EngineId),
    /// `KIND:NAME`: a command engine with one of its presets.
    Preset(EngineId, &'static Preset),
}

impl EngineChoice {
    /// `auto`, then every engine in support-matrix order, then the command engines.
    fn all() -> impl Iterator<Item = EngineChoice> {
        std::iter::once(EngineChoice::Auto).chain(EngineId::every().map(EngineChoice::Engine))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::Engine(e) | EngineChoice::Preset(e, _) => e.as_str(),
        }
    }

    /// The engine named, if one is (`auto`: none).
    pub fn engine(self) -> Option<EngineId> {
        match self {
            EngineChoice::Auto => None,
            EngineChoice::Engine(e) | EngineChoice::Preset(e, _) => Some(e),
        }
    }

    /// The preset named with `KIND:NAME`.
    pub fn preset(self) -> Option<&'static Preset> {
        match self {
            EngineChoice::Preset(_, p) => Some(p),
            _ => None,
        }
    }

    fn possible_value(self) -> clap::builder::PossibleValue {
        let v = clap::builder::PossibleValue::new(self.as_str());
        match self {
            EngineChoice::Auto => v.help("the first ready engine that accepts every attached kind"),
            EngineChoice::Engine(e) if e.engine().speaks_acp() => {
                v.help("any ACP agent (acp:gemini, acp:opencode): vf drives the protocol")
            }
            EngineChoice::Engine(e) if e.engine().spec().command.is_some() => {
                v.help("any agent CLI: the command it runs comes with the unit")
            }
            EngineChoice::Engine(EngineId::Recorded) => {
                v.help("a capture of a real CLI replayed by vf, never a model (vf demo)")
            }
            EngineChoice::Engine(_) | EngineChoice::Preset(..) => v,
        }
    }
}

impl fmt::Display for EngineChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineChoice::Preset(e, p) => write!(f, "{e}:{}", p.name),
            _ => f.write_str(self.as_str()),
        }
    }
}

/// The one parser of engine names: clap and plan files both go through it.
/// A name is `KIND` or `KIND:PRESET` (a command engine's `Engine::presets`).
impl FromStr for EngineChoice {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (kind, preset) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (s, None),
        };
        let found = EngineChoice::all().find(|c| c.as_str() == kind);
        let presets = found
            .and_then(EngineChoice::engine)
            .map(|e| e.engine().presets());
        let named = preset.and_then(|p| presets?.iter().find(|x| x.name == p));
        match (found, preset) {
            (Some(c), None) => Ok(c),
            (Some(EngineChoice::Engine(e)), Some(_)) if named.is_some() => {
                Ok(EngineChoice::Preset(e, named.expect("found")))
            }
            (Some(c), Some(p)) if presets.is_some_and(|ps| !ps.is_empty()) => Err(format!(
                "engine {c} has no preset {} (one of: {})",
                crate::ground::text::shown(p, 40),
                presets
                    .unwrap_or_default()
                    .iter()
                    .map(|x| x.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (Some(c), Some(p)) => Err(format!(
                "engine {c} has no preset {}: give it as plain {c}",
                crate::ground::text::shown(p, 40)
            )),
            (None, _) => {
                let known: Vec<&str> = EngineChoice::all().map(|c| c.as_str()).collect();
                Err(format!(
                    "unknown engine {} (one of: {})",
                    crate::ground::text::shown(s, 60),
                    known.join(", ")
                ))
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for EngineChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// clap's parser of `--engine`: lists the names (help, completions) and
/// parses with [`FromStr`], so `KIND:PRESET` reaches the one parser.
#[derive(Clone, Copy, Debug)]
pub struct ChoiceParser;

impl TypedValueParser for ChoiceParser {
    type Value = EngineChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<EngineChoice, clap::Error> {
        let parse = |s: &str| s.parse::<EngineChoice>();
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            EngineChoice::all().map(EngineChoice::possible_value),
        ))
    }
}

impl clap::builder::ValueParserFactory for EngineChoice {
    type Parser = ChoiceParser;

    fn value_parser() -> ChoiceParser {
        ChoiceParser
    }
}

/// A native session id belongs to one engine: resuming needs that engine named.
pub fn check_session_choice(choice: EngineChoice, session: Option<&str>) -> Result<()> {
    if choice == EngineChoice::Auto && session.is_some() {
        return Err(VfError::usage(
            "--session resumes one engine's session: name the engine with --engine instead of auto",
        ));
    }
    Ok(())
}

/// Whether an engine is ready to run here: `Some(true)` ready, `Some(false)`
/// not ready, `None` unknown (not checked).
/// Asked from several threads at once (the candidates are checked in parallel).
pub type Readiness<'a> = &'a (dyn Fn(EngineId) -> Option<bool> + Sync);

/// Readiness when nothing has been checked (e.g. `--dry-run`).
pub fn unknown_readiness(_: EngineId) -> Option<bool> {
    None
}

/// The engine a dispatch will use and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub engine: EngineId,
    /// One sentence for `engineReason`.
    pub reason: String,
    /// The chosen engine's readiness as the caller reported it. Readiness gates
    /// the dispatch itself, not the selection: `Some(false)` must stop a real run.
    pub ready: Option<bool>,
}

/// Chooses the engine for attachments of `kinds`.
///
/// An explicit engine must accept every kind. `auto` considers the engines
/// that accept every selected kind, in support-matrix order (`EngineId::ALL`),
/// and takes the first one reported ready; when none is known to be ready,
/// the first whose readiness is unknown; when all are known not ready, the
/// first candidate (with `ready: Some(false)`, so the dispatch is refused).
pub fn choose_engine(
    choice: EngineChoice,
    kinds: &[AttachmentKind],
    is_ready: Readiness<'_>,
) -> Result<Pick> {
    if let Some(e) = choice.engine() {
        check_attachment_kinds(e, kinds)?;
        return Ok(Pick {
            engine: e,
            reason: "chosen with --engine".to_string(),
            ready: is_ready(e),
        });
    }
    let kinds = AttachmentKind::distinct(kinds);
    let candidates: Vec<EngineId> = EngineId::ALL
        .into_iter()
        .filter(|e| check_attachment_kinds(*e, &kinds).is_ok())
        .collect();
    if candidates.is_empty() {
        let per_kind: Vec<String> = kinds
            .iter()
            .map(|k| format!("{}: {}", k.as_str(), engine_list(&k.accepting())))
            .collect();
        return Err(VfError::usage(format!(
            "--engine auto: no engine accepts every attached kind ({}); attach fewer kinds \
             or dispatch them separately",
            per_kind.join("; ")
        )));
    }
    Ok(pick_auto(&candidates, &kinds, is_ready))
}

/// Each candidate's readiness, asked on its own thread: a cold check runs
/// the CLIs, and several slow starts should cost one, not their sum.
fn ask_in_parallel(
    candidates: &[EngineId],
    is_ready: Readiness<'_>,
) -> Vec<(EngineId, Option<bool>)> {
    std::thread::scope(|s| {
        let asked: Vec<_> = candidates
            .iter()
            .map(|&e| (e, s.spawn(move || is_ready(e))))
            .collect();
        asked
            .into_iter()
            .map(|(e, h)| (e, h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
            .collect()
    })
}

/// `auto` among `candidates` (non-empty): ready, else unknown, else the first.
fn pick_auto(candidates: &[EngineId], kinds: &[AttachmentKind], is_ready: Readiness<'_>) -> Pick {
    let what = match kinds {
        [] => "engines (nothing attached)".to_string(),
        [k] => format!("engines that accept {} attachments", k.as_str()),
        ks => format!(
            "engines that accept every attached kind ({})",
            ks.iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    };
    let readiness = ask_in_parallel(candidates, is_ready);
    let not_ready: Vec<EngineId> = readiness
        .iter()
        .filter(|(_, r)| *r == Some(false))
        .map(|(e, _)| *e)
        .collect();
    let skipped = if not_ready.is_empty() {
        String::new()
    } else {
        format!(" ({} not ready)", engine_list(&not_ready))
    };
    if let Some((e, _)) = readiness.iter().find(|(_, r)| *r == Some(true)) {
        return Pick {
            engine: *e,
            reason: format!("auto: {e} is the first ready one of the {what}{skipped}"),
            ready: Some(true),
        };
    }
    if let Some((e, _)) = readiness.iter().find(|(_, r)| r.is_none()) {
        return Pick {
            engine: *e,
            reason: format!(
                "auto: {e} is the first of the {what} in the support matrix \
                 (readiness not checked){skipped}"
            ),
            ready: None,
        };
    }
    let e = candidates[0];
    Pick {
        engine: e,
        reason: format!(
            "auto: none of the {what} is ready ({}); {e} is the first in the support matrix",
            engine_list(candidates)
        ),
        ready: Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready_map(ready: &'static [(EngineId, bool)]) -> impl Fn(EngineId) -> Option<bool> {
        move |e| ready.iter().find(|(x, _)| *x == e).map(|(_, r)| *r)
    }

    use AttachmentKind::{Document as D, Image as I, Text as T};
    use EngineId::*;

    #[test]
    fn auto_single_kind_prefers_first_ready() {
        let p = choose_engine(EngineChoice::Auto, &[I], &unknown_readiness).unwrap();
        assert_eq!((p.engine, p.ready), (Codex, None));
        let r = ready_map(&[(Codex, false), (Copilot, true)]);
        let p = choose_engine(EngineChoice::Auto, &[I], &r).unwrap();
        assert_eq!((p.engine, p.ready), (Copilot, Some(true)));
        assert!(p.reason.contains("codex not ready"), "{}", p.reason);
        // A ready engine beats an earlier candidate of unknown readiness.
        let r = ready_map(&[(Opencode, true)]);
        let p = choose_engine(EngineChoice::Auto, &[T], &r).unwrap();
        assert_eq!(p.engine, Opencode);
        // Unknown beats known-not-ready.
        let r = ready_map(&[(Claude, false)]);
        let p = choose_engine(EngineChoice::Auto, &[T], &r).unwrap();
        assert_eq!((p.engine, p.ready), (Opencode, None));
        let p = choose_engine(EngineChoice::Auto, &[D], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Copilot);
    }

    #[test]
    fn auto_all_not_ready_still_chooses_but_flags_it() {
        let p = choose_engine(EngineChoice::Auto, &[T], &|_| Some(false)).unwrap();
        assert_eq!((p.engine, p.ready), (Claude, Some(false)));
        assert!(p.reason.contains("none of the"), "{}", p.reason);
    }

    #[test]
    fn auto_several_kinds_needs_one_engine_for_all() {
        let p = choose_engine(EngineChoice::Auto, &[I, T], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Opencode);
        assert!(p.reason.contains("text + image"), "{}", p.reason);
        let p = choose_engine(EngineChoice::Auto, &[I, D, I], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Copilot);
        let r = ready_map(&[(Copilot, false), (Opencode, true)]);
        let p = choose_engine(EngineChoice::Auto, &[I, D], &r).unwrap();
        assert_eq!(p.engine, Opencode);
        // Several files of one kind behave like one.
        let p = choose_engine(EngineChoice::Auto, &[I, I], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Codex);
    }

    #[test]
    fn auto_without_attachments_takes_the_first_engine() {
        let p = choose_engine(EngineChoice::Auto, &[], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Claude);
        let r = ready_map(&[(Claude, false), (Codex, false), (Copilot, true)]);
        assert_eq!(
            choose_engine(EngineChoice::Auto, &[], &r).unwrap().engine,
            Copilot
        );
    }

    #[test]
    fn explicit_engine_refusals_name_capable_engines() {
        let e = choose_engine(EngineChoice::Engine(Gemini), &[I], &unknown_readiness)
            .unwrap_err()
            .to_string();
        assert!(e.contains("codex, copilot, opencode"), "{e}");
        let e = choose_engine(EngineChoice::Engine(Claude), &[T, D], &unknown_readiness)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("document") && e.contains("copilot, opencode"),
            "{e}"
        );
        let p = choose_engine(EngineChoice::Engine(Agy), &[], &unknown_readiness).unwrap();
        assert_eq!(p.engine, Agy);
    }

    #[test]
    fn one_parser_for_names() {
        for c in EngineChoice::all() {
            assert_eq!(c.as_str().parse::<EngineChoice>(), Ok(c));
            let v: EngineChoice = serde_json::from_value(serde_json::json!(c.as_str())).unwrap();
            assert_eq!(v, c);
        }
        let e = "gpt".parse::<EngineChoice>().unwrap_err();
        assert_eq!(
            e,
            "unknown engine \"gpt\" (one of: auto, claude, codex, copilot, opencode, gemini, agy, bridge, acp, recorded)"
        );
        let g = "acp:gemini".parse::<EngineChoice>().unwrap();
        assert_eq!(g.engine(), Some(Acp));
        assert_eq!(g.preset().map(|p| p.command), Some("gemini --acp"));
        assert_eq!(g.to_string(), "acp:gemini");
        assert_eq!(
            "acp:nope".parse::<EngineChoice>(),
            Err("engine acp has no preset \"nope\" (one of: gemini, opencode)".to_string())
        );
        assert_eq!(
            "bridge:aider".parse::<EngineChoice>(),
            Err("engine bridge has no preset \"aider\": give it as plain bridge".to_string())
        );
        assert!("auto:x".parse::<EngineChoice>().is_err());
        assert!(serde_json::from_value::<EngineChoice>(serde_json::json!("Claude")).is_err());
    }
}
