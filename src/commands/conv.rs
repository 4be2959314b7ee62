//! `vf conv`: conversations of several engines (see docs/CONVERSATIONS.md).

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::output::StdoutSink;
use crate::cli::{
    ConvArgs, ConvCommand, ConvHandoffArgs, ConvLsArgs, ConvNameArgs, ConvNewArgs, ConvSayArgs,
    ConvShowArgs, OutputFormat, StateDirArg,
};
use crate::conv::turn::{self, SayContext, TurnReport};
use crate::conv::{ConvStore, Conversation, model};
use crate::dispatch::private;
use crate::ground::error::{Result, VfError};

pub fn run(args: ConvArgs) -> Result<i32> {
    match args.command {
        ConvCommand::New(a) => new(&a),
        ConvCommand::Say(a) => say(&a),
        ConvCommand::Show(a) => show(&a),
        ConvCommand::Ls(a) => ls(&a),
        ConvCommand::Rm(a) => rm(&a),
        ConvCommand::Handoff(a) => handoff(&a),
    }
}

fn state_dir(arg: &StateDirArg) -> Result<PathBuf> {
    super::config::state_dir(arg.state_dir.as_deref(), &std::env::current_dir()?)
}

fn new(a: &ConvNewArgs) -> Result<i32> {
    let store = ConvStore::new(&state_dir(&a.state)?);
    let with = a
        .with
        .iter()
        .map(|w| model::parse_with(w))
        .collect::<Result<Vec<_>>>()?;
    let conv = Conversation::new(&a.name, &with, crate::ground::fsutil::now_rfc3339())?;
    let _lock = store.lock(&a.name)?;
    if store.exists(&a.name) {
        return Err(VfError::usage(format!(
            "conversation {:?} already exists (`vf conv rm {}` first)",
            a.name, a.name
        )));
    }
    store.save(&conv)?;
    writeln!(super::stdio::out(), "{}", store.dir(&a.name).display())?;
    Ok(0)
}

#[derive(Serialize)]
struct SayOutput<'a> {
    conversation: &'a str,
    turns: &'a [TurnReport],
}

fn say(a: &ConvSayArgs) -> Result<i32> {
    let ranges = match super::dispatch::parse_private_ranges(&a.private_range) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.print();
            return Ok(crate::ground::error::exit::USAGE);
        }
    };
    let cwd = super::dispatch::resolve_cwd(a.cwd.as_deref())?;
    let state_dir = super::config::state_dir(a.state.state_dir.as_deref(), &cwd)?;
    let store = ConvStore::new(&state_dir);
    let _lock = store.lock(&a.name)?;
    let mut conv = store.load(&a.name)?;
    let targets = targets(&conv, a)?;
    let prompt = super::prompt::read(&a.prompt)?;
    // Checked (and `--require-enforced` refused) for every participant
    // before anything of the turn is saved.
    let mut tools: (crate::engine::ToolPolicy, crate::dispatch::confine::Sandbox) =
        Default::default();
    let asked = crate::unit::marker::Asked {
        read_only: !a.write,
        allow_tools: a.tools.allow_tool.clone(),
        deny_tools: a.tools.deny_tool.clone(),
        require_enforced: a.tools.require_enforced,
        sandbox: super::run_options::sandbox_mode(&a.sandbox),
        deny_read: a.sandbox.deny_read.clone(),
        writable: a.sandbox.writable.clone(),
        ..Default::default()
    };
    for t in &targets {
        let p = conv.participant(t)?;
        let resume = !a.fresh && p.binding.is_some();
        tools = crate::dispatch::resolve::policy(&asked, false, (p.engine, None), resume, &cwd)?;
        // The sandbox holds a read-only turn whatever the engine has.
        if !a.write && !a.allow_unenforced && !tools.0.sandbox_holds_read_only {
            turn::require_read_only(t, p.engine, resume)?;
        }
    }
    // A participant that cannot run is refused before its message enters
    // the transcript: saying it again must not enter it twice.
    for t in &targets {
        crate::process::binary::resolve_binary(conv.participant(t)?.engine, None)?;
    }
    let mcp = match &a.mcp {
        Some(f) => {
            let text = crate::project::agy_files::read_text("--mcp", f)?;
            let servers = crate::engine::mcp::parse(&text)?;
            for t in &targets {
                crate::engine::mcp::check(conv.participant(t)?.engine, &servers)?;
            }
            Some(servers)
        }
        None => None,
    };
    let (quota, moved) = say_accounts(a, &conv, &targets, &state_dir)?;
    let ctx = SayContext {
        private_ranges: private::stage_private_ranges(&ranges, &state_dir, &cwd)?,
        stall_timeout: crate::dispatch::resolve::seconds("--stall-timeout", a.stall_timeout)?,
        timeout: crate::dispatch::resolve::seconds("--timeout", a.timeout)?,
        kill_grace: crate::process::child::kill_grace_from_env()?,
        fresh: a.fresh,
        write: a.write,
        tools: tools.0,
        sandbox: tools.1,
        mcp,
        quota,
        state_dir,
        cwd,
    };
    let pending = turn::recover(&ctx.state_dir, &mut conv);
    let mut targets = targets;
    match conv.interrupted_say(&targets, &prompt, &pending) {
        // The same `say` after a crash continues: its message is not entered
        // twice, and whoever answered it already is not asked again.
        Some(id) => targets.retain(|t| conv.participant(t).is_ok_and(|p| p.cursor < id)),
        None => {
            conv.add_user(&targets, &prompt);
        }
    }
    store.save(&conv)?;
    // Every turn is planned before any runs: participants answer the same
    // transcript, and each sees the others' answers on its next turn.
    let plans = targets
        .iter()
        .map(|t| turn::plan(&store, &conv, t, ctx.fresh || moved.contains(t)))
        .collect::<Result<Vec<_>>>()?;
    let format = a.output.format();
    let sink_for = |alias: &str| {
        let mut sink = StdoutSink::new(format);
        // Turns run at once: each JSONL line names its participant.
        sink.tag = Some(("participant".into(), alias.into()));
        sink
    };
    let local = tokio::task::LocalSet::new();
    let ran = super::block_on(
        local.run_until(turn::run_all(&ctx, &store, &mut conv, &plans, sink_for)),
    )??;
    let (reports, mut sinks): (Vec<TurnReport>, Vec<StdoutSink>) = ran.into_iter().unzip();
    let mut fallback = StdoutSink::new(format);
    let sink = sinks.first_mut().unwrap_or(&mut fallback);
    print_reports(&conv.name, &reports, format, sink)?;
    Ok(reports
        .iter()
        .map(|r| r.result.vf_exit())
        .find(|&c| c != 0)
        .unwrap_or(0))
}

/// Each addressed participant's account, chosen before anything of the turn
/// is saved (every candidate held: exit 75): `--account`, else the first open
/// one, the account of its last turn first. A participant whose bound session
/// belongs to another account than the chosen one starts fresh (with the
/// replay), as `vf resume` does; those are the second value.
fn say_accounts(
    a: &ConvSayArgs,
    conv: &Conversation,
    targets: &[String],
    state_dir: &std::path::Path,
) -> Result<(
    std::collections::BTreeMap<String, crate::quota::Ask>,
    Vec<String>,
)> {
    let cfg = crate::plan::config::load()?;
    let markers = crate::unit::marker::MarkerStore::new(state_dir);
    let (mut asks, mut moved) = (std::collections::BTreeMap::new(), Vec::new());
    for t in targets {
        let p = conv.participant(t)?;
        let mut origins = super::config::Origins::new();
        let mut ask = super::run_options::quota_ask(&a.govern, p.engine, &cfg, &mut origins)?;
        let last = crate::conv::model::turn_unit(&conv.name, t, p.turns);
        let owner = match p.turns {
            0 => None,
            _ => markers.load(&last).ok().flatten().and_then(|m| m.account),
        };
        super::run_options::choose_account(&mut ask, p.engine, owner.as_deref())?;
        let owner = owner.as_deref().unwrap_or(crate::quota::DEFAULT_ACCOUNT);
        if p.binding.is_some() && owner != ask.account_name() {
            super::stdio::eprint_line(format_args!(
                "vf: warning: {t}: its session belongs to account {owner}, not {}: a fresh session, primed with the transcript",
                ask.account_name()
            ));
            moved.push(t.clone());
        }
        asks.insert(t.clone(), ask);
    }
    Ok((asks, moved))
}

/// `--to` (each once, checked) or `--all`, in participant order.
fn targets(conv: &Conversation, a: &ConvSayArgs) -> Result<Vec<String>> {
    for t in &a.to {
        conv.participant(t)?;
    }
    Ok(conv
        .aliases()
        .into_iter()
        .filter(|alias| a.all || a.to.contains(alias))
        .collect())
}

fn print_reports(
    name: &str,
    reports: &[TurnReport],
    format: OutputFormat,
    sink: &mut StdoutSink,
) -> Result<()> {
    match format {
        OutputFormat::Json => super::print_json(&SayOutput {
            conversation: name,
            turns: reports,
        })?,
        OutputFormat::Jsonl => {
            for r in reports {
                let mut v = serde_json::to_value(r).map_err(anyhow::Error::from)?;
                v["kind"] = "conv.turn".into();
                sink.json_line(&v);
            }
        }
        OutputFormat::Human => {
            let mut out = super::stdio::out();
            for r in reports {
                sink.result(&r.result);
                writeln!(
                    out,
                    "{} turn {} · {} · read-only {} · {}",
                    r.participant,
                    r.turn,
                    r.delivery_mode.as_str(),
                    r.read_only.as_str(),
                    if r.recorded {
                        "answer recorded"
                    } else {
                        "no answer recorded"
                    }
                )?;
                if let Some(answer) = r.result.answer.as_deref().filter(|_| r.recorded) {
                    writeln!(out, "{}", crate::ground::text::visible(answer))?;
                }
            }
        }
    }
    Ok(())
}

fn show(a: &ConvShowArgs) -> Result<i32> {
    let conv = ConvStore::new(&state_dir(&a.state)?).load(&a.name)?;
    if a.json {
        super::print_json(&conv)?;
        return Ok(0);
    }
    let mut out = super::stdio::out();
    writeln!(out, "conversation {}", conv.name)?;
    for p in &conv.participants {
        writeln!(
            out,
            "participant {} · {}{} · cursor {} · binding {} · last delivery {}",
            p.alias,
            p.engine,
            p.model.as_ref().map_or(String::new(), |m| format!(" @{m}")),
            p.cursor,
            p.binding.as_ref().map_or("none".to_string(), |b| format!(
                "{} at {}",
                b.session_id, b.cursor
            )),
            p.last_delivery.map_or("none", |m| m.as_str())
        )?;
    }
    if let Some(h) = &conv.handoff {
        writeln!(
            out,
            "handoff VF-HANDOFF/1 sha256:{} · {} bytes",
            h.digest, h.bytes
        )?;
    }
    for e in &conv.transcript {
        let to = if e.to.is_empty() {
            String::new()
        } else {
            format!(" → {}", e.to.join(", "))
        };
        writeln!(
            out,
            "\n#{} {}{to} · sha256 {}",
            e.id,
            e.from,
            &e.sha256[..12]
        )?;
        writeln!(out, "{}", crate::ground::text::visible(&e.text))?;
    }
    Ok(0)
}

fn ls(a: &ConvLsArgs) -> Result<i32> {
    let names = ConvStore::new(&state_dir(&a.state)?).list()?;
    if a.json {
        super::print_json(&names)?;
    } else {
        let mut out = super::stdio::out();
        for n in names {
            writeln!(out, "{n}")?;
        }
    }
    Ok(0)
}

fn rm(a: &ConvNameArgs) -> Result<i32> {
    let store = ConvStore::new(&state_dir(&a.state)?);
    let _lock = store.lock(&a.name)?;
    store.load(&a.name)?;
    store.remove(&a.name)?;
    Ok(0)
}

fn handoff(a: &ConvHandoffArgs) -> Result<i32> {
    let store = ConvStore::new(&state_dir(&a.state)?);
    let text = super::prompt::read_file(&a.file, "handoff file")?;
    let _lock = store.lock(&a.name)?;
    let mut conv = store.load(&a.name)?;
    let h = store.put_handoff(&a.name, &text)?;
    let line = format!("sha256:{} {} bytes", h.digest, h.bytes);
    conv.handoff = Some(h);
    // Saved before it is printed: a stdout that fails changes nothing on disk.
    store.save(&conv)?;
    writeln!(super::stdio::out(), "{line}")?;
    Ok(0)
}
