//! copilot `--output-format json` (JSONL of `{type, data, ...}` events) and
//! plain-text mode. The session id appears only in the final `result`.

use super::{error, explains_failure, info, lifecycle, warn};
use crate::engine::frames::manifest::*;
use crate::engine::{EngineId, OutputTransport};

const CALL: ToolCallSpec = ToolCallSpec {
    id: &["toolCallId"],
    name: Src::Path(&["name"]),
    input: &["arguments"],
};

#[rustfmt::skip]
const INFO_TYPES: &[Entry] = &[Entry {
    kind: "model_retry",
    rule: info("API retry", "{message}"),
}];

/// `session.error` names the HTTP status (d_error500: `statusCode: 500`)
/// and, per the capture notes, `errorType: "rate_limit"` for a 429.
#[rustfmt::skip]
const RATE_LIMITS: RateLimits = RateLimits {
    frames: &[
        RateLimitFrame { kind: "session.error", when: Cond::NumEq(&["data", "statusCode"], 429), retry_at: &[] },
        RateLimitFrame { kind: "session.error", when: Cond::StrEq(&["data", "errorType"], "rate_limit"), retry_at: &[] },
    ],
    quota: &[],
    stderr: &[],
    exit: None,
};

const MCP_SERVER_FAILED: Rule = warn("MCP server failed", "{data.serverName}: {data.error}");

/// With `--mcp` (1.0.102, fixtures h_mcp and h_mcp_failed): one frame per
/// server and state, `pending`, then `connected` or `failed` (with
/// `data.error`). Only a failure is shown: the run goes on without that
/// server's tools.
const MCP_SERVER_STATUS: Rule = Rule::When {
    cond: Cond::StrEq(&["data", "status"], "failed"),
    then: &MCP_SERVER_FAILED,
    otherwise: &Rule::Quiet,
};

#[rustfmt::skip]
const JSONL: &[Entry] = &[
    Entry { kind: "session.skills_loaded", rule: Rule::Quiet },
    Entry { kind: "session.mcp_servers_loaded", rule: Rule::Quiet },
    Entry { kind: "session.mcp_server_status_changed", rule: MCP_SERVER_STATUS },
    // `{serverName, toolCount}` once a connected server listed its tools.
    Entry { kind: "session.mcp_server_tools_loaded", rule: Rule::Quiet },
    Entry { kind: "session.tools_updated", rule: Rule::Quiet },
    Entry { kind: "session.background_tasks_changed", rule: Rule::Quiet },
    Entry {
        kind: "session.info",
        rule: Rule::Nested(Nested {
            root: &["data"],
            key: &["infoType"],
            many: false,
            string_rule: None,
            entries: INFO_TYPES,
        }),
    },
    Entry { kind: "session.warning", rule: warn("Warning", "{data.message}") },
    // The engine's words for a failing `result` or a non-zero exit.
    Entry { kind: "session.error", rule: explains_failure(error("Error", "{data.message}")) },
    Entry {
        kind: "user.message",
        rule: Rule::UserText {
            text: &["data", "content"],
        },
    },
    Entry { kind: "assistant.turn_start", rule: Rule::Quiet },
    Entry { kind: "assistant.turn_end", rule: Rule::Quiet },
    Entry { kind: "assistant.turn_retry", rule: Rule::Quiet },
    Entry { kind: "assistant.message_start", rule: Rule::Quiet },
    // Ephemeral pieces of the `assistant.message` that follows.
    Entry { kind: "assistant.message_delta", rule: Rule::Quiet },
    Entry {
        kind: "assistant.message",
        rule: Rule::All(&[
            Rule::AgentText {
                text: &["data", "content"],
            },
            Rule::ToolCallList {
                list: &["data", "toolRequests"],
                call: CALL,
            },
        ]),
    },
    Entry { kind: "assistant.reasoning_delta", rule: Rule::Quiet },
    Entry { kind: "assistant.reasoning", rule: info("Reasoning", "{data.content}") },
    Entry { kind: "assistant.tool_call_delta", rule: Rule::Quiet },
    Entry { kind: "assistant.idle", rule: Rule::Quiet },
    Entry { kind: "model.call_start", rule: Rule::Quiet },
    Entry { kind: "model.call_finished", rule: Rule::Quiet },
    Entry {
        kind: "model.call_failure",
        rule: warn(
            "Model call failed",
            "HTTP {data.statusCode} (attempt {data.retryAttempt})",
        ),
    },
    Entry { kind: "model.call_final_result", rule: Rule::Quiet },
    Entry {
        kind: "tool.execution_start",
        rule: Rule::ToolCall(ToolCallSpec {
            id: &["data", "toolCallId"],
            name: Src::Path(&["data", "toolName"]),
            input: &["data", "arguments"],
        }),
    },
    Entry { kind: "tool.shell_output", rule: Rule::Quiet },
    Entry { kind: "tool.execution_partial_result", rule: Rule::Quiet },
    // An MCP server's progress notifications during its tool call
    // (`data.toolCallId`, `data.progressMessage`; 1.0.102 calling `vf mcp`'s
    // dispatch, tests/it/real_mcp_server.rs): ephemeral, the result follows.
    Entry { kind: "tool.execution_progress", rule: Rule::Quiet },
    Entry {
        kind: "tool.execution_complete",
        rule: Rule::ToolResult(ToolResultSpec {
            id: &["data", "toolCallId"],
            name: Src::Const("?"),
            input: &[],
            status: StatusSrc::SuccessFlag {
                flag: &["data", "success"],
                code: &["data", "error", "code"],
            },
            output: &["data", "result", "content"],
            error: &["data", "error", "message"],
            exit: &["data", "shellExecution", "exitCode"],
        }),
    },
    Entry {
        kind: "result",
        rule: lifecycle(LifecycleSpec {
            label: "Completed",
            failed_label: "Failed",
            failed_if: Some(Cond::NonZero(&["exitCode"])),
            failed_detail: "exit code {exitCode}",
            shows_session: true,
            usage: &["usage"],
            ends_turn: true,
            ..LifecycleSpec::DEFAULT
        }),
    },
];

pub static V1_0: Manifest = Manifest {
    cli: EngineId::Copilot,
    major: 1,
    minor: 0,
    verified: &["1.0.102"],
    kind: &["type"],
    session: &["sessionId"],
    closing: "a result frame",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[
        TransportTable {
            transport: OutputTransport::Jsonl,
            entries: JSONL,
        },
        TransportTable {
            transport: OutputTransport::Text,
            entries: &[],
        },
    ],
};

pub static FAMILIES: &[&Manifest] = &[&V1_0];
