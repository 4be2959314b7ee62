//! `vf orchestrate --temporal`: the plan submitted as one workflow whose id
//! is derived from the plan's name and content (the same plan again attaches
//! to the running workflow), then followed, shown or cancelled.

use std::time::Duration;

use temporalio_client::{
    Client, WorkflowCancelOptions, WorkflowDescribeOptions, WorkflowGetResultOptions,
    WorkflowIdConflictPolicy, WorkflowIdReusePolicy, WorkflowQueryOptions, WorkflowStartOptions,
};

use super::payload::{PlanInput, Progress, over_cap};
use super::workflow::PlanWorkflow;
use crate::ground::error::{Result, VfError};

/// The workflow id of a plan: its file's stem and a digest of its path and
/// units as resolved (not of `--jobs` or other tuning: the same plan
/// submitted again with another `--jobs` attaches to the running one).
pub fn workflow_id(input: &PlanInput) -> Result<String> {
    let stem: String = input
        .plan
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    let text = serde_json::to_vec(&(&input.plan, &input.units)).map_err(anyhow::Error::from)?;
    let digest = crate::ground::text::sha256_hex(&text);
    Ok(format!("vf-plan-{stem}-{}", &digest[..16]))
}

/// Whether the plan's workflow was started now, was already running, or
/// completed before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    Started,
    /// To the run of this plan that is going on.
    Attached,
    /// This plan ran to completion before: that run is shown.
    Completed,
}

/// How long a query waits for a worker to answer. A workflow that no worker
/// serves (none polls its queue, or it ended while its workers are gone)
/// would otherwise hold the caller for as long as the server lets it wait.
const QUERY_WAIT: Duration = Duration::from_secs(5);

/// Refuses a plan whose input would be over Temporal's payload cap.
pub fn check_size(input: &PlanInput) -> Result<()> {
    for u in &input.units {
        if let Some(n) = over_cap(u) {
            return Err(VfError::usage(format!(
                "unit {:?}: its prompt and keys are {n} bytes; one Temporal payload holds at most {} (vf does not cut it)",
                u.name,
                super::payload::PAYLOAD_CAP
            )));
        }
    }
    if let Some(n) = over_cap(input) {
        return Err(VfError::usage(format!(
            "the plan is {n} bytes as a workflow input; one Temporal payload holds at most {} (split the plan, or move long prompts out)",
            super::payload::PAYLOAD_CAP
        )));
    }
    Ok(())
}

/// Starts the plan's workflow, or attaches to the one already running or
/// already ended (a plan that completed is shown, not run again; one that
/// failed, was cancelled or terminated may run again, its done units kept).
pub async fn submit(client: &Client, input: PlanInput) -> Result<(String, Submitted)> {
    check_size(&input)?;
    let id = workflow_id(&input)?;
    let queue = input.task_queue.clone();
    let running = describe_running(client, &id).await;
    let opts = WorkflowStartOptions::new(queue, id.clone())
        .id_conflict_policy(WorkflowIdConflictPolicy::UseExisting)
        .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicateFailedOnly)
        .build();
    let started = client.start_workflow(PlanWorkflow::run, input, opts).await;
    match started {
        Ok(_) if !running => Ok((id, Submitted::Started)),
        Ok(_) => Ok((id, Submitted::Attached)),
        // It completed: its id is taken for good; show that run.
        Err(e) => match exists(client, &id).await {
            true => Ok((id, Submitted::Completed)),
            false => Err(VfError::not_ready(format!(
                "cannot start workflow {id}: {e}"
            ))),
        },
    }
}

async fn exists(client: &Client, id: &str) -> bool {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    h.describe(WorkflowDescribeOptions::default()).await.is_ok()
}

async fn describe_running(client: &Client, id: &str) -> bool {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    match h.describe(WorkflowDescribeOptions::default()).await {
        Ok(d) => d.status() == temporalio_client::WorkflowExecutionStatus::Running,
        Err(_) => false,
    }
}

/// The plan's rows as the workflow has them now, if a worker answers
/// within [`QUERY_WAIT`].
pub async fn progress(client: &Client, id: &str) -> Result<Progress> {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    let asked = h.query(PlanWorkflow::progress, (), WorkflowQueryOptions::default());
    match tokio::time::timeout(QUERY_WAIT, asked).await {
        Ok(answer) => answer.map_err(|e| VfError::usage(format!("workflow {id}: {e}"))),
        Err(_) => Err(VfError::not_ready(format!(
            "workflow {id}: no vf worker answered its query within {} s",
            QUERY_WAIT.as_secs()
        ))),
    }
}

/// `--status`: a running workflow's rows from its query; an ended one's
/// from its result (no worker needed), else, cancelled or failed, as they
/// last stood, from a query.
pub async fn status(client: &Client, id: &str) -> Result<Progress> {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    let d = h
        .describe(WorkflowDescribeOptions::default())
        .await
        .map_err(|e| VfError::usage(format!("workflow {id}: {e}")))?;
    if d.status() == temporalio_client::WorkflowExecutionStatus::Running {
        return progress(client, id).await.map_err(|_| {
            VfError::not_ready(format!(
                "workflow {id} is running, but no vf worker answered its query: is one polling task queue {:?}?",
                d.task_queue()
            ))
        });
    }
    let r = h.get_result(WorkflowGetResultOptions::default()).await;
    ended(client, id, r).await
}

/// An ended workflow's rows: its result, or, cancelled or failed, its rows
/// as they last stood.
async fn ended<E: std::fmt::Display>(
    client: &Client,
    id: &str,
    r: std::result::Result<Progress, E>,
) -> Result<Progress> {
    match r {
        Ok(p) => Ok(p),
        Err(e) => progress(client, id).await.map_err(|_| {
            VfError::Other(anyhow::anyhow!("workflow {id} ended without its rows: {e}"))
        }),
    }
}

/// Polls the rows until the workflow ends; `seen` gets each new state. A
/// query in flight never holds up the end: the two race.
pub async fn follow(
    client: &Client,
    id: &str,
    mut seen: impl FnMut(&Progress),
) -> Result<Progress> {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    let result = h.get_result(WorkflowGetResultOptions::default());
    tokio::pin!(result);
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    loop {
        let poll = async {
            ticker.tick().await;
            progress(client, id).await
        };
        tokio::select! {
            r = &mut result => return match r {
                Err(e) if !reachable(client, id).await => Err(lost(id, e)),
                r => ended(client, id, r).await,
            },
            p = poll => {
                if let Ok(p) = p {
                    seen(&p);
                }
            }
        }
    }
}

/// How long a follower asks whether the server is still there.
const REACH_WAIT: Duration = Duration::from_secs(10);

/// The server answers about the workflow (whatever it says).
async fn reachable(client: &Client, id: &str) -> bool {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    let asked = h.describe(WorkflowDescribeOptions::default());
    matches!(tokio::time::timeout(REACH_WAIT, asked).await, Ok(Ok(_)))
}

/// The server went away while a follower waited for the plan's end: it
/// cannot be reached (exit 3), which is no bug of vf's.
fn lost(id: &str, e: impl std::fmt::Display) -> VfError {
    VfError::not_ready(format!(
        "lost Temporal while following workflow {id} ({e}); the rows above are its last known state; \
         `vf orchestrate --temporal ADDRESS --status {id}` shows it once the server is back"
    ))
}

/// Requests the workflow's cancellation (its running units' engines are ended).
pub async fn cancel(client: &Client, id: &str) -> Result<()> {
    let h = client.get_workflow_handle::<PlanWorkflow>(id.to_string());
    h.cancel(WorkflowCancelOptions::default())
        .await
        .map_err(|e| VfError::usage(format!("cannot cancel workflow {id}: {e}")))
}
