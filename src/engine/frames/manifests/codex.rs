//! codex `exec --json` (JSONL). The semantic kind of `item.*` frames is
//! nested under `item.type`.

use super::{explains_failure, info, lifecycle, warn};
use crate::engine::frames::manifest::*;
use crate::engine::{EngineId, OutputTransport};

const SHELL_CALL: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["id"],
    name: Src::Const("shell"),
    input: &["command"],
});
const SHELL_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["id"],
    name: Src::Const("shell"),
    input: &["command"],
    status: StatusSrc::Path(&["status"]),
    output: &["aggregated_output"],
    error: &[],
    exit: &["exit_code"],
});
const FILE_CALL: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["id"],
    name: Src::Const("file_change"),
    input: &["changes"],
});
const FILE_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["id"],
    name: Src::Const("file_change"),
    input: &["changes"],
    status: StatusSrc::Path(&["status"]),
    output: &[],
    error: &[],
    exit: &[],
});
const MCP_CALL: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["id"],
    name: Src::Path(&["tool"]),
    input: &["arguments"],
});
const MCP_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["id"],
    name: Src::Path(&["tool"]),
    input: &["arguments"],
    status: StatusSrc::Path(&["status"]),
    output: &["result"],
    error: &["error", "message"],
    exit: &[],
});
const COLLAB_CALL: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["id"],
    name: Src::Path(&["tool"]),
    input: &["prompt"],
});
const COLLAB_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["id"],
    name: Src::Path(&["tool"]),
    input: &["prompt"],
    status: StatusSrc::Path(&["status"]),
    output: &[],
    error: &[],
    exit: &[],
});
const SEARCH_CALL: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["id"],
    name: Src::Const("web_search"),
    input: &["query"],
});
const SEARCH_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["id"],
    name: Src::Const("web_search"),
    input: &["query"],
    status: StatusSrc::Path(&["status"]),
    output: &[],
    error: &[],
    exit: &[],
});

/// Item kinds shared by every known family.
#[rustfmt::skip]
const ITEM_STARTED: &[Entry] = &[
    Entry { kind: "command_execution", rule: SHELL_CALL },
    Entry { kind: "file_change", rule: FILE_CALL },
    Entry { kind: "mcp_tool_call", rule: MCP_CALL },
    Entry { kind: "web_search", rule: SEARCH_CALL },
    Entry { kind: "collab_tool_call", rule: COLLAB_CALL },
    Entry { kind: "todo_list", rule: info("Todo list", "{items}") },
    // Text items only matter once completed.
    Entry { kind: "agent_message", rule: Rule::Quiet },
    Entry { kind: "reasoning", rule: Rule::Quiet },
];
#[rustfmt::skip]
const ITEM_UPDATED: &[Entry] = &[
    Entry { kind: "todo_list", rule: info("Todo list", "{items}") },
    Entry { kind: "command_execution", rule: Rule::Quiet },
    Entry { kind: "mcp_tool_call", rule: Rule::Quiet },
    Entry { kind: "collab_tool_call", rule: Rule::Quiet },
    Entry { kind: "agent_message", rule: Rule::Quiet },
    Entry { kind: "reasoning", rule: Rule::Quiet },
];
#[rustfmt::skip]
const ITEM_COMPLETED: &[Entry] = &[
    Entry { kind: "agent_message", rule: Rule::AgentText { text: &["text"] } },
    Entry { kind: "reasoning", rule: info("Reasoning", "{text}") },
    Entry { kind: "command_execution", rule: SHELL_RESULT },
    Entry { kind: "file_change", rule: FILE_RESULT },
    Entry { kind: "mcp_tool_call", rule: MCP_RESULT },
    Entry { kind: "web_search", rule: SEARCH_RESULT },
    Entry { kind: "collab_tool_call", rule: COLLAB_RESULT },
    Entry { kind: "todo_list", rule: info("Todo list", "{items}") },
    // Not fatal: codex reports e.g. unknown model metadata this way and exits 0.
    Entry { kind: "error", rule: warn("Error", "{message}") },
];

const fn item(entries: &'static [Entry]) -> Rule {
    Rule::Nested(Nested {
        root: &["item"],
        key: &["type"],
        many: false,
        string_rule: None,
        entries,
    })
}

/// Cumulative for the thread: a resumed run's usage is this less the
/// previous run's figure (kept in the marker).
const USAGE: UsageSpec = UsageSpec {
    source: "turn.completed.usage",
    input: &["usage", "input_tokens"],
    cached: &["usage", "cached_input_tokens"],
    output: &["usage", "output_tokens"],
    reasoning: &["usage", "reasoning_output_tokens"],
    accumulate: Accumulate::Cumulative,
    ..UsageSpec::DEFAULT
};

/// d_error429: `turn.failed` says `exceeded retry limit, last status: 429
/// Too Many Requests` (a 500 says "high demand", a stream failure "stream
/// disconnected"). A plan's window refused (fixtures/quota/codex/0.171.0/
/// q_rejected) says "You’ve hit your usage limit. … try again at 6:34 PM.":
/// a local clock time without a date, so no `retryAt` (the back-off). codex
/// reads its window (`x-codex-primary-*`) but `exec --json` prints none.
#[rustfmt::skip]
const RATE_LIMITS: RateLimits = RateLimits {
    frames: &[
        RateLimitFrame {
            kind: "turn.failed",
            when: Cond::Contains(&["error", "message"], "429 Too Many Requests"),
            retry_at: &[],
        },
        RateLimitFrame {
            kind: "turn.failed",
            when: Cond::Contains(&["error", "message"], "hit your usage limit"),
            retry_at: &[],
        },
    ],
    quota: &[],
    stderr: &[],
    exit: None,
};

const THREAD_STARTED: Rule = lifecycle(LifecycleSpec {
    label: "Session started",
    shows_session: true,
    ..LifecycleSpec::DEFAULT
});
/// A compact row for the start of each turn (the projector contract's
/// lifecycle rows: started, completed, resumed).
const TURN_STARTED: Rule = lifecycle(LifecycleSpec {
    label: "Turn started",
    ..LifecycleSpec::DEFAULT
});
/// Before `thread.*`, codex's exec stream named the session
/// `session.created` with `session_id` (the seed's 0.146 baseline lists
/// `session.*` with `thread.*` and `turn.*`): the same lifecycle row.
const SESSION_CREATED: Rule = lifecycle(LifecycleSpec {
    label: "Session started",
    shows_session: true,
    session: &["session_id"],
    ..LifecycleSpec::DEFAULT
});
/// Any other `session.*` frame is session bookkeeping: a lifecycle row, not drift.
const SESSION_OTHER: Rule = lifecycle(LifecycleSpec {
    label: "Session",
    shows_session: true,
    session: &["session_id"],
    ..LifecycleSpec::DEFAULT
});
const TURN_COMPLETED: Rule = lifecycle(LifecycleSpec {
    label: "Turn completed",
    usage: &["usage"],
    usage_figures: Some(&USAGE),
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});
const TURN_FAILED: Rule = lifecycle(LifecycleSpec {
    label: "Turn failed",
    failed_label: "Turn failed",
    always_failed: true,
    failed_detail: "{error.message}",
    error: &[&["error", "message"]],
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});

const TRUNCATED: Rule = Rule::Truncated {
    detail: "",
    explains_failure: false,
};

#[rustfmt::skip]
const JSONL_0_171: &[Entry] = &[
    Entry { kind: "thread.started", rule: THREAD_STARTED },
    Entry { kind: "turn.started", rule: TURN_STARTED },
    Entry { kind: "turn.completed", rule: TURN_COMPLETED },
    Entry { kind: "turn.failed", rule: TURN_FAILED },
    Entry { kind: "item.started", rule: item(ITEM_STARTED) },
    Entry { kind: "item.updated", rule: item(ITEM_UPDATED) },
    Entry { kind: "item.completed", rule: item(ITEM_COMPLETED) },
    // Top-level errors are retries in progress until turn.failed says
    // otherwise; the last one explains a non-zero exit.
    Entry { kind: "error", rule: explains_failure(warn("Error", "{message}")) },
    Entry { kind: "output.truncated", rule: TRUNCATED },
    Entry { kind: "response.output_text.truncated", rule: TRUNCATED },
    Entry { kind: "session.created", rule: SESSION_CREATED },
    // Last: the family names only what no entry above does.
    Entry { kind: "session.*", rule: SESSION_OTHER },
];

/// The 0.146.0 binary names the same event and item kinds as 0.171.0
/// (checked with `strings` on both): one table serves both families.
const JSONL_0_146: &[Entry] = JSONL_0_171;

/// The 0.144.1 binary names the same kinds as well (`strings`); its captures
/// (fixtures/codex/0.144.1) project without drift.
pub static V0_144: Manifest = Manifest {
    cli: EngineId::Codex,
    major: 0,
    minor: 144,
    verified: &["0.144.1"],
    kind: &["type"],
    session: &["thread_id"],
    closing: "turn.completed",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[TransportTable {
        transport: OutputTransport::Jsonl,
        entries: JSONL_0_171,
    }],
};

pub static V0_146: Manifest = Manifest {
    cli: EngineId::Codex,
    major: 0,
    minor: 146,
    verified: &[],
    kind: &["type"],
    session: &["thread_id"],
    closing: "turn.completed",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[TransportTable {
        transport: OutputTransport::Jsonl,
        entries: JSONL_0_146,
    }],
};

pub static V0_171: Manifest = Manifest {
    cli: EngineId::Codex,
    major: 0,
    minor: 171,
    verified: &["0.171.0"],
    kind: &["type"],
    session: &["thread_id"],
    closing: "turn.completed",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[TransportTable {
        transport: OutputTransport::Jsonl,
        entries: JSONL_0_171,
    }],
};

pub static FAMILIES: &[&Manifest] = &[&V0_144, &V0_146, &V0_171];
