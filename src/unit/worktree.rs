//! The locked unit's worktree (`worktrees/<unit>`, docs/WORKSPACES.md):
//! opened, its path guards' baseline and check, sealed (the commit of its
//! leftovers), pushed. git can take a while (a large checkout, a merge), so
//! each runs on the blocking pool, and the plan's other units keep
//! streaming meanwhile.

use std::path::PathBuf;

use super::LockedUnit;
use crate::ground::error::{Result, VfError};
use crate::workspace::guard::{Baseline, Changes};
use crate::workspace::{
    self, CommitInfo, OpenError, Opened, SealError, Sealed, Workspace, WorkspaceSpec,
};

/// A worktree as a run left it, for the steps after the engine.
pub struct Worktree {
    pub workspace: Workspace,
    /// The git directory the worktree was opened with (`None`: not known).
    pub git_dir: Option<PathBuf>,
}

/// The one hop of the worktree's git work.
async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    crate::ground::offload::run(f)
        .await
        .map_err(|e| VfError::Other(anyhow::anyhow!("workspace task failed: {e}")))
}

impl LockedUnit {
    /// Creates or reuses the unit's worktree (`previous`: the one its
    /// marker names).
    pub async fn open_workspace(
        &self,
        spec: WorkspaceSpec,
        previous: Option<Workspace>,
    ) -> Result<std::result::Result<Opened, OpenError>> {
        let dir = self.dir.clone();
        off_thread(move || workspace::open(dir.state_dir(), dir.name(), &spec, previous.as_ref()))
            .await
    }

    /// The repository at `cwd` before the engine runs, for the path guards
    /// (`exempt_dirty`: in a plain repository what is dirty already is).
    pub async fn guard_baseline(
        &self,
        cwd: PathBuf,
        exempt_dirty: bool,
    ) -> Result<std::result::Result<Baseline, String>> {
        let state_dir = self.state_dir().to_path_buf();
        off_thread(move || workspace::guard::baseline(&cwd, &state_dir, exempt_dirty)).await
    }

    /// What the run changed since `baseline`. In a worktree that is not
    /// vf's any more no git runs: nothing is reported (sealing says why).
    pub async fn guard_changes(
        &self,
        baseline: Baseline,
        worktree: Option<Worktree>,
    ) -> Result<std::result::Result<Changes, String>> {
        off_thread(move || {
            if let Some(w) = &worktree {
                let ws = &w.workspace;
                if workspace::prove(&ws.path, Some(&ws.branch), w.git_dir.as_deref()).is_err() {
                    return Ok(Changes::default());
                }
            }
            baseline.changed_by_run()
        })
        .await
    }

    /// Ends the run in its worktree: its leftovers committed when `commit`
    /// (by `engine`, in `session`), the workspace's head and changes read.
    pub async fn seal_worktree(
        &self,
        w: Worktree,
        (engine, session): (&'static str, Option<String>),
        commit: bool,
    ) -> Result<Sealed> {
        let unit = self.name().to_string();
        off_thread(move || {
            let info = CommitInfo {
                unit: &unit,
                engine,
                session: session.as_deref(),
            };
            workspace::finish(&w.workspace, w.git_dir.as_deref(), &info, commit)
        })
        .await
    }

    /// Pushes the worktree's branch to `remote`.
    pub async fn push_worktree(
        &self,
        w: Worktree,
        remote: String,
    ) -> Result<std::result::Result<(), SealError>> {
        off_thread(move || workspace::remote::push(&w.workspace, w.git_dir.as_deref(), &remote))
            .await
    }
}
