//! Per-CLI manifests, one file per CLI, one `Manifest` per version family.
//! Each file's `FAMILIES` lists the families oldest first.

pub mod agy;
pub mod bridge;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;

use super::event::Level;
use super::manifest::{LifecycleSpec, Manifest, Rule, StatusSpec, Tpl};
use crate::engine::EngineId;
use crate::ground::version::Version;

pub(crate) const fn status(level: Level, label: &'static str, detail: Tpl) -> Rule {
    Rule::Status(StatusSpec {
        level,
        label,
        detail,
        explains_failure: false,
    })
}

/// A status row whose detail explains a failure decided elsewhere.
pub(crate) const fn explains_failure(rule: Rule) -> Rule {
    match rule {
        Rule::Status(s) => Rule::Status(StatusSpec {
            explains_failure: true,
            ..s
        }),
        other => other,
    }
}

pub(crate) const fn info(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Info, label, detail)
}

pub(crate) const fn warn(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Warning, label, detail)
}

pub(crate) const fn error(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Error, label, detail)
}

pub(crate) const fn lifecycle(spec: LifecycleSpec) -> Rule {
    Rule::Lifecycle(spec)
}

/// The manifest of a CLI that prints plain text only: no frame kinds, every
/// line the text path (agy; the bridge without `--bridge-output`).
pub(crate) const fn text_only(cli: EngineId) -> Manifest {
    use super::manifest::{RateLimits, TransportTable};
    Manifest {
        cli,
        major: 0,
        minor: 0,
        verified: &[],
        kind: &["type"],
        session: &[],
        closing: "",
        subkinds: &[],
        rate_limits: RateLimits::NONE,
        budget_stops: &[],
        transports: &[TransportTable {
            transport: crate::engine::OutputTransport::Text,
            entries: &[],
        }],
    }
}

/// All families of one CLI, oldest first.
pub fn families(cli: EngineId) -> &'static [&'static Manifest] {
    match cli {
        EngineId::Codex => codex::FAMILIES,
        EngineId::Claude => claude::FAMILIES,
        EngineId::Gemini => gemini::FAMILIES,
        EngineId::Opencode => opencode::FAMILIES,
        EngineId::Copilot => copilot::FAMILIES,
        EngineId::Agy => agy::FAMILIES,
        EngineId::Bridge => bridge::FAMILIES,
        // An ACP agent's lines are projected by `acp::Projector`, never by a
        // manifest; the plain-text family stands in for the unused one.
        EngineId::Acp => bridge::FAMILIES,
        // Replayed lines are read by the captured CLI's manifest
        // (`Engine::frames`); this one is never used.
        EngineId::Recorded => bridge::FAMILIES,
    }
}

/// The manifest chosen for a CLI version.
#[derive(Debug)]
pub struct Resolved {
    pub manifest: &'static Manifest,
    /// The version string reported in events (`0.171.x` when unknown).
    pub cli_version: String,
    /// Set when the version has no family of its own.
    pub warning: Option<String>,
}

/// Exact version → its family; a version without a family (or no version)
/// → the newest family, with a warning when a version was given.
pub fn resolve(cli: EngineId, version: Option<&Version>) -> Resolved {
    let fams = families(cli);
    let newest = *fams
        .last()
        .expect("every CLI has at least one manifest family");
    match version {
        None => Resolved {
            manifest: newest,
            cli_version: format!("{}.x", newest.family()),
            warning: None,
        },
        Some(v) => match fams.iter().find(|m| (m.major, m.minor) == v.family()) {
            Some(m) => Resolved {
                manifest: m,
                cli_version: v.to_string(),
                warning: unverified_patch(cli, v),
            },
            None => Resolved {
                manifest: newest,
                cli_version: v.to_string(),
                warning: Some(format!(
                    "{cli} {v} is unverified: no manifest family {}.{}, using the newest ({})",
                    v.major,
                    v.minor,
                    newest.family()
                )),
            },
        },
    }
}

/// A version of a known family that is not itself verified (codex 0.146.9
/// beside 0.146.0): read with its family's manifest, and said so, as
/// `vf doctor` says it.
fn unverified_patch(cli: EngineId, v: &Version) -> Option<String> {
    let all = cli.engine().spec().verified_versions;
    // An engine with no verified version at all says so elsewhere.
    if all.is_empty() || all.iter().any(|s| Version::parse(s).as_ref() == Some(v)) {
        return None;
    }
    let family: Vec<&str> = all
        .iter()
        .copied()
        .filter(|s| Version::parse(s).is_some_and(|x| x.family() == v.family()))
        .collect();
    let (major, minor) = (v.major, v.minor);
    Some(match family.as_slice() {
        [] => format!("{cli} {v} is unverified: no version of its family {major}.{minor} is"),
        _ => format!(
            "{cli} {v} is unverified: its family {major}.{minor} is verified at {}",
            family.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::frames::manifest::Entry;

    fn check_unique(entries: &[Entry], ctx: &str) {
        for (i, e) in entries.iter().enumerate() {
            assert!(
                !entries[..i].iter().any(|o| o.kind == e.kind),
                "{ctx}: duplicate kind {}",
                e.kind
            );
            let nested = match &e.rule {
                Rule::Nested(n) => Some(n),
                _ => None,
            };
            if let Some(n) = nested {
                check_unique(n.entries, &format!("{ctx}/{}", e.kind));
            }
        }
    }

    /// The lifecycle rules reachable from `entries` (through nesting and `All`).
    fn lifecycles(entries: &'static [Entry], out: &mut Vec<&'static LifecycleSpec>) {
        fn walk(rule: &'static Rule, out: &mut Vec<&'static LifecycleSpec>) {
            match rule {
                Rule::Lifecycle(l) => out.push(l),
                Rule::Nested(n) => lifecycles(n.entries, out),
                Rule::All(rules) => rules.iter().for_each(|r| walk(r, out)),
                _ => {}
            }
        }
        entries.iter().for_each(|e| walk(&e.rule, out));
    }

    /// What the generic tracker needs from every framed transport: where
    /// frames name the session, a row that closes a turn without failing it,
    /// and a name for the closing frame a cut-off stream lacks.
    #[test]
    fn every_framed_transport_tells_the_tracker_how_a_run_ends() {
        for cli in EngineId::ALL {
            for m in families(cli) {
                for t in m.transports.iter().filter(|t| !t.entries.is_empty()) {
                    let ctx = format!("{cli} {} {:?}", m.family(), t.transport);
                    assert!(!m.session.is_empty() && !m.closing.is_empty(), "{ctx}");
                    let mut rows = Vec::new();
                    lifecycles(t.entries, &mut rows);
                    assert!(
                        rows.iter().any(|l| l.ends_turn && !l.always_failed),
                        "{ctx}: no closing row"
                    );
                    assert!(
                        rows.iter().any(|l| l.shows_session),
                        "{ctx}: no row shows the session"
                    );
                }
            }
        }
    }

    #[test]
    fn families_are_ordered_and_tables_have_unique_kinds() {
        for cli in EngineId::ALL {
            let fams = families(cli);
            assert!(!fams.is_empty());
            for w in fams.windows(2) {
                assert!((w[0].major, w[0].minor) < (w[1].major, w[1].minor), "{cli}");
            }
            for m in fams {
                assert_eq!(m.cli, cli);
                for t in m.transports {
                    check_unique(
                        t.entries,
                        &format!("{cli} {} {:?}", m.family(), t.transport),
                    );
                }
            }
        }
    }

    #[test]
    fn resolution_picks_family_or_newest_with_warning() {
        let v = |s| Version::parse(s).unwrap();
        let r = resolve(EngineId::Codex, Some(&v("0.146.0")));
        assert_eq!(
            (r.manifest.family(), r.warning.is_none()),
            ("0.146".into(), true)
        );
        // A patch its family was never verified at is read with the family's
        // manifest, and said so (issue 39).
        let r = resolve(EngineId::Codex, Some(&v("0.146.9")));
        assert_eq!(
            (r.manifest.family(), r.warning.as_deref()),
            (
                "0.146".into(),
                Some("codex 0.146.9 is unverified: its family 0.146 is verified at 0.146.0")
            )
        );
        let r = resolve(EngineId::Codex, Some(&v("0.100.0")));
        assert_eq!(r.manifest.family(), "0.171");
        assert!(r.warning.unwrap().contains("unverified"));
        let r = resolve(EngineId::Claude, None);
        assert_eq!(r.cli_version, "2.1.x");
    }
}
