//! The ground floor: pure helpers with no vf state, below every domain but
//! `sys` (they import only each other and the platform layer).
//!
//! - `error`: `VfError`, the typed `Reason`, the one exit-code table (docs/CLI.md);
//! - `env`: `EnvVars`, every environment variable vf reads or sets (docs/CLI.md's table);
//! - `fsutil`: durable writes (temporary, fsync, rename, fsync of the directory),
//!   crash leftovers, state-file reads that never block nor follow a link, files a
//!   user names (`fsutil/user_file.rs`: a regular file replaced, a FIFO or device
//!   streamed, a link never replaced);
//! - `held`: `HeldBy`, what holds an engine's account (a quota hold, as data);
//! - `names`: safe file and unit names;
//! - `offload`: file work moved onto tokio's blocking pool, and the rule for a task
//!   that did not finish;
//! - `procinfo`: process identity (pid, start time, boot id), read once per process;
//! - `state`: finding the state dir (upwards, like `.git`) and the git work tree;
//! - `text`: cuts on character boundaries, `visible`, `Tail`/`ANSWER_MAX`, `sha256_hex`;
//! - `tls`: HTTPS for the judge and Temporal (rustls, graviola, Mozilla's roots);
//! - `version`: version numbers.

pub mod env;
pub mod error;
pub mod fsutil;
pub mod held;
pub mod names;
pub mod offload;
pub mod procinfo;
pub mod state;
pub mod text;
pub mod tls;
pub mod version;

// The domain's surface for the run of a unit (`dispatch`).
pub use env::EnvVars;
pub use error::{Reason, Result, VfError};
pub use fsutil::read_no_follow;
pub use text::{ANSWER_MAX, strip_ansi};
pub use version::Version;
