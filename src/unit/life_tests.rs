use std::path::Path;
use std::time::Duration;

use super::*;
use crate::dispatch::UnitSpec;
use crate::engine::frames::{Level, RawRange};
use crate::unit::marker::UnitState::{self, *};

/// [`UnitLife::claim_under`] the unit's lock, taken here.
fn claim(spec: &UnitSpec) -> Result<UnitLife> {
    let unit = LockedUnit::lock_sync(&spec.state_dir, &spec.unit)?;
    UnitLife::claim_under(&spec.claim(), unit)
}

const STATES: [UnitState; 5] = [Pending, Running, Done, Failed, Blocked];

fn spec(dir: &Path) -> UnitSpec {
    UnitSpec {
        engine: EngineId::Codex,
        unit: "u".into(),
        prompt: "p".into(),
        session: None,
        cwd: dir.to_path_buf(),
        state_dir: dir.join("state"),
        skip_permissions: false,
        engine_bin: None,
        attachments: Vec::new(),
        stall_timeout: None,
        timeout: None,
        kill_grace: Duration::from_secs(1),
        warnings: Vec::new(),
        engine_reason: None,
        budget_args: Vec::new(),
        redact: Vec::new(),
        options: Default::default(),
        summary_schema: None,
        steps: Default::default(),
        policy: Default::default(),
        sandbox: Default::default(),
        asked: Default::default(),
        budget_stop: None,
        cancel: None,
        keep_answer: false,
        mcp: None,
        command: None,
        loops: Default::default(),
        quota: Default::default(),
        lineage: Default::default(),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn on_disk(dir: &Path) -> Option<Marker> {
    MarkerStore::new(&dir.join("state")).load("u").unwrap()
}

/// Records each event with the session id the marker on disk held when it came.
struct Watcher<'a> {
    dir: &'a Path,
    seen: Vec<(String, Option<String>)>,
}

impl EventSink for Watcher<'_> {
    fn event(&mut self, event: &ConversationEvent) {
        let durable = on_disk(self.dir).and_then(|m| m.engine_session_id);
        let ConversationEvent::Status { label, .. } = event else {
            panic!("only status rows here");
        };
        self.seen.push((label.clone(), durable));
    }
    fn warning(&mut self, message: &str) {
        panic!("no warning expected: {message}");
    }
}

fn row(label: &str) -> ConversationEvent {
    ConversationEvent::Status {
        level: Level::Info,
        label: label.into(),
        detail: None,
        session_id: None,
        usage: None,
        answer: None,
        raw_range: RawRange { start: 1, end: 1 },
    }
}

#[test]
fn the_transition_table() {
    let mut table = String::new();
    for from in STATES {
        let row: Vec<&str> = STATES
            .iter()
            .map(|&to| if allowed(from, to) { "yes" } else { "-" })
            .collect();
        table.push_str(&format!("{:8} {}\n", from.as_str(), row.join(" ")));
    }
    assert_eq!(
        table,
        "\
pending  yes yes - yes yes
running  yes - yes yes yes
done     yes - - - yes
failed   yes - - - yes
blocked  yes - - - yes
"
    );
}

#[test]
fn a_refused_transition_names_both_states_and_changes_nothing() {
    let mut refused = Vec::new();
    for from in STATES {
        for to in STATES {
            let mut m = Marker::new("u", EngineId::Codex, Path::new("/"));
            m.state = from;
            let before = m.clone();
            match transition(&mut m, to) {
                Ok(()) => assert_eq!(m.state, to),
                Err(e) => {
                    assert_eq!(m, before, "{from:?} -> {to:?} changed the marker");
                    assert_eq!(e.exit_code(), crate::ground::error::exit::INTERNAL);
                    refused.push(e.to_string());
                }
            }
        }
    }
    let want: Vec<String> = [
        ("running", "running"),
        ("done", "done"),
        ("done", "running"),
        ("done", "failed"),
        ("failed", "running"),
        ("failed", "done"),
        ("failed", "failed"),
        ("blocked", "running"),
        ("blocked", "done"),
        ("blocked", "failed"),
        ("pending", "done"),
    ]
    .iter()
    .map(|(a, b)| format!("internal error: unit \"u\"'s marker cannot go from {a} to {b}"))
    .collect();
    let (mut got, mut want) = (refused, want);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_claim_writes_nothing_and_a_start_is_the_first_write() {
    let t = tempfile::tempdir().unwrap();
    let spec = spec(t.path());
    let mut life = claim(&spec).unwrap();
    assert_eq!((life.marker().state, life.marker().attempts), (Pending, 1));
    assert_eq!(on_disk(t.path()), None);
    rt().block_on(life.start(std::process::id(), 1)).unwrap();
    let m = on_disk(t.path()).unwrap();
    assert_eq!(&m, life.marker());
    assert_eq!(m.state, Running);
    assert!(m.stdout_log.is_some() && m.owner.is_some());
}

#[test]
fn a_session_id_is_durable_before_any_event_shows_it() {
    let t = tempfile::tempdir().unwrap();
    let mut life = claim(&spec(t.path())).unwrap();
    let mut sink = Watcher {
        dir: t.path(),
        seen: Vec::new(),
    };
    rt().block_on(async {
        life.start(std::process::id(), 1).await.unwrap();
        life.emit(&mut sink, &row("before"));
        life.session_known("s-1");
        life.emit(&mut sink, &row("held"));
        assert!(life.holding() && life.hold_deadline().is_some());
        life.make_session_durable(&mut sink).await;
        life.emit(&mut sink, &row("after"));
    });
    let s1 = Some("s-1".to_string());
    assert_eq!(
        sink.seen,
        [
            ("before".to_string(), None),
            ("held".to_string(), s1.clone()),
            ("after".to_string(), s1),
        ]
    );
    assert!(!life.holding());
}

#[test]
fn the_final_write_carries_a_held_id_and_a_refused_one_keeps_the_events_held() {
    let t = tempfile::tempdir().unwrap();
    let mut life = claim(&spec(t.path())).unwrap();
    let mut sink = Watcher {
        dir: t.path(),
        seen: Vec::new(),
    };
    let end = |state| Finish {
        state,
        exit_code: Some(0),
        reason: None,
        error: None,
        summary: None,
        summary_error: None,
    };
    rt().block_on(async {
        // pending -> done is refused: nothing written, nothing shown.
        let e = life.finish(end(Done), &mut sink).await.unwrap_err();
        assert!(e.to_string().contains("from pending to done"), "{e}");
        assert_eq!(on_disk(t.path()), None);
        life.start(std::process::id(), 1).await.unwrap();
        life.session_known("s-2");
        life.emit(&mut sink, &row("held"));
        life.finish(end(Done), &mut sink).await.unwrap();
    });
    assert_eq!(sink.seen, [("held".to_string(), Some("s-2".to_string()))]);
    let m = on_disk(t.path()).unwrap();
    assert_eq!(
        (m.state, m.exit_code, m.finished_at.is_some()),
        (Done, Some(0), true)
    );
}

#[test]
fn early_ends_and_failures_before_the_spawn() {
    let t = tempfile::tempdir().unwrap();
    let spec = spec(t.path());
    // A new unit that cannot start gets a marker that says why.
    let mut life = claim(&spec).unwrap();
    let err = life.fail_before_spawn(Reason::Missing, VfError::not_ready("no codex"));
    assert_eq!(err.to_string(), "no codex");
    let m = on_disk(t.path()).unwrap();
    assert_eq!(
        (m.state, m.reason, m.error.as_deref()),
        (Failed, Some(Reason::Missing), Some("no codex"))
    );
    // An existing one is left byte-identical. (Each life holds the unit's
    // lock: the next claim takes it once the last one has let it go.)
    drop(life);
    let bytes = std::fs::read(MarkerStore::new(&spec.state_dir).path("u")).unwrap();
    let mut life = claim(&spec).unwrap();
    let _ = life.fail_before_spawn(Reason::Missing, VfError::not_ready("again"));
    assert_eq!(
        std::fs::read(MarkerStore::new(&spec.state_dir).path("u")).unwrap(),
        bytes
    );
    // A merge conflict blocks it, with no owner: attempt 2, since the
    // refused attempt was never written.
    drop(life);
    let mut life = claim(&spec).unwrap();
    let end = life.end_early(Blocked, Reason::MergeConflict, "conflict".into());
    rt().block_on(end).unwrap();
    let m = on_disk(t.path()).unwrap();
    assert_eq!(
        (m.state, m.attempts, m.reason, m.owner),
        (Blocked, 2, Some(Reason::MergeConflict), None)
    );
}

#[test]
fn a_plan_blocks_a_unit_whatever_it_was_and_keeps_its_attempts() {
    let t = tempfile::tempdir().unwrap();
    let state = t.path().join("state");
    block(&state, "u", EngineId::Codex, t.path(), "dep failed".into()).unwrap();
    let m = on_disk(t.path()).unwrap();
    assert_eq!(
        (m.state, m.reason, m.error.as_deref(), m.attempts),
        (Blocked, Some(Reason::Dependency), Some("dep failed"), 0)
    );
    let attempt = Attempt {
        engine: EngineId::Claude,
        reason: Some(Reason::RateLimited),
        session_id: None,
    };
    keep_attempts(&state, "u", vec![attempt.clone()]).unwrap();
    let kept = on_disk(t.path()).unwrap();
    assert_eq!(kept.engine_attempts, vec![attempt]);
    assert_eq!(kept.state, Blocked);
    // No marker: nothing to keep them in.
    keep_attempts(&state, "other", Vec::new()).unwrap();
    assert!(MarkerStore::new(&state).load("other").unwrap().is_none());
}
