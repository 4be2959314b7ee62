//! Phase 2, launch: the prompt file, spawn (stdin fed at once), the
//! owned-process record, the log directory and raw logs, then the marker
//! `running`, then the output pumps. The file writes run on the blocking
//! pool: the runtime's one thread carries every unit's events. A failure
//! before the spawn writes no marker; a failure after it ends the group
//! before returning.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::acp_session::{self, AcpRun};
use super::life::{SessionRecorder, UnitLife};
use super::prepare::Prepared;
use super::pump::{self, Msg, Stream};
use super::redact::Redactor;
use super::{UnitSpec, prompt_file};
use crate::child::{self, Group};
use crate::error::{Reason, Result, VfError};
use crate::owned::{self, ProcRecord};
use crate::sys::OpenExt;

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
    let paths = log_paths(spec, life);
    write_inputs(spec, &mut p).await?;
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
    let logs = life.store().logs_dir(&spec.unit);
    let files = match record_and_logs(spec, record, &record_path, logs, &paths).await {
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
    let scan = life
        .store()
        .path(&spec.unit)
        .parent()
        .and_then(crate::fsutil::defer_stale_scan);
    if let Err(e) = life.start(pid, group.id()).await {
        // Without a durable marker the run could not be resumed: do not run it.
        abort(&group, &mut child, &p).await;
        let _ = owned::release(&record_path);
        return Err(e);
    }
    if let Some(scan) = scan {
        // Not awaited: whatever it does not reach is left to a later run's.
        drop(tokio::task::spawn_blocking(move || scan.run()));
    }
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
/// own directory), when the engine takes them, on the blocking pool (see
/// [`record_and_logs`]). Their contents are moved there, not copied (a
/// prompt may be 16 MiB); nothing reads them after this. The paths stay:
/// both files go when the engine has ended ([`remove_input_files`]).
async fn write_inputs(spec: &UnitSpec, p: &mut Prepared) -> Result<()> {
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
    if prompt.is_none() && config.is_none() {
        return Ok(());
    }
    let (state_dir, unit) = (spec.state_dir.clone(), spec.unit.clone());
    crate::offload::run_vf("writing the engine's input files", move || {
        if let Some((path, contents)) = &prompt {
            prompt_file::write(path, contents).map_err(|e| state_err(path, &e))?;
        }
        if let Some((path, contents)) = &config {
            crate::layout::make_unit_dir(&state_dir, &unit)?;
            prompt_file::write(path, contents).map_err(|e| state_err(path, &e))?;
        }
        Ok(())
    })
    .await
}

fn state_err(what: &Path, e: &dyn std::fmt::Display) -> VfError {
    VfError::state(format!("cannot write {}: {e}", what.display()))
}

/// The attempt's stdout and stderr log paths. `prepare` refused a link at
/// their directory and anything but a regular file at the paths themselves;
/// the directory and the files are made after the spawn, while the engine
/// starts up (on a disk that has just freed many inodes, making one can take
/// half a millisecond).
fn log_paths(spec: &UnitSpec, life: &UnitLife) -> [PathBuf; 2] {
    let attempt = life.marker().attempts;
    crate::marker::logs::STREAMS.map(|s| life.store().log_path(&spec.unit, attempt, s))
}

/// What failed, and whether the record was written by then.
type RecordFailure = (VfError, bool);

/// The owned-process record, then the log directory (checked for links
/// again) and the two raw logs, on the blocking pool: creating files can
/// wait on the file system's journal, and on the runtime's thread that wait
/// would hold up every other unit's events.
async fn record_and_logs(
    spec: &UnitSpec,
    mut record: ProcRecord,
    record_path: &Path,
    logs: PathBuf,
    paths: &[PathBuf; 2],
) -> std::result::Result<[std::fs::File; 2], RecordFailure> {
    let (state_dir, record_path, paths) = (
        spec.state_dir.clone(),
        record_path.to_path_buf(),
        paths.clone(),
    );
    let made = crate::offload::run(move || {
        record
            .save(&record_path)
            .map_err(|e| (state_err(&record_path, &e), false))?;
        real_dir(&state_dir, &logs).map_err(|e| (state_err(&logs, &e), true))?;
        let out = create_log(&paths[0]).map_err(|e| (state_err(&paths[0], &e), true))?;
        let err = create_log(&paths[1]).map_err(|e| (state_err(&paths[1], &e), true))?;
        Ok([out, err])
    })
    .await;
    made.unwrap_or_else(|e| {
        let why = format!("the record and raw logs were not made: {e}");
        // Whether the record was written is not known: release it anyway.
        Err((VfError::state(why), true))
    })
}

async fn spawn_engine(
    spec: &UnitSpec,
    p: &mut Prepared,
    life: &mut UnitLife,
) -> Result<(tokio::process::Child, Group)> {
    let spawned = child::spawn_off_thread(&p.program, &p.inv).await;
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
    let secrets = spec.mcp.as_ref().map(|m| m.secrets()).unwrap_or_default();
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

/// A new raw log, readable by the owner only (it holds the engine's output,
/// whatever the engine echoed); never through a symlink planted in the state
/// dir, and never waiting on a FIFO planted there (a regular file ignores
/// O_NONBLOCK).
fn create_log(path: &Path) -> std::io::Result<std::fs::File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .owner_only()
        .no_follow_no_block()
        .open_checked(path)
}

/// Creates `dir` and checks that no part of it below `root` is a symlink
/// (which could point the logs outside the state dir).
fn real_dir(root: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for d in dir.ancestors().take_while(|d| *d != root) {
        if std::fs::symlink_metadata(d)?.file_type().is_symlink() {
            return Err(std::io::Error::other(format!(
                "{} is a symlink; vf writes only inside its state dir",
                d.display()
            )));
        }
    }
    Ok(())
}
