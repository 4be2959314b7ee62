//! Marker loading on any bytes: a marker, or a state error (exit 5).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vf::VfError;
use vf::marker::MarkerStore;

fn state_dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("units")).unwrap();
        t
    })
}

fuzz_target!(|data: &[u8]| {
    let store = MarkerStore::new(state_dir().path());
    std::fs::write(store.path("u"), data).unwrap();
    match store.load("u") {
        Ok(Some(m)) => {
            serde_json::to_string(&m).expect("a loaded marker serializes");
        }
        Ok(None) => panic!("an existing marker loaded as absent"),
        Err(VfError::State(msg)) => assert!(msg.contains("u.json"), "{msg}"),
        Err(other) => panic!("not a state error: {other:?}"),
    }
});
