//! The rows of `orchestrate.result`, kept small and printed as they have
//! always been: every object's keys sorted, the text of the result turned
//! into one `serde_json::Value`. Only a row at a time becomes a `Value` here,
//! so printing the result of a plan of 10,000 units needs one row's tree, not
//! the whole plan's (a few KB a unit).

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::UnitReport;

/// A JSON value kept as its compact text, keys sorted as `Value` prints them
/// (a unit's summary): a few dozen bytes where its tree takes a map node of
/// ~600 bytes and more. It prints, and displays, as the value.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonText(Box<str>);

impl JsonText {
    pub fn new(value: &Value) -> JsonText {
        JsonText(value.to_string().into_boxed_str())
    }

    /// The value again (its text was made from one, so it parses).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| JsonText::new(&v))
    }
}

/// `value` as the `serde_json::Value` it makes prints (keys sorted).
pub(super) fn value<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Each row through [`value`], one after the other.
pub(super) fn rows<S: Serializer>(rows: &[UnitReport], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(rows.iter().map(Row))
}

struct Row<'a>(&'a UnitReport);

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        value(self.0, s)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::super::{PlanResult, RunState, StartMode, UnitReport};
    use super::JsonText;
    use crate::engine::EngineId;
    use crate::engine::usage::Usage;

    fn row(unit: &str, full: bool) -> UnitReport {
        let usage = Usage {
            input_tokens: Some(100),
            cost_usd: Some(0.1 + 0.2),
            source: "turn.completed.usage".into(),
            ..Usage::default()
        };
        UnitReport {
            unit: unit.into(),
            engine: EngineId::Codex,
            state: if full {
                RunState::Done
            } else {
                RunState::Blocked
            },
            ran: full,
            start: full.then_some(StartMode::Replay),
            replay: full.then_some(crate::unit::history::Counts {
                source: 3,
                replayed: 2,
                truncated: 1,
            }),
            attempt: full.then_some(2),
            session_id: full.then(|| "01a229fa-c269-71a3-a12b-439065dbf14b".into()),
            model: full.then(|| "m\"odel\u{e9}".into()),
            summary: full.then(|| {
                JsonText::new(&json!({"z": [1, {"b": 2, "a": 1}], "a": null, "f": 0.1 + 0.2}))
            }),
            error: (!full).then(|| "dependency \"a\" is failed".into()),
            duration_ms: full.then_some(1234),
            usage: full.then_some(usage),
            reason: (!full).then_some(crate::ground::error::Reason::Dependency),
            attempts: full.then(|| {
                vec![crate::unit::marker::Attempt {
                    engine: EngineId::Claude,
                    reason: Some(crate::ground::error::Reason::RateLimited),
                    session_id: None,
                }]
            }),
            workspace: full.then(|| crate::workspace::Workspace {
                path: PathBuf::from("/w/u"),
                branch: "vf/u".into(),
                base: "abc".into(),
                head: None,
                changed_files: vec!["b".into(), "a".into()],
                commit: false,
                pushed: None,
            }),
            origins: full.then(|| {
                [("engine", "config:/c/config.toml"), ("model", "unit")]
                    .map(|(k, o)| (k.to_string(), o.to_string()))
                    .into()
            }),
            host: full.then(|| "vm-1".into()),
            rounds: Vec::new(),
            account: full.then(|| "work".into()),
            rotated_from: if full {
                vec!["home".into()]
            } else {
                Vec::new()
            },
            children: Vec::new(),
            tree_usage: None,
            held_by: (!full).then(|| crate::ground::held::HeldBy {
                engine: "claude".into(),
                account: "work".into(),
                until: "2026-12-05T18:00:00.250Z".into(),
                kind: crate::ground::held::HoldKind::Paused,
                unit: Some("a".into()),
                source: Some("rate_limit_event (claude)".into()),
                utilization: Some(91.5),
                window: Some("five_hour".into()),
            }),
        }
    }

    /// The streamed text is byte for byte what the whole `Value` prints.
    #[test]
    fn the_result_prints_as_its_value_would() {
        let units = vec![row("a", true), row("b", false), row("c", true)];
        let usage = crate::engine::usage::total(units.iter().filter_map(|u| u.usage.as_ref()));
        for (units, usage) in [(units, usage), (Vec::new(), None)] {
            let result = PlanResult {
                kind: "orchestrate.result",
                ok: false,
                plan: PathBuf::from("/p/plan.toml"),
                units,
                usage,
                interrupted: Some(130),
            };
            let streamed = serde_json::to_string(&result).unwrap();
            let whole = serde_json::to_value(&result).unwrap().to_string();
            assert_eq!(streamed, whole);
            assert!(streamed.starts_with(r#"{"kind":"orchestrate.result","ok":false,"#));
        }
    }

    #[test]
    fn a_kept_summary_is_its_value() {
        let v = json!({"b": [1.5, 0.30000000000000004, -0.0, 1e300], "a": {"y": "\u{2028}\"", "x": null}});
        let kept = JsonText::new(&v);
        assert_eq!(kept.value(), v);
        assert_eq!(serde_json::to_value(&kept).unwrap(), v);
        assert_eq!(kept.to_string(), v.to_string());
        assert_eq!(serde_json::to_string(&kept).unwrap(), v.to_string());
    }
}
