//! User-facing errors and failure reasons with stable exit codes.
//!
//! Every failure that reaches `main` is printed once, as one line, and mapped to
//! the exit code documented in README.md. A unit that ran and failed carries a
//! [`Reason`] instead; both map to the same table.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Stable process exit codes (documented in README.md; scripts depend on them).
pub mod exit {
    pub const OK: i32 = 0;
    /// The engine ran and reported failure (or a probe/check failed).
    pub const ENGINE_FAILED: i32 = 1;
    /// Bad arguments or bad input files.
    pub const USAGE: i32 = 2;
    /// Engine binary missing, unreadable, or not ready.
    pub const NOT_READY: i32 = 3;
    /// The engine stalled or hit the wall-clock limit.
    pub const TIMEOUT: i32 = 4;
    /// vf's own state (markers, logs) is corrupt or unwritable.
    pub const STATE: i32 = 5;
    /// The provider rate-limited the engine: try again later (`EX_TEMPFAIL`).
    pub const RATE_LIMITED: i32 = 75;
    /// A bug or an unexpected failure inside vf itself (`EX_SOFTWARE`).
    pub const INTERNAL: i32 = 70;
    pub const SIGHUP: i32 = 129;
    pub const SIGINT: i32 = 130;
    pub const SIGQUIT: i32 = 131;
    pub const SIGTERM: i32 = 143;
}

#[derive(Debug, thiserror::Error)]
pub enum VfError {
    /// Invalid arguments or input: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The engine cannot be used here (missing binary, prompt over limit...): exit 3.
    #[error("{0}")]
    NotReady(String),
    /// Corrupt or unwritable vf state: exit 5.
    #[error("{0}")]
    State(String),
    /// Anything vf did not expect of itself: exit 70, never the engine's 1.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
    /// A unit refused before its engine started, with the reason its marker
    /// records; prints and exits as the wrapped error does.
    #[error("{error}")]
    Refused { reason: Reason, error: Box<VfError> },
}

impl VfError {
    pub fn usage(msg: impl fmt::Display) -> Self {
        VfError::Usage(msg.to_string())
    }
    pub fn not_ready(msg: impl fmt::Display) -> Self {
        VfError::NotReady(msg.to_string())
    }
    pub fn state(msg: impl fmt::Display) -> Self {
        VfError::State(msg.to_string())
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            VfError::Usage(_) => exit::USAGE,
            VfError::NotReady(_) => exit::NOT_READY,
            VfError::State(_) => exit::STATE,
            VfError::Other(_) => exit::INTERNAL,
            VfError::Refused { error, .. } => error.exit_code(),
        }
    }

    /// The unit's failure reason for this error (orchestrate's unit entries).
    pub fn reason(&self) -> Reason {
        match self {
            VfError::Usage(_) => Reason::Invalid,
            VfError::NotReady(_) => Reason::Missing,
            VfError::State(_) => Reason::State,
            VfError::Other(_) => Reason::Internal,
            VfError::Refused { reason, .. } => *reason,
        }
    }
}

impl From<std::io::Error> for VfError {
    fn from(e: std::io::Error) -> Self {
        VfError::Other(e.into())
    }
}

pub type Result<T, E = VfError> = std::result::Result<T, E>;

/// Why a unit failed or was blocked: the `reason` of markers and results.
///
/// JSON names are the strings vf has always written (`"sessionMismatch"`, ...).
/// `Interrupted` keeps the signal for the exit code; JSON says only
/// `"interrupted"`, so a reason read back from JSON has no signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The engine binary was not found.
    Missing,
    /// The request was invalid for the engine.
    Invalid,
    /// vf's own state (marker, raw log, process record) could not be written.
    State,
    /// The engine could not be started.
    Spawn,
    /// vf received this signal and ended the engine.
    Interrupted(Option<i32>),
    /// No output for `--stall-timeout`.
    Stalled,
    /// `--timeout` reached.
    Timeout,
    /// A resume came back on another session: the native one was not found.
    SessionMismatch,
    /// The engine ran and reported failure.
    Engine,
    /// Blocked: a unit it depends on did not finish.
    Dependency,
    /// The summary is missing or violates `--summary-schema`.
    SummarySchema,
    /// The engine failed because the provider rate-limited it.
    RateLimited,
    /// The plan's budget was reached: not started, or ended (`--hard-budget`).
    Budget,
    /// The `--setup` command failed; the engine never started.
    Setup,
    /// The `--verify` command failed after the engine's run.
    Verify,
    /// A dependency's branch did not merge into the unit's worktree.
    MergeConflict,
    /// The unit's worktree is no longer the one vf made (its `.git` removed
    /// or replaced, or another branch): vf committed nothing.
    Workspace,
    /// vf failed itself (a bug), not the engine.
    Internal,
}

impl Reason {
    pub const ALL: [Reason; 18] = [
        Reason::Missing,
        Reason::Invalid,
        Reason::State,
        Reason::Spawn,
        Reason::Interrupted(None),
        Reason::Stalled,
        Reason::Timeout,
        Reason::SessionMismatch,
        Reason::Engine,
        Reason::Dependency,
        Reason::SummarySchema,
        Reason::RateLimited,
        Reason::Budget,
        Reason::Setup,
        Reason::Verify,
        Reason::MergeConflict,
        Reason::Workspace,
        Reason::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Missing => "missing",
            Reason::Invalid => "invalid",
            Reason::State => "state",
            Reason::Spawn => "spawn",
            Reason::Interrupted(_) => "interrupted",
            Reason::Stalled => "stalled",
            Reason::Timeout => "timeout",
            Reason::SessionMismatch => "sessionMismatch",
            Reason::Engine => "engine",
            Reason::Dependency => "dependency",
            Reason::SummarySchema => "summary-schema",
            Reason::RateLimited => "rate-limited",
            Reason::Budget => "budget",
            Reason::Setup => "setup",
            Reason::Verify => "verify",
            Reason::MergeConflict => "merge-conflict",
            Reason::Workspace => "workspace",
            Reason::Internal => "internal",
        }
    }

    pub fn parse(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// vf's exit code for a unit that ended for this reason.
    pub fn exit_code(self) -> i32 {
        match self {
            Reason::Missing | Reason::Spawn => exit::NOT_READY,
            Reason::Invalid => exit::USAGE,
            Reason::State => exit::STATE,
            // 128 + the signal, as a shell reports it; unknown: as for SIGTERM.
            Reason::Interrupted(sig) => 128 + sig.unwrap_or(15),
            Reason::Stalled | Reason::Timeout => exit::TIMEOUT,
            Reason::SessionMismatch
            | Reason::Engine
            | Reason::Dependency
            | Reason::SummarySchema
            | Reason::Budget
            | Reason::Setup
            | Reason::Verify
            | Reason::MergeConflict
            | Reason::Workspace => exit::ENGINE_FAILED,
            Reason::RateLimited => exit::RATE_LIMITED,
            Reason::Internal => exit::INTERNAL,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Reason::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown reason {:?}", crate::text::cut(&s, 64)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_keep_their_json_names_and_exit_codes() {
        let names: Vec<String> = Reason::ALL
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "\"missing\"",
                "\"invalid\"",
                "\"state\"",
                "\"spawn\"",
                "\"interrupted\"",
                "\"stalled\"",
                "\"timeout\"",
                "\"sessionMismatch\"",
                "\"engine\"",
                "\"dependency\"",
                "\"summary-schema\"",
                "\"rate-limited\"",
                "\"budget\"",
                "\"setup\"",
                "\"verify\"",
                "\"merge-conflict\"",
                "\"workspace\"",
                "\"internal\""
            ]
        );
        for r in Reason::ALL {
            let back: Reason = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
            assert_eq!(back, r);
        }
        assert!(serde_json::from_str::<Reason>("\"nope\"").is_err());
        let codes: Vec<i32> = [
            Reason::Interrupted(Some(1)),
            Reason::Interrupted(Some(2)),
            Reason::Interrupted(Some(3)),
            Reason::Interrupted(Some(15)),
            Reason::Stalled,
            Reason::State,
            Reason::Engine,
            Reason::RateLimited,
            Reason::Workspace,
        ]
        .map(Reason::exit_code)
        .into();
        assert_eq!(codes, [129, 130, 131, 143, 4, 5, 1, 75, 1]);
    }

    #[test]
    fn each_error_names_the_reason_that_exits_as_it_does() {
        let spawn = VfError::Refused {
            reason: Reason::Spawn,
            error: Box::new(VfError::not_ready("cannot start")),
        };
        let errors = [
            VfError::usage("u"),
            VfError::not_ready("n"),
            VfError::state("s"),
            VfError::Other(anyhow::anyhow!("o")),
            spawn,
        ];
        let got: Vec<(Reason, i32)> = errors
            .iter()
            .map(|e| (e.reason(), e.reason().exit_code() - e.exit_code()))
            .collect();
        let want = [
            Reason::Invalid,
            Reason::Missing,
            Reason::State,
            Reason::Internal,
            Reason::Spawn,
        ]
        .map(|r| (r, 0));
        assert_eq!(got, want);
        assert_eq!(errors[4].to_string(), "cannot start");
    }

    #[test]
    fn internal_failures_do_not_look_like_engine_failures() {
        let e = VfError::from(std::io::Error::other("boom"));
        assert_eq!(e.exit_code(), exit::INTERNAL);
        assert_ne!(exit::INTERNAL, exit::ENGINE_FAILED);
    }
}
