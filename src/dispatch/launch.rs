//! Phase 2, launch: the prompt file, spawn (stdin fed at once), the
//! owned-process record, the log directory and raw logs, then the marker
//! `running`, then the output pumps. The file writes run on the blocking
//! pool: the runtime's one thread carries every unit's events. A failure
//! before the spawn writes no marker; a failure after it ends the group
//! before returning.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::UnitSpec;
use super::acp_session::{self, AcpRun};
use super::prepare::Prepared;
use super::pump::{self, Msg, Stream};
use super::redact::Redactor;
use crate::ground::{Reason, Result, VfError};
use crate::process::Group;
use crate::process::ProcRecord;
use crate::process::child;
use crate::process::owned;
use crate::unit::prompt_file;
use crate::unit::{SessionRecorder, UnitLife};

/// A running engine and what reads it.
pub(super) struct Launched {
    pub prepared: Prepared,
    pub child: tokio::process::Child,
    pub group: Group,
    pub record_path: PathBuf,
    pub stdout_log: PathBuf,
    pub stderr_log: PathBuf,
    pub rx: mpsc::Receiver<Msg>,
    pub pumps: [JoinHandle<()>; 2],
    /// vf's own signals, listened for from before the spawn: one that comes
    /// once the `running` marker is out is forwarded, never vf's death.
    pub signals: Option<child::Signals>,
    /// The session of an engine that speaks ACP (its task is `pumps[0]`).
    pub acp: Option<AcpRun>,
}

pub(super) async fn launch(
    spec: &UnitSpec,
    mut p: Prepared,
    life: &mut UnitLife,
) -> Result<Launched> {
    let attempt = life.marker().attempts;
    let paths = log_paths(life);
    write_inputs(life, &mut p).await?;
    let signals = child::Signals::new().ok();
    let (mut child, group) = spawn_engine(spec, &mut p, life).await?;
    // The prompt goes in from a task, so the engine starts up while the record,
    // the logs and the marker are made below. Its output waits in the pipe:
    // the pumps that handle it start only once the `running` marker is durable.
    // An ACP agent's stdin stays open: the session's JSON-RPC goes there.
    let speaks_acp = spec.engine.engine().speaks_acp();
    if !speaks_acp {
        feed_stdin(&mut child, p.inv.stdin.clone());
    }
    let pid = child.id().unwrap_or(0);
    // The owned-process record exists before anything else happens with the child.
    let record_path = owned::record_path(&spec.state_dir, &spec.unit, attempt);
    let record = ProcRecord::new(&spec.unit, attempt, spec.engine.as_str(), pid);
    let made = life.unit().record_and_logs(record, &record_path, &paths);
    let files = match made.await {
        Ok(files) => files,
        Err((e, recorded)) => {
            abort(&group, &mut child, &p).await;
            if recorded {
                let _ = owned::release(&record_path);
            }
            return Err(e);
        }
    };
    // The unit's directory's once-per-process read for stale temporaries
    // waits for the engine's run: the first marker write does not pay it.
    let scan = life.unit().defer_stale_scan();
    if let Err(e) = life.start(pid, group.id()).await {
        // Without a durable marker the run could not be resumed: do not run it.
        abort(&group, &mut child, &p).await;
        let _ = owned::release(&record_path);
        return Err(e);
    }
    scan.start();
    let session = speaks_acp.then(|| (life.recorder(), p.inv.stdin.clone().unwrap_or_default()));
    let (rx, pumps, acp) = start_pumps(spec, &mut child, &paths, files, session);
    let [stdout_log, stderr_log] = paths;
    Ok(Launched {
        prepared: p,
        child,
        group,
        record_path,
        stdout_log,
        stderr_log,
        rx,
        pumps,
        signals,
        acp,
    })
}

/// The prompt file and the unit's MCP config (`engine::mcp`, in the unit's
/// own directory), when the engine takes them, written by the locked unit
/// on the blocking pool. Their contents are moved there, not copied (a
/// prompt may be 16 MiB); nothing reads them after this. The paths stay:
/// both files go when the engine has ended ([`remove_input_files`]).
async fn write_inputs(life: &UnitLife, p: &mut Prepared) -> Result<()> {
    let prompt = p
        .inv
        .prompt_file
        .clone()
        .zip(p.inv.prompt_file_contents.take());
    let config = p
        .inv
        .config_file
        .as_mut()
        .map(|(path, contents)| (path.clone(), std::mem::take(contents)));
    life.unit().write_inputs(prompt, config).await
}

/// The attempt's stdout and stderr log paths. `prepare` refused a link at
/// their directory and anything but a regular file at the paths themselves;
/// the directory and the files are made after the spawn, while the engine
/// starts up (on a disk that has just freed many inodes, making one can take
/// half a millisecond).
fn log_paths(life: &UnitLife) -> [PathBuf; 2] {
    let attempt = life.marker().attempts;
    crate::unit::STREAMS.map(|s| life.unit().dir().log_path(attempt, s))
}

async fn spawn_engine(
    spec: &UnitSpec,
    p: &mut Prepared,
    life: &mut UnitLife,
) -> Result<(tokio::process::Child, Group)> {
    let confine = p.sandbox.as_mut().and_then(|s| s.engine.take());
    let spawned = child::spawn_off_thread(&p.program, &p.inv, confine).await;
    spawned.map_err(|e| {
        remove_input_files(p);
        let err = VfError::not_ready(format!(
            "{}: cannot start {}: {}",
            spec.engine,
            p.program.display(),
            child::explain_spawn_error(&p.program, &e)
        ));
        life.fail_before_spawn(Reason::Spawn, err)
    })
}

/// What makes the session's id durable, and the prompt, for an ACP agent.
type Session = Option<(SessionRecorder, String)>;

/// One reader per stream, both feeding the supervisor's channel; for an ACP
/// agent, its session in place of the stdout reader.
fn start_pumps(
    spec: &UnitSpec,
    child: &mut tokio::process::Child,
    paths: &[PathBuf; 2],
    files: [std::fs::File; 2],
    session: Session,
) -> (mpsc::Receiver<Msg>, [JoinHandle<()>; 2], Option<AcpRun>) {
    let mut secrets = spec.mcp.as_ref().map(|m| m.secrets()).unwrap_or_default();
    // An account's variables may hold keys: never in a log nor an event.
    if let Some(a) = &spec.quota.account {
        secrets.extend(a.env.iter().map(|(_, v)| v.clone()));
    }
    let redactor = Arc::new(Redactor::with_secrets(&spec.redact, &secrets));
    let (tx, rx) = mpsc::channel::<Msg>(256);
    let err = child.stderr.take().expect("stderr is piped");
    let [out_file, err_file] = files;
    let name = |i: usize| paths[i].display().to_string();
    let (out_task, acp) = match session {
        Some((recorder, prompt)) => {
            let (run, task) = acp_session::start(
                spec,
                child,
                out_file,
                redactor.clone(),
                recorder,
                prompt,
                tx.clone(),
            );
            (task, Some(run))
        }
        None => {
            let out = child.stdout.take().expect("stdout is piped");
            let task = tokio::spawn(pump::pump(
                out,
                out_file,
                name(0),
                redactor.clone(),
                Stream::Stdout,
                tx.clone(),
            ));
            (task, None)
        }
    };
    let pumps = [
        out_task,
        tokio::spawn(pump::pump(
            err,
            err_file,
            name(1),
            redactor,
            Stream::Stderr,
            tx,
        )),
    ];
    (rx, pumps, acp)
}

/// stdin: the prompt, then EOF. Never leave a pipe open for the child to wait on.
/// Written by a task, which runs as soon as launch first waits (for the
/// durable `running` marker): the engine starts reading its prompt meanwhile.
fn feed_stdin(child: &mut tokio::process::Child, text: Option<String>) {
    let Some(mut stdin) = child.stdin.take() else {
        return;
    };
    let bytes = text.unwrap_or_default().into_bytes();
    tokio::spawn(async move {
        let _ = stdin.write_all(&bytes).await;
        let _ = stdin.shutdown().await;
    });
}

async fn abort(group: &Group, child: &mut tokio::process::Child, p: &Prepared) {
    group.kill();
    let _ = child.wait().await;
    remove_input_files(p);
}

/// The prompt file and the MCP config (it holds the servers' env and header
/// values): neither outlives the engine's run.
pub(super) fn remove_input_files(p: &Prepared) {
    let config = p.inv.config_file.as_ref().map(|(path, _)| path);
    for path in p.inv.prompt_file.iter().chain(config) {
        prompt_file::remove(path);
    }
}
