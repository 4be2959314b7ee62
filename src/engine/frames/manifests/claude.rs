//! claude `-p --output-format stream-json --verbose` (JSONL) and
//! `--output-format json` (one `result` object). `system` and `result`
//! frames are told apart by `subtype`; `assistant`/`user` frames hold
//! content blocks, each checked on its own.

use super::{info, lifecycle, warn};
use crate::engine::frames::manifest::*;
use crate::engine::{EngineId, OutputTransport};

#[rustfmt::skip]
const ASSISTANT_BLOCKS: &[Entry] = &[
    Entry { kind: "text", rule: Rule::AgentText { text: &["text"] } },
    Entry {
        kind: "tool_use",
        rule: Rule::ToolCall(ToolCallSpec {
            id: &["id"],
            name: Src::Path(&["name"]),
            input: &["input"],
        }),
    },
    Entry { kind: "thinking", rule: info("Thinking", "{thinking}") },
    Entry { kind: "redacted_thinking", rule: info("Thinking", "(redacted)") },
];

/// `user` frames in stream-json carry tool results, not human turns.
#[rustfmt::skip]
const USER_BLOCKS: &[Entry] = &[
    Entry {
        kind: "tool_result",
        rule: Rule::ToolResult(ToolResultSpec {
            id: &["tool_use_id"],
            name: Src::Const("?"),
            input: &[],
            status: StatusSrc::ErrorFlag(&["is_error"]),
            output: &["content"],
            error: &[],
            exit: &[],
        }),
    },
    Entry { kind: "text", rule: Rule::UserText { text: &["text"] } },
];

const USER_STRING: Rule = Rule::UserText { text: &[] };

#[rustfmt::skip]
const STREAM_EVENTS: &[Entry] = &[
    // Partial pieces: the complete `assistant` frame follows and is what is shown.
    Entry { kind: "message_start", rule: Rule::Quiet },
    Entry { kind: "content_block_start", rule: Rule::Quiet },
    Entry { kind: "content_block_delta", rule: Rule::Quiet },
    Entry { kind: "content_block_stop", rule: Rule::Quiet },
    Entry { kind: "message_delta", rule: Rule::Quiet },
    Entry { kind: "message_stop", rule: Rule::Quiet },
];

/// `result.usage` is the run's; `total_cost_usd` is what claude priced it
/// at: the run's in 2.1.207 and 2.1.220, but the session's so far on a resume
/// in 2.1.332 (like `modelUsage`; ENGINES.md, "Usage", has the evidence).
const USAGE: UsageSpec = UsageSpec {
    source: "result.usage",
    input: &["usage", "input_tokens"],
    cached: &["usage", "cache_read_input_tokens"],
    output: &["usage", "output_tokens"],
    // 2.1.332 names it; 2.1.207 does not (then null).
    reasoning: &["usage", "output_tokens_details", "thinking_tokens"],
    cost: &["total_cost_usd"],
    accumulate: Accumulate::SessionCost { since: "2.1.332" },
    ..UsageSpec::DEFAULT
};

/// d_error429: the closing `result` has `api_error_status: 429` (the
/// synthetic assistant message before it says `error: "rate_limit"`). The
/// `rate_limit_event` names the reset (`resetsAt`, epoch seconds) when a
/// subscription limit is hit; no capture shows it rejecting yet.
const RATE_LIMITS: RateLimits = RateLimits {
    frames: &[
        RateLimitFrame {
            kind: "result/success",
            when: Cond::NumEq(&["api_error_status"], 429),
            retry_at: &[],
        },
        RateLimitFrame {
            kind: "assistant",
            when: Cond::StrEq(&["error"], "rate_limit"),
            retry_at: &[],
        },
        RateLimitFrame {
            kind: "rate_limit_event",
            when: Cond::StrEq(&["rate_limit_info", "status"], "rejected"),
            retry_at: &["rate_limit_info", "resetsAt"],
        },
    ],
    quota: &[QuotaFrame {
        kind: "rate_limit_event",
        status: &["rate_limit_info", "status"],
        utilization: &["rate_limit_info", "utilization"],
        utilization_scale: 100.0,
        window: &["rate_limit_info", "rateLimitType"],
        resets_at: &["rate_limit_info", "resetsAt"],
        windows: &["rate_limit_info", "unifiedWindows"],
    }],
    stderr: &[],
    exit: None,
};

/// `--max-budget-usd` reached (`vf dispatch --max-cost`).
const BUDGET_STOPS: &[&str] = &["result/error_max_budget_usd"];

/// `is_error` decides: `subtype` says "success" even on API errors.
const RESULT: Rule = lifecycle(LifecycleSpec {
    label: "Completed",
    failed_label: "Failed",
    failed_if: Some(Cond::True(&["is_error"])),
    failed_detail: "{result}",
    error: &[&["result"]],
    shows_session: true,
    usage: &["usage"],
    usage_figures: Some(&USAGE),
    answer: &["result"],
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});
const RESULT_ERROR: Rule = lifecycle(LifecycleSpec {
    label: "Failed",
    failed_label: "Failed",
    always_failed: true,
    failed_detail: "{subtype}",
    error: &[&["result"]],
    shows_session: true,
    usage: &["usage"],
    usage_figures: Some(&USAGE),
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});

#[rustfmt::skip]
const JSONL: &[Entry] = &[
    Entry {
        kind: "system/init",
        rule: lifecycle(LifecycleSpec {
            label: "Session started",
            shows_session: true,
            ..LifecycleSpec::DEFAULT
        }),
    },
    Entry { kind: "system/status", rule: info("Status", "{status}") },
    Entry {
        kind: "system/api_retry",
        rule: warn(
            "API retry",
            "attempt {attempt}/{max_retries}: HTTP {error_status} {error}",
        ),
    },
    Entry { kind: "system/thinking_tokens", rule: Rule::Quiet },
    Entry { kind: "system/permission_denied", rule: warn("Permission denied", "{tool_name}: {message}") },
    Entry {
        kind: "system/compact_boundary",
        rule: Rule::Truncated {
            detail: "context compacted",
            explains_failure: false,
        },
    },
    Entry {
        kind: "assistant",
        rule: Rule::Nested(Nested {
            root: &["message", "content"],
            key: &["type"],
            many: true,
            string_rule: None,
            entries: ASSISTANT_BLOCKS,
        }),
    },
    Entry {
        kind: "user",
        rule: Rule::Nested(Nested {
            root: &["message", "content"],
            key: &["type"],
            many: true,
            string_rule: Some(&USER_STRING),
            entries: USER_BLOCKS,
        }),
    },
    Entry {
        kind: "stream_event",
        rule: Rule::Nested(Nested {
            root: &["event"],
            key: &["type"],
            many: false,
            string_rule: None,
            entries: STREAM_EVENTS,
        }),
    },
    Entry { kind: "rate_limit_event", rule: info("Rate limit", "{rate_limit_info.status}") },
    // Named in both the 2.1.220 and 2.1.332 binaries (Agent SDK message
    // kinds), not yet seen in a capture: hooks, background tasks, bookkeeping.
    Entry { kind: "system/hook_started", rule: Rule::Quiet },
    Entry { kind: "system/hook_progress", rule: Rule::Quiet },
    Entry { kind: "system/hook_response", rule: Rule::Quiet },
    Entry { kind: "system/task_started", rule: info("Task started", "{description}") },
    Entry { kind: "system/task_progress", rule: Rule::Quiet },
    Entry { kind: "system/task_notification", rule: info("Task", "{status}: {summary}") },
    Entry { kind: "system/files_persisted", rule: Rule::Quiet },
    Entry { kind: "system/local_command_output", rule: Rule::Quiet },
    Entry { kind: "system/elicitation_complete", rule: Rule::Quiet },
    Entry { kind: "tool_progress", rule: Rule::Quiet },
    Entry { kind: "tool_use_summary", rule: info("Tool summary", "{summary}") },
    Entry { kind: "auth_status", rule: Rule::Quiet },
    Entry { kind: "prompt_suggestion", rule: Rule::Quiet },
    Entry { kind: "result/success", rule: RESULT },
    Entry { kind: "result/error_max_turns", rule: RESULT_ERROR },
    Entry { kind: "result/error_during_execution", rule: RESULT_ERROR },
    Entry { kind: "result/error_max_budget_usd", rule: RESULT_ERROR },
    Entry { kind: "result/error_max_structured_output_retries", rule: RESULT_ERROR },
];

/// `--output-format json`: the single `result` object.
#[rustfmt::skip]
const JSON: &[Entry] = &[
    Entry { kind: "result/success", rule: RESULT },
    Entry { kind: "result/error_max_turns", rule: RESULT_ERROR },
    Entry { kind: "result/error_during_execution", rule: RESULT_ERROR },
    Entry { kind: "result/error_max_budget_usd", rule: RESULT_ERROR },
    Entry { kind: "result/error_max_structured_output_retries", rule: RESULT_ERROR },
];

/// One family for 2.1.x: the 2.1.220 binary names the same frame kinds as
/// 2.1.332 (checked with `strings`), including `system/api_retry`,
/// `system/thinking_tokens` and `system/permission_denied`.
pub static V2_1: Manifest = Manifest {
    cli: EngineId::Claude,
    major: 2,
    minor: 1,
    verified: &["2.1.332"],
    kind: &["type"],
    session: &["session_id"],
    closing: "a result frame",
    subkinds: &[("system", &["subtype"]), ("result", &["subtype"])],
    rate_limits: RATE_LIMITS,
    budget_stops: BUDGET_STOPS,
    transports: &[
        TransportTable {
            transport: OutputTransport::Jsonl,
            entries: JSONL,
        },
        TransportTable {
            transport: OutputTransport::Json,
            entries: JSON,
        },
    ],
};

pub static FAMILIES: &[&Manifest] = &[&V2_1];
