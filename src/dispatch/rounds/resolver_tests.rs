//! Resolve rounds end to end through `dispatch::run`, on a real repository:
//! unit `u` merges `vf/a` and `vf/b`, which both change `f.txt`. The engine
//! (author and resolver alike) is a script in the role of codex: where
//! `f.txt` holds conflict markers it is the resolver and does what the test
//! asks (nothing once when `codex.skip` exists), else it is the author and
//! writes `u.txt`; each run logs its argv.

use std::path::{Path, PathBuf};

use super::super::nested::{self, Nested};
use crate::dispatch::resolve::Resolved;
use crate::dispatch::{DispatchResult, EventSink, UnitSpec};
use crate::engine::{ConversationEvent, EngineId, RoundNote};
use crate::ground::Reason;
use crate::unit::marker::rounds::{Round, RoundKind, RoundOutcome};
use crate::unit::{LockedUnit, UnitState};
use crate::workspace::{OpenError, git};

const CAPTURE: &str = "fixtures/codex/0.171.0/b_tool.stdout.jsonl";
const SESSION: &str = "01a229fa-c37b-7e73-b0a3-717af64fe884";

fn git_in(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.invalid"];
    all.extend_from_slice(&["-c", "commit.gpgsign=false"]);
    all.extend_from_slice(args);
    git::run(dir, &all).unwrap_or_else(|e| panic!("{e}"))
}

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    state: PathBuf,
}

impl Fixture {
    /// `resolver`: the shell the resolver runs in the worktree.
    fn new(resolver: &str) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (repo, state) = (root.join("repo"), root.join("state"));
        std::fs::create_dir_all(&repo).unwrap();
        git_in(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("f.txt"), "base\n").unwrap();
        git_in(&repo, &["add", "f.txt"]);
        git_in(&repo, &["commit", "-q", "-m", "init"]);
        for dep in ["a", "b"] {
            git_in(
                &repo,
                &["checkout", "-q", "-b", &format!("vf/{dep}"), "main"],
            );
            std::fs::write(repo.join("f.txt"), format!("{dep}\n")).unwrap();
            git_in(&repo, &["commit", "-q", "-am", dep]);
        }
        git_in(&repo, &["checkout", "-q", "main"]);
        let capture = Path::new(env!("CARGO_MANIFEST_DIR")).join(CAPTURE);
        let script = format!(
            "#!/usr/bin/env sh\n\
             if [ \"$1\" = --version ]; then echo 0.171.0; exit 0; fi\n\
             if grep -q '^<<<<<<< ' f.txt 2>/dev/null; then\n\
               echo \"resolver $*\" >> {log}\n\
               if [ -e {skip} ]; then rm {skip}; else {resolver}\n fi\n\
             else\n\
               echo \"author $*\" >> {log}\n echo author > u.txt\n\
             fi\n\
             cat {capture}\n",
            log = root.join("runs.log").display(),
            skip = root.join("codex.skip").display(),
            capture = capture.display(),
        );
        std::fs::write(root.join("codex"), script).unwrap();
        let chmod = std::process::Command::new("chmod")
            .args(["+x"])
            .arg(root.join("codex"))
            .status()
            .unwrap();
        assert!(chmod.success());
        Fixture {
            _tmp: tmp,
            root,
            repo,
            state,
        }
    }

    fn spec(&self) -> UnitSpec {
        let mut ws = crate::workspace::resolve(&self.repo, "u", None, None, "t").unwrap();
        ws.merge = vec!["a".into(), "b".into()];
        let mut r = Resolved::new(
            EngineId::Codex,
            "u".into(),
            self.repo.clone(),
            self.state.clone(),
        );
        r.engine_bin = Some(self.root.join("codex"));
        r.steps.workspace = Some(ws);
        r.loops.conflict = super::super::OnConflict::Resolve {
            engine: EngineId::Codex,
        };
        r.spec("do the task".into(), None)
    }

    fn runs(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.root.join("runs.log")).unwrap_or_default();
        log.lines().map(str::to_string).collect()
    }

    fn user_side(&self) -> (String, String, String) {
        let refs = git_in(
            &self.repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        );
        let others: Vec<&str> = refs
            .lines()
            .filter(|l| !l.starts_with("refs/heads/vf/u "))
            .collect();
        (
            git_in(
                &self.repo,
                &["status", "--porcelain", "--untracked-files=all"],
            ),
            git_in(&self.repo, &["rev-parse", "HEAD"]),
            others.join("\n"),
        )
    }

    fn worktree(&self) -> PathBuf {
        self.state.join("worktrees/u")
    }

    fn marker_rounds(&self) -> Vec<Round> {
        let unit = crate::unit::UnitDir::new(&self.state, "u");
        unit.load_marker().unwrap().unwrap().rounds
    }
}

#[derive(Default)]
struct Notes(Vec<String>);

impl EventSink for Notes {
    fn event(&mut self, _event: &ConversationEvent) {}
    fn warning(&mut self, _message: &str) {}
    fn round(&mut self, note: &RoundNote) {
        let end = note.ended.as_deref().unwrap_or("start");
        self.0
            .push(format!("{} {}/{} {end}", note.kind, note.n, note.of));
    }
}

fn run(spec: UnitSpec) -> (DispatchResult, Vec<String>) {
    let mut notes = Notes::default();
    let res = crate::dispatch::run_blocking(spec, &mut notes).unwrap();
    (res, notes.0)
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git and a shell on PATH; the wine runner CI uses has none"
)]
fn a_resolved_conflict_is_committed_then_the_task_runs() {
    let fx = Fixture::new("printf 'a and b\\n' > f.txt");
    let user = fx.user_side();
    let (res, notes) = run(fx.spec());
    assert_eq!((res.state, res.error.as_deref()), (UnitState::Done, None));
    assert_eq!(notes, ["resolve 1/1 start", "resolve 1/1 done"]);
    let wt = fx.worktree();
    let merge = git_in(&wt, &["log", "--merges", "--format=%s", "-1"]);
    assert_eq!(merge, "vf: merge vf/b into vf/u (resolved by codex)");
    let parents = git_in(&wt, &["rev-list", "--parents", "-n1", "HEAD~1"]);
    let want = ["HEAD~2", "vf/b"]
        .map(|r| git_in(&wt, &["rev-parse", r]))
        .join(" ");
    assert!(parents.ends_with(&want), "{parents} / {want}");
    assert_eq!(
        std::fs::read_to_string(wt.join("f.txt")).unwrap(),
        "a and b\n"
    );
    assert_eq!(git_in(&wt, &["log", "-1", "--format=%s"]), "vf: u");
    let runs = fx.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[0].starts_with("resolver ") && runs[1].starts_with("author "),
        "{runs:?}"
    );
    let rounds = fx.marker_rounds();
    assert_eq!(rounds.len(), 1);
    let r = &rounds[0];
    assert_eq!(
        (r.kind, r.outcome),
        (RoundKind::Resolve, RoundOutcome::Done)
    );
    assert_eq!(r.dependency.as_deref(), Some("b"));
    assert_eq!(
        (r.paths.clone(), r.session_id.as_deref()),
        (vec!["f.txt".to_string()], Some(SESSION))
    );
    assert_eq!(fx.user_side(), user);
}

/// A resolver that does `action` ends the unit as `state`/`reason`, the
/// merge not committed, the author never run, the user's checkout as it was.
fn refused(action: &str, state: UnitState, reason: Reason) -> (Fixture, DispatchResult) {
    let fx = Fixture::new(action);
    let user = fx.user_side();
    let (res, notes) = run(fx.spec());
    assert_eq!(
        (res.state, res.reason),
        (state, Some(reason)),
        "{:?}",
        res.error
    );
    assert_eq!(notes, ["resolve 1/1 start", "resolve 1/1 failed"]);
    assert!(
        fx.runs().iter().all(|r| r.starts_with("resolver ")),
        "{:?}",
        fx.runs()
    );
    assert_eq!(fx.user_side(), user);
    let rounds = fx.marker_rounds();
    assert_eq!(rounds[0].outcome, RoundOutcome::Failed);
    if reason == Reason::MergeConflict {
        let wt = fx.worktree();
        let merges = git_in(&wt, &["log", "--merges", "--format=%s"]);
        assert_eq!(merges, "vf: merge vf/a into vf/u", "only the clean merge");
        assert!(!git::succeeds(
            &wt,
            &["rev-parse", "-q", "--verify", "MERGE_HEAD"]
        ));
        assert_eq!(git_in(&wt, &["status", "--porcelain"]), "");
    }
    (fx, res)
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git and a shell on PATH; the wine runner CI uses has none"
)]
fn markers_left_by_the_resolver_abort_the_merge() {
    let (_fx, res) = refused(":", UnitState::Blocked, Reason::MergeConflict);
    let err = res.error.unwrap();
    assert!(err.contains("f.txt (conflict markers left)"), "{err}");
    assert!(
        err.starts_with("merge conflict: vf/b does not merge into vf/u: f.txt;"),
        "{err}"
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git and a shell on PATH; the wine runner CI uses has none"
)]
fn hostile_resolvers_end_the_unit_with_nothing_committed() {
    let abort = refused(
        "git merge --abort",
        UnitState::Blocked,
        Reason::MergeConflict,
    );
    assert!(
        abort
            .1
            .error
            .unwrap()
            .contains("ended the merge of vf/b itself")
    );
    let own = "git -c user.name=x -c user.email=x@x commit -qam mine";
    let commit = refused(own, UnitState::Blocked, Reason::MergeConflict);
    assert!(commit.1.error.unwrap().contains("moved vf/u itself"));
    let link = refused(
        "rm f.txt; ln -s /etc/passwd f.txt",
        UnitState::Blocked,
        Reason::MergeConflict,
    );
    assert!(
        link.1
            .error
            .unwrap()
            .contains("f.txt (replaced by a symbolic link)")
    );
    let gone = refused(
        "printf 'x\\n' > f.txt; rm .git",
        UnitState::Failed,
        Reason::Workspace,
    );
    assert!(gone.1.error.unwrap().contains("its .git is gone"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs git and a shell on PATH; the wine runner CI uses has none"
)]
fn a_resolve_round_a_crash_interrupted_is_continued_not_restarted() {
    let fx = Fixture::new("printf 'a and b\\n' > f.txt");
    let spec = fx.spec();
    // The state a `kill -9` of vf during the resolver leaves: the merge in
    // progress, the round `running` in the marker, the resolver's nested
    // unit with its session.
    let mut ws_spec = spec.steps.workspace.clone().unwrap();
    ws_spec.keep_conflicts = true;
    let (ws, pending) = match crate::workspace::open(&fx.state, "u", &ws_spec, None) {
        Err(OpenError::Unmerged { workspace, pending }) => (*workspace, *pending),
        other => panic!("{other:?}"),
    };
    let unit = LockedUnit::lock_sync(&fx.state, "u").unwrap();
    let mut marker = crate::unit::marker::Marker::new("u", EngineId::Codex, &fx.repo);
    let mut round = Round::start(RoundKind::Resolve, (1, 1), EngineId::Codex);
    round.unit = Some("resolve-1".into());
    round.dependency = Some(pending.dependency.clone());
    marker.rounds.push(round);
    marker.workspace = Some(ws.clone());
    marker.loop_open = true;
    unit.save_marker_sync(&mut marker).unwrap();
    let first = Nested {
        parent: &spec,
        name: "resolve-1".into(),
        engine: EngineId::Codex,
        model: None,
        prompt: "resolve".into(),
        read_only: false,
        cwd: ws.path.clone(),
        resume: false,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // This first resolver run leaves the markers (the crash came before it ended).
    std::fs::write(fx.root.join("codex.skip"), "").unwrap();
    rt.block_on(nested::run(first, &mut Notes::default()))
        .unwrap();
    drop(unit);
    std::fs::remove_file(fx.root.join("runs.log")).unwrap();

    let (res, notes) = run(spec);
    assert_eq!((res.state, res.error.as_deref()), (UnitState::Done, None));
    assert_eq!(notes, ["resolve 1/1 start", "resolve 1/1 done"]);
    let runs = fx.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[0].starts_with("resolver ") && runs[0].contains(SESSION),
        "resumed: {runs:?}"
    );
    assert!(runs[1].starts_with("author "), "{runs:?}");
    let wt = fx.worktree();
    let merges = git_in(&wt, &["log", "--merges", "--format=%s"]);
    assert_eq!(
        merges,
        "vf: merge vf/b into vf/u (resolved by codex)\nvf: merge vf/a into vf/u"
    );
    let rounds = fx.marker_rounds();
    assert_eq!(rounds.len(), 1, "{rounds:?}");
    assert_eq!(rounds[0].outcome, RoundOutcome::Done);
}
