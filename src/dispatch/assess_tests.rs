//! The judge's table: no process, no file (but a schema to load).

use super::*;
use crate::sys::Sig;

/// An ACP session's failure, whether it never ended, the agent's version.
type Session = (Option<(Reason, String)>, bool, Option<String>);

/// One run's facts, owned; `facts()` lends them to the judge.
struct Run {
    engine: EngineId,
    exit_code: Option<i32>,
    stop: Option<Stop>,
    mismatch: Option<String>,
    resumed: Option<String>,
    outcome: Outcome,
    rate_limited: bool,
    budget_stopped: bool,
    retry_at: Option<String>,
    stderr: Vec<u8>,
    acp: Option<Session>,
    schema: Option<SummarySchema>,
    reported: Option<Usage>,
    running: Running,
    previous: Option<Usage>,
}

fn ok_run() -> Run {
    Run {
        engine: EngineId::Codex,
        exit_code: Some(0),
        stop: None,
        mismatch: None,
        resumed: None,
        outcome: Outcome {
            answer: Some("done\n```json\n{\"ok\": true}\n```".into()),
            ..Outcome::default()
        },
        rate_limited: false,
        budget_stopped: false,
        retry_at: None,
        stderr: Vec::new(),
        acp: None,
        schema: None,
        reported: None,
        running: Running::None,
        previous: None,
    }
}

fn failed_run(error: &str) -> Run {
    Run {
        exit_code: Some(1),
        outcome: Outcome {
            failed: true,
            error: Some(error.into()),
            ..Outcome::default()
        },
        ..ok_run()
    }
}

impl Run {
    fn facts(&self) -> Facts<'_> {
        Facts {
            engine: self.engine,
            exit_code: self.exit_code,
            stop: self.stop.as_ref(),
            session_mismatch: self.mismatch.as_deref(),
            resumed: self.resumed.as_deref(),
            stall_timeout: Some(Duration::from_millis(1500)),
            timeout: Some(Duration::from_secs(60)),
            outcome: &self.outcome,
            rate_limited: self.rate_limited,
            budget_stopped: self.budget_stopped,
            retry_at: self.retry_at.as_deref(),
            stderr_tail: &self.stderr,
            acp: self
                .acp
                .as_ref()
                .map(|(failure, unended, version)| AcpFacts {
                    failure: failure.as_ref(),
                    unended: *unended,
                    agent_version: version.as_deref(),
                }),
            summary_schema: self.schema.as_ref(),
            reported: self.reported.as_ref(),
            running: self.running,
            previous: self.previous.as_ref(),
        }
    }

    fn verdict(&self) -> (Option<Reason>, Option<String>) {
        let j = judge(&self.facts());
        (j.reason, j.error)
    }
}

fn failed(reason: Reason, error: &str) -> (Option<Reason>, Option<String>) {
    (Some(reason), Some(error.to_string()))
}

fn usage(tokens: u64) -> Usage {
    Usage {
        input_tokens: Some(tokens),
        ..Usage::default()
    }
}

#[test]
fn a_clean_run_is_done_with_its_summary() {
    let j = judge(&ok_run().facts());
    assert_eq!(
        j,
        Judged {
            reason: None,
            error: None,
            summary: Some(serde_json::json!({"ok": true})),
            summary_error: None,
            spent: Spent {
                usage: None,
                thread_usage: None,
                retry_at: None,
                engine_version: None,
            },
        }
    );
    assert_eq!(j.state(), UnitState::Done);
}

#[test]
fn every_stop_reason_and_its_words() {
    let stopped = |stop| Run {
        stop: Some(stop),
        exit_code: None,
        ..ok_run()
    };
    let table = [
        (
            stopped(Stop::Signal(Sig::Interrupt)),
            failed(Reason::Interrupted(Some(2)), "interrupted by SIGINT"),
        ),
        (
            stopped(Stop::Stalled),
            failed(Reason::Stalled, "stalled: no output for 1.5s"),
        ),
        (
            stopped(Stop::TimedOut),
            failed(Reason::Timeout, "timed out after 60s"),
        ),
        (
            stopped(Stop::Budget("the plan's budget of $1 was reached".into())),
            failed(
                Reason::Budget,
                "the plan's budget of $1 was reached; the engine was ended",
            ),
        ),
        (
            stopped(Stop::LogFailed("cannot write the raw log".into())),
            failed(
                Reason::State,
                "cannot write the raw log; the engine was ended",
            ),
        ),
    ];
    for (run, want) in table {
        assert_eq!(run.verdict(), want);
    }
}

#[test]
fn the_engines_own_failures() {
    let limited = Run {
        rate_limited: true,
        budget_stopped: true,
        retry_at: Some("2026-01-01T00:00:00Z".into()),
        ..failed_run("usage limit reached")
    };
    let budget = Run {
        budget_stopped: true,
        ..failed_run("budget exceeded")
    };
    let mismatch = Run {
        mismatch: Some("other".into()),
        resumed: Some("asked".into()),
        ..ok_run()
    };
    let table = [
        (failed_run("boom"), failed(Reason::Engine, "boom")),
        // A rate limit before a budget stop.
        (limited, failed(Reason::RateLimited, "usage limit reached")),
        (budget, failed(Reason::Budget, "budget exceeded")),
        (
            mismatch,
            failed(
                Reason::SessionMismatch,
                "resumed run reported session other, not the requested asked: the native session was not found",
            ),
        ),
    ];
    for (run, want) in table {
        assert_eq!(run.verdict(), want);
    }
}

#[test]
fn precedence_between_reasons() {
    // vf's stop before a session mismatch before the engine's failure.
    let all = Run {
        stop: Some(Stop::TimedOut),
        mismatch: Some("other".into()),
        rate_limited: true,
        ..failed_run("boom")
    };
    assert_eq!(
        all.verdict(),
        failed(Reason::Timeout, "timed out after 60s")
    );
    let no_stop = Run { stop: None, ..all };
    assert_eq!(no_stop.verdict().0, Some(Reason::SessionMismatch));
    // An ACP session's own failure replaces a mismatch and the engine's, not vf's stop.
    let acp = |stop| Run {
        stop,
        mismatch: Some("other".into()),
        acp: Some((
            Some((Reason::Refusal, "the agent refused".into())),
            false,
            None,
        )),
        ..failed_run("boom")
    };
    assert_eq!(
        acp(None).verdict(),
        failed(Reason::Refusal, "the agent refused")
    );
    assert_eq!(acp(Some(Stop::Stalled)).verdict().0, Some(Reason::Stalled));
    // A session that never ended, its agent gone with a failure: told by the exit.
    let gone = Run {
        engine: EngineId::Acp,
        exit_code: Some(127),
        stderr: b"agent: command not found\n".to_vec(),
        acp: Some((
            Some((Reason::Engine, "the session did not end".into())),
            true,
            None,
        )),
        ..ok_run()
    };
    assert_eq!(
        gone.verdict(),
        failed(
            Reason::Engine,
            "acp exited with status 127: agent: command not found"
        )
    );
    // Unended but exit 0: the session's own words.
    let quiet = Run {
        exit_code: Some(0),
        ..gone
    };
    assert_eq!(
        quiet.verdict(),
        failed(Reason::Engine, "the session did not end")
    );
}

#[test]
fn the_schema_judges_only_a_run_that_otherwise_succeeded() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("s.json");
    let schema = r#"{"type":"object","required":["files"]}"#;
    std::fs::write(&path, schema).unwrap();
    let load = || Some(SummarySchema::load(&path).unwrap());
    let bad = Run {
        schema: load(),
        ..ok_run()
    };
    let j = judge(&bad.facts());
    assert_eq!(
        (j.reason, j.summary.clone()),
        (Some(Reason::SummarySchema), None)
    );
    assert_eq!(
        j.error.as_deref(),
        j.summary_error
            .as_deref()
            .map(|e| crate::ground::text::cut(e, 300))
    );
    assert_eq!(j.state(), UnitState::Failed);
    // A failed run keeps its own reason and its (valid) summary.
    let failed = Run {
        schema: load(),
        outcome: Outcome {
            answer: ok_run().outcome.answer,
            ..failed_run("boom").outcome
        },
        ..failed_run("boom")
    };
    let j = judge(&failed.facts());
    assert_eq!(
        (j.reason, j.summary),
        (Some(Reason::Engine), Some(serde_json::json!({"ok": true})))
    );
    // An invalid fenced summary without a schema: done, with the summary's error.
    let invalid = Run {
        outcome: Outcome {
            answer: Some("```json\n{not json\n```".into()),
            ..Outcome::default()
        },
        ..ok_run()
    };
    let j = judge(&invalid.facts());
    assert_eq!((j.reason, j.summary.is_none()), (None, true));
    assert!(j.summary_error.is_some());
}

#[test]
fn usage_and_retry_at() {
    // A resume's figures less the session's total so far (a running total).
    let resumed = Run {
        resumed: Some("s".into()),
        reported: Some(usage(30)),
        running: Running::All,
        previous: Some(usage(10)),
        ..ok_run()
    };
    let spent = judge(&resumed.facts()).spent;
    assert_eq!(
        (spent.usage, spent.thread_usage),
        (Some(usage(20)), Some(usage(30)))
    );
    // A fresh run: the previous figures are not the session's.
    let fresh = Run {
        resumed: None,
        ..resumed
    };
    let spent = judge(&fresh.facts()).spent;
    assert_eq!((spent.usage, spent.thread_usage), (Some(usage(30)), None));
    // retryAt only with the reason rate_limited; the ACP agent's version.
    let limited = Run {
        rate_limited: true,
        retry_at: Some("2026-01-01T00:00:00Z".into()),
        acp: Some((None, false, Some("1.2.3".into()))),
        ..failed_run("slow down")
    };
    let spent = judge(&limited.facts()).spent;
    assert_eq!(spent.retry_at.as_deref(), Some("2026-01-01T00:00:00Z"));
    assert_eq!(spent.engine_version.as_deref(), Some("1.2.3"));
    let other = Run {
        rate_limited: false,
        ..limited
    };
    assert_eq!(judge(&other.facts()).spent.retry_at, None);
}

#[test]
fn steps_after_the_engine_override_its_outcome_but_not_retry_at() {
    let limited = Run {
        rate_limited: true,
        retry_at: Some("2026-01-01T00:00:00Z".into()),
        ..failed_run("slow down")
    };
    let j = judge(&limited.facts()).with_steps(Some((Reason::Policy, "a/b is denied".into())));
    assert_eq!(
        (j.reason, j.error.as_deref()),
        (Some(Reason::Policy), Some("a/b is denied"))
    );
    assert!(j.spent.retry_at.is_some());
    let f = j.finish(Some(1));
    assert_eq!(
        (f.state, f.exit_code, f.reason),
        (UnitState::Failed, Some(1), Some(Reason::Policy))
    );
    let ok = judge(&ok_run().facts()).with_steps(None);
    assert_eq!(ok.finish(Some(0)).state, UnitState::Done);
}

#[test]
fn every_engines_bare_exit_gets_its_last_stderr_line() {
    let root = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";
    for engine in [
        EngineId::Claude,
        EngineId::Codex,
        EngineId::Copilot,
        EngineId::Opencode,
        EngineId::Gemini,
        EngineId::Agy,
        EngineId::Bridge,
        EngineId::Acp,
    ] {
        let bare = crate::engine::exit_text(engine, Some(1));
        let run = Run {
            engine,
            stderr: format!("\x1b[31mwarming up\x1b[0m\n{root}\n\n").into_bytes(),
            ..failed_run(&bare)
        };
        let explained = match engine {
            EngineId::Claude => crate::engine::claude::explain_stderr(root)
                .unwrap()
                .to_string(),
            _ => root.to_string(),
        };
        assert_eq!(
            run.verdict(),
            failed(Reason::Engine, &format!("{bare}: {explained}"))
        );
        // The engine's own words are kept as they are; no stderr, the bare exit.
        let own = Run {
            engine,
            stderr: b"noise\n".to_vec(),
            ..failed_run("the model refused")
        };
        assert_eq!(own.verdict(), failed(Reason::Engine, "the model refused"));
        let silent = Run {
            engine,
            ..failed_run(&bare)
        };
        assert_eq!(silent.verdict(), failed(Reason::Engine, &bare));
    }
}
