//! The auxiliary `bun` runtime some engines can use: found on PATH, its
//! version read and compared with the one vf was verified with. Reported
//! with a verdict and its reason, never required: it changes no engine's
//! verdict and not the exit status.

use std::path::PathBuf;

use super::{Options, Verdict};
use crate::ground::version::{self, Verification, Version};
use crate::process::binary::{self, VersionError};

/// The bun version vf was verified with: an older one is degraded.
pub const VERIFIED_BUN: &str = "1.4.0";

/// An auxiliary runtime and what was found of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auxiliary {
    pub name: &'static str,
    /// `None` when not on PATH.
    pub found: Option<(PathBuf, Result<Version, VersionError>)>,
    /// The version it is compared with.
    pub verified: &'static str,
}

impl Auxiliary {
    /// `None` when it is not installed; else its verdict and, when
    /// degraded, why: older than the verified version, or no version read.
    pub fn verdict(&self) -> Option<(Verdict, Option<String>)> {
        let (_, version) = self.found.as_ref()?;
        let v = match version {
            Err(e) => {
                let why = format!("`{} --version` {e}", self.name);
                return Some((Verdict::Degraded, Some(why)));
            }
            Ok(v) => v,
        };
        Some(match version::verify(Some(v), &[self.verified]) {
            Verification::Older => (
                Verdict::Degraded,
                Some(format!(
                    "version {v} is older than the verified version ({}); upgrade it",
                    self.verified
                )),
            ),
            _ => (Verdict::Ready, None),
        })
    }
}

/// Looks `name` up on PATH and reads its `--version`.
pub fn auxiliary(name: &'static str, verified: &'static str, opts: &Options) -> Auxiliary {
    let found = binary::find_on_path(name, std::env::var_os("PATH").as_deref()).map(|p| {
        let v = crate::process::version_cache::read_version(&p, opts.timeout, opts.refresh);
        (p, v)
    });
    Auxiliary {
        name,
        found,
        verified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bun(version: Result<&str, VersionError>) -> Auxiliary {
        Auxiliary {
            name: "bun",
            found: Some((
                PathBuf::from("/x/bun"),
                version.map(|v| Version::parse(v).unwrap()),
            )),
            verified: VERIFIED_BUN,
        }
    }

    #[test]
    fn an_older_or_unreadable_runtime_is_degraded_with_the_reason() {
        assert_eq!(bun(Ok("1.4.0")).verdict(), Some((Verdict::Ready, None)));
        assert_eq!(bun(Ok("1.5.2")).verdict(), Some((Verdict::Ready, None)));
        let older = Some((
            Verdict::Degraded,
            Some("version 1.3.9 is older than the verified version (1.4.0); upgrade it".into()),
        ));
        assert_eq!(bun(Ok("1.3.9")).verdict(), older);
        let garbage = VersionError::NoVersion {
            excerpt: "x".into(),
            code: Some(0),
        };
        let (verdict, why) = bun(Err(garbage)).verdict().unwrap();
        assert_eq!(verdict, Verdict::Degraded);
        assert!(why.unwrap().starts_with("`bun --version` "));
        let absent = Auxiliary {
            found: None,
            ..bun(Ok("1.4.0"))
        };
        assert_eq!(absent.verdict(), None);
    }
}
