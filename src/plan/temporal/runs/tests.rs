use super::*;
use crate::engine::frames::{Level, RawRange};

/// A run's work that names session `s1`, then waits for its release (it
/// ends `Err(usage "released")`) or its cancel (`Err(not_ready "cancelled")`).
fn work(release: tokio::sync::oneshot::Receiver<()>) -> Work {
    Box::new(move |mut cancel, sink| {
        sink.event(&ConversationEvent::Status {
            level: Level::Info,
            label: "session".into(),
            detail: None,
            session_id: Some("s1".into()),
            usage: None,
            answer: None,
            raw_range: RawRange { start: 0, end: 0 },
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::select! {
                _ = cancel.wait_for(|c| *c) => Err(VfError::not_ready("cancelled")),
                _ = release => Err(VfError::usage("released")),
            }
        })
    })
}

fn key() -> Key {
    (PathBuf::from("/plan"), "u".to_string())
}

fn start(runs: &Arc<Runs>, ticket: u64) -> (Arc<Run>, tokio::sync::oneshot::Sender<()>) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let row = UnitReport::waiting("u", EngineId::Codex, None);
    let sink = BeatSink::new("h1", "u", EngineId::Codex, 1);
    let how = (EngineId::Codex, row, ticket);
    let run = runs.start(key(), how, sink, None, work(rx)).unwrap();
    (run.expect("no run of u yet"), tx)
}

fn ended(run: &Run) {
    let mut ends = run.ends();
    futures::executor::block_on(ends.wait_for(|e| *e)).unwrap();
}

fn message(o: Owned) -> String {
    match o {
        Owned::Ended(r) => match *r {
            Err(e) => e.to_string(),
            Ok(_) => "ok".into(),
        },
        Owned::TakenOver => "taken over".into(),
    }
}

#[test]
fn a_retry_attaches_to_the_run_it_finds_and_only_its_cancel_counts() {
    let runs = Arc::new(Runs::default());
    let (first, second) = (runs.ticket(), runs.ticket());
    let (run, release) = start(&runs, first);
    // The session id is there for whoever owns the run.
    let mut beats = run.beats();
    futures::executor::block_on(beats.wait_for(|b| b.session_id.is_some())).unwrap();
    assert_eq!(beats.borrow().host, "h1");
    // A second start of the unit is refused: it attaches instead.
    let (_tx, rx) = tokio::sync::oneshot::channel();
    let again = (
        EngineId::Codex,
        UnitReport::waiting("u", EngineId::Codex, None),
        second,
    );
    let sink = BeatSink::new("h1", "u", EngineId::Codex, 2);
    assert!(
        runs.start(key(), again, sink, None, work(rx))
            .unwrap()
            .is_none()
    );
    let Found::Attached(same) = runs.attach(&key(), EngineId::Codex, second) else {
        panic!("the live run is attached to");
    };
    assert!(Arc::ptr_eq(&run, &same));
    assert!((run.owned_by(second), run.owned_by(first)) == (true, false));
    // The first attempt (closed by the server) cannot end the engine now.
    run.cancel(first);
    release.send(()).unwrap();
    ended(&run);
    assert_eq!(message(run.outcome_for(first)), "taken over");
    assert_eq!(message(run.outcome_for(second)), "released");
    // Taken once, and the unit is free again.
    assert_eq!(message(run.outcome_for(second)), "taken over");
    assert!(runs.is_empty());
    assert!(matches!(
        runs.attach(&key(), EngineId::Codex, 3),
        Found::Nothing
    ));
}

#[test]
fn a_run_being_ended_is_waited_for_not_attached_to() {
    let runs = Arc::new(Runs::default());
    let first = runs.ticket();
    let (run, _release) = start(&runs, first);
    // Another engine's attempt waits for it too.
    assert!(matches!(
        runs.attach(&key(), EngineId::Claude, runs.ticket()),
        Found::Ending(_)
    ));
    run.cancel(first);
    let Found::Ending(ending) = runs.attach(&key(), EngineId::Codex, runs.ticket()) else {
        panic!("a cancelled run is not attached to");
    };
    ended(&ending);
    assert_eq!(message(run.outcome_for(first)), "cancelled");
    assert!(matches!(
        runs.attach(&key(), EngineId::Codex, runs.ticket()),
        Found::Nothing
    ));
}

#[test]
fn the_beat_keeps_the_session_id_and_the_recent_answers() {
    let mut sink = BeatSink::new("h1", "u", EngineId::Codex, 3);
    let mut beats = sink.beat.subscribe();
    for i in 0..20 {
        sink.event(&ConversationEvent::TaskAgent {
            text: format!("answer {i}"),
            raw_range: RawRange { start: 0, end: 0 },
            is_final: false,
        });
    }
    let b = beats.borrow_and_update().clone();
    assert_eq!(b.answers.len(), history::recent(&[0; 20]).len());
    assert_eq!(b.answers.last().unwrap().text, "answer 19");
    assert_eq!(b.answers[0].attempt, 3);
    assert_eq!(b.session_id, None);
    let status = |id: &str| ConversationEvent::Status {
        level: Level::Info,
        label: "session".into(),
        detail: None,
        session_id: Some(id.into()),
        usage: None,
        answer: None,
        raw_range: RawRange { start: 0, end: 0 },
    };
    sink.event(&status("s1"));
    assert!(beats.has_changed().unwrap());
    assert_eq!(beats.borrow_and_update().session_id.as_deref(), Some("s1"));
    // The same id again is no news (no extra heartbeat).
    sink.event(&status("s1"));
    assert!(!beats.has_changed().unwrap());
}
