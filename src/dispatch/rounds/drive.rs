//! The loop's driver: the author's attempt, then round after round as
//! [`super::next`] decides from the durable marker, under one hold of the
//! unit's lock; each round's start is durable before it runs and its end
//! before the next decision.

use std::time::Instant;

use crate::engine::usage::{Budget, Usage};
use crate::engine::{EventSink, RoundNote};
use crate::ground::{Reason, Result, VfError};
use crate::unit::marker::Marker;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome, Trigger};
use crate::unit::{UnitHold, UnitState, life};

use super::super::{DispatchResult, UnitSpec};
use super::next::{Next, next};

/// One unit's loop as it runs.
pub(super) struct Driver {
    pub spec: UnitSpec,
    pub hold: UnitHold,
    pub started: Instant,
    /// The author's attempt run by this process before any round (its
    /// usage is not in a round).
    pub first: Option<crate::engine::Usage>,
    /// What the rounds' own runs warned of (a reviewer's unenforced
    /// read-only, its engine's dropped options), for the unit's result.
    pub warnings: Vec<String>,
}

/// Runs `spec`'s unit with its loops, `hold` keeping its lock throughout.
pub(crate) async fn drive(
    spec: UnitSpec,
    hold: UnitHold,
    sink: &mut dyn EventSink,
) -> Result<DispatchResult> {
    let before = hold.unit().load_marker()?;
    let mut d = Driver {
        spec,
        hold,
        started: Instant::now(),
        first: None,
        warnings: Vec::new(),
    };
    let mut res = match before.filter(|m| m.loop_open) {
        // The author stands after an attempt: the loop goes on from there.
        Some(m) if matches!(m.state, UnitState::Done | UnitState::Failed) => {
            sink.warning(&format!(
                "unit {:?} continues its loop where it stood ({}); the prompt is not sent",
                m.unit,
                m.state.as_str()
            ));
            DispatchResult::of_marker(&d.spec, &m, d.started)
        }
        open => d.first_attempt(open.is_some(), sink).await?,
    };
    loop {
        let m = d.marker().await?;
        let step = match next(m.state, m.reason, &m.rounds, &d.spec.loops) {
            // A round would start: not once the budget is reached.
            step @ (Next::Fix { .. } | Next::Review { .. }) => match d.over_budget(&m) {
                Some(why) => Next::Fail(Reason::Budget, why),
                None => step,
            },
            step => step,
        };
        match step {
            Next::Close => return d.close_approved(res, &m).await,
            Next::Fail(reason, why) => return d.close(res, Some((reason, why)), None).await,
            Next::Fix { n, of, trigger } => res = d.fix(&m, (n, of), trigger, sink).await?,
            Next::Review { n, of, again } => d.review(&m, (n, of), again, sink).await?,
        }
    }
}

impl Driver {
    /// The author's attempt as the caller asked it (a fresh run, or the
    /// resume of one a crash interrupted, which ends a fix round it was in).
    async fn first_attempt(
        &mut self,
        open: bool,
        sink: &mut dyn EventSink,
    ) -> Result<DispatchResult> {
        if !open {
            let task = redacted(&self.spec.prompt, &self.spec.redact);
            let unit = self.hold.unit();
            crate::ground::offload::run_vf("keeping the loop's task", move || {
                unit.keep_task_sync(&task)
            })
            .await?;
        }
        let res = super::super::run_once(self.spec.clone(), &self.hold, sink).await?;
        let m = self.marker().await?;
        match m.rounds.last() {
            Some(r) if open && r.outcome == RoundOutcome::Running && r.kind == RoundKind::Fix => {
                let mut rounds = m.rounds.clone();
                self.end_fix(rounds.last_mut().expect("a last round"), &res, &m);
                self.save(rounds, sink).await?;
            }
            _ => self.first = res.usage.clone(),
        }
        Ok(res)
    }

    /// The unit's marker as it stands.
    pub(super) async fn marker(&self) -> Result<Marker> {
        let unit = self.hold.unit();
        crate::ground::offload::run_vf("reading the marker", move || {
            unit.load_marker()?
                .ok_or_else(|| VfError::state(format!("unit {:?} has no marker", unit.name())))
        })
        .await
    }

    /// Writes `rounds` into the marker; the latest round is told to `sink`.
    pub(super) async fn save(&self, rounds: Vec<Round>, sink: &mut dyn EventSink) -> Result<()> {
        let unit = self.hold.unit();
        let last = rounds.last().cloned();
        crate::ground::offload::run_vf("recording the round", move || {
            life::save_rounds(&unit, &rounds).map(drop)
        })
        .await?;
        if let Some(r) = last {
            sink.round(&note(&r));
        }
        Ok(())
    }

    /// Everything the unit spent: the first attempt, then each round.
    pub(super) fn spent(&self, m: &Marker) -> Option<Usage> {
        let all = self
            .first
            .iter()
            .chain(m.rounds.iter().filter_map(|r| r.usage.as_ref()));
        crate::engine::usage::total(all)
    }

    /// Why the next round may not start: the unit's own budget, or the
    /// plan's hard budget, reached.
    fn over_budget(&self, m: &Marker) -> Option<String> {
        let b = &self.spec.loops.budget;
        let budget = Budget {
            cost_usd: b.cost_usd,
            tokens: b.tokens,
            hard: false,
        };
        let plan = self
            .spec
            .budget_stop
            .as_ref()
            .and_then(|w| w.stop.borrow().clone());
        let why = plan.or_else(|| budget.reached(self.spent(m).as_ref()))?;
        Some(format!("{why}; no further round starts"))
    }

    /// A fix round: the author's session resumed with the failed check, or
    /// with the reviewer's comments.
    async fn fix(
        &mut self,
        m: &Marker,
        (n, of): (u32, u32),
        trigger: Trigger,
        sink: &mut dyn EventSink,
    ) -> Result<DispatchResult> {
        let prompt = match trigger {
            Trigger::Verify => self.verify_prompt(m, (n, of)),
            Trigger::Review => super::author::revise_prompt(m, (n, of)),
        };
        let mut rounds = m.rounds.clone();
        let mut round = Round::start(RoundKind::Fix, (n, of), m.engine);
        (round.trigger, round.attempt) = (Some(trigger), Some(m.attempts.saturating_add(1)));
        round.model = m.model.clone();
        rounds.push(round.clone());
        self.save(rounds, sink).await?;
        let res = super::author::resume((&self.spec, &self.hold), m, prompt, sink).await?;
        let after = self.marker().await?;
        self.end_fix(&mut round, &res, &after);
        self.end_round(round, sink).await?;
        Ok(res)
    }

    /// Writes `round`'s end in place of the latest round of the marker as
    /// it stands (the attempt between kept the record) and tells `sink`.
    pub(super) async fn end_round(&self, round: Round, sink: &mut dyn EventSink) -> Result<()> {
        let mut rounds = self.marker().await?.rounds;
        match rounds.last_mut() {
            Some(last) => *last = round,
            None => rounds.push(round),
        }
        self.save(rounds, sink).await
    }

    /// A fix round's end, from its attempt's result.
    fn end_fix(&self, round: &mut Round, res: &DispatchResult, m: &Marker) {
        round.outcome = outcome_of(res.state);
        (round.reason, round.error) = (res.reason, res.error.clone());
        round.session_id = res.session_id.clone();
        round.usage = res.usage.clone();
        round.attempt = Some(m.attempts);
        round.finished_at = Some(crate::ground::fsutil::now_rfc3339());
        round.verify = super::author::verify_check(&self.spec, res);
    }

    /// The prompt of a fix round after a failed `verify`: its command, its
    /// status and its output's last 8 KiB, private ranges redacted.
    fn verify_prompt(&self, m: &Marker, round: (u32, u32)) -> String {
        let command = self.spec.steps.verify.clone().unwrap_or_default();
        let tail = self
            .hold
            .dir()
            .step_log_tail(
                m.attempts,
                "verify",
                super::prompts::VERIFY_TAIL_BYTES as u64,
            )
            .unwrap_or_default();
        let text = redacted(&super::prompts::tail_8k(&tail), &self.spec.redact);
        let status = m
            .error
            .as_deref()
            .and_then(super::super::around::verify_status);
        super::prompts::fix_after_verify(&command, status, &text, round)
    }

    /// The loop's end as it stands: a unit its reviewer approved gets its
    /// branch pushed first (plan key `push`), which may still fail it.
    async fn close_approved(&self, res: DispatchResult, m: &Marker) -> Result<DispatchResult> {
        let (approved, ws) = (m.state == UnitState::Done, m.workspace.clone());
        let (Some(ws), true, Some(_)) = (ws, approved, &self.spec.loops.review) else {
            return self.close(res, None, None).await;
        };
        let unit = self.hold.unit();
        match super::super::around::approved_push(&self.spec, &unit, ws).await? {
            Ok(pushed) => self.close(res, None, pushed).await,
            Err(end) => self.close(res, Some(end), None).await,
        }
    }

    /// The loop's end: the final state written, the result made whole.
    async fn close(
        &self,
        res: DispatchResult,
        end: Option<(Reason, String)>,
        pushed: Option<crate::workspace::Workspace>,
    ) -> Result<DispatchResult> {
        let unit = self.hold.unit();
        let m = crate::ground::offload::run_vf("closing the loop", move || {
            life::close_loop(&unit, end, pushed)
        })
        .await?;
        let mut out = DispatchResult {
            state: m.state,
            reason: m.reason,
            error: m.error.clone(),
            usage: self.spent(&m),
            rounds: m.rounds.clone(),
            workspace: m.workspace.clone(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            attempt: m.attempts,
            ..res
        };
        for w in &self.warnings {
            if !out.warnings.contains(w) {
                out.warnings.push(w.clone());
            }
        }
        Ok(out)
    }
}

/// A round's outcome from its run's final state.
pub(super) fn outcome_of(state: UnitState) -> RoundOutcome {
    match state {
        UnitState::Done => RoundOutcome::Done,
        UnitState::Running | UnitState::Pending => RoundOutcome::Running,
        UnitState::Failed | UnitState::Blocked => RoundOutcome::Failed,
    }
}

/// The live output's note of `r` (started, or ended).
pub(super) fn note(r: &Round) -> RoundNote {
    let ended = match r.outcome {
        RoundOutcome::Running => None,
        _ => Some(match &r.verdict {
            Some(v) => match v.verdict {
                crate::unit::marker::rounds::VerdictKind::Approve => "approve".to_string(),
                crate::unit::marker::rounds::VerdictKind::Changes => "changes".to_string(),
            },
            None => match r.outcome {
                RoundOutcome::Done => "done".to_string(),
                _ => r
                    .reason
                    .map_or("failed".to_string(), |x| x.as_str().to_string()),
            },
        }),
    };
    RoundNote {
        kind: r.kind.as_str(),
        n: r.n,
        of: r.of,
        engine: r.engine,
        ended,
    }
}

/// `text` with every private block redacted as the engine's echo is (the
/// run's `Redactor`, line by line: a block's header and JSON line, written
/// out or escaped, and a header left from an earlier run).
pub(super) fn redacted(text: &str, blocks: &[String]) -> String {
    let r = super::super::redact::Redactor::with_secrets(blocks, &[]);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        match r.line(body.as_bytes()) {
            Some(clean) => out.push_str(&String::from_utf8_lossy(&clean)),
            None => out.push_str(body),
        }
        out.push_str(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redacted;

    const BLOCK: &str = "VF-PRIVATE-FILE-RANGES/1\n[{\"end\":2,\"file\":\"sec.txt\",\"start\":2,\"text\":\"PRIVATE-LINE-0123\\n\"}]";

    #[test]
    fn a_private_block_echoed_whole_or_in_part_is_redacted_and_the_rest_kept() {
        let text = format!(
            "task\n{BLOCK}\nverify said: {}\nend\n",
            BLOCK.split_once('\n').unwrap().1
        );
        let out = redacted(&text, &[BLOCK.to_string()]);
        assert!(!out.contains("PRIVATE-LINE-0123"), "{out}");
        assert!(!out.contains("VF-PRIVATE-FILE-RANGES"), "{out}");
        assert!(
            out.starts_with("task\n") && out.ends_with("\nend\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(
            redacted("nothing private\n", &[BLOCK.to_string()]),
            "nothing private\n"
        );
    }
}
