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
    /// vf's output could not be written to stdout (`EX_IOERR`): a full disk,
    /// `/dev/full`, a device error. A closed pipe is not one: that is success.
    pub const OUTPUT: i32 = 74;
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
    /// Stdout refused the command's output: exit 74. Made by `From<io::Error>`
    /// from an error [`output_error`] tagged.
    #[error("the output could not be written to stdout: {0}")]
    Output(std::io::Error),
    /// A file named for the command's output (`vf report -o`) could not be
    /// written (a full disk, `/dev/full`): exit 74, as stdout would be.
    #[error("{0}")]
    OutputFile(String),
    /// Anything vf did not expect of itself: exit 70, never the engine's 1.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
    /// A unit refused before its engine started, with the reason its marker
    /// records; prints and exits as the wrapped error does.
    #[error("{error}")]
    Refused { reason: Reason, error: Box<VfError> },
    /// The quota governor holds the engine's account: nothing started, exit 75.
    #[error("{0}")]
    Held(Box<crate::ground::held::HeldBy>),
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
            VfError::Output(_) | VfError::OutputFile(_) => exit::OUTPUT,
            VfError::Other(_) => exit::INTERNAL,
            VfError::Refused { error, .. } => error.exit_code(),
            VfError::Held(_) => exit::RATE_LIMITED,
        }
    }

    /// The unit's failure reason for this error (orchestrate's unit entries).
    /// A unit never fails on stdout (its printing is not its run): an output
    /// error there would be vf's own fault.
    pub fn reason(&self) -> Reason {
        match self {
            VfError::Usage(_) => Reason::Invalid,
            VfError::NotReady(_) => Reason::Missing,
            VfError::State(_) => Reason::State,
            VfError::Output(_) | VfError::OutputFile(_) | VfError::Other(_) => Reason::Internal,
            VfError::Refused { reason, .. } => *reason,
            VfError::Held(_) => Reason::RateLimited,
        }
    }
}

impl From<std::io::Error> for VfError {
    fn from(e: std::io::Error) -> Self {
        if is_output_error(&e) {
            VfError::Output(e)
        } else {
            VfError::Other(e.into())
        }
    }
}

/// The inner error of an [`output_error`]: it says where the write failed
/// while the error travels as an `io::Error` (`writeln!`, serde_json, a
/// `BufWriter`), so that `?` makes it [`VfError::Output`].
#[derive(Debug)]
struct StdoutFailed(std::io::Error);

impl fmt::Display for StdoutFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StdoutFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// `e`, a failed write to stdout, marked as such; its kind (`BrokenPipe`,
/// `Interrupted`...) and text are kept.
pub fn output_error(e: std::io::Error) -> std::io::Error {
    if is_output_error(&e) {
        return e;
    }
    std::io::Error::new(e.kind(), StdoutFailed(e))
}

fn is_output_error(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<StdoutFailed>())
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
    /// An ACP agent stopped the turn at its token limit (`stopReason: max_tokens`).
    MaxTokens,
    /// An ACP agent stopped the turn at its limit of model requests
    /// (`stopReason: max_turn_requests`).
    MaxTurnRequests,
    /// An ACP agent refused to go on (`stopReason: refusal`).
    Refusal,
    /// An ACP agent cancelled the turn (`stopReason: cancelled`) without vf
    /// being signalled (a signal to vf is `interrupted`).
    Cancelled,
    /// The run changed a path its guards refuse (`--deny-path`, `--allow-path`),
    /// or they could not be checked: nothing was committed.
    Policy,
    /// A worktree unit's branch could not be pushed to its remote (plan key
    /// `push`), or a dependency's pushed branch could not be fetched.
    Remote,
    /// The unit's reviewer (plan key `review`, `--review-engine`) asked for
    /// changes in its last round, or never gave a valid verdict.
    Review,
}

impl Reason {
    pub const ALL: [Reason; 25] = [
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
        Reason::MaxTokens,
        Reason::MaxTurnRequests,
        Reason::Refusal,
        Reason::Cancelled,
        Reason::Policy,
        Reason::Remote,
        Reason::Review,
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
            Reason::MaxTokens => "max-tokens",
            Reason::MaxTurnRequests => "max-turn-requests",
            Reason::Refusal => "refusal",
            Reason::Cancelled => "cancelled",
            Reason::Policy => "policy",
            Reason::Remote => "remote",
            Reason::Review => "review",
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
            | Reason::Workspace
            | Reason::MaxTokens
            | Reason::MaxTurnRequests
            | Reason::Refusal
            | Reason::Cancelled
            | Reason::Policy
            | Reason::Remote
            | Reason::Review => exit::ENGINE_FAILED,
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
            serde::de::Error::custom(format!(
                "unknown reason {:?}",
                crate::ground::text::cut(&s, 64)
            ))
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
                "\"internal\"",
                "\"max-tokens\"",
                "\"max-turn-requests\"",
                "\"refusal\"",
                "\"cancelled\"",
                "\"policy\"",
                "\"remote\"",
                "\"review\"",
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
            Reason::Policy,
            Reason::Remote,
        ]
        .map(Reason::exit_code)
        .into();
        assert_eq!(codes, [129, 130, 131, 143, 4, 5, 1, 75, 1, 1, 1]);
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

    /// A writer that fails as a full stdout does, through `output_error`.
    struct FullStdout;

    impl std::io::Write for FullStdout {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(output_error(std::io::Error::from_raw_os_error(28)))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stdout_write_error_is_its_own_exit_code_through_any_writer() {
        use std::io::Write;
        let direct = VfError::from(writeln!(FullStdout, "x").unwrap_err());
        // serde_json and BufWriter hand the writer's own error back.
        let json = serde_json::to_writer(FullStdout, &[1, 2]).unwrap_err();
        let json = VfError::from(std::io::Error::from(json));
        let mut buffered = std::io::BufWriter::new(FullStdout);
        buffered.write_all(b"x").unwrap();
        let buffered = VfError::from(buffered.flush().unwrap_err());
        for e in [direct, json, buffered] {
            assert_eq!(e.exit_code(), exit::OUTPUT);
            let text = e.to_string();
            assert!(
                text.starts_with("the output could not be written to stdout: ")
                    && text.contains("(os error 28)"),
                "{text}"
            );
        }
        // Marking twice is marking once; the kind survives (a closed pipe is success).
        let pipe = output_error(output_error(std::io::ErrorKind::BrokenPipe.into()));
        assert_eq!(pipe.kind(), std::io::ErrorKind::BrokenPipe);
        let VfError::Output(inner) = VfError::from(pipe) else {
            panic!("not an output error");
        };
        assert_eq!(format!("{inner:?}").matches("StdoutFailed").count(), 1);
        // Any other io error stays vf's own.
        let other = VfError::from(std::io::Error::from_raw_os_error(28));
        assert_eq!(other.exit_code(), exit::INTERNAL);
        assert_ne!(exit::OUTPUT, exit::RATE_LIMITED);
    }

    #[test]
    fn internal_failures_do_not_look_like_engine_failures() {
        let e = VfError::from(std::io::Error::other("boom"));
        assert_eq!(e.exit_code(), exit::INTERNAL);
        assert_ne!(exit::INTERNAL, exit::ENGINE_FAILED);
    }
}
