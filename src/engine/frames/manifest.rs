//! Manifest vocabulary: which frame kinds a CLI version family emits, and
//! which event family each one maps to.
//!
//! Manifests are data (`static` tables under `manifests/`). The projector
//! interprets them generically; nothing outside `manifests/` names a CLI's
//! frame kinds or field paths.

use serde::Serialize;

use super::event::Level;
use crate::engine::{EngineId, OutputTransport};

/// A path of object keys from a frame (or a nested element) to a field.
pub type Path = &'static [&'static str];

/// A detail template: `{a.b}` is replaced by the field at that dotted path
/// (strings as-is, numbers and booleans printed, arrays as "N items").
pub type Tpl = &'static str;

/// The event family a frame kind belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EventFamily {
    Message,
    Lifecycle,
    ToolCall,
    Runtime,
    Truncation,
    /// Known bookkeeping with nothing to show (ephemeral deltas, load notices).
    Quiet,
    /// The meaning depends on a nested kind (see [`Nested`]).
    Nested,
}

/// Where a tool name comes from.
#[derive(Debug, Clone, Copy)]
pub enum Src {
    Path(Path),
    Const(&'static str),
}

/// How a tool result's status is read.
#[derive(Debug, Clone, Copy)]
pub enum StatusSrc {
    /// A status string (`"success"` is normalised to `"completed"`).
    Path(Path),
    /// `true` means error.
    ErrorFlag(Path),
    /// `true` means success; on failure the string at `code` (if any) is the status.
    SuccessFlag { flag: Path, code: Path },
}

/// A condition on a frame, for lifecycle rows that may report failure.
#[derive(Debug, Clone, Copy)]
pub enum Cond {
    True(Path),
    StrEq(Path, &'static str),
    StrNe(Path, &'static str),
    NonZero(Path),
    Exists(Path),
    /// A number equal to this (an HTTP status).
    NumEq(Path, i64),
    /// A string containing this (codex's `429 Too Many Requests` text).
    Contains(Path, &'static str),
}

/// How one run's usage figures add up over its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulate {
    /// The latest frame holds the run's figures (claude, gemini `result`).
    Last,
    /// Each frame holds one step's figures (opencode `step_finish`).
    Sum,
    /// The latest frame holds the thread's figures so far (codex
    /// `turn.completed`): a resumed run's usage is that less the previous one.
    Cumulative,
    /// The latest frame holds the run's tokens, but its cost is the
    /// session's so far, from version `since` on (claude's `total_cost_usd`
    /// on a resume: ENGINES.md, "Usage"); a resumed run's cost is that less
    /// the previous one. An unknown version is taken to be that recent.
    SessionCost { since: &'static str },
}

impl Accumulate {
    /// Which of the figures are a running total, for the CLI `version`.
    pub fn running(
        self,
        version: Option<&crate::ground::version::Version>,
    ) -> crate::engine::usage::Running {
        use crate::engine::usage::Running;
        match self {
            Accumulate::Last | Accumulate::Sum => Running::None,
            Accumulate::Cumulative => Running::All,
            Accumulate::SessionCost { since } => {
                let since = crate::ground::version::Version::parse(since);
                match (version, since) {
                    (Some(v), Some(s)) if *v < s => Running::None,
                    _ => Running::Cost,
                }
            }
        }
    }
}

/// Where a frame's usage figures are (see ENGINES.md, "Usage").
#[derive(Debug)]
pub struct UsageSpec {
    /// Named in the result's `usage.source`.
    pub source: &'static str,
    /// Figure paths, relative to the frame or to each value under `each`;
    /// an empty path: the engine does not report that figure.
    pub input: Path,
    pub cached: Path,
    pub output: Path,
    pub reasoning: Path,
    pub total: Path,
    /// Relative to the frame, never summed over `each`.
    pub cost: Path,
    /// When not empty: the figures are summed over every value of this
    /// object (gemini's per-model `stats.models`).
    pub each: Path,
    pub accumulate: Accumulate,
}

impl UsageSpec {
    pub const DEFAULT: UsageSpec = UsageSpec {
        source: "",
        input: &[],
        cached: &[],
        output: &[],
        reasoning: &[],
        total: &[],
        cost: &[],
        each: &[],
        accumulate: Accumulate::Last,
    };
}

/// A frame that says the provider rate-limited the run.
#[derive(Debug)]
pub struct RateLimitFrame {
    /// The top-level kind (as `kind_of` names it: `result/success`).
    pub kind: &'static str,
    pub when: Cond,
    /// When the limit resets: epoch seconds or an RFC 3339 string.
    pub retry_at: Path,
}

/// A frame that says how much of its quota window the engine has used
/// (claude's `rate_limit_event`, whatever its status): what the quota
/// governor learns while the unit runs (docs/QUOTA.md).
#[derive(Debug)]
pub struct QuotaFrame {
    /// The top-level kind (as `kind_of` names it).
    pub kind: &'static str,
    /// `allowed`, `allowed_warning` or `rejected` (the engine's words).
    pub status: Path,
    /// The share of the window used.
    pub utilization: Path,
    /// What `utilization` is multiplied by to make a percent (100 for a fraction).
    pub utilization_scale: f64,
    /// The window's name (`five_hour`).
    pub window: Path,
    /// When the window resets: epoch seconds or an RFC 3339 string.
    pub resets_at: Path,
    /// Every window's own reading, by the window's name (claude's
    /// `unifiedWindows`), each under the last names of the paths above: read
    /// when the frame gives no figure of its own (claude names one only when
    /// it warns), the fullest window then speaks for the frame.
    pub windows: Path,
}

/// How a failed run shows it was rate-limited (see ENGINES.md, "Rate limits").
#[derive(Debug)]
pub struct RateLimits {
    pub frames: &'static [RateLimitFrame],
    /// The frames that report the quota window while the engine runs.
    pub quota: &'static [QuotaFrame],
    /// Text on stderr that names a rate limit (gemini's stdout does not).
    pub stderr: &'static [&'static str],
    /// The exit status a rate-limited run ends with (gemini: 429 mod 256).
    pub exit: Option<i32>,
}

impl RateLimits {
    pub const NONE: RateLimits = RateLimits {
        frames: &[],
        quota: &[],
        stderr: &[],
        exit: None,
    };
}

#[derive(Debug, Clone, Copy)]
pub struct ToolCallSpec {
    pub id: Path,
    pub name: Src,
    pub input: Path,
}

#[derive(Debug, Clone, Copy)]
pub struct ToolResultSpec {
    pub id: Path,
    /// Name and input, used when the result arrives without a matching call.
    pub name: Src,
    pub input: Path,
    pub status: StatusSrc,
    pub output: Path,
    /// Read when `output` is empty.
    pub error: Path,
    pub exit: Path,
}

#[derive(Debug, Clone, Copy)]
pub struct StatusSpec {
    pub level: Level,
    pub label: &'static str,
    pub detail: Tpl,
    /// The detail explains a failure decided elsewhere (a non-zero exit, a
    /// failing row without a message of its own): codex's top-level `error`.
    pub explains_failure: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct LifecycleSpec {
    pub label: &'static str,
    /// Label when `failed_if` holds (or always, with `always_failed`).
    pub failed_label: &'static str,
    pub failed_if: Option<Cond>,
    pub always_failed: bool,
    /// Detail shown on failure.
    pub failed_detail: Tpl,
    /// The failure in the engine's words: the first of these that is a
    /// non-empty string (the run's error text; `failed_detail` is for display).
    pub error: &'static [Path],
    /// The row shows the frame's session id (read at the manifest's `session`).
    pub shows_session: bool,
    /// Where this kind of frame names the session when not at the manifest's
    /// `session` (codex's older `session.created` says `session_id`).
    pub session: Path,
    pub usage: Path,
    /// The normalised figures this row carries.
    pub usage_figures: Option<&'static UsageSpec>,
    /// The final answer carried by this frame (claude `result`, gemini json document).
    pub answer: Path,
    /// This frame ends a turn: the pending agent message is the final answer.
    pub ends_turn: bool,
    /// When this is the last closing frame, the run was cut short: the CLI
    /// always goes on after it (opencode's step ending in `tool-calls`).
    pub cut_short_if: Option<Cond>,
}

impl LifecycleSpec {
    pub const DEFAULT: LifecycleSpec = LifecycleSpec {
        label: "",
        failed_label: "Failed",
        failed_if: None,
        always_failed: false,
        failed_detail: "",
        error: &[],
        shows_session: false,
        session: &[],
        usage: &[],
        usage_figures: None,
        answer: &[],
        ends_turn: false,
        cut_short_if: None,
    };
}

/// A kind that lives inside the frame (codex `item.type`, claude content
/// blocks, gemini `role`, opencode `part.type`).
#[derive(Debug)]
pub struct Nested {
    /// The object (or, with `many`, the array of objects) the nested rules read.
    pub root: Path,
    /// The nested kind, relative to each nested object.
    pub key: Path,
    pub many: bool,
    /// Rule for a bare string where objects were expected (claude user content).
    pub string_rule: Option<&'static Rule>,
    pub entries: &'static [Entry],
}

#[derive(Debug)]
pub enum Rule {
    Quiet,
    /// A whole assistant message.
    AgentText {
        text: Path,
    },
    /// A piece of an assistant message; adjacent pieces are joined.
    AgentDelta {
        text: Path,
    },
    /// A real (human) user turn echoed by the CLI.
    UserText {
        text: Path,
    },
    ToolCall(ToolCallSpec),
    /// An array of tool calls inside the frame.
    ToolCallList {
        list: Path,
        call: ToolCallSpec,
    },
    ToolResult(ToolResultSpec),
    Status(StatusSpec),
    Lifecycle(LifecycleSpec),
    /// The visible output is incomplete: a warning row "Output truncated".
    Truncated {
        detail: Tpl,
        /// The detail explains a failure decided elsewhere (gemini's
        /// truncation is followed by a failing `result`).
        explains_failure: bool,
    },
    /// `then` when the condition holds, else `otherwise` (one frame kind
    /// that means two things: gemini's `error` that says the model's
    /// response was truncated).
    When {
        cond: Cond,
        then: &'static Rule,
        otherwise: &'static Rule,
    },
    Nested(Nested),
    /// Several rules on one frame, in order.
    All(&'static [Rule]),
}

impl Rule {
    pub fn family(&self) -> EventFamily {
        match self {
            Rule::Quiet => EventFamily::Quiet,
            Rule::AgentText { .. } | Rule::AgentDelta { .. } | Rule::UserText { .. } => {
                EventFamily::Message
            }
            Rule::ToolCall(_) | Rule::ToolCallList { .. } | Rule::ToolResult(_) => {
                EventFamily::ToolCall
            }
            Rule::Status(_) => EventFamily::Runtime,
            Rule::Lifecycle(_) => EventFamily::Lifecycle,
            Rule::Truncated { .. } => EventFamily::Truncation,
            Rule::Nested(_) => EventFamily::Nested,
            Rule::When { then, .. } => then.family(),
            Rule::All(rules) => rules.first().map_or(EventFamily::Quiet, Rule::family),
        }
    }
}

/// One known kind (top-level `type`, `type/subtype`, or a nested kind). A
/// kind ending in `.*` is a family: it names every kind with that prefix that
/// no entry before it names (codex's `session.*`), listed after them.
#[derive(Debug)]
pub struct Entry {
    pub kind: &'static str,
    pub rule: Rule,
}

/// The frames one transport of a family emits.
#[derive(Debug)]
pub struct TransportTable {
    pub transport: OutputTransport,
    pub entries: &'static [Entry],
}

/// One CLI version family.
#[derive(Debug)]
pub struct Manifest {
    pub cli: EngineId,
    /// `major.minor` of the family.
    pub major: u64,
    pub minor: u64,
    /// Versions whose real output this manifest was checked against.
    pub verified: &'static [&'static str],
    /// Where the top-level kind is read.
    pub kind: Path,
    /// Where a frame names the session, read on every frame (top level).
    pub session: Path,
    /// What a stream that no row closed lacks, for the failure message
    /// ("the stream ended without a result frame").
    pub closing: &'static str,
    /// Top-level kinds whose kind is `type/<subkind>` (claude `system/init`).
    pub subkinds: &'static [(&'static str, Path)],
    pub rate_limits: RateLimits,
    /// Kinds of frames that end a run on the engine's own spending cap
    /// (claude's `result/error_max_budget_usd`): reason `budget`.
    pub budget_stops: &'static [&'static str],
    pub transports: &'static [TransportTable],
}

impl Manifest {
    pub fn family(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }

    pub fn table(&self, t: OutputTransport) -> Option<&'static [Entry]> {
        self.transports
            .iter()
            .find(|tt| tt.transport == t)
            .map(|tt| tt.entries)
    }
}

pub fn lookup<'a>(entries: &'a [Entry], kind: &str) -> Option<&'a Rule> {
    let named = |e: &&Entry| match e.kind.strip_suffix('*') {
        Some(prefix) => prefix.ends_with('.') && kind.starts_with(prefix),
        None => e.kind == kind,
    };
    entries.iter().find(named).map(|e| &e.rule)
}
