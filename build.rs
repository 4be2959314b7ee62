//! Links the `vf` binary as a position-dependent executable on x86-64 Linux.
//!
//! A PIE of vf's size carries ~14,000 relative relocations that the dynamic
//! loader applies at every start, dirtying ~80 pages: about 0.4 ms of each
//! `vf dispatch` (see docs/ARCHITECTURE.md, Performance notes). Only the
//! binaries are linked this way (proc macros and tests are untouched);
//! `VF_PIE=1` at build time keeps the default PIE.

fn main() {
    println!("cargo:rerun-if-env-changed=VF_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let pie = std::env::var_os("VF_PIE").is_some_and(|v| v == "1");
    if os == "linux" && env == "gnu" && arch == "x86_64" && !pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
