//! CLI version numbers as printed by `--version`.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Version {
    pub fn new(major: u64, minor: u64, patch: u64) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Parses exactly `X.Y.Z` (an optional leading `v`).
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut it = s.split('.');
        let v = Version {
            major: num(it.next()?)?,
            minor: num(it.next()?)?,
            patch: num(it.next()?)?,
        };
        it.next().is_none().then_some(v)
    }

    /// Finds the first `X.Y.Z` in free text such as `codex-cli 0.171.0` or
    /// `2.1.332 (Claude Code)`. Pre-release/build suffixes are ignored.
    pub fn find_in(text: &str) -> Option<Version> {
        text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter_map(|tok| {
                let tok = tok.trim_matches('.');
                let parts: Vec<&str> = tok.split('.').collect();
                (parts.len() >= 3)
                    .then(|| Version::parse(&parts[..3].join(".")))
                    .flatten()
            })
            .next()
    }

    /// Same major.minor: the unit manifests and contracts are grouped by.
    pub fn family(&self) -> (u64, u64) {
        (self.major, self.minor)
    }
}

fn num(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 12 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Version::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("not X.Y.Z: {s:?}")))
    }
}

/// How an installed version relates to the verified ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verification {
    #[serde(rename = "verified")]
    Verified,
    #[serde(rename = "newer, unverified")]
    NewerUnverified,
    #[serde(rename = "older")]
    Older,
    /// Between verified versions but not one of them.
    #[serde(rename = "unverified")]
    Unverified,
    #[serde(rename = "unreadable")]
    Unreadable,
}

impl Verification {
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::Verified => "verified",
            Verification::NewerUnverified => "newer, unverified",
            Verification::Older => "older",
            Verification::Unverified => "unverified",
            Verification::Unreadable => "unreadable",
        }
    }
}

/// Classifies `installed` against the verified list.
pub fn verify(installed: Option<&Version>, verified: &[&str]) -> Verification {
    let Some(v) = installed else {
        return Verification::Unreadable;
    };
    let known: Vec<Version> = verified.iter().filter_map(|s| Version::parse(s)).collect();
    if known.contains(v) {
        return Verification::Verified;
    }
    match (known.iter().max(), known.iter().min()) {
        (Some(max), _) if v.cmp(max) == Ordering::Greater => Verification::NewerUnverified,
        (_, Some(min)) if v.cmp(min) == Ordering::Less => Verification::Older,
        (Some(_), Some(_)) => Verification::Unverified,
        _ => Verification::Unverified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_versions_in_banners() {
        assert_eq!(
            Version::find_in("codex-cli 0.171.0\n"),
            Some(Version::new(0, 171, 0))
        );
        assert_eq!(
            Version::find_in("2.1.332 (Claude Code)"),
            Some(Version::new(2, 1, 332))
        );
        assert_eq!(
            Version::find_in("GitHub Copilot CLI 1.0.102.\n"),
            Some(Version::new(1, 0, 102))
        );
        assert_eq!(
            Version::find_in("1.18.33-beta.1"),
            Some(Version::new(1, 18, 33))
        );
        assert_eq!(Version::find_in("garbage"), None);
        assert_eq!(Version::find_in("v1.2"), None);
    }

    #[test]
    fn verification_classes() {
        let ver = ["0.171.0", "0.146.0"];
        let p = |s| Version::parse(s);
        assert_eq!(verify(p("0.171.0").as_ref(), &ver), Verification::Verified);
        assert_eq!(
            verify(p("0.172.0").as_ref(), &ver),
            Verification::NewerUnverified
        );
        assert_eq!(verify(p("0.100.0").as_ref(), &ver), Verification::Older);
        assert_eq!(
            verify(p("0.150.0").as_ref(), &ver),
            Verification::Unverified
        );
        assert_eq!(verify(None, &ver), Verification::Unreadable);
    }
}
