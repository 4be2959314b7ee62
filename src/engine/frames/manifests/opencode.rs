//! opencode `run --format json` (JSONL). Each frame's `part.type` must match
//! what its top-level `type` promises.

use super::{info, lifecycle};
use crate::engine::frames::manifest::*;
use crate::engine::{EngineId, OutputTransport};

const fn part(entries: &'static [Entry]) -> Rule {
    Rule::Nested(Nested {
        root: &["part"],
        key: &["type"],
        many: false,
        string_rule: None,
        entries,
    })
}

#[rustfmt::skip]
const STEP_START: &[Entry] = &[Entry {
    kind: "step-start",
    rule: Rule::Quiet,
}];
#[rustfmt::skip]
const TEXT: &[Entry] = &[Entry {
    kind: "text",
    rule: Rule::AgentText { text: &["text"] },
}];
#[rustfmt::skip]
const REASONING: &[Entry] = &[Entry {
    kind: "reasoning",
    rule: info("Reasoning", "{text}"),
}];
/// One frame holds the call and its result.
#[rustfmt::skip]
const TOOL: &[Entry] = &[Entry {
    kind: "tool",
    rule: Rule::ToolResult(ToolResultSpec {
        id: &["callID"],
        name: Src::Path(&["tool"]),
        input: &["state", "input"],
        status: StatusSrc::Path(&["state", "status"]),
        output: &["state", "output"],
        error: &["state", "error"],
        exit: &["state", "metadata", "exit"],
    }),
}];
/// One step's figures per `step_finish`: summed over the run.
const USAGE: UsageSpec = UsageSpec {
    source: "step_finish.part.tokens",
    input: &["tokens", "input"],
    cached: &["tokens", "cache", "read"],
    output: &["tokens", "output"],
    reasoning: &["tokens", "reasoning"],
    total: &["tokens", "total"],
    cost: &["cost"],
    accumulate: Accumulate::Sum,
    ..UsageSpec::DEFAULT
};

/// The `error` frame carries the provider's HTTP status (d_error500: 500)
/// and its response headers: a 429's `retry-after` (seconds from now) is
/// when to try again (fixtures/quota/opencode/1.18.33/q_error429_reset);
/// Anthropic's `anthropic-ratelimit-unified-reset` (epoch seconds), when the
/// provider sends it, says it better and is read last (the last one wins).
#[rustfmt::skip]
const RATE_LIMITS: RateLimits = RateLimits {
    frames: &[
        RateLimitFrame {
            kind: "error",
            when: Cond::NumEq(&["error", "data", "statusCode"], 429),
            retry_at: &["error", "data", "responseHeaders", "retry-after"],
        },
        RateLimitFrame {
            kind: "error",
            when: Cond::NumEq(&["error", "data", "statusCode"], 429),
            retry_at: &["error", "data", "responseHeaders", "anthropic-ratelimit-unified-reset"],
        },
    ],
    quota: &[],
    stderr: &[],
    exit: None,
};

#[rustfmt::skip]
const STEP_FINISH: &[Entry] = &[Entry {
    kind: "step-finish",
    rule: lifecycle(LifecycleSpec {
        label: "Step finished",
        shows_session: true,
        usage: &["tokens"],
        usage_figures: Some(&USAGE),
        ends_turn: true,
        // opencode calls the model again after every tool call: a stream
        // whose last step ends in one was stopped (b_tool_ask, exit 0).
        cut_short_if: Some(Cond::StrEq(&["reason"], "tool-calls")),
        ..LifecycleSpec::DEFAULT
    }),
}];

#[rustfmt::skip]
const JSONL: &[Entry] = &[
    Entry { kind: "step_start", rule: part(STEP_START) },
    Entry { kind: "text", rule: part(TEXT) },
    Entry { kind: "reasoning", rule: part(REASONING) },
    Entry { kind: "tool_use", rule: part(TOOL) },
    Entry { kind: "step_finish", rule: part(STEP_FINISH) },
    Entry {
        kind: "error",
        rule: lifecycle(LifecycleSpec {
            label: "Error",
            failed_label: "Error",
            always_failed: true,
            failed_detail: "{error.name}: {error.data.message}",
            error: &[&["error", "data", "message"], &["error", "name"]],
            shows_session: true,
            ends_turn: true,
            ..LifecycleSpec::DEFAULT
        }),
    },
];

pub static V1_18: Manifest = Manifest {
    cli: EngineId::Opencode,
    major: 1,
    minor: 18,
    verified: &["1.18.33"],
    kind: &["type"],
    session: &["sessionID"],
    closing: "step_finish",
    subkinds: &[],
    rate_limits: RATE_LIMITS,
    budget_stops: &[],
    transports: &[TransportTable {
        transport: OutputTransport::Jsonl,
        entries: JSONL,
    }],
};

pub static FAMILIES: &[&Manifest] = &[&V1_18];
