//! `vf worker` and `vf orchestrate --temporal`'s definitions (clap only;
//! docs/DISTRIBUTED.md). Built with the `temporal` feature (on by default).

use clap::Args;

/// `--task-queue`'s default.
pub const DEFAULT_TASK_QUEUE: &str = "vf";

/// Where the Temporal service is. TLS and API keys come from Temporal's own
/// client configuration (`TEMPORAL_*` variables, config profile).
#[derive(Debug, Args, Clone, Default)]
pub struct TemporalTarget {
    /// Run on Temporal at HOST:PORT (docs/DISTRIBUTED.md).
    #[arg(long, value_name = "HOST:PORT")]
    pub temporal: Option<String>,
    /// Temporal's namespace (default: the client configuration's, else `default`).
    #[arg(long, value_name = "NS", requires = "temporal")]
    pub namespace: Option<String>,
    /// The shared task queue; each worker also polls `Q@<host-id>`.
    #[arg(long, value_name = "Q", requires = "temporal")]
    pub task_queue: Option<String>,
}

/// `vf orchestrate --temporal`'s own flags.
#[derive(Debug, Args, Clone, Default)]
pub struct OrchestrateTemporal {
    #[command(flatten)]
    pub target: TemporalTarget,
    /// Show the live table until the plan ends, then its result (the
    /// default on a terminal).
    #[arg(long, requires = "temporal", conflicts_with = "detach")]
    pub follow: bool,
    /// Print the workflow id and return once the plan is submitted.
    #[arg(long, requires = "temporal")]
    pub detach: bool,
    /// Show a submitted plan's units (as `orchestrate.result`) and return.
    #[arg(long, value_name = "ID", requires = "temporal", conflicts_with_all = ["cancel", "follow", "detach"])]
    pub status: Option<String>,
    /// Cancel a submitted plan: its running units' engines are ended.
    #[arg(long, value_name = "ID", requires = "temporal", conflicts_with_all = ["follow", "detach"])]
    pub cancel: Option<String>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub target: TemporalTarget,
    /// Engines run at once (default: `jobs` in the user config, else 4).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// This worker's host id: its queue is `Q@<host-id>` (default: the host
    /// name and a digest of the state dir; workers sharing a state dir share it).
    #[arg(long, value_name = "ID")]
    pub host_id: Option<String>,
    #[command(flatten)]
    pub state: super::StateDirArg,
}
