//! The sandbox's mechanism (issue 43, docs/SANDBOX.md): confining what an
//! engine's whole process tree may write (and read), behind one interface.
//! The caller (`dispatch`) decides the rules; this module only knows how to
//! hold a process to them and what this machine can hold.
//!
//! - [`support`]: what this machine offers. Linux asks the kernel for its
//!   Landlock ABI (`landlock_create_ruleset` with the VERSION flag); macOS
//!   looks for `/usr/bin/sandbox-exec`; elsewhere (Windows) nothing.
//!   `VF_TEST_SANDBOX` plays a poorer machine.
//! - [`prepare`]: the rules made ready in the parent. Linux (`landlock.rs`):
//!   a Landlock ruleset that handles every write right of the ABI (and read
//!   and execute when `deny_read` is given), one rule per writable path,
//!   and for `deny_read` the read rules that `walk.rs` finds (Landlock only
//!   allows, so what is readable is listed, next to what is denied). macOS
//!   (`seatbelt.rs`): the profile text. What the mechanism cannot hold is
//!   named in [`Prepared::missing`].
//! - [`apply`] (Linux): the child restricts itself between fork and exec
//!   (`no_new_privs`, then `landlock_restrict_self` on the ruleset made in
//!   the parent); every descendant inherits it and none can drop it. A
//!   failure there fails the spawn: the engine never runs unconfined.
//! - [`wrap`] (macOS): the engine runs through `sandbox-exec -f PROFILE --`.
//!
//! Files: `landlock` (Linux), `walk` (the `deny_read` walk, Linux),
//! `seatbelt` (the profile: pure, compiled and tested everywhere).

use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod landlock;
mod seatbelt;
#[cfg(all(test, target_os = "linux"))]
mod tests_linux;
#[cfg(target_os = "linux")]
mod walk;

pub use seatbelt::seatbelt_profile;

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

/// The prefix of `VF_TEST_SANDBOX` that caps Linux's Landlock ABI (`landlock-abi-2`).
const SIMULATED_ABI: &str = "landlock-abi-";

/// What this machine offers. `simulated` is `VF_TEST_SANDBOX` as the caller
/// read it: `none` (no mechanism), or `landlock-abi-N` (Linux: the ABI
/// capped at N), so tests can play a kernel without Landlock. Any other
/// value plays `none` too (a typo never turns a test's sandbox on). `why`
/// is then `simulated: VALUE`: only `ground/env.rs` spells vf's variables.
pub fn support(simulated: Option<&str>) -> Support {
    let cap = match simulated {
        None => None,
        Some(value) => match value.strip_prefix(SIMULATED_ABI).map(str::parse::<u8>) {
            Some(Ok(n)) if n >= 1 => Some(n),
            _ => {
                return Support::Unavailable {
                    why: format!("simulated: {value}"),
                };
            }
        },
    };
    os_support(cap)
}

#[cfg(target_os = "linux")]
fn os_support(cap: Option<u8>) -> Support {
    landlock::support(cap)
}

#[cfg(target_os = "macos")]
fn os_support(cap: Option<u8>) -> Support {
    if let Some(n) = cap {
        return Support::Unavailable {
            why: format!("simulated: {SIMULATED_ABI}{n} (macOS has no Landlock)"),
        };
    }
    if Path::new(seatbelt::SANDBOX_EXEC).is_file() {
        Support::Seatbelt
    } else {
        Support::Unavailable {
            why: format!("{} is missing", seatbelt::SANDBOX_EXEC),
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn os_support(cap: Option<u8>) -> Support {
    let _ = cap;
    Support::Unavailable {
        why: "vf has no sandbox for this platform yet".into(),
    }
}

/// The ruleset's file descriptor, made in the parent and applied in the
/// child (Linux); nothing elsewhere.
#[cfg(target_os = "linux")]
type Ruleset = std::os::fd::OwnedFd;
#[cfg(not(target_os = "linux"))]
type Ruleset = std::convert::Infallible;

/// The rules made ready in the parent, before the spawn.
#[derive(Debug)]
pub struct Prepared {
    mechanism: Option<String>,
    missing: Vec<String>,
    profile: Option<String>,
    ruleset: Option<Ruleset>,
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

    /// Nothing applied, for this reason.
    fn nothing(why: String) -> Prepared {
        Prepared {
            mechanism: None,
            missing: vec![why],
            profile: None,
            ruleset: None,
        }
    }
}

/// Makes `rules` ready under `support` (Linux: the ruleset, its paths
/// opened; macOS: the profile). An error is a rule that cannot be made:
/// a relative path, a path the mechanism cannot name, a directory too
/// large to walk, a ruleset the kernel refuses.
pub fn prepare(rules: &Rules, support: &Support) -> std::io::Result<Prepared> {
    if let Some(path) = rules
        .writable
        .iter()
        .chain(&rules.deny_read)
        .find(|p| !p.is_absolute())
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("a sandbox path must be absolute: {}", path.display()),
        ));
    }
    match support {
        Support::Unavailable { why } => Ok(Prepared::nothing(why.clone())),
        Support::Landlock { abi } => prepare_landlock(rules, *abi),
        Support::Seatbelt => {
            let rules = seatbelt::with_real_paths(rules);
            seatbelt::check(&rules)?;
            Ok(Prepared {
                mechanism: support.mechanism(),
                missing: Vec::new(),
                profile: Some(seatbelt_profile(&rules)),
                ruleset: None,
            })
        }
    }
}

#[cfg(target_os = "linux")]
fn prepare_landlock(rules: &Rules, abi: u8) -> std::io::Result<Prepared> {
    let (ruleset, missing) = landlock::prepare(rules, abi)?;
    Ok(Prepared {
        mechanism: Support::Landlock { abi }.mechanism(),
        missing,
        profile: None,
        ruleset: Some(ruleset),
    })
}

#[cfg(not(target_os = "linux"))]
fn prepare_landlock(rules: &Rules, abi: u8) -> std::io::Result<Prepared> {
    let _ = (rules, abi);
    Ok(Prepared::nothing("Landlock exists on Linux only".into()))
}

/// The program and arguments to spawn: through `sandbox-exec -f
/// profile_file --` when the prepared rules are a Seatbelt profile (macOS);
/// unchanged otherwise.
pub fn wrap(
    program: &Path,
    args: &[String],
    prepared: &Prepared,
    profile_file: &Path,
) -> (PathBuf, Vec<String>) {
    if prepared.profile.is_none() {
        return (program.to_path_buf(), args.to_vec());
    }
    seatbelt::wrap(program, args, profile_file)
}

/// Holds the command's child to the prepared rules (Linux: restricts itself
/// between fork and exec). Call after [`super::contain`], so that the
/// lifeline's watcher (vf's own, forked by an earlier hook) stays outside.
pub fn apply(cmd: &mut std::process::Command, prepared: Prepared) {
    let Some(ruleset) = prepared.ruleset else {
        return;
    };
    #[cfg(target_os = "linux")]
    landlock::apply(cmd, ruleset);
    // Elsewhere there is never a ruleset (`Infallible`).
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cmd;
        match ruleset {}
    }
}
