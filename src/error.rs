//! User-facing errors with stable exit codes.
//!
//! Every failure that reaches `main` is printed once, as one line, and mapped to
//! the exit code documented in README.md.

use std::fmt;

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
    pub const SIGINT: i32 = 130;
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
    /// The engine ran and failed: exit 1.
    #[error("{0}")]
    EngineFailed(String),
    /// Stalled or timed out: exit 4.
    #[error("{0}")]
    Timeout(String),
    /// Corrupt or unwritable vf state: exit 5.
    #[error("{0}")]
    State(String),
    /// Interrupted by a signal; carries the exit code (130/143).
    #[error("interrupted")]
    Interrupted(i32),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
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
            VfError::EngineFailed(_) => exit::ENGINE_FAILED,
            VfError::Timeout(_) => exit::TIMEOUT,
            VfError::State(_) => exit::STATE,
            VfError::Interrupted(code) => *code,
            VfError::Other(_) => exit::ENGINE_FAILED,
        }
    }
}

impl From<std::io::Error> for VfError {
    fn from(e: std::io::Error) -> Self {
        VfError::Other(e.into())
    }
}

pub type Result<T, E = VfError> = std::result::Result<T, E>;
