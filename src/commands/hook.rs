//! `vf hook EVENT`: the payload on stdin, the decision logged; a refused
//! tool prints `{"decision":"block","reason":…}` and exits 2 (the
//! claude-style hook answer agy is said to share: unverified).

use std::io::Read;

use crate::cli::{HookArgs, HookEvent};
use crate::ground::error::{Result, exit};
use crate::project::tool_hook::{self, Event};

pub fn run(a: &HookArgs) -> Result<i32> {
    for t in &a.deny_tools {
        crate::ground::names::check("tool name", t)?;
    }
    let event = match a.event {
        HookEvent::PreToolUse => Event::PreToolUse,
        HookEvent::PostToolUse => Event::PostToolUse,
    };
    let mut bytes = Vec::new();
    let read = std::io::stdin()
        .take(tool_hook::MAX_PAYLOAD_BYTES + 1)
        .read_to_end(&mut bytes);
    let payload = read
        .ok()
        .filter(|_| bytes.len() as u64 <= tool_hook::MAX_PAYLOAD_BYTES)
        .and_then(|_| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter(serde_json::Value::is_object);
    let d = tool_hook::decide(event, payload.as_ref(), &a.deny_tools);
    if let Some(path) = &a.log
        && let Err(e) = tool_hook::log(path, &d)
    {
        super::stdio::eprint_line(format_args!(
            "vf: warning: cannot log to {}: {e}",
            path.display()
        ));
    }
    match &d.reason {
        None => Ok(exit::OK),
        Some(reason) => {
            super::print_json(&serde_json::json!({"decision": "block", "reason": reason}))?;
            super::stdio::eprint_line(format_args!("{reason}"));
            Ok(exit::USAGE)
        }
    }
}
