//! How the vf binary is linked: with the toolchain's defaults, so on Linux
//! it is a position-independent executable (ASLR applies to it). Issue 24
//! retired a `-no-pie` link that saved ~0.4 ms of relocations per start.

use crate::common;
use common::vf;

/// The ELF header's `e_type` (offset 16, little-endian): 3 is `ET_DYN` (a
/// PIE), 2 `ET_EXEC` (a fixed-address executable).
#[test]
fn the_binary_is_position_independent() {
    let bytes = std::fs::read(vf()).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    assert_eq!(e_type, 3, "vf is not a PIE (e_type {e_type})");
}
