//! gemini `--output-format stream-json` (JSONL) and `--output-format json`
//! (one pretty-printed document without `type`, spanning many lines).
//! A `message` means what its `role` says; any other role is drift.

use super::{explains_failure, lifecycle, warn};
use crate::engine::frames::manifest::*;
use crate::engine::{EngineId, OutputTransport};

#[rustfmt::skip]
const ROLES: &[Entry] = &[
    Entry { kind: "user", rule: Rule::UserText { text: &["content"] } },
    // The answer arrives in several `delta: true` chunks.
    Entry { kind: "assistant", rule: Rule::AgentDelta { text: &["content"] } },
];

const MESSAGE: Rule = Rule::Nested(Nested {
    root: &[],
    key: &["role"],
    many: false,
    string_rule: None,
    entries: ROLES,
});

const TOOL_USE: Rule = Rule::ToolCall(ToolCallSpec {
    id: &["tool_id"],
    name: Src::Path(&["tool_name"]),
    input: &["parameters"],
});

const TOOL_RESULT: Rule = Rule::ToolResult(ToolResultSpec {
    id: &["tool_id"],
    name: Src::Const("?"),
    input: &[],
    status: StatusSrc::Path(&["status"]),
    output: &["output"],
    error: &["error", "message"],
    exit: &[],
});

/// stream-json: the run's totals over every model it called.
const USAGE_STREAM: UsageSpec = UsageSpec {
    source: "result.stats",
    input: &["stats", "input_tokens"],
    cached: &["stats", "cached"],
    output: &["stats", "output_tokens"],
    total: &["stats", "total_tokens"],
    ..UsageSpec::DEFAULT
};

/// json: per-model `tokens`, summed.
const USAGE_DOCUMENT: UsageSpec = UsageSpec {
    source: "stats.models.tokens",
    input: &["tokens", "prompt"],
    cached: &["tokens", "cached"],
    output: &["tokens", "candidates"],
    reasoning: &["tokens", "thoughts"],
    total: &["tokens", "total"],
    each: &["stats", "models"],
    ..UsageSpec::DEFAULT
};

/// d_error429: stdout's `result` says only "unknown error"; the exit status
/// is the HTTP status mod 256 (429 → 173) and stderr names
/// `RetryableQuotaError` (a 500 exits 244).
const RATE_LIMITS: RateLimits = RateLimits {
    frames: &[],
    quota: &[],
    stderr: &["RetryableQuotaError"],
    exit: Some(173),
};

const INIT: Rule = lifecycle(LifecycleSpec {
    label: "Session started",
    shows_session: true,
    ..LifecycleSpec::DEFAULT
});

const RESULT: Rule = lifecycle(LifecycleSpec {
    label: "Completed",
    failed_label: "Failed",
    failed_if: Some(Cond::StrNe(&["status"], "success")),
    failed_detail: "{error.message}",
    error: &[&["error", "message"]],
    usage: &["stats"],
    usage_figures: Some(&USAGE_STREAM),
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});

/// The `--output-format json` document: answer, session and stats in one.
const DOCUMENT: Rule = lifecycle(LifecycleSpec {
    label: "Completed",
    failed_label: "Failed",
    failed_if: Some(Cond::Exists(&["error"])),
    failed_detail: "{error.message}",
    error: &[&["error", "message"]],
    shows_session: true,
    usage: &["stats"],
    usage_figures: Some(&USAGE_DOCUMENT),
    answer: &["response"],
    ends_turn: true,
    ..LifecycleSpec::DEFAULT
});

/// What gemini's runner prints (0.61.0, `d_max_tokens`) when the model's
/// token limit ran out before any answer text (`MAX_TOKENS_EXCEEDED`): an
/// `error` frame, then a failing `result` (exit 0); the json document says
/// it in `error.message`.
const TRUNCATION_TEXT: &str = "Model response was truncated";

const ERROR: Rule = explains_failure(warn("Error", "{message}"));

/// The runner's truncation frame is an "Output truncated" row; any other
/// `error` frame a warning.
const ERROR_OR_TRUNCATED: Rule = Rule::When {
    cond: Cond::Contains(&["message"], TRUNCATION_TEXT),
    then: &Rule::Truncated {
        detail: "{message}",
        explains_failure: true,
    },
    otherwise: &ERROR,
};

#[rustfmt::skip]
const JSONL_0_61: &[Entry] = &[
    Entry { kind: "init", rule: INIT },
    Entry { kind: "message", rule: MESSAGE },
    Entry { kind: "tool_use", rule: TOOL_USE },
    Entry { kind: "tool_result", rule: TOOL_RESULT },
    Entry { kind: "error", rule: ERROR_OR_TRUNCATED },
    Entry { kind: "result", rule: RESULT },
];

/// 0.49 also named `tool_call` (read like `tool_use`; not seen in a capture).
#[rustfmt::skip]
const JSONL_0_49: &[Entry] = &[
    Entry { kind: "init", rule: INIT },
    Entry { kind: "message", rule: MESSAGE },
    Entry { kind: "tool_call", rule: TOOL_USE },
    Entry { kind: "tool_use", rule: TOOL_USE },
    Entry { kind: "tool_result", rule: TOOL_RESULT },
    Entry { kind: "error", rule: ERROR_OR_TRUNCATED },
    Entry { kind: "result", rule: RESULT },
];

/// The document's truncation says so on a row of its own, before the
/// failing row.
const DOCUMENT_TRUNCATED: Rule = Rule::When {
    cond: Cond::Contains(&["error", "message"], TRUNCATION_TEXT),
    then: &Rule::Truncated {
        detail: "{error.message}",
        explains_failure: false,
    },
    otherwise: &Rule::Quiet,
};

#[rustfmt::skip]
const JSON: &[Entry] = &[Entry {
    kind: "(untyped)",
    rule: Rule::All(&[DOCUMENT_TRUNCATED, DOCUMENT]),
}];

const TRANSPORTS_0_61: &[TransportTable] = &[
    TransportTable {
        transport: OutputTransport::Jsonl,
        entries: JSONL_0_61,
    },
    TransportTable {
        transport: OutputTransport::Json,
        entries: JSON,
    },
];

/// 0.47.0 prints the same kinds as 0.61.0 (its captures, fixtures/gemini/0.47.0;
/// the 0.47.0 and 0.51.0 bundles define no `tool_call`).
pub static V0_47: Manifest = Manifest {
    cli: EngineId::Gemini,
    major: 0,
    minor: 47,
    verified: &["0.47.0"],
    kind: &["type"],
    session: &["session_id"],
    closing: "a result frame",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: TRANSPORTS_0_61,
};

pub static V0_49: Manifest = Manifest {
    cli: EngineId::Gemini,
    major: 0,
    minor: 49,
    verified: &[],
    kind: &["type"],
    session: &["session_id"],
    closing: "a result frame",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[
        TransportTable {
            transport: OutputTransport::Jsonl,
            entries: JSONL_0_49,
        },
        TransportTable {
            transport: OutputTransport::Json,
            entries: JSON,
        },
    ],
};

pub static V0_61: Manifest = Manifest {
    cli: EngineId::Gemini,
    major: 0,
    minor: 61,
    verified: &["0.61.0"],
    kind: &["type"],
    session: &["session_id"],
    closing: "a result frame",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: TRANSPORTS_0_61,
};

pub static FAMILIES: &[&Manifest] = &[&V0_47, &V0_49, &V0_61];
