//! STUB (integrator): replaced by helper `verdict`'s module on merge.
use serde_json::Value;

use crate::unit::marker::rounds::Verdict;

pub const VERDICT_SCHEMA: &str = r#"{"type":"object"}"#;

pub fn parse(summary: Option<&Value>, _answer: Option<&str>) -> Result<Verdict, String> {
    let v = summary.ok_or("no fenced json verdict")?;
    serde_json::from_value(v.clone()).map_err(|e| e.to_string())
}
