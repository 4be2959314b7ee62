//! The tools' names and input JSON Schemas (docs/MCP.md shows the same ones:
//! tests/it/mcp_server.rs checks), and the strict check of a call's
//! arguments against them before anything runs.

use serde_json::{Map, Value, json};

/// The engines a `dispatch` may name: `auto` and the CLIs (`EngineId::ALL`).
/// The command engines (bridge, acp) take a shell command and are never
/// offered to a calling agent.
pub fn engines() -> Vec<&'static str> {
    let clis = crate::engine::EngineId::ALL.map(|e| e.as_str());
    std::iter::once("auto").chain(clis).collect()
}

/// Every tool, in the order `tools/list` gives them.
pub const TOOLS: [&str; 8] = [
    "dispatch",
    "resume",
    "status",
    "result",
    "events",
    "cancel",
    "orchestrate",
    "report",
];

fn unit() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 100})
}

fn limits() -> Value {
    json!({
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 604800},
        "max_cost": {"type": "number", "exclusiveMinimum": 0, "maximum": 100000}
    })
}

fn object(props: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}

fn with_limits(mut props: Value) -> Value {
    if let (Some(p), Value::Object(l)) = (props.as_object_mut(), limits()) {
        p.extend(l);
    }
    props
}

/// The input schema of `tool` (`None`: no such tool).
pub fn input_schema(tool: &str) -> Option<Value> {
    let prompt = json!({"type": "string", "minLength": 1, "maxLength": 1_000_000});
    let wait = json!({"type": "boolean"});
    let names = json!({"type": "array", "maxItems": 64,
        "items": {"type": "string", "minLength": 1, "maxLength": 200}});
    Some(match tool {
        "dispatch" => object(
            with_limits(json!({
                "engine": {"enum": engines()},
                "prompt": prompt,
                "unit": unit(),
                "model": {"type": "string", "minLength": 1, "maxLength": 200},
                "effort": {"type": "string", "minLength": 1, "maxLength": 40},
                "worktree": {"type": "boolean"},
                "read_only": {"type": "boolean"},
                "sandbox": {"enum": ["off", "workspace", "read-only"]},
                "allow_tools": names,
                "deny_tools": names,
                "skip_permissions": {"type": "boolean"},
                "summary_schema": {"type": "object"},
                "wait": wait
            })),
            &["engine", "prompt"],
        ),
        "resume" => object(
            with_limits(json!({"unit": unit(), "prompt": prompt, "wait": wait})),
            &["unit"],
        ),
        "status" => object(json!({"unit": unit()}), &[]),
        "result" | "cancel" => object(json!({"unit": unit()}), &["unit"]),
        "events" => object(
            json!({
                "unit": unit(),
                "after": {"type": "integer", "minimum": 0, "maximum": 100_000_000},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000}
            }),
            &["unit"],
        ),
        "orchestrate" => {
            let mut o = object(
                json!({
                    "plan": {"type": "string", "minLength": 1, "maxLength": 1_000_000},
                    "plan_path": {"type": "string", "minLength": 1, "maxLength": 4096},
                    "max_cost": limits()["max_cost"],
                    "wait": wait
                }),
                &[],
            );
            o["oneOf"] = json!([{"required": ["plan"]}, {"required": ["plan_path"]}]);
            o
        }
        "report" => object(json!({}), &[]),
        _ => return None,
    })
}

/// What each tool does, for `tools/list`.
pub fn description(tool: &str) -> &'static str {
    match tool {
        "dispatch" => {
            "Run a unit of work on a coding-agent CLI (vf dispatch); returns vf's dispatch result, or {unit, state: \"running\"} with wait = false."
        }
        "resume" => "Resume a unit's exact session (vf resume) with an optional prompt.",
        "status" => "Every unit's status, or one unit's (vf status --json).",
        "result" => "A unit's latest result: its status record once it has ended.",
        "events" => {
            "A unit's projected events after a cursor (`after`: the index of the next event); returns {unit, state, events, next}."
        }
        "cancel" => {
            "End a running unit this server started (SIGTERM: the unit ends interrupted, resumable)."
        }
        "orchestrate" => {
            "Run a plan (TOML text, or a path inside the server's workspace) with vf orchestrate."
        }
        "report" => "Write the report page of the state dir (vf report) and return its path.",
        _ => "",
    }
}

/// `args` checked against `tool`'s schema; the error names the first
/// violation (where and why), cut short.
pub fn check(tool: &str, args: &Map<String, Value>) -> Result<(), String> {
    let schema = input_schema(tool).ok_or_else(|| format!("no tool named {tool:?}"))?;
    let v = jsonschema::draft202012::new(&schema).map_err(|e| format!("schema of {tool}: {e}"))?;
    let inst = Value::Object(args.clone());
    match v.iter_errors(&inst).next() {
        None => Ok(()),
        Some(e) => {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            let full = e.to_string();
            let msg = crate::ground::text::cut(&full, 200);
            Err(format!("invalid arguments for {tool} at {at}: {msg}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn unknown_fields_wrong_types_and_missing_requirements_are_refused() {
        let ok = args(json!({"engine": "codex", "prompt": "hi"}));
        assert!(check("dispatch", &ok).is_ok());
        for bad in [
            json!({"engine": "codex", "prompt": "hi", "extra": 1}),
            json!({"engine": "codex", "prompt": 3}),
            json!({"engine": "bridge", "prompt": "hi"}),
            json!({"prompt": "hi"}),
            json!({"engine": "codex", "prompt": "hi", "timeout": -1}),
        ] {
            assert!(check("dispatch", &args(bad.clone())).is_err(), "{bad}");
        }
        assert!(check("orchestrate", &args(json!({}))).is_err());
        assert!(check("orchestrate", &args(json!({"plan": "a", "plan_path": "b"}))).is_err());
        assert!(check("nope", &ok).is_err());
    }

    #[test]
    fn every_tool_has_a_closed_schema() {
        for t in TOOLS {
            let s = input_schema(t).unwrap();
            assert_eq!(s["additionalProperties"], json!(false), "{t}");
            assert!(!description(t).is_empty());
        }
    }
}
