//! A review round: the reviewer runs read-only as a nested unit in the
//! author's workspace at the author's result, and answers with a verdict
//! checked against the built-in schema; a verdict that does not parse or
//! validate is asked for once more, then the round fails.

use crate::engine::EventSink;
use crate::ground::Result;
use crate::unit::marker::Marker;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome, Verdict};

use super::drive::Driver;
use super::nested::{self, Nested};

impl Driver {
    /// Review round `n` of `of` (`again`: the one a crash interrupted).
    pub(super) async fn review(
        &mut self,
        m: &Marker,
        (n, of): (u32, u32),
        again: bool,
        sink: &mut dyn EventSink,
    ) -> Result<()> {
        let Some(rv) = self.spec.loops.review.clone() else {
            return Ok(());
        };
        let mut rounds = m.rounds.clone();
        // Named after the author's attempt it reviews: unique across loops
        // (a re-run's loop starts at round 1 again); a continued round keeps its own.
        let recorded = rounds.last().and_then(|r| r.unit.clone());
        let recorded = recorded.filter(|n| crate::ground::names::check("unit name", n).is_ok());
        let name = match (again, recorded) {
            (true, Some(name)) => name,
            _ => format!("review-{}", m.attempts),
        };
        if !again {
            let mut round = Round::start(RoundKind::Review, (n, of), rv.engine);
            (round.unit, round.model) = (Some(name.clone()), rv.model.clone());
            rounds.push(round);
        }
        self.save(rounds.clone(), sink).await?;
        let unit = self.hold.unit();
        crate::ground::offload::run_vf("making the rounds' folder", move || {
            unit.make_rounds_dir_sync().map(drop)
        })
        .await?;
        // A reviewer killed before its session was known starts again whole.
        let again = again && super::nested::session_of(&self.spec, &name, rv.engine).is_some();
        let prompt = match again {
            true => super::prompts::continue_round(RoundKind::Review),
            false => self.review_prompt(m, rv.prompt.as_deref()).await,
        };
        let cwd = m
            .workspace
            .as_ref()
            .map_or(self.spec.cwd.clone(), |w| w.path.clone());
        let ask = |prompt: String, resume: bool| Nested {
            parent: &self.spec,
            name: name.clone(),
            engine: rv.engine,
            model: rv.model.clone(),
            prompt,
            read_only: true,
            cwd: cwd.clone(),
            resume,
        };
        let first = nested::run(ask(prompt, again), sink).await;
        let (mut verdict, mut runs) = (judge(&first), vec![first]);
        if let Err(why) = &verdict
            && runs[0].as_ref().is_ok_and(|r| r.session_id.is_some())
        {
            let again = super::prompts::invalid_verdict(why);
            let second = nested::run(ask(again, true), sink).await;
            verdict = judge(&second);
            runs.push(second);
        }
        for r in runs.iter().flatten() {
            let said = r
                .warnings
                .iter()
                .map(|w| format!("reviewer ({}): {w}", rv.engine));
            self.warnings.extend(said);
        }
        let mut round = rounds.pop().expect("the review round");
        end_review(&mut round, &runs, verdict);
        self.end_round(round, sink).await
    }

    /// The reviewer's prompt: the author's task, summary and diff.
    async fn review_prompt(&self, m: &Marker, extra: Option<&str>) -> String {
        let task = self
            .hold
            .dir()
            .load_task()
            .unwrap_or_else(|| self.spec.prompt.clone());
        let ws = m.workspace.clone();
        let git_dir = self
            .spec
            .steps
            .workspace
            .as_ref()
            .and_then(|w| w.git_dir.clone());
        let cwd = self.spec.cwd.clone();
        let diff = crate::ground::offload::run(move || match ws {
            Some(ws) => crate::workspace::diff::of_worktree(&ws, git_dir.as_deref()).map(Some),
            None => crate::workspace::diff::of_directory(&cwd),
        })
        .await;
        let (text, note) = match diff {
            Ok(Ok(Some(d))) => {
                let (text, cut) = super::prompts::cap_diff(&d.text);
                let mut note = vec![d.what];
                note.extend(cut);
                if d.past_read_max {
                    note.push(format!(
                        "the diff is larger than {} MiB",
                        crate::workspace::diff::READ_MAX >> 20
                    ));
                }
                (text, Some(note.join("; ")))
            }
            Ok(Ok(None)) => (
                String::new(),
                Some("the directory is not a git work tree: no diff".into()),
            ),
            Ok(Err(e)) => (String::new(), Some(format!("no diff: {e}"))),
            Err(e) => (String::new(), Some(format!("no diff: {e}"))),
        };
        let task = super::drive::redacted(&task, &self.spec.redact);
        super::prompts::review(&task, m.summary.as_ref(), &text, note.as_deref(), extra)
    }
}

/// The verdict of a reviewer's run, or why there is none.
fn judge(run: &Result<super::super::DispatchResult>) -> std::result::Result<Verdict, String> {
    let r = run
        .as_ref()
        .map_err(|e| format!("the reviewer could not run: {e}"))?;
    if r.state != crate::unit::UnitState::Done && r.summary.is_none() {
        let why = r.error.clone().unwrap_or_else(|| "it failed".into());
        return Err(format!(
            "the reviewer failed ({}): {why}",
            r.reason.map_or("?", |x| x.as_str())
        ));
    }
    super::review_verdict::parse(r.summary.as_ref(), r.answer.as_deref())
}

/// A review round's end: its runs' session and usage, its verdict or error.
fn end_review(
    round: &mut Round,
    runs: &[Result<super::super::DispatchResult>],
    verdict: std::result::Result<Verdict, String>,
) {
    let ok: Vec<_> = runs.iter().filter_map(|r| r.as_ref().ok()).collect();
    round.session_id = ok.iter().rev().find_map(|r| r.session_id.clone());
    round.usage = crate::engine::usage::total(ok.iter().filter_map(|r| r.usage.as_ref()));
    round.finished_at = Some(crate::ground::fsutil::now_rfc3339());
    match verdict {
        Ok(v) => (round.outcome, round.verdict) = (RoundOutcome::Done, Some(v)),
        Err(why) => {
            round.outcome = RoundOutcome::Failed;
            round.reason = Some(crate::ground::Reason::Review);
            round.error = Some(format!("the reviewer's verdict is not valid: {why}"));
        }
    }
}
