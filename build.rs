//! Link settings that make every `vf` start cheaper on x86-64 Linux (see
//! docs/ARCHITECTURE.md, Performance notes).
//!
//! - A position-dependent executable: a PIE of vf's size carries ~14,000
//!   relative relocations that the dynamic loader applies at every start,
//!   dirtying ~80 pages: about 0.4 ms of each `vf dispatch`. Only the
//!   binaries are linked this way (proc macros and tests are untouched);
//!   `VF_PIE=1` at build time keeps the default PIE.
//! - The unwinder linked in statically (`libgcc_eh`), so `libgcc_s.so` is
//!   not loaded: one shared library fewer to map, and no run of its
//!   constructor, whose CPU probing traps to the hypervisor on a VM.

fn main() {
    println!("cargo:rerun-if-env-changed=VF_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let pie = std::env::var_os("VF_PIE").is_some_and(|v| v == "1");
    if os == "linux" && env == "gnu" {
        // Named before std's `-lgcc_s`, it answers every unwinder symbol, and
        // `--as-needed` then leaves libgcc_s out.
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
        if arch == "x86_64" && !pie {
            println!("cargo:rustc-link-arg-bins=-no-pie");
        }
    }
}
