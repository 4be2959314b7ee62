//! The frame projector on any byte stream, read the way `vf replay` reads a
//! log; every event is checked against the invariants of tests/it/fuzz_*.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vf_fuzz::invariants::project_stream;
use vf_fuzz::setup;

fuzz_target!(|data: &[u8]| {
    let (s, stream) = setup(data);
    if let Err(e) = project_stream(s.cli, s.version.as_ref(), s.transport, stream, s.cap, &[]) {
        panic!("{} {:?} {}: {e}", s.cli, s.version, s.transport.as_str());
    }
});
