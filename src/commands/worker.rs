//! `vf worker --temporal HOST:PORT`: resolve the flags, then serve until a
//! signal (the core is `vf::temporal::worker`).

use std::sync::Arc;

use super::stdio::eprint_line;
use crate::cli::{DEFAULT_JOBS, DEFAULT_TASK_QUEUE, WorkerArgs};
use crate::ground::error::{Result, VfError};
use crate::plan::scheduler::Job;
use crate::plan::temporal::{self, Endpoint, worker};

pub fn run(args: &WorkerArgs) -> Result<i32> {
    let cfg = crate::plan::config::load()?;
    let Some(address) = args.target.temporal.clone() else {
        return Err(VfError::usage("vf worker needs --temporal HOST:PORT"));
    };
    let task_queue = args
        .target
        .task_queue
        .clone()
        .unwrap_or_else(|| DEFAULT_TASK_QUEUE.into());
    temporal::check_queue(&task_queue)?;
    let jobs = args.jobs.or(cfg.jobs).unwrap_or(DEFAULT_JOBS);
    if jobs == 0 {
        return Err(VfError::usage("--jobs must be at least 1"));
    }
    let cwd = std::env::current_dir()?;
    let (state_dir, _) = super::config::state_dir_of(args.state.state_dir.as_deref(), &cwd, &cfg)?;
    std::fs::create_dir_all(&state_dir)
        .map_err(|e| VfError::state(format!("cannot create {}: {e}", state_dir.display())))?;
    let host_id = match &args.host_id {
        Some(h) => {
            crate::ground::names::check("host id", h).map_err(VfError::usage)?;
            h.clone()
        }
        None => worker::default_host_id(&state_dir),
    };
    let req = worker::Request {
        endpoint: Endpoint {
            address,
            namespace: args.target.namespace.clone(),
            task_queue,
        },
        jobs,
        state_dir: state_dir.clone(),
        host_id,
        kill_grace: crate::process::child::kill_grace_from_env()?,
        build: Arc::new(move |u, engine| build_job(u, engine, &cfg.accounts)),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    rt.block_on(worker::serve(req, |shared, host| {
        eprint_line(format_args!(
            "vf worker: polling {shared} and {host}; state in {}",
            state_dir.display()
        ));
    }))?;
    eprint_line(format_args!("vf worker: stopped"));
    Ok(0)
}

/// A plan unit's job on this worker, as `vf orchestrate` builds it, on the
/// accounts this worker's user config declares (credentials are a machine's:
/// a unit's `account` must be declared here too).
fn build_job(
    mut u: crate::plan::PlanUnit,
    engine: crate::engine::EngineId,
    accounts: &[crate::quota::Account],
) -> Result<Job> {
    crate::engine::options::check(engine.engine().spec(), &u.run_options())
        .map_err(|e| VfError::usage(format!("unit {:?}: {e}", u.name)))?;
    if let Some(pin) = &u.quota.rule.pinned
        && !accounts
            .iter()
            .any(|a| a.engine == engine && &a.name == pin)
    {
        return Err(VfError::usage(format!(
            "unit {:?} pins account {pin:?} of {engine}, which this worker's user config does not declare",
            u.name
        )));
    }
    u.quota.accounts = accounts.to_vec();
    Ok(Job {
        steps: crate::dispatch::resolve::plan_steps(u.step_keys())?,
        engine,
        attachments: Vec::new(),
        origins: None,
        // A Temporal worker's units are top-level: the worker is no
        // engine's child, whoever started the workflow.
        lineage: crate::unit::lineage::Lineage::top(),
        plan: u,
    })
}
