use super::*;
use crate::quota::gate::{self, Learned};

fn hold(entries: &mut Vec<Entry>) {
    let mut e = Entry::new("claude", "default");
    let by = Learned {
        now: 1_000,
        unit: "a",
        source: "exit 75",
    };
    gate::learn_limit(&mut e, Some(4_102_444_800_000), |_| 0, by);
    entries.push(e);
}

#[test]
fn a_fact_written_by_one_update_is_read_by_the_next() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("data/vf/quota.json");
    let ((), unwritten) = update_in(&p, hold).map_err(|(_, w)| w).unwrap();
    assert_eq!(unwritten, None);
    let (seen, _) = update_in(&p, |e| e.clone()).map_err(|(_, w)| w).unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].unit.as_deref(), Some("a"));
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.contains("\"heldUntil\"") && text.contains("\"version\": 1"),
        "{text}"
    );
    // Idle entries are dropped: clearing leaves an empty ledger.
    let (gone, _) = update_in(&p, std::mem::take).map_err(|(_, w)| w).unwrap();
    assert_eq!(gone.len(), 1);
    assert!(!std::fs::read_to_string(&p).unwrap().contains("heldUntil"));
}

fn refused(p: &Path) -> String {
    match update_in(p, hold) {
        Ok(_) => panic!("{} was used", p.display()),
        Err((_, why)) => why,
    }
}

#[test]
fn a_corrupt_newer_huge_or_odd_ledger_is_refused_and_left_as_it_is() {
    let t = tempfile::tempdir().unwrap();
    let corrupt = t.path().join("corrupt.json");
    std::fs::write(&corrupt, "{not json").unwrap();
    assert!(refused(&corrupt).contains("does not parse"));
    assert_eq!(std::fs::read_to_string(&corrupt).unwrap(), "{not json");
    let newer = t.path().join("newer.json");
    std::fs::write(&newer, r#"{"version": 9, "entries": []}"#).unwrap();
    assert!(refused(&newer).contains("format 9"));
    let huge = t.path().join("huge.json");
    std::fs::write(&huge, vec![b' '; (MAX_LEDGER_BYTES + 1) as usize]).unwrap();
    assert!(refused(&huge).contains("over"));
    let dir = t.path().join("dir.json");
    std::fs::create_dir(&dir).unwrap();
    assert!(refused(&dir).contains("not a regular file"));
}

#[test]
fn vfs_own_unit_tests_never_see_the_users_ledger() {
    if std::env::var_os(EnvVars::VF_QUOTA_FILE).is_none() {
        assert_eq!(path(), None);
    }
}
