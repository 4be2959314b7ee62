//! The engine contract: one module per coding-agent CLI.
//!
//! An engine's file holds its [`Spec`] (binary, verified versions, transports,
//! flags, session-id shape, the little policy no frame carries) and its argv
//! builder. What its output means (session id, answer, failure) is its frame
//! manifest under `frames/manifests/`, read by one generic tracker
//! (`frames::Tracker`). Code outside `engine/` asks through [`Engine`] and
//! never matches on an engine's strings.
//!
//! The domain's map (everything about an engine, nothing about running it):
//! - one file per CLI (`claude`, `codex`, `copilot`, `opencode`, `gemini`,
//!   `agy`), the command engines (`bridge`, `acp_agent`) and `recorded` (the demo's
//!   canned engine): each its `Spec` and argv;
//! - `choice` (`--engine auto`, `KIND[:PRESET]`), `command` (the command a unit
//!   carries), `launch_plan` (its tokenizer and launch plans), `options`
//!   (`--model`, `--effort`, the schema flag), `tool_policy` (`--read-only`, the
//!   tool lists: argv and what is enforced), `enforcement` (`enforced |
//!   unenforced | off`), `sandbox_policy` (`--sandbox`: its modes, the paths a
//!   user names, the built-in deny list, each CLI's state paths, the record),
//!   `mcp` (`--mcp`: per engine its argv, environment and config file);
//! - `frames`: the projector, raw lines in, typed events out, per manifest;
//! - `acp`: the Agent Client Protocol client (the session, its wire log, its projection);
//! - `usage`: the normalised usage object; `summary`: the fenced json summary
//!   and `--summary-schema`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
use crate::ground::version::Version;

pub mod acp;
pub mod acp_agent;
pub mod agy;
pub mod bridge;
pub mod choice;
pub mod claude;
pub mod codex;
pub mod command;
pub mod copilot;
pub mod enforcement;
pub mod frames;
pub mod gemini;
pub mod launch_plan;
pub mod mcp;
pub mod opencode;
pub mod options;
pub mod recorded;
pub mod sandbox_policy;
pub mod summary;
pub mod tool_policy;
pub mod usage;

// The domain's surface for the run of a unit (`dispatch`).
pub use acp::{AcpError, Policy, PromptPart, SessionRequest, SessionSink};
pub use choice::{EngineChoice, Pick, Readiness, choose_engine};
pub use frames::reader::{Found, Line, LineSink, MAX_LINE_BYTES, Splitter};
pub use frames::{ConversationEvent, EventSink, Level, Projector, RawRange, RoundNote};
pub use mcp::McpServers;
pub use summary::Summary;
pub use summary::schema::SummarySchema;
pub use tool_policy::{PolicyStatus, ToolPolicy};
pub use usage::{Running, Usage, per_run};

pub use command::{CommandSource, EngineCommand, Preset};
pub use options::{EffortFlag, OptionFlags, RunOptions, SchemaFlag};

/// The engines vf drives: the six CLIs it knows ([`EngineId::ALL`]) and the
/// command engines, whose unit carries the command to run
/// ([`EngineId::COMMANDS`], `Spec::command`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum EngineId {
    Claude,
    Codex,
    Copilot,
    Opencode,
    Gemini,
    Agy,
    Bridge,
    Acp,
    // A capture of a real CLI replayed by vf (`vf demo`): never a model.
    // Not a value of `--cli`, `--bridge-output`: it prints no family of its own.
    #[value(skip)]
    Recorded,
}

impl EngineId {
    pub const ALL: [EngineId; 6] = [
        EngineId::Claude,
        EngineId::Codex,
        EngineId::Copilot,
        EngineId::Opencode,
        EngineId::Gemini,
        EngineId::Agy,
    ];

    /// The command engines: `--engine auto` never picks one, and a plan's
    /// `fallback` cannot name one (it has no command of its own).
    pub const COMMANDS: [EngineId; 2] = [EngineId::Bridge, EngineId::Acp];

    /// Every engine: the CLIs, then the command engines.
    pub fn every() -> impl Iterator<Item = EngineId> {
        EngineId::ALL
            .into_iter()
            .chain(EngineId::COMMANDS)
            .chain([EngineId::Recorded])
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EngineId::Claude => "claude",
            EngineId::Codex => "codex",
            EngineId::Copilot => "copilot",
            EngineId::Opencode => "opencode",
            EngineId::Gemini => "gemini",
            EngineId::Agy => "agy",
            EngineId::Bridge => "bridge",
            EngineId::Acp => "acp",
            EngineId::Recorded => "recorded",
        }
    }

    pub fn parse(s: &str) -> Option<EngineId> {
        EngineId::every().find(|e| e.as_str() == s)
    }

    /// The engine's implementation of the contract.
    pub fn engine(self) -> &'static dyn Engine {
        match self {
            EngineId::Claude => &claude::Claude,
            EngineId::Codex => &codex::Codex,
            EngineId::Copilot => &copilot::Copilot,
            EngineId::Opencode => &opencode::Opencode,
            EngineId::Gemini => &gemini::Gemini,
            EngineId::Agy => &agy::Agy,
            EngineId::Bridge => &bridge::Bridge,
            EngineId::Acp => &acp_agent::Acp,
            EngineId::Recorded => &recorded::Recorded,
        }
    }

    /// `VF_<ENGINE>_BIN`: overrides where the binary is found.
    pub fn bin_env_var(self) -> String {
        EnvVars::engine_bin(self.as_str())
    }
}

impl fmt::Display for EngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What can stop an engine, while it runs, from doing what a unit's policy
/// forbids (`vf engines`' GUARDRAILS). Conservative: only what ENGINES.md verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guardrails {
    /// The CLI's own verified flags (read-only, tool allow/deny).
    Native,
    /// The CLI's own flags for tools only; no read-only mode (copilot).
    NativeToolsOnly,
    /// vf answers the agent's permission requests (ACP).
    VfEnforced,
    /// Nothing during the run: only what vf checks afterwards (agy's hooks
    /// are unverified).
    PostHoc,
}

impl Guardrails {
    pub fn as_str(self) -> &'static str {
        match self {
            Guardrails::Native => "native",
            Guardrails::NativeToolsOnly => "native (tools only)",
            Guardrails::VfEnforced => "vf-enforced",
            Guardrails::PostHoc => "post-hoc",
        }
    }
}

/// How the prompt reaches the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptTransport {
    /// Written to the child's stdin, which is then closed.
    Stdin,
    /// Passed as an argv value; stdin is `/dev/null`.
    Argv,
}

/// How the CLI's stdout is framed in the mode vf runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OutputTransport {
    /// One JSON object per line.
    Jsonl,
    /// One JSON document (possibly pretty-printed over many lines).
    Json,
    /// Plain text.
    Text,
}

impl OutputTransport {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputTransport::Jsonl => "jsonl",
            OutputTransport::Json => "json",
            OutputTransport::Text => "text",
        }
    }
}

/// Attachment classes (see `vf attach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachmentKind {
    Text,
    Image,
    Document,
}

impl AttachmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::Text => "text",
            AttachmentKind::Image => "image",
            AttachmentKind::Document => "document",
        }
    }

    /// The distinct kinds among `kinds`, in a stable order (text, image, document).
    pub fn distinct(kinds: &[AttachmentKind]) -> Vec<AttachmentKind> {
        [
            AttachmentKind::Text,
            AttachmentKind::Image,
            AttachmentKind::Document,
        ]
        .into_iter()
        .filter(|k| kinds.contains(k))
        .collect()
    }

    /// Engines that accept this kind, in support-matrix order.
    pub fn accepting(self) -> Vec<EngineId> {
        EngineId::ALL
            .into_iter()
            .filter(|e| e.engine().spec().attachment_kinds.contains(&self))
            .collect()
    }
}

/// `claude, codex` (or `none`), for messages.
pub fn engine_list(es: &[EngineId]) -> String {
    if es.is_empty() {
        "none".to_string()
    } else {
        es.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// Refuses, before anything is spawned, a kind `engine` does not accept,
/// naming the engines that would.
pub fn check_attachment_kinds(engine: EngineId, kinds: &[AttachmentKind]) -> Result<()> {
    let accepted = engine.engine().spec().attachment_kinds;
    match AttachmentKind::distinct(kinds)
        .into_iter()
        .find(|k| !accepted.contains(k))
    {
        Some(k) => Err(VfError::usage(format!(
            "{engine}: {} attachments are not supported (engines that accept them: {})",
            k.as_str(),
            engine_list(&k.accepting())
        ))),
        None => Ok(()),
    }
}

/// A flag vf relies on, checked by `vf doctor` against the CLI's own help.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FlagCheck {
    /// Arguments that print the help text holding the flag, e.g. `["exec", "--help"]`.
    pub help_args: &'static [&'static str],
    /// The text that must appear in that help output, e.g. `--json`.
    pub flag: &'static str,
    /// How a user would name it, e.g. `exec --json`.
    pub label: &'static str,
}

impl FlagCheck {
    pub const fn new(
        help_args: &'static [&'static str],
        flag: &'static str,
        label: &'static str,
    ) -> FlagCheck {
        FlagCheck {
            help_args,
            flag,
            label,
        }
    }
}

/// The shape of an engine's native session ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionIds {
    /// No session vf could name (agy): no exact resume.
    None,
    /// Canonical UUIDs (8-4-4-4-12 hex).
    Uuid,
    /// `prefix` followed by exactly `len` ASCII alphanumerics (opencode `ses_…`).
    Prefixed { prefix: &'static str, len: usize },
    /// An ACP agent's own ids: 1 to 128 ASCII letters, digits and `-_.:`,
    /// not starting with `-` (the rule of `acp::valid_session_id`).
    Acp,
}

impl SessionIds {
    pub fn matches(self, id: &str) -> bool {
        match self {
            SessionIds::None => false,
            SessionIds::Uuid => is_uuid(id),
            SessionIds::Prefixed { prefix, len } => id.strip_prefix(prefix).is_some_and(|rest| {
                rest.len() == len && rest.bytes().all(|b| b.is_ascii_alphanumeric())
            }),
            SessionIds::Acp => {
                (1..=128).contains(&id.len())
                    && !id.starts_with('-')
                    && id.bytes().all(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':')
                    })
            }
        }
    }
}

/// Static facts about an engine.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub id: EngineId,
    /// Executable name looked up on PATH.
    pub binary: &'static str,
    /// Versions verified against real output, newest first.
    pub verified_versions: &'static [&'static str],
    pub prompt_transport: PromptTransport,
    /// How stdout is framed in the mode vf runs it.
    pub output_transport: OutputTransport,
    /// Attachment kinds the engine accepts, and the flag that passes them.
    pub attachment_kinds: &'static [AttachmentKind],
    pub attachment_flag: Option<&'static str>,
    /// The flag that lets the engine act without asking.
    pub skip_permissions_flag: Option<&'static str>,
    /// Hard limit on the UTF-8 prompt size, if the engine has one.
    pub prompt_limit_bytes: Option<usize>,
    /// Flags `vf doctor` checks for in the CLI's help.
    pub required_flags: &'static [FlagCheck],
    /// The package the CLI installs from, for messages (`npm i -g ...`).
    pub install_hint: &'static str,
    /// The shape of native session ids: checked before an id is passed on, and
    /// on every id read from the output (others are ignored).
    pub session_ids: SessionIds,
    /// The CLI keeps a session only once the model has answered (gemini: `-r`
    /// on the id of a run whose first request failed exits 42). Until then the
    /// id is reported but is no resume authority.
    pub resumable_after_answer: bool,
    /// The verified flags for `--model`, `--effort` and the summary schema.
    pub options: OptionFlags,
    /// A command engine: where its unit's command comes from (`None`: a CLI
    /// found as `binary`).
    pub command: Option<CommandSource>,
    /// What can hold the engine to a unit's policy while it runs (`vf engines`).
    pub guardrails: Guardrails,
    /// The variables an account of this engine may set (the user config's
    /// `[[accounts]] env`): names, or prefixes ending in `*`, that the CLI
    /// reads for its credentials and config dir.
    pub account_env: &'static [&'static str],
    /// Where the CLI keeps its own state (config, sessions, caches,
    /// credentials): writable under the sandbox, never in `deny_read`
    /// (ENGINES.md, "Sandbox").
    pub state_paths: &'static [sandbox_policy::StatePath],
}

impl Spec {
    /// The permission-skip flag, when the request asks for it.
    pub fn permission_arg(&self, req: &Request<'_>) -> Option<String> {
        self.skip_permissions_flag
            .filter(|_| req.skip_permissions)
            .map(String::from)
    }

    /// `<attachment_flag>=<path>` per attachment. The `=` form binds each value
    /// to its flag: several of these flags take many values and would swallow
    /// what follows (codex `--image P -` eats the stdin marker).
    pub fn attachment_args(&self, req: &Request<'_>) -> Vec<String> {
        let flag = self.attachment_flag.unwrap_or_default();
        req.attachments
            .iter()
            .map(|a| format!("{flag}={}", a.path.display()))
            .collect()
    }
}

/// A file handed to the engine.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub kind: AttachmentKind,
    /// Path as it is passed to the engine (relative to the working dir where possible).
    pub path: PathBuf,
}

/// Everything needed to build an invocation.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub prompt: &'a str,
    /// Exact native session to resume (already validated by the caller or by `build`).
    pub session: Option<&'a str>,
    pub skip_permissions: bool,
    pub cwd: &'a Path,
    /// Whether `cwd` is inside a git work tree (codex refuses otherwise without a flag).
    pub in_git_repo: bool,
    pub attachments: &'a [Attachment],
    /// The work unit's name (used for prompt files).
    pub unit: &'a str,
    /// vf's state directory (`.vibeflow/`).
    pub state_dir: &'a Path,
    /// The unit's own directory (`crate::unit` says where), for its MCP
    /// config: no engine builds a path inside it.
    pub unit_dir: &'a Path,
    /// The installed CLI's version when known.
    pub version: Option<&'a Version>,
    /// Read-only and tool allow/deny (`policy::apply` maps it per engine).
    pub policy: &'a tool_policy::ToolPolicy,
    /// MCP servers for this run (`mcp::apply` maps them per engine).
    pub mcp: Option<&'a mcp::McpServers>,
    /// Model, effort and summary schema (`RunOptions::NONE` for none).
    pub options: &'a RunOptions,
    /// A command engine's command (`None` for the CLIs).
    pub command: Option<&'a EngineCommand>,
}

impl Request<'_> {
    /// `[flag, id]` for an exact resume; nothing for a fresh run.
    pub fn resume_args(&self, flag: &str) -> Vec<String> {
        self.session
            .map(|id| vec![flag.to_string(), id.to_string()])
            .unwrap_or_default()
    }

    /// How `engine` holds this request's read-only and tool policy.
    pub fn applied_policy(&self, engine: EngineId) -> tool_policy::Applied {
        tool_policy::apply(engine, self.version, self.session.is_some(), self.policy)
    }

    /// The argv part of the policy, for the builder to place.
    /// With the MCP servers' argv part (checked by `build` first).
    pub fn policy_args(&self, engine: EngineId) -> Vec<String> {
        let mut args = self.applied_policy(engine).args;
        if let Some(Ok(m)) = self.applied_mcp(engine) {
            args.extend(m.args);
        }
        args
    }

    /// How `engine` takes this request's MCP servers (`None`: none asked).
    pub fn applied_mcp(&self, engine: EngineId) -> Option<Result<mcp::McpApplied>> {
        self.mcp.map(|m| mcp::apply(engine, m, self.unit_dir))
    }
}

/// The exact process vf will spawn.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// Bytes written to stdin before closing it; `None` means stdin is `/dev/null`.
    pub stdin: Option<String>,
    pub cwd: PathBuf,
    /// A prompt too large for argv goes to this file; the runner writes it before
    /// spawning and removes it once the child has exited.
    pub prompt_file: Option<PathBuf>,
    #[serde(skip)]
    pub prompt_file_contents: Option<String>,
    /// Variables added to the engine's environment (an ACP preset's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// Things the user should know (e.g. a dropped unsupported option).
    pub warnings: Vec<String>,
    /// How the read-only and tool policy is held (`engine::policy`).
    pub policy: tool_policy::PolicyStatus,
    /// A per-unit config file (the MCP servers') the launch writes 0600
    /// before the spawn; its text may hold secrets: never shown.
    #[serde(skip)]
    pub config_file: Option<(PathBuf, String)>,
    /// The MCP servers' names (never their env or headers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<String>,
}

impl Invocation {
    /// The prompt goes on stdin, which is then closed.
    pub fn over_stdin(program: &str, args: Vec<String>, req: &Request<'_>) -> Invocation {
        Invocation {
            stdin: Some(req.prompt.to_string()),
            ..Invocation::over_argv(program, args, req)
        }
    }

    /// The prompt is in `args`; stdin is `/dev/null`.
    pub fn over_argv(program: &str, args: Vec<String>, req: &Request<'_>) -> Invocation {
        Invocation {
            program: program.to_string(),
            args,
            stdin: None,
            cwd: req.cwd.to_path_buf(),
            prompt_file: None,
            prompt_file_contents: None,
            env: Vec::new(),
            warnings: Vec::new(),
            policy: tool_policy::PolicyStatus::OFF,
            config_file: None,
            mcp: Vec::new(),
        }
    }
}

/// How a run without a better error message ended: `codex exited with status 2`.
pub fn exit_text(engine: EngineId, code: Option<i32>) -> String {
    match code {
        Some(c) => format!("{engine} exited with status {c}"),
        None => format!("{engine} was killed"),
    }
}

/// What a finished run amounts to (read off the projection by `frames::Tracker`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub session_id: Option<String>,
    /// The final answer text (the summary is extracted from it): its last
    /// [`crate::ground::text::ANSWER_MAX`] bytes.
    pub answer: Option<String>,
    /// Bytes of the answer before those, kept only in the raw log.
    #[serde(skip)]
    pub answer_cut: u64,
    pub failed: bool,
    /// Why it failed, in the engine's words.
    pub error: Option<String>,
    pub usage: Option<Value>,
}

/// The per-engine contract.
pub trait Engine: Sync {
    fn spec(&self) -> &'static Spec;

    /// Builds the exact argv/stdin for a fresh run or an exact resume, after
    /// the checks every engine shares ([`check_request`]).
    /// The read-only and tool policy's status and warnings are added here
    /// (the argv part is placed by each builder: [`Request::policy_args`]).
    fn build(&self, req: &Request<'_>) -> Result<Invocation> {
        check_request(self.spec(), req)?;
        let applied = req.applied_policy(self.spec().id);
        tool_policy::require(self.spec().id, req.policy, &applied)?;
        let mcp = req.applied_mcp(self.spec().id).transpose()?;
        let mut inv = self.invocation(req)?;
        if let (Some(m), Some(servers)) = (mcp, req.mcp) {
            inv.env.extend(m.env);
            inv.config_file = m.file;
            inv.mcp = servers.names();
        }
        inv.policy = applied.status;
        inv.warnings.extend(applied.warnings);
        Ok(inv)
    }

    /// The engine's own argv builder (the request is already checked).
    fn invocation(&self, req: &Request<'_>) -> Result<Invocation>;

    /// True when `id` has the shape of this engine's native session ids.
    fn valid_session_id(&self, id: &str) -> bool {
        self.spec().session_ids.matches(id)
    }

    /// Whether `--session ID` can resume exactly that native session.
    fn exact_resume(&self, _version: Option<&Version>) -> bool {
        self.spec().session_ids != SessionIds::None
    }

    /// Whether vf runs this engine (with a warning) when its `--version`
    /// cannot be read. `vf doctor` then reports an unreadable version as a
    /// warning instead of a failure.
    fn tolerates_unreadable_version(&self) -> bool {
        false
    }

    /// The output transport for a given installed version (defaults to the spec's).
    fn output_transport(&self, _version: Option<&Version>) -> OutputTransport {
        self.spec().output_transport
    }

    /// Whose frame manifest reads the output, and in which transport: the
    /// engine's own, unless a command engine's unit names another family.
    fn frames(
        &self,
        _command: Option<&EngineCommand>,
        version: Option<&Version>,
    ) -> (EngineId, OutputTransport) {
        (self.spec().id, self.output_transport(version))
    }

    /// A better failure reason for a known last line of the CLI's stderr
    /// (policy only this engine knows, e.g. claude's refusal as root).
    fn explain_stderr(&self, _line: &str) -> Option<&'static str> {
        None
    }

    /// The engine's own spending cap for `vf dispatch --max-cost` (claude's
    /// `--max-budget-usd`); `None`: the engine has none, vf refuses the flag.
    fn max_cost_args(&self, _usd: f64) -> Option<Vec<String>> {
        None
    }

    /// The engine is an ACP agent: vf runs a protocol session on its stdio
    /// (`crate::engine::acp`) instead of reading its output as frames.
    fn speaks_acp(&self) -> bool {
        false
    }

    /// vf runs the program the invocation names, not a binary found as
    /// `Spec::binary` (the command engines, the recorded engine).
    fn own_program(&self) -> bool {
        self.spec().command.is_some()
    }

    /// The `engineVersion` of an engine with no binary to ask (the
    /// recorded engine names its capture).
    fn fixed_version(&self) -> Option<&'static str> {
        None
    }

    /// The known agents of a command engine (`--engine KIND:NAME`).
    fn presets(&self) -> &'static [Preset] {
        &[]
    }
}

/// Shared checks every `build` applies before engine-specific work.
pub fn check_request(spec: &Spec, req: &Request<'_>) -> Result<()> {
    let engine = spec.id.engine();
    if let Some(limit) = spec.prompt_limit_bytes
        && req.prompt.len() >= limit
    {
        // Exit 3 (not ready), as error.rs documents for a prompt over the limit.
        return Err(VfError::not_ready(format!(
            "{}: the prompt is {} bytes of UTF-8; {} accepts prompts under {} bytes (shorten it or use another engine)",
            spec.id,
            req.prompt.len(),
            spec.id,
            limit
        )));
    }
    if let Some(id) = req.session {
        if !engine.exact_resume(req.version) {
            return Err(VfError::usage(format!(
                "{}: exact resume by session id is not supported for this engine",
                spec.id
            )));
        }
        if !engine.valid_session_id(id) {
            return Err(VfError::usage(format!(
                "{}: {:?} is not a valid {} session id",
                spec.id, id, spec.id
            )));
        }
    }
    if let (Some(src), None) = (spec.command, req.command) {
        return Err(VfError::usage(format!(
            "{}: no command to run: give {} \"CMD\", set {} or the plan key `{}`",
            spec.id, src.flag, src.env, src.plan_key
        )));
    }
    tool_policy::check(req.policy, req.skip_permissions)?;
    let kinds: Vec<AttachmentKind> = req.attachments.iter().map(|a| a.kind).collect();
    check_attachment_kinds(spec.id, &kinds)?;
    options::check(spec, req.options)
}

/// Canonical UUID text: 8-4-4-4-12 hex digits.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        assert!(is_uuid("01a229e6-b739-7472-9ac7-c8fe37200f9b"));
        assert!(!is_uuid("01a229e6-b739-7472-9ac7-c8fe37200f9"));
        assert!(!is_uuid("--dangerously-skip-permissions"));
        assert!(!is_uuid("../x"));
        assert!(!is_uuid("01a229e6-b739-7472-9ac7-c8fe37200f9g"));
        assert!(!is_uuid(" 1a229e6-b739-7472-9ac7-c8fe37200f9b"));
    }

    #[test]
    fn engine_ids_round_trip() {
        for e in EngineId::every() {
            assert_eq!(EngineId::parse(e.as_str()), Some(e));
            assert_eq!(e.engine().spec().id, e);
        }
        assert_eq!(EngineId::parse("Claude"), None);
    }
}
