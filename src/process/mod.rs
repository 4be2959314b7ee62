//! The process toolkit: how vf starts, bounds and ends the processes it
//! runs. Every child vf starts is contained (`sys::contain`), so it dies
//! with vf; every group vf ends is ended by [`grace`]; every short command
//! (a CLI's `--version`/`--help`, `git`, a `setup`/`verify` step, a
//! notification hook) runs through [`brief`].
//!
//! - [`grace`]: one way to end a group with its grace period (async for a
//!   live child, sync for a recorded group `vf doctor --fix` proves).
//! - [`brief`]: one way to run a child contained with a timeout and
//!   captured tails (sync for probes and git, async for the steps).
//! - [`cli_probe`]: a CLI's `--version` and `--help`, run briefly, and
//!   its version read.
//! - [`version_cache`]: a CLI's version per executable identity, which the
//!   runtime reads without starting the CLI.
//! - [`child`]: the engine's container (spawn in its own group, signal
//!   forwarding, the grace read and checked); [`steps`]: a `setup`/`verify`
//!   command, contained like the engine, with its owned-process record and log;
//! - [`owned`]: owned-process records; [`orphans`]: classifying them and
//!   ending proven orphans (`vf doctor --fix`, `take_over`);
//! - [`binary`]: finding a CLI's executable (`--engine-bin`, `VF_<ENGINE>_BIN`, `PATH`).
//!
//! The signal rules. Written for Unix, where the container is a process
//! group (pgid = the child's pid). On Windows (`sys/windows.rs`,
//! docs/PLATFORMS.md) it is a kill-on-close Job Object the child is put
//! into before it runs; Ctrl-C, Ctrl-Break and the console closing stand
//! for SIGINT, SIGTERM and SIGHUP, the polite stop vf sends is Ctrl-Break
//! (to the child's own console process group), and the kill is the job's
//! termination.
//! - Where signals go. A child never gets the terminal's signals directly:
//!   it leads a group of its own, not the foreground one. SIGINT, SIGTERM,
//!   SIGHUP and SIGQUIT sent to vf while a unit runs are forwarded, as the
//!   same signal, to the engine's whole group (an ACP session gets
//!   `session/cancel` instead), and to a running step's group; vf then
//!   exits 128 + that signal (130, 143, 129, 131).
//! - When vf ends a group itself: its own reasons to stop (stall, wall or
//!   step timeout, a plan's budget, an unwritable raw log, an ACP session
//!   that is done) send SIGTERM to the group.
//! - The grace. One period, `VF_KILL_GRACE_MS` (default 5000 ms,
//!   `child::kill_grace_from_env`), governs every wait: after a signal the
//!   group has one grace to exit before SIGKILL (a second signal to vf
//!   sends SIGKILL at once); after the leader exits, the rest of its group
//!   has one grace to finish and close stdout/stderr before SIGKILL. A
//!   brief command gets no grace: at its timeout its group is killed.
//! - The end. When vf is done with a child its group gets SIGKILL: nothing
//!   of it outlives the run. The leader is not reaped before that, so its
//!   pid keeps naming the group and a signal cannot reach a stranger.
//! - The lifeline. Nor does a group outlive vf: a `kill -9` of vf closes
//!   vf's end of the group's lifeline and its watcher kills the group
//!   (`sys/lifeline.rs`; on Windows the job closes with vf's handle). What
//!   escapes that (a descendant that left the group, a watcher someone
//!   killed) the owned-process record lets `vf doctor --fix` prove and end
//!   ([`grace::end_recorded_group`]).

pub mod binary;
pub mod brief;
pub mod child;
pub mod cli_probe;
pub mod grace;
pub mod orphans;
pub mod owned;
pub mod steps;
pub mod version_cache;

// The domain's surface for the run of a unit (`dispatch`).
pub use binary::resolve_binary;
pub use child::{DEFAULT_KILL_GRACE, Group, Signals, kill_grace_from_env};
pub use grace::KillTimer;
pub use orphans::{Finding, take_over};
pub use owned::{ProcRecord, StepKind};
pub use steps::{Step, StepEnd, StepOwner};
pub use version_cache::{cached_version, read_version};
