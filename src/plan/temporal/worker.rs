//! `vf worker --temporal`: polls the shared queue `Q` (the plans' workflows
//! and unit attempts) and its host's queue `Q@<host-id>` (the exact resumes
//! of sessions it holds), runs at most `jobs` engines at once (a retry of an
//! attempt it still runs attaches to that run), heartbeats at most every
//! [`BEAT_EVERY`] (so a cancel reaches it within that), and on SIGTERM
//! or SIGINT stops polling: each running unit's own dispatch gets the signal
//! too, ends its engine and hands the unit back (`interrupted`, retried by
//! the workflow).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use super::activity::{BEAT_EVERY, BuildJob, UnitActivities};
use super::runs::Runs;
use super::workflow::PlanWorkflow;
use super::{Endpoint, host_queue};
use crate::ground::error::{Result, VfError};

/// A validated `vf worker` request.
pub struct Request {
    pub endpoint: Endpoint,
    /// Engines run at once.
    pub jobs: usize,
    pub state_dir: PathBuf,
    /// This machine and state dir, as its queue names it.
    pub host_id: String,
    pub kill_grace: Duration,
    pub build: Arc<BuildJob>,
}

/// The default host id: the host name and a digest of the state dir (two
/// workers with one state dir share its sessions; two state dirs do not).
pub fn default_host_id(state_dir: &std::path::Path) -> String {
    let host: String = crate::ground::procinfo::hostname()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    let digest = crate::ground::text::sha256_hex(state_dir.to_string_lossy().as_bytes());
    format!("{host}-{}", &digest[..8])
}

/// At most `jobs` attempts taken from each queue (the shared slots bound
/// the engines to `jobs` in all): a worker never hoards what another could run.
fn tuner(jobs: usize) -> TunerHolder {
    let fixed = |n: usize| FixedSizeSlotSupplier::new(n);
    TunerHolder::builder()
        .workflow_task_slot_supplier(fixed(10))
        .activity_task_slot_supplier(fixed(jobs))
        .local_activity_task_slot_supplier(fixed(1))
        .nexus_task_slot_supplier(fixed(1))
        .build()
}

/// Runs until a signal; `ready` is told the queues once both poll.
pub async fn serve(req: Request, ready: impl FnOnce(&str, &str)) -> Result<()> {
    let client = super::connect(&req.endpoint).await?;
    let runtime = Runtime::from_current_tokio(Default::default())
        .map_err(|e| VfError::Other(anyhow::anyhow!("Temporal runtime: {e}")))?;
    let slots = Arc::new(tokio::sync::Semaphore::new(req.jobs));
    let runs = Arc::new(Runs::default());
    let acts = || UnitActivities {
        host: req.host_id.clone(),
        state_dir: req.state_dir.clone(),
        kill_grace: req.kill_grace,
        build: req.build.clone(),
        slots: slots.clone(),
        runs: runs.clone(),
        client: client.clone(),
    };
    let shared_q = req.endpoint.task_queue.clone();
    let host_q = host_queue(&shared_q, &req.host_id);
    let shared = WorkerOptions::new(shared_q.clone())
        .register_workflow::<PlanWorkflow>()
        .map_err(|e| VfError::Other(anyhow::anyhow!("{e}")))?
        .register_activities(acts())
        .tuner(tuner(req.jobs))
        .max_heartbeat_throttle_interval(BEAT_EVERY)
        .build();
    let host = WorkerOptions::new(host_q.clone())
        .register_activities(acts())
        .tuner(tuner(req.jobs))
        .max_heartbeat_throttle_interval(BEAT_EVERY)
        .build();
    let new = |o| Worker::new(&runtime, client.clone(), o);
    let mut shared = new(shared).map_err(|e| VfError::Other(anyhow::anyhow!("{e}")))?;
    let mut host = new(host).map_err(|e| VfError::Other(anyhow::anyhow!("{e}")))?;
    let stops = [shared.shutdown_handle(), host.shutdown_handle()];
    ready(&shared_q, &host_q);
    let mut signals = crate::process::child::Signals::new()?;
    let run = async {
        let (a, b) = tokio::join!(shared.run(), host.run());
        a.and(b)
    };
    tokio::pin!(run);
    tokio::select! {
        r = &mut run => return r.map_err(|e| VfError::Other(anyhow::anyhow!("worker: {e}"))),
        _ = signals.recv() => stops.iter().for_each(|s| s()),
    }
    run.await
        .map_err(|e| VfError::Other(anyhow::anyhow!("worker: {e}")))
}
