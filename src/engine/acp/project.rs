//! ACP wire lines in, `ConversationEvent`s with `rawRange`s out (docs/ACP.md,
//! "Projection"). Pure: the live session and a replay of its raw log (or a
//! capture) drive the same [`Projector`] with the same lines.

use std::collections::HashMap;

use serde_json::Value;

use super::outcome::{self, Outcome};
use super::usage::UsageSeen;
use super::wire::{Dir, Entry};
use crate::engine::frames::{ConversationEvent, Level, RawRange, ToolCall};
use crate::ground::text::{ANSWER_MAX, Tail, cut, one_line};

/// `sessionUpdate` kinds known to carry nothing worth a row.
const QUIET_UPDATES: &[&str] = &[
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
];

/// Longest text kept in a detail or summary.
const DETAIL_MAX: usize = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Agent,
    User,
    Thought,
}

/// Message chunks being merged.
struct Pending {
    role: Role,
    /// Agent text of a replayed turn (never merged with the new answer).
    replayed: bool,
    text: String,
    range: RawRange,
}

/// A tool burst being built: calls in order of first sight, by id.
struct Burst {
    tools: Vec<(String, ToolCall)>,
    range: RawRange,
}

/// What an outgoing request or an incoming one was, by JSON-RPC id.
#[derive(Clone)]
struct Asked {
    method: String,
    params: Value,
}

pub struct Projector {
    out_requests: HashMap<String, Asked>,
    in_requests: HashMap<String, Asked>,
    pending: Option<Pending>,
    burst: Option<Burst>,
    /// The prompt went out: chunks from here on are the turn's, not history
    /// replayed by `session/load`.
    prompting: bool,
    /// The agent's text since the turn's last tool call (its last
    /// [`ANSWER_MAX`] bytes: the rest is only in the raw log).
    answer: Tail,
    /// History replayed during the turn (an agent may replay `session/load`'s
    /// history after vf's prompt): the user text of a replayed message since
    /// the last agent chunk. The first agent chunk after it is that message's
    /// replayed answer (an agent replays a stored message as one chunk), so
    /// it is no answer, whatever bookkeeping frames come between.
    replayed_user: Option<String>,
    /// The text of the prompt sent: a user chunk that only echoes it starts
    /// no replay.
    prompt_text: String,
    /// The unit's session (asked for by `session/load`, named by
    /// `session/new`'s result): updates of another session are drift.
    session: Option<String>,
    /// Usage the turn's session updates reported.
    usage: UsageSeen,
    pub(super) outcome: Outcome,
}

impl Default for Projector {
    fn default() -> Self {
        Self::new()
    }
}

fn id_key(v: Option<&Value>) -> Option<String> {
    v.filter(|v| v.is_string() || v.is_number())
        .map(Value::to_string)
}

fn range(line: u64) -> RawRange {
    RawRange {
        start: line,
        end: line,
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Projector {
    pub fn new() -> Projector {
        Projector {
            out_requests: HashMap::new(),
            in_requests: HashMap::new(),
            pending: None,
            burst: None,
            prompting: false,
            answer: Tail::new(ANSWER_MAX),
            replayed_user: None,
            prompt_text: String::new(),
            session: None,
            usage: UsageSeen::default(),
            outcome: Outcome::default(),
        }
    }

    /// The outcome so far (final once [`Projector::finish`] ran).
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Projects one wire line, the `line`-th of the raw log.
    pub fn push(&mut self, dir: Dir, entry: &Entry, line: u64) -> Vec<ConversationEvent> {
        let mut out = Vec::new();
        match entry {
            Entry::Msg(v) if v.is_object() => match dir {
                Dir::Out => self.outgoing(v, line, &mut out),
                Dir::In => self.incoming(v, line, &mut out),
            },
            Entry::Msg(_) => out.push(warning("Not a JSON-RPC message", None, line)),
            Entry::Text(t) => {
                self.outcome.garbage.get_or_insert_with(|| one_line(t, 80));
                let detail = cut(t, DETAIL_MAX).to_string();
                out.push(warning("Non-JSON line from the agent", Some(detail), line));
            }
            Entry::Oversized(n) => {
                let detail = format!("{n} bytes skipped (over the line cap)");
                out.push(warning("Oversized line from the agent", Some(detail), line));
            }
        }
        out
    }

    /// Flushes what is still merging (end of the stream).
    pub fn finish(&mut self) -> Vec<ConversationEvent> {
        let mut out = Vec::new();
        self.flush(&mut out, false);
        out
    }

    fn flush(&mut self, out: &mut Vec<ConversationEvent>, turn_end: bool) {
        self.flush_text(out, turn_end);
        if let Some(b) = self.burst.take() {
            out.push(ConversationEvent::ToolBurst {
                tools: b.tools.into_iter().map(|(_, t)| t).collect(),
                raw_range: b.range,
            });
        }
    }

    fn flush_text(&mut self, out: &mut Vec<ConversationEvent>, turn_end: bool) {
        let Some(p) = self.pending.take() else {
            return;
        };
        out.push(match p.role {
            Role::Agent => ConversationEvent::TaskAgent {
                text: p.text,
                raw_range: p.range,
                is_final: turn_end && self.burst.is_none() && !p.replayed,
            },
            Role::User => ConversationEvent::User {
                text: p.text,
                raw_range: p.range,
            },
            Role::Thought => {
                ConversationEvent::status(Level::Info, "Reasoning", Some(p.text), p.range)
            }
        });
    }

    // ------------------------------------------------------------ vf -> agent

    fn outgoing(&mut self, v: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let id = id_key(v.get("id"));
        match (str_at(v, "method"), id) {
            (Some(method), Some(id)) => {
                let params = v.get("params").cloned().unwrap_or(Value::Null);
                if method == "session/prompt" {
                    self.flush(out, false);
                    self.prompting = true;
                    self.answer.clear();
                    self.replayed_user = None;
                    self.usage = UsageSeen::default();
                    self.prompt_text = prompt_text(&params);
                }
                if matches!(method, "session/prompt" | "session/load") {
                    let id = str_at(&params, "sessionId").map(str::to_string);
                    self.session = id.or(self.session.take());
                }
                let method = method.to_string();
                self.out_requests.insert(id, Asked { method, params });
            }
            (Some("session/cancel"), None) => {
                self.flush(out, false);
                self.outcome.cancel_sent = true;
                out.push(warning("Cancel requested (session/cancel)", None, line));
            }
            (None, Some(id)) => self.answered(&id, v, line, out),
            _ => {}
        }
    }

    /// vf's response to a request of the agent.
    fn answered(&mut self, id: &str, v: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let Some(asked) = self.in_requests.remove(id) else {
            return;
        };
        self.flush_text(out, false);
        if asked.method == "session/request_permission" {
            // A tool was asked for: what came before is no answer.
            self.answer.clear();
            out.push(permission_row(&asked.params, v.get("result"), line));
            return;
        }
        let detail = format!("{}: not implemented by vf (method not found)", asked.method);
        out.push(warning("Agent request refused", Some(detail), line));
    }

    // ------------------------------------------------------------ agent -> vf

    fn incoming(&mut self, v: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let id = id_key(v.get("id"));
        match (str_at(v, "method"), id) {
            (Some("session/update"), None) => self.update(v, line, out),
            (Some(method), Some(id)) => {
                let params = v.get("params").cloned().unwrap_or(Value::Null);
                let method = method.to_string();
                self.in_requests.insert(id, Asked { method, params });
            }
            (Some(method), None) => out.push(self.unknown(method, line)),
            (None, Some(id)) => self.response(&id, v, line, out),
            (None, None) => out.push(warning("Not a JSON-RPC message", None, line)),
        }
    }

    fn unknown(&self, kind: &str, line: u64) -> ConversationEvent {
        let kind: String = kind.chars().filter(|c| !c.is_control()).take(64).collect();
        let (cli, version) = match &self.outcome.agent {
            Some(a) => (a.name.clone(), a.version.clone()),
            None => ("acp".to_string(), "unknown".to_string()),
        };
        ConversationEvent::UnknownFrame {
            message: format!("Unknown frame (kind {kind}, cli {cli} v{version})"),
            frame_kind: kind,
            cli,
            cli_version: version,
            transport: "acp".to_string(),
            raw_range: range(line),
        }
    }

    fn update(&mut self, v: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let u = v.pointer("/params/update").unwrap_or(&Value::Null);
        let kind = str_at(u, "sessionUpdate").unwrap_or("");
        let sid = v.pointer("/params/sessionId");
        if let Some(mine) = &self.session
            && sid.and_then(Value::as_str) != Some(mine.as_str())
        {
            // Another session's update: drift, never this unit's answer.
            out.push(self.unknown("session/update (another session)", line));
            return;
        }
        match kind {
            "agent_message_chunk" => self.chunk(Role::Agent, u, line, out),
            "user_message_chunk" => self.chunk(Role::User, u, line, out),
            "agent_thought_chunk" => self.chunk(Role::Thought, u, line, out),
            "tool_call" | "tool_call_update" => {
                self.replayed_user = None;
                self.tool(u, line, out);
            }
            "plan" => {
                self.replayed_user = None;
                self.flush(out, false);
                let rows =
                    ConversationEvent::status(Level::Info, "Plan", plan_text(u), range(line));
                out.push(rows);
            }
            // Known bookkeeping ends a run of chunks (the contract merges
            // deltas until the next frame that is no delta).
            k if QUIET_UPDATES.contains(&k) => self.flush_text(out, false),
            k => out.push(self.unknown(&format!("session/update/{k}"), line)),
        }
        if self.prompting && self.replayed_user.is_none() {
            self.usage.update(v.get("params").unwrap_or(&Value::Null));
        }
    }

    fn chunk(&mut self, role: Role, u: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let text = content_text(u.get("content").unwrap_or(&Value::Null));
        let replayed = role == Role::Agent && self.prompting && self.replay_answer();
        if self.burst.is_some() {
            self.flush(out, false);
        }
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.role != role || p.replayed != replayed)
        {
            self.flush_text(out, false);
        }
        if role == Role::User && self.prompting {
            // A replayed message: what the agent said before it is no answer.
            self.replayed_user.get_or_insert_default().push_str(&text);
            self.answer.clear();
        }
        if role == Role::Agent && self.prompting && !replayed {
            self.answer.push(&text);
        }
        let p = self.pending.get_or_insert_with(|| Pending {
            role,
            replayed,
            text: String::new(),
            range: range(line),
        });
        if p.text.len() < DETAIL_MAX {
            p.text.push_str(cut(&text, DETAIL_MAX - p.text.len()));
        }
        p.range.end = line;
    }

    /// Whether an agent chunk of the turn is the replayed answer to a
    /// replayed user message (consumed: only its first chunk is). A user
    /// chunk that only echoes the prompt just sent replays nothing.
    fn replay_answer(&mut self) -> bool {
        match self.replayed_user.take() {
            Some(user) => user.trim() != self.prompt_text.trim(),
            None => false,
        }
    }

    fn tool(&mut self, u: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        self.flush_text(out, false);
        self.answer.clear();
        let id = str_at(u, "toolCallId").unwrap_or("").to_string();
        let b = self.burst.get_or_insert_with(|| Burst {
            tools: Vec::new(),
            range: range(line),
        });
        b.range.end = line;
        let at = match b.tools.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                b.tools.push((id, new_tool()));
                b.tools.len() - 1
            }
        };
        update_tool(&mut b.tools[at].1, u);
    }

    /// The agent's response to one of vf's requests.
    fn response(&mut self, id: &str, v: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        let Some(asked) = self.out_requests.remove(id) else {
            out.push(warning("Response to no request of vf", None, line));
            return;
        };
        if let Some(wrong) = malformed(v) {
            self.flush(out, false);
            let detail = format!("{}: {wrong}", asked.method);
            self.outcome.fault.get_or_insert(detail.clone());
            let row = ConversationEvent::status(
                Level::Error,
                "Malformed response",
                Some(detail),
                range(line),
            );
            out.push(row);
            return;
        }
        if let Some(err) = v.get("error") {
            self.flush(out, false);
            let msg = str_at(err, "message").unwrap_or("(no message)");
            let detail = format!("{}: {}", asked.method, one_line(msg, 2000));
            self.outcome.error.get_or_insert(detail.clone());
            self.outcome
                .failed_method
                .get_or_insert(asked.method.clone());
            out.push(ConversationEvent::status(
                Level::Error,
                "Request failed",
                Some(detail),
                range(line),
            ));
            return;
        }
        let result = v.get("result").unwrap_or(&Value::Null);
        match asked.method.as_str() {
            "initialize" => out.push(self.initialized(result, line)),
            "session/new" | "session/load" => self.session(&asked, result, line, out),
            "session/prompt" => self.turn_end(result, line, out),
            _ => {}
        }
    }

    fn initialized(&mut self, result: &Value, line: u64) -> ConversationEvent {
        let agent = outcome::AgentFacts::from_initialize(result);
        let detail = agent.describe();
        self.outcome.agent = Some(agent);
        ConversationEvent::status(Level::Info, "ACP agent", Some(detail), range(line))
    }

    fn session(
        &mut self,
        asked: &Asked,
        result: &Value,
        line: u64,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.flush(out, false);
        let loaded = asked.method == "session/load";
        // session/load answers without the id: it is the one vf asked for.
        let field = if loaded {
            asked.params.get("sessionId")
        } else {
            result.get("sessionId")
        };
        let id = field.and_then(Value::as_str);
        let label = if loaded {
            "Session loaded"
        } else {
            "Session started"
        };
        match id {
            Some(id) if outcome::valid_session_id(id) => {
                self.session = Some(id.to_string());
                self.outcome.session_id = Some(id.to_string());
                out.push(ConversationEvent::Status {
                    level: Level::Info,
                    label: label.to_string(),
                    detail: None,
                    session_id: Some(id.to_string()),
                    usage: None,
                    answer: None,
                    raw_range: range(line),
                });
            }
            other => {
                let detail = match (other, field) {
                    (Some(id), _) => one_line(id, 80),
                    (None, Some(f)) => format!("sessionId is {}, not a string", json_type(f)),
                    (None, None) => "no sessionId".to_string(),
                };
                self.outcome.bad_session = true;
                self.outcome.bad_session_detail = Some(detail.clone());
                let detail = Some(detail);
                out.push(ConversationEvent::status(
                    Level::Error,
                    "Invalid session id",
                    detail,
                    range(line),
                ));
            }
        }
    }

    fn turn_end(&mut self, result: &Value, line: u64, out: &mut Vec<ConversationEvent>) {
        self.flush(out, true);
        let stop = match result.get("stopReason") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            other => return self.bad_turn_end(result, other, line, out),
        };
        let (usage, cost_is_running) = self.usage.turn(result);
        self.outcome.cost_is_running = cost_is_running;
        let answer = (!self.answer.is_empty()).then(|| self.answer.as_str().to_string());
        self.outcome
            .turn_ended(&stop, usage.clone(), answer.clone());
        self.outcome.answer_cut = self.answer.dropped();
        let level = if stop == "end_turn" {
            Level::Info
        } else {
            Level::Error
        };
        out.push(ConversationEvent::Status {
            level,
            label: format!("Turn ended ({})", one_line(&stop, 40)),
            detail: None,
            session_id: None,
            usage: usage.and_then(|u| serde_json::to_value(u).ok()),
            answer,
            raw_range: range(line),
        });
    }

    /// A prompt result without a `stopReason` string: the turn failed, and
    /// the error says in one line what was wrong.
    fn bad_turn_end(
        &mut self,
        result: &Value,
        stop: Option<&Value>,
        line: u64,
        out: &mut Vec<ConversationEvent>,
    ) {
        let wrong = match stop {
            _ if !result.is_object() => {
                format!("the result is {}, not an object", json_type(result))
            }
            None => "the result has no stopReason".to_string(),
            Some(Value::String(_)) => "the result's stopReason is empty".to_string(),
            Some(v) => format!("the result's stopReason is {}, not a string", json_type(v)),
        };
        let detail = format!("session/prompt: {wrong}");
        self.outcome.error.get_or_insert(detail.clone());
        self.outcome
            .failed_method
            .get_or_insert("session/prompt".to_string());
        out.push(ConversationEvent::status(
            Level::Error,
            "Malformed response",
            Some(detail),
            range(line),
        ));
    }
}

/// The text blocks of a `session/prompt`'s params, joined.
fn prompt_text(params: &Value) -> String {
    let blocks = params.get("prompt").and_then(Value::as_array);
    blocks
        .into_iter()
        .flatten()
        .filter(|b| str_at(b, "type") == Some("text"))
        .filter_map(|b| str_at(b, "text"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What makes a response to one of vf's requests not JSON-RPC 2.0, if
/// anything: it must say `"jsonrpc": "2.0"` and hold exactly one of
/// `result` and `error`, the error an object.
fn malformed(v: &Value) -> Option<String> {
    let wrong = match (v.get("result"), v.get("error")) {
        _ if v.get("jsonrpc").is_none() => "the response has no \"jsonrpc\"".to_string(),
        _ if str_at(v, "jsonrpc") != Some("2.0") => format!(
            "the response says \"jsonrpc\": {}, not \"2.0\"",
            one_line(&v["jsonrpc"].to_string(), 40)
        ),
        (Some(_), Some(_)) => "the response has both a result and an error".to_string(),
        (None, None) => "the response has neither a result nor an error".to_string(),
        (None, Some(e)) if !e.is_object() => {
            format!("the error is {}, not an object", json_type(e))
        }
        _ => return None,
    };
    Some(wrong)
}

/// A JSON value's type, as an error names it (`a number`).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn warning(label: &str, detail: Option<String>, line: u64) -> ConversationEvent {
    ConversationEvent::status(Level::Warning, label, detail, range(line))
}

/// The text of a content block; other blocks are named, not shown.
fn content_text(c: &Value) -> String {
    match str_at(c, "type") {
        Some("text") => str_at(c, "text").unwrap_or("").to_string(),
        Some(t) => format!("[{}]", one_line(t, 32)),
        None => String::new(),
    }
}

fn new_tool() -> ToolCall {
    ToolCall {
        name: "other".to_string(),
        input_summary: String::new(),
        status: "pending".to_string(),
        output_summary: None,
        exit_code: None,
    }
}

fn update_tool(t: &mut ToolCall, u: &Value) {
    if let Some(k) = str_at(u, "kind") {
        t.name = one_line(k, 32);
    }
    let input = u
        .pointer("/rawInput/command")
        .and_then(Value::as_str)
        .or_else(|| str_at(u, "title"));
    if let Some(i) = input {
        t.input_summary = one_line(i, 200);
    }
    if let Some(s) = str_at(u, "status") {
        t.status = one_line(s, 32);
    }
    if let Some(items) = u.get("content").and_then(Value::as_array) {
        let text: Vec<String> = items
            .iter()
            .filter_map(|i| i.get("content"))
            .map(content_text)
            .filter(|s| !s.is_empty())
            .collect();
        if !text.is_empty() {
            t.output_summary = Some(one_line(&text.join("\n"), 200));
        }
    }
}

fn plan_text(u: &Value) -> Option<String> {
    let entries = u.get("entries")?.as_array()?;
    let lines: Vec<String> = entries
        .iter()
        .map(|e| {
            let status = str_at(e, "status").unwrap_or("pending");
            let content = str_at(e, "content").unwrap_or("");
            format!("[{}] {}", one_line(status, 16), one_line(content, 200))
        })
        .collect();
    Some(lines.join("\n"))
}

/// The row recording vf's answer to a permission request.
fn permission_row(params: &Value, result: Option<&Value>, line: u64) -> ConversationEvent {
    let tool = params.get("toolCall").unwrap_or(&Value::Null);
    let kind = str_at(tool, "kind").unwrap_or("other");
    let title = str_at(tool, "title").unwrap_or("");
    let chosen = result
        .and_then(|r| r.pointer("/outcome/optionId"))
        .and_then(Value::as_str);
    let option_kind = chosen.and_then(|id| {
        params.get("options")?.as_array()?.iter().find_map(|o| {
            (str_at(o, "optionId") == Some(id)).then(|| str_at(o, "kind").unwrap_or(""))
        })
    });
    let allowed = option_kind.is_some_and(|k| k.starts_with("allow"));
    let answer = match (chosen, option_kind) {
        (Some(id), Some(k)) => format!("{k} ({})", one_line(id, 64)),
        _ => "cancelled".to_string(),
    };
    let detail = format!("{} {}: {answer}", one_line(kind, 32), one_line(title, 200));
    let (level, label) = if allowed {
        (Level::Info, "Permission allowed")
    } else {
        (Level::Warning, "Permission rejected")
    };
    ConversationEvent::status(level, label, Some(detail), range(line))
}
