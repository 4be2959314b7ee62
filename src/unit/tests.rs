use super::*;
use crate::engine::EngineId;
use crate::ground::error::exit;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_second_lock_of_a_unit_is_refused_naming_the_holders_pid() {
    let t = tempfile::tempdir().unwrap();
    let held = LockedUnit::lock_sync(t.path(), "u").unwrap();
    assert_eq!(held.name(), "u");
    assert_eq!(held.dir().lock_path(), t.path().join("units/u/lock"));
    let err = LockedUnit::lock_sync(t.path(), "u").unwrap_err();
    assert_eq!(err.exit_code(), exit::USAGE, "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "unit u is running under vf pid {}; not touching it",
            std::process::id()
        )
    );
    assert!(LockedUnit::try_lock_sync(t.path(), "u").unwrap().is_none());
    // The async way in is the same lock.
    let err = runtime()
        .block_on(LockedUnit::lock(t.path(), "u"))
        .unwrap_err();
    assert_eq!(err.exit_code(), exit::USAGE, "{err}");
    // Another unit is another lock.
    assert!(LockedUnit::try_lock_sync(t.path(), "v").unwrap().is_some());
}

#[test]
fn the_lock_is_released_when_the_locked_unit_is_dropped() {
    let t = tempfile::tempdir().unwrap();
    let held = runtime().block_on(LockedUnit::lock(t.path(), "u")).unwrap();
    assert!(LockedUnit::try_lock_sync(t.path(), "u").unwrap().is_none());
    drop(held);
    let again = LockedUnit::lock_sync(t.path(), "u").unwrap();
    drop(again);
    assert!(LockedUnit::try_lock_sync(t.path(), "u").unwrap().is_some());
}

/// The names in the unit's directory, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_marker_write_through_the_locked_unit_lands_atomically() {
    let t = tempfile::tempdir().unwrap();
    let unit = LockedUnit::lock_sync(t.path(), "u").unwrap();
    let mut m = Marker::new("u", EngineId::Codex, t.path());
    unit.save_marker_sync(&mut m).unwrap();
    let path = unit.dir().marker_path();
    let before = std::fs::read(&path).unwrap();
    // A second name for the file as it is: a write in place would change
    // it too, a new file renamed over the marker leaves it as it was.
    let old = t.path().join("old-marker");
    std::fs::hard_link(&path, &old).unwrap();
    m.attempts = 7;
    let (m, saved) = runtime().block_on(unit.save_marker(m));
    saved.unwrap();
    assert_eq!(std::fs::read(&old).unwrap(), before);
    let now = unit.dir().load_marker().unwrap().unwrap();
    assert_eq!((now.attempts, now.updated_at), (7, m.updated_at));
    // No temporary is left beside it.
    assert_eq!(entries(&unit.dir().path()), ["lock", "marker.json"]);
    // Only this unit's marker goes through its lock.
    let mut other = Marker::new("v", EngineId::Codex, t.path());
    let err = unit.save_marker_sync(&mut other).unwrap_err();
    assert!(err.to_string().contains("internal error"), "{err}");
    assert!(!UnitDir::new(t.path(), "v").has_marker());
}

#[test]
fn a_marker_writer_records_the_session_under_the_holders_lock() {
    let t = tempfile::tempdir().unwrap();
    let unit = LockedUnit::lock_sync(t.path(), "u").unwrap();
    let m = Marker::new("u", EngineId::Codex, t.path());
    let mut w = unit.marker_writer(m);
    w.record_session("s-1").unwrap();
    let now = unit.load_marker().unwrap().unwrap();
    assert_eq!(now.engine_session_id.as_deref(), Some("s-1"));
}
