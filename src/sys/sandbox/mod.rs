//! The sandbox's mechanism (issue 43, docs/SANDBOX.md): confining what an
//! engine's whole process tree may write (and read), behind one interface.
//! Linux: Landlock, applied in the child between fork and exec, inherited by
//! every descendant. macOS: Seatbelt, the engine run through
//! `/usr/bin/sandbox-exec -f PROFILE`. Elsewhere (Windows): nothing yet.
//!
//! The caller (`dispatch`) decides the rules; this module only knows how to
//! hold a process to them and what this machine can hold.

use std::path::{Path, PathBuf};

/// What a confined process tree may do. Paths are absolute; one that does
/// not exist (yet) is skipped, never an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    /// Written (created, removed, renamed, truncated) beneath these, and read.
    pub writable: Vec<PathBuf>,
    /// Never read (nor executed) beneath these; everything else is readable.
    pub deny_read: Vec<PathBuf>,
}

/// What this machine can hold a process to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock at this ABI: the best the kernel offers (or the test cap).
    Landlock { abi: u8 },
    /// `/usr/bin/sandbox-exec` is there.
    Seatbelt,
    /// No mechanism: why, in words ("this kernel has no Landlock").
    Unavailable { why: String },
}

impl Support {
    /// `landlock-abi-N`, `seatbelt`, or `None`.
    pub fn mechanism(&self) -> Option<String> {
        match self {
            Support::Landlock { abi } => Some(format!("landlock-abi-{abi}")),
            Support::Seatbelt => Some("seatbelt".into()),
            Support::Unavailable { .. } => None,
        }
    }
}

/// What this machine offers. `simulated` is `VF_TEST_SANDBOX` as the caller
/// read it: `none` (no mechanism), or `landlock-abi-N` (Linux: the ABI
/// capped at N), so tests can play a kernel without Landlock.
pub fn support(simulated: Option<&str>) -> Support {
    let _ = simulated;
    Support::Unavailable {
        why: "not built yet".into(),
    }
}

/// The rules made ready in the parent, before the spawn.
#[derive(Debug)]
pub struct Prepared {
    mechanism: Option<String>,
    missing: Vec<String>,
    profile: Option<String>,
}

impl Prepared {
    /// `landlock-abi-N` or `seatbelt` when anything is applied.
    pub fn mechanism(&self) -> Option<String> {
        self.mechanism.clone()
    }
    /// What this machine could not hold, in words (empty: enforced).
    pub fn missing(&self) -> &[String] {
        &self.missing
    }
    /// macOS: the Seatbelt profile the caller writes to the file it passes to [`wrap`].
    pub fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }
}

/// Makes `rules` ready under `support` (Linux: the ruleset, its paths
/// opened; macOS: the profile). An error is a rule that cannot be made.
pub fn prepare(rules: &Rules, support: &Support) -> std::io::Result<Prepared> {
    let _ = rules;
    Ok(Prepared {
        mechanism: None,
        missing: vec![match support {
            Support::Unavailable { why } => why.clone(),
            _ => "not built yet".into(),
        }],
        profile: None,
    })
}

/// The Seatbelt profile for `rules` (pure: golden-tested on every platform).
pub fn seatbelt_profile(rules: &Rules) -> String {
    let _ = rules;
    String::new()
}

/// The program and arguments to spawn: on macOS, through `sandbox-exec -f
/// profile_file`; unchanged elsewhere.
pub fn wrap(
    program: &Path,
    args: &[String],
    prepared: &Prepared,
    profile_file: &Path,
) -> (PathBuf, Vec<String>) {
    let _ = (prepared, profile_file);
    (program.to_path_buf(), args.to_vec())
}

/// Holds the command's child to the prepared rules (Linux: restricts itself
/// between fork and exec). Call after [`super::contain`].
pub fn apply(cmd: &mut std::process::Command, prepared: Prepared) {
    let _ = (cmd, prepared);
}
