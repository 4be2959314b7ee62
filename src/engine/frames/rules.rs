//! What a frame means: the manifest's rule for its kind, applied. Agent
//! text, tool bursts, lifecycle rows and unknown frames are emitted here.

use std::borrow::Cow;

use serde_json::Value;

use super::event::{ConversationEvent, Level, RawRange, ToolCall};
use super::fields::{
    at, cond, field, fill, first_text, id_of, nonempty, sanitize_kind, src, status_of,
    summarize_input, summarize_output,
};
use super::figures::{read_quota, read_retry_at, read_usage};
use super::manifest::{LifecycleSpec, Nested, Rule, ToolCallSpec, ToolResultSpec, lookup};
use super::projector::{Burst, MAX_BURST_CALLS, MAX_MESSAGE_BYTES, PendingText, Projector};
use super::tracker::Row;
use crate::ground::text::{ANSWER_MAX, Tail};

impl Projector {
    pub(super) fn frame(&mut self, v: Value, range: RawRange, out: &mut Vec<ConversationEvent>) {
        // The session id is read on every frame, known kind or not.
        match nonempty(field(&v, self.manifest.session)) {
            Some(id) => {
                if self.frame_session.as_deref() != Some(id) {
                    self.frame_session = Some(id.to_string());
                }
                self.tracker.saw_session(id, false);
            }
            None => self.frame_session = None,
        }
        let kind = self.kind_of(&v);
        if self.manifest.budget_stops.contains(&&*kind) {
            self.tracker.saw_budget_stop();
        }
        for rl in self.manifest.rate_limits.frames {
            if rl.kind == kind && cond(&rl.when, &v) {
                self.tracker.saw_rate_limit(read_retry_at(&v, rl.retry_at));
            }
        }
        for q in self.manifest.rate_limits.quota {
            if q.kind == kind
                && let Some(signal) = read_quota(q, &v)
            {
                self.tracker.saw_quota(signal);
            }
        }
        let rule = self.table.and_then(|t| lookup(t, &kind));
        match rule {
            Some(rule) => self.apply(rule, &v, &kind, range, out),
            None => self.unknown(&kind, range, out),
        }
    }

    pub(super) fn kind_of<'v>(&self, v: &'v Value) -> Cow<'v, str> {
        match v {
            Value::Object(_) => match at(v, self.manifest.kind).and_then(Value::as_str) {
                Some(t) => match self.manifest.subkinds.iter().find(|(k, _)| *k == t) {
                    Some((_, sub)) => Cow::Owned(format!(
                        "{t}/{}",
                        at(v, sub).and_then(Value::as_str).unwrap_or("(none)")
                    )),
                    None => Cow::Borrowed(t),
                },
                None => Cow::Borrowed("(untyped)"),
            },
            Value::Array(_) => Cow::Borrowed("(array)"),
            _ => Cow::Borrowed("(scalar)"),
        }
    }

    pub(super) fn unknown(
        &mut self,
        kind: &str,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.unknown += 1;
        let kind = sanitize_kind(kind);
        out.push(ConversationEvent::UnknownFrame {
            message: format!(
                "Unknown frame (kind {kind}, cli {} v{})",
                self.cli, self.cli_version
            ),
            frame_kind: kind,
            cli: self.cli.as_str().to_string(),
            cli_version: self.cli_version.clone(),
            transport: self.transport.as_str().to_string(),
            raw_range: range,
        });
    }

    pub(super) fn apply(
        &mut self,
        rule: &'static Rule,
        root: &Value,
        kind: &str,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        match rule {
            Rule::Quiet => {}
            Rule::AgentText { text } => {
                // A whole message is shown at once: live output must not wait
                // for the next frame to learn whether this one was final.
                if let Some(t) = nonempty(at(root, text)) {
                    self.flush_burst(out);
                    self.flush_text(out, false);
                    self.agent(t.to_string(), range, false, false, out);
                }
            }
            Rule::AgentDelta { text } => {
                if let Some(t) = nonempty(at(root, text)) {
                    self.tracker.answered();
                    self.delta(t, range, out);
                }
            }
            Rule::UserText { text } => {
                if let Some(t) = nonempty(at(root, text)) {
                    self.flush_burst(out);
                    self.flush_text(out, false);
                    out.push(ConversationEvent::User {
                        text: t.to_string(),
                        raw_range: range,
                    });
                }
            }
            Rule::ToolCall(spec) => self.tool_call(spec, root, range, out),
            Rule::ToolCallList { list, call } => {
                if let Some(items) = at(root, list).and_then(Value::as_array) {
                    for item in items {
                        self.tool_call(call, item, range, out);
                    }
                }
            }
            Rule::ToolResult(spec) => self.tool_result(spec, root, range, out),
            Rule::Status(s) => {
                let detail = fill(s.detail, root);
                if s.explains_failure {
                    self.tracker.note(detail.clone());
                }
                out.push(ConversationEvent::status(s.level, s.label, detail, range));
            }
            Rule::Lifecycle(spec) => self.lifecycle(spec, root, range, out),
            Rule::Truncated {
                detail,
                explains_failure,
            } => {
                let detail = fill(detail, root);
                if *explains_failure {
                    self.tracker.note(detail.clone());
                }
                // A cut stream is never a clean result: the run says so too.
                self.warnings
                    .push(match detail.as_deref().filter(|d| !d.is_empty()) {
                        Some(d) => format!("{}: its output was truncated: {d}", self.cli),
                        None => format!("{}: its output was truncated", self.cli),
                    });
                out.push(ConversationEvent::status(
                    Level::Warning,
                    "Output truncated",
                    detail,
                    range,
                ));
            }
            Rule::When {
                cond: c,
                then,
                otherwise,
            } => {
                let rule = if cond(c, root) { then } else { otherwise };
                self.apply(rule, root, kind, range, out);
            }
            Rule::Nested(n) => self.nested(n, root, kind, range, out),
            Rule::All(rules) => {
                for r in rules.iter() {
                    self.apply(r, root, kind, range, out);
                }
            }
        }
    }

    pub(super) fn nested(
        &mut self,
        n: &'static Nested,
        root: &Value,
        kind: &str,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        let Some(inner) = at(root, n.root) else {
            self.unknown(&format!("{kind}/(missing)"), range, out);
            return;
        };
        if !n.many {
            let sub = at(inner, n.key)
                .and_then(Value::as_str)
                .unwrap_or("(untyped)");
            match lookup(n.entries, sub) {
                Some(r) => self.apply(r, inner, kind, range, out),
                None => self.unknown(&format!("{kind}/{sub}"), range, out),
            }
            return;
        }
        match inner {
            Value::Array(items) => {
                // Each block is checked; one report per novel block kind.
                let mut reported: Vec<&str> = Vec::new();
                for item in items {
                    let sub = at(item, n.key)
                        .and_then(Value::as_str)
                        .unwrap_or("(untyped)");
                    match lookup(n.entries, sub) {
                        Some(r) => self.apply(r, item, kind, range, out),
                        None if !reported.contains(&sub) => {
                            reported.push(sub);
                            self.unknown(&format!("{kind}/{sub}"), range, out);
                        }
                        None => {}
                    }
                }
            }
            Value::String(_) if n.string_rule.is_some() => {
                self.apply(n.string_rule.unwrap(), inner, kind, range, out);
            }
            _ => self.unknown(&format!("{kind}/(untyped)"), range, out),
        }
    }

    pub(super) fn delta(&mut self, t: &str, range: RawRange, out: &mut Vec<ConversationEvent>) {
        self.flush_burst(out);
        if let Some(p) = &mut self.pending
            && p.delta
            && p.text.len() + t.len() <= MAX_MESSAGE_BYTES
        {
            p.text.push_str(t);
            p.range.end = range.end;
            return;
        }
        // A pending delta run that is full goes on in the next row.
        let continues = self.pending.as_ref().is_some_and(|p| p.delta);
        self.flush_text(out, false);
        self.pending = Some(PendingText {
            text: t.to_string(),
            range,
            delta: true,
            continues,
        });
    }

    /// A tool call or result closes any agent text: what came before it is
    /// narration, never the turn's answer. The model acted, so it answered.
    pub(super) fn end_narration(&mut self, out: &mut Vec<ConversationEvent>) {
        self.flush_text(out, false);
        self.last_agent = None;
        self.tracker.answered();
    }

    pub(super) fn tool_call(
        &mut self,
        spec: &ToolCallSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.end_narration(out);
        let id = id_of(field(root, spec.id));
        let name = src(spec.name, root);
        let input = summarize_input(field(root, spec.input));
        let burst = self.open_burst(range, out);
        if !id.is_empty()
            && let Some((_, call)) = burst.calls.iter_mut().rev().find(|(i, _)| *i == id)
        {
            if call.input_summary.is_empty() {
                call.input_summary = input;
            }
            return;
        }
        burst.calls.push((
            id,
            ToolCall {
                name,
                input_summary: input,
                status: "started".into(),
                output_summary: None,
                exit_code: None,
            },
        ));
    }

    pub(super) fn tool_result(
        &mut self,
        spec: &ToolResultSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        self.end_narration(out);
        let id = id_of(field(root, spec.id));
        let (status, failed) = status_of(&spec.status, root);
        if failed {
            self.tracker
                .tool_failed(first_text(root, &[spec.error, spec.output]));
        }
        let output = summarize_output(field(root, spec.output))
            .or_else(|| summarize_output(field(root, spec.error)));
        let exit = field(root, spec.exit).and_then(Value::as_i64);
        let burst = self.open_burst(range, out);
        let found = if id.is_empty() {
            None
        } else {
            burst.calls.iter_mut().rev().find(|(i, _)| *i == id)
        };
        match found {
            Some((_, call)) => {
                call.status = status;
                call.output_summary = output;
                call.exit_code = exit;
            }
            None => burst.calls.push((
                id,
                ToolCall {
                    name: src(spec.name, root),
                    input_summary: summarize_input(field(root, spec.input)),
                    status,
                    output_summary: output,
                    exit_code: exit,
                },
            )),
        }
    }

    pub(super) fn open_burst(
        &mut self,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) -> &mut Burst {
        if self
            .burst
            .as_ref()
            .is_some_and(|b| b.calls.len() >= MAX_BURST_CALLS)
        {
            self.flush_burst(out);
        }
        let burst = self.burst.get_or_insert_with(|| Burst {
            calls: Vec::new(),
            range,
        });
        burst.range.end = burst.range.end.max(range.end);
        burst
    }

    pub(super) fn lifecycle(
        &mut self,
        spec: &LifecycleSpec,
        root: &Value,
        range: RawRange,
        out: &mut Vec<ConversationEvent>,
    ) {
        if let Some(id) = nonempty(field(root, spec.session)) {
            self.frame_session = Some(id.to_string());
            self.tracker.saw_session(id, false);
        }
        let failed = spec.always_failed || spec.failed_if.is_some_and(|c| cond(&c, root));
        let answer = if spec.ends_turn {
            self.close_turn(spec, root, range, failed, out)
        } else {
            None
        };
        let detail = if failed {
            fill(spec.failed_detail, root)
        } else {
            None
        };
        let usage = (!spec.usage.is_empty()).then(|| field(root, spec.usage).cloned());
        if spec.ends_turn
            && let Some(id) = &self.frame_session
        {
            // A closing frame's session id is final (claude repeats it on `result`).
            self.tracker.saw_session(&id.clone(), true);
        }
        self.tracker.row(Row {
            failed,
            error: if failed {
                first_text(root, spec.error)
            } else {
                None
            },
            detail: detail.clone(),
            closes_turn: spec.ends_turn,
            answer: answer.clone(),
            cut_short: spec.cut_short_if.is_some_and(|c| cond(&c, root)),
            usage: usage.clone(),
            figures: spec
                .usage_figures
                .and_then(|u| read_usage(u, root).map(|f| (f, u.accumulate))),
        });
        out.push(ConversationEvent::Status {
            level: if failed { Level::Error } else { Level::Info },
            label: if failed {
                spec.failed_label
            } else {
                spec.label
            }
            .to_string(),
            detail,
            session_id: if spec.shows_session && self.shows_sessions {
                self.frame_session.clone()
            } else {
                None
            },
            usage: usage.flatten(),
            answer: answer.map(Tail::into_string),
            raw_range: range,
        });
    }

    /// A frame that ends a turn: flushes what is pending and returns the
    /// turn's final answer (none when the turn failed).
    fn close_turn(
        &mut self,
        spec: &LifecycleSpec,
        root: &Value,
        range: RawRange,
        failed: bool,
        out: &mut Vec<ConversationEvent>,
    ) -> Option<Tail> {
        self.flush_burst(out);
        if failed {
            self.flush_text(out, false);
            self.last_agent = None;
            return None;
        }
        match nonempty(field(root, spec.answer)) {
            // The closing frame names an answer not yet shown: show it now.
            Some(a)
                if self.pending.as_ref().is_none_or(|p| p.text != a)
                    && (self.pending.is_some()
                        || self.last_agent.as_ref().map(Tail::as_str) != Some(a)) =>
            {
                self.flush_text(out, false);
                self.agent(a.to_string(), range, true, false, out);
            }
            // Merged deltas still pending are the final answer.
            _ => self.flush_text(out, true),
        }
        self.last_agent.take()
    }

    pub(super) fn flush_text(&mut self, out: &mut Vec<ConversationEvent>, is_final: bool) {
        if let Some(p) = self.pending.take() {
            self.agent(p.text, p.range, is_final, p.continues, out);
        }
    }

    /// Shows an agent message; it is the turn's answer until something else
    /// is. A piece that `continues` the last message adds to its answer.
    fn agent(
        &mut self,
        text: String,
        range: RawRange,
        is_final: bool,
        continues: bool,
        out: &mut Vec<ConversationEvent>,
    ) {
        match &mut self.last_agent {
            Some(last) if continues => last.push(&text),
            _ => self.last_agent = Some(Tail::of(&text, ANSWER_MAX)),
        }
        if let Some(last) = &self.last_agent {
            self.tracker.agent_message(last);
        }
        out.push(ConversationEvent::TaskAgent {
            text,
            raw_range: range,
            is_final,
        });
    }

    pub(super) fn flush_burst(&mut self, out: &mut Vec<ConversationEvent>) {
        if let Some(b) = self.burst.take() {
            out.push(ConversationEvent::ToolBurst {
                tools: b.calls.into_iter().map(|(_, c)| c).collect(),
                raw_range: b.range,
            });
        }
    }
}
