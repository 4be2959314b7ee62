//! Each tool as a `vf` subprocess, and the calls in flight: the units this
//! server runs, so `cancel` and a client's `notifications/cancelled` can end
//! them and stdin's EOF ends the ones whose call waits.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::Settings;
use super::progress::Progress;
use super::request::{self, DispatchReq, OrchestrateReq, ResumeReq};
use super::run::{self, ok, outcome, vf_error};
use crate::ground::error::{Result, VfError};
use crate::unit::lineage::{self, Lineage};

/// What the handler hands a call: its progress (when the client asked) and
/// the client's cancel of it.
pub struct Call {
    pub progress: Option<Progress>,
    pub cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
}

/// A `vf` child running a unit.
struct Flight {
    pid: u32,
    /// Its call waits for it: stdin's EOF ends it.
    waited: bool,
}

pub struct Tools {
    s: std::sync::Arc<Settings>,
    flights: Mutex<HashMap<String, Flight>>,
    /// Set at stdin's EOF.
    closing: watch::Sender<bool>,
    /// How many `vf` children of waiting calls are still running.
    waiting: watch::Sender<usize>,
    seq: AtomicU64,
}

impl Tools {
    pub fn new(s: Settings) -> Tools {
        Tools {
            s: std::sync::Arc::new(s),
            flights: Mutex::new(HashMap::new()),
            closing: watch::channel(false).0,
            waiting: watch::channel(0).0,
            seq: AtomicU64::new(1),
        }
    }

    fn flights(&self) -> std::sync::MutexGuard<'_, HashMap<String, Flight>> {
        self.flights.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn call(
        self: std::sync::Arc<Self>,
        name: &str,
        args: &Map<String, Value>,
        call: Call,
    ) -> CallToolResult {
        if *self.closing.borrow() {
            return run::tool_error("the server is shutting down", "interrupted", 143);
        }
        let r = match name {
            "dispatch" => self.dispatch(args, call).await,
            "resume" => self.resume(args, call).await,
            "status" => self.status(args).await,
            "result" => self.result(args).await,
            "events" => self.events(args).await,
            "cancel" => self.cancel(args),
            "orchestrate" => self.orchestrate(args, call).await,
            "report" => self.report().await,
            _ => Err(VfError::usage(format!("no tool named {name:?}"))),
        };
        r.unwrap_or_else(|e| vf_error(&e))
    }

    /// The depth a new unit would have, refused over `--max-depth`.
    fn check_depth(&self) -> Result<Lineage> {
        let l = Lineage::of_env()?;
        if l.depth > self.s.max_depth {
            return Err(VfError::usage(format!(
                "depth {} is over this server's --max-depth {} (the caller is unit {:?} at depth {})",
                l.depth,
                self.s.max_depth,
                l.parent.as_deref().unwrap_or(""),
                l.depth - 1
            )));
        }
        Ok(l)
    }

    /// `<state>/mcp/`, private: the prompts, schemas and plans handed to a `vf`.
    fn private_file(&self, what: &str, text: &str) -> Result<tempfile::TempPath> {
        use std::io::Write;
        let dir = self.s.state_dir.join("mcp");
        let err = |e: std::io::Error| VfError::state(format!("{}: {e}", dir.display()));
        if !dir.is_dir() {
            std::fs::create_dir_all(&self.s.state_dir).map_err(err)?;
            crate::sys::create_private_dir(&dir).map_err(err)?;
        }
        let mut f = tempfile::Builder::new()
            .prefix(what)
            .tempfile_in(&dir)
            .map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)?;
        Ok(f.into_temp_path())
    }

    async fn dispatch(
        self: std::sync::Arc<Self>,
        args: &Map<String, Value>,
        call: Call,
    ) -> Result<CallToolResult> {
        let mut r: DispatchReq = request::typed(args)?;
        let lineage = self.check_depth()?;
        if let Some(p) = &lineage.parent {
            r.max_cost = self.parents_budget(p, r.max_cost)?;
        }
        if let Some(u) = &r.unit {
            crate::ground::names::check("unit name", u)?;
        }
        let s = self.s.clone();
        let name = r.engine.clone();
        let engine = tokio::task::spawn_blocking(move || request::engine_of(&name, &s))
            .await
            .map_err(|e| VfError::state(format!("readiness: {e}")))??;
        // Every check before the first write: the argv with a planned schema path.
        let planned = r.summary_schema.as_ref().map(|_| PathBuf::from("schema"));
        request::dispatch_argv(&r, engine, r.unit.as_deref(), planned.as_deref(), &self.s)?;
        let unit = match (&r.unit, &lineage.parent) {
            (Some(u), _) => u.clone(),
            (None, Some(p)) => lineage::next_child_name(&self.s.state_dir, p)?,
            (None, None) => self.fresh_name(engine.as_str()),
        };
        let schema = match &r.summary_schema {
            Some(v) => Some(self.private_file("schema-", &v.to_string())?),
            None => None,
        };
        let mut argv = request::dispatch_argv(&r, engine, Some(&unit), schema.as_deref(), &self.s)?;
        argv.push("--output=jsonl".into());
        let files: Vec<tempfile::TempPath> = schema.into_iter().collect();
        self.start(
            unit,
            argv,
            Some(r.prompt),
            r.wait.unwrap_or(true),
            call,
            files,
            "dispatch.result",
        )
        .await
    }

    /// What is left of the parent's own cap (its `--max-cost`, less what
    /// its descendants spent: `unit::lineage::budget_left`): none left is a
    /// refusal (reason `budget`), and a cap the call or the server asks for
    /// is lowered to it. A parent without a cap changes nothing.
    fn parents_budget(&self, parent: &str, asked: Option<f64>) -> Result<Option<f64>> {
        let state = &self.s.state_dir;
        let Some(left) = lineage::budget_left(state, parent) else {
            return Ok(asked);
        };
        if left <= 0.0 {
            return Err(VfError::Refused {
                reason: crate::ground::error::Reason::Budget,
                error: Box::new(VfError::usage(format!(
                    "unit {parent:?} has spent its budget (its --max-cost) on its children"
                ))),
            });
        }
        Ok(asked.or(self.s.max_cost).map(|c| c.min(left)))
    }

    /// A unit name for a call that gave none and has no parent: vf's usual
    /// `<engine>-<secs>-<pid>` and a count, so two calls never share one.
    fn fresh_name(&self, engine: &str) -> String {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("{engine}-{secs}-{}-{n}", std::process::id())
    }

    async fn resume(
        self: std::sync::Arc<Self>,
        args: &Map<String, Value>,
        call: Call,
    ) -> Result<CallToolResult> {
        let r: ResumeReq = request::typed(args)?;
        crate::ground::names::check("unit name", &r.unit)?;
        self.check_depth()?;
        request::resume_argv(&r, None, &self.s)?;
        let prompt = match &r.prompt {
            Some(p) => Some(self.private_file("prompt-", p)?),
            None => None,
        };
        let mut argv = request::resume_argv(&r, prompt.as_deref(), &self.s)?;
        argv.insert(1, "--output=jsonl".into());
        let files: Vec<tempfile::TempPath> = prompt.into_iter().collect();
        let unit = r.unit.clone();
        self.start(
            unit,
            argv,
            None,
            r.wait.unwrap_or(true),
            call,
            files,
            "dispatch.result",
        )
        .await
    }

    /// Runs a unit's `vf`: to its end when the call waits, else in the
    /// background (`{unit, state: "running"}` at once, after the spawn).
    #[allow(clippy::too_many_arguments)]
    async fn start(
        self: std::sync::Arc<Self>,
        unit: String,
        argv: Vec<String>,
        stdin: Option<String>,
        wait: bool,
        call: Call,
        files: Vec<tempfile::TempPath>,
        result_kind: &str,
    ) -> Result<CallToolResult> {
        if self.flights().contains_key(&unit) {
            return Err(VfError::state(format!(
                "unit {unit:?} is already running under this server"
            )));
        }
        let child = run::spawn(&self.s, &argv, stdin, !wait)?;
        let pid = child.id().unwrap_or(0);
        self.flights()
            .insert(unit.clone(), Flight { pid, waited: wait });
        if !wait {
            let me = self.clone();
            let u = unit.clone();
            tokio::spawn(async move {
                let mut child = child;
                let _ = child.wait().await;
                drop(files);
                me.flights().remove(&u);
            });
            return Ok(ok(json!({"unit": unit, "state": "running"})));
        }
        self.waiting.send_modify(|n| *n += 1);
        let mut closing = self.closing.subscribe();
        let stop = async move {
            tokio::select! {
                _ = call.cancelled => {}
                _ = closing.wait_for(|c| *c) => {}
            }
        };
        let o = run::finish(child, call.progress, stop).await;
        drop(files);
        self.flights().remove(&unit);
        self.waiting.send_modify(|n| *n -= 1);
        Ok(outcome(o, Some(result_kind)))
    }

    /// A short `vf` command run to its end; its whole stdout as JSON.
    async fn short(&self, argv: Vec<String>) -> Result<(i32, Option<Value>, String)> {
        let child = run::spawn(&self.s, &argv, None, false)?;
        let o = run::finish(child, None, std::future::pending()).await;
        Ok((o.code, o.whole, o.stderr_last))
    }

    fn short_result(code: i32, v: Option<Value>, err: String) -> CallToolResult {
        match (code, v) {
            (0, Some(v)) => ok(v),
            (code, _) => outcome(
                run::Outcome {
                    code,
                    last: None,
                    whole: None,
                    rows: vec![],
                    stderr_last: err,
                },
                None,
            ),
        }
    }

    async fn status(&self, args: &Map<String, Value>) -> Result<CallToolResult> {
        let mut argv = vec!["status".to_string(), "--json".to_string()];
        if let Some(u) = args.get("unit").and_then(Value::as_str) {
            crate::ground::names::check("unit name", u)?;
            argv.extend(["--".to_string(), u.to_string()]);
        }
        let (code, v, err) = self.short(argv).await?;
        // MCP's structured content is an object: the list goes under `units`.
        let v = v.map(|v| {
            if v.is_object() {
                v
            } else {
                json!({"units": v})
            }
        });
        Ok(Tools::short_result(code, v, err))
    }

    /// A unit's latest result: its status record (docs/MCP.md, "result").
    async fn result(&self, args: &Map<String, Value>) -> Result<CallToolResult> {
        let u = args.get("unit").and_then(Value::as_str).unwrap_or_default();
        crate::ground::names::check("unit name", u)?;
        let argv = vec!["status".into(), "--json".into(), "--".into(), u.to_string()];
        let (code, v, err) = self.short(argv).await?;
        let v = v.map(|v| match v {
            Value::Array(mut a) if a.len() == 1 => a.remove(0),
            v => v,
        });
        let v = v.map(|v| with_answer(v, &self.s.state_dir));
        Ok(Tools::short_result(code, v, err))
    }

    fn cancel(&self, args: &Map<String, Value>) -> Result<CallToolResult> {
        let u = args.get("unit").and_then(Value::as_str).unwrap_or_default();
        crate::ground::names::check("unit name", u)?;
        let pid = self.flights().get(u).map(|f| f.pid);
        let (pid, by) = match pid {
            Some(pid) => (pid, "this server"),
            None => (proven_owner(&self.s.state_dir, u)?, "another vf"),
        };
        let sent = crate::sys::signal_child(pid, crate::sys::Sig::Terminate)
            .map_err(|e| VfError::state(format!("cancel {u}: {e}")))?;
        Ok(ok(
            json!({"unit": u, "signalled": sent, "pid": pid, "runBy": by}),
        ))
    }

    async fn orchestrate(
        self: std::sync::Arc<Self>,
        args: &Map<String, Value>,
        call: Call,
    ) -> Result<CallToolResult> {
        let r: OrchestrateReq = request::typed(args)?;
        self.check_depth()?;
        let (path, files) = match (&r.plan, &r.plan_path) {
            (Some(text), _) => {
                request::check_plan(text, &self.s)?;
                let f = self.private_file("plan-", text)?;
                (f.to_path_buf(), vec![f])
            }
            (None, Some(p)) => {
                let real = request::plan_inside(p, &self.s)?;
                let text = std::fs::read_to_string(&real)
                    .map_err(|e| VfError::usage(format!("plan_path {p:?}: {e}")))?;
                request::check_plan(&text, &self.s)?;
                (real, vec![])
            }
            (None, None) => return Err(VfError::usage("give plan or plan_path")),
        };
        let argv = request::orchestrate_argv(&path, &r, &self.s)?;
        let unit = format!("plan:{}", path.display());
        self.start(
            unit,
            argv,
            None,
            r.wait.unwrap_or(true),
            call,
            files,
            "orchestrate.result",
        )
        .await
    }

    async fn report(&self) -> Result<CallToolResult> {
        let page = self.s.state_dir.join("report.html");
        let argv = vec!["report".to_string(), format!("--output={}", page.display())];
        let (code, _, err) = self.short(argv).await?;
        if code != 0 {
            return Ok(Tools::short_result(code, None, err));
        }
        Ok(ok(json!({"path": page})))
    }

    /// stdin's EOF seen: no new call; the waited units' `vf`s are SIGTERMed.
    pub fn closing(&self) {
        self.closing.send_replace(true);
    }

    /// stdin's EOF: see [`super::Server::shut_down`].
    pub async fn shut_down(&self) {
        self.closing();
        let detached: Vec<String> = self
            .flights()
            .iter()
            .filter(|(_, f)| !f.waited)
            .map(|(u, _)| u.clone())
            .collect();
        for u in detached {
            tracing::info!("unit {u} keeps running (its call did not wait)");
        }
        let mut w = self.waiting.subscribe();
        let _ = w.wait_for(|n| *n == 0).await;
    }

    async fn events(&self, args: &Map<String, Value>) -> Result<CallToolResult> {
        let u = args.get("unit").and_then(Value::as_str).unwrap_or_default();
        crate::ground::names::check("unit name", u)?;
        let after = args.get("after").and_then(Value::as_u64).unwrap_or(0) as usize;
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(200) as usize;
        let (state, log) = log_of(&self.s.state_dir, u)?;
        let Some((log, engine, version)) = log else {
            return Ok(ok(
                json!({"unit": u, "state": state, "events": [], "next": after}),
            ));
        };
        let mut argv = vec![
            "replay".to_string(),
            format!("--cli={engine}"),
            "--output=jsonl".into(),
        ];
        argv.extend(version.map(|v| format!("--cli-version={v}")));
        argv.extend(["--".to_string(), log.display().to_string()]);
        let child = run::spawn(&self.s, &argv, None, false)?;
        let o = run::finish(child, None, std::future::pending()).await;
        let rows: Vec<Value> = o.rows.into_iter().skip(after).take(limit).collect();
        let next = after + rows.len();
        Ok(ok(
            json!({"unit": u, "state": state, "events": rows, "next": next}),
        ))
    }
}

/// A unit's latest raw log, its engine and the engine's version.
type RawLog = (PathBuf, String, Option<String>);

/// The unit's state and latest raw log, engine and version, from its
/// marker loaded as vf loads one (its log paths proven the unit's own).
fn log_of(state_dir: &Path, unit: &str) -> Result<(Value, Option<RawLog>)> {
    let m = crate::unit::marker::MarkerStore::new(state_dir)
        .load(unit)?
        .ok_or_else(|| VfError::state(format!("no unit {unit:?}")))?;
    let state = json!(m.state.as_str());
    let log = m.stdout_log.map(|rel| {
        let v = m.engine_version.filter(|v| {
            v.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-+_".contains(c))
        });
        (state_dir.join(rel), m.engine.as_str().to_string(), v)
    });
    Ok((state, log))
}

/// A unit's status record with its latest answer, as vf recorded it for a
/// replay (`unit::history`, at most its bound: `answerTruncated` says when
/// it was cut), when that answer is the latest attempt's.
fn with_answer(mut v: Value, state_dir: &std::path::Path) -> Value {
    let Some(o) = v.as_object_mut() else { return v };
    let Some(unit) = o.get("unit").and_then(Value::as_str) else {
        return v;
    };
    let attempts = o.get("attempts").and_then(Value::as_u64);
    let history = crate::unit::history::load(state_dir, unit);
    if let Some(r) = history
        .last()
        .filter(|r| Some(u64::from(r.attempt)) == attempts)
    {
        o.insert("answer".into(), Value::String(r.text.clone()));
        if r.truncated {
            o.insert("answerTruncated".into(), Value::Bool(true));
        }
    }
    v
}

/// The pid of the vf that runs `unit` elsewhere (a `vf dispatch` in a
/// terminal, another server's), when its marker says `running` and that
/// vf is proven alive by its pid, start time and boot id, as vf proves an
/// owner before touching a unit. Anything less is refused: a pid that
/// cannot be proven the unit's vf is never signalled.
fn proven_owner(state_dir: &Path, unit: &str) -> Result<u32> {
    use crate::ground::procinfo::Liveness;
    let store = crate::unit::marker::MarkerStore::new(state_dir);
    let m = store
        .load(unit)?
        .ok_or_else(|| VfError::usage(format!("no unit {unit:?} in this state dir")))?;
    if m.state != crate::unit::marker::UnitState::Running {
        return Err(VfError::usage(format!(
            "unit {unit:?} is not running (its state: {})",
            m.state.as_str()
        )));
    }
    let pid = m.owner.as_ref().map_or(0, |o| o.supervisor.pid);
    match m.owner_alive() {
        Liveness::Alive => Ok(pid),
        Liveness::Dead => Err(VfError::usage(format!(
            "unit {unit:?} is marked running but its vf (pid {pid}) is gone: `vf resume` takes it over"
        ))),
        Liveness::Unknown => Err(VfError::state(format!(
            "unit {unit:?} is marked running and its vf (pid {pid}) cannot be proven alive; not signalling it"
        ))),
    }
}
