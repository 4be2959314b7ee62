//! One `vf` subprocess of a tool: spawned from vf's own binary in the
//! server's process group (never setsid, so a client that kills the group
//! ends it the way vf ends a SIGTERMed run), its stdout read row by row,
//! its exit turned into the tool's result or a tool error.

use std::process::Stdio;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use super::Settings;
use super::progress::Progress;
use crate::ground::error::{Reason, VfError};

/// The longest stdout row kept (a result object is far smaller).
const MAX_ROW: usize = 16 << 20;
/// The most rows kept of one subprocess.
const MAX_ROWS: usize = 100_000;

/// What a `vf` subprocess left: its exit code, its last stdout row as JSON
/// (the result, for the commands that print one), its last stderr line.
pub struct Outcome {
    pub code: i32,
    pub last: Option<Value>,
    /// The whole stdout as one JSON document (the commands that print one).
    pub whole: Option<Value>,
    /// Every row that parsed (`vf replay`'s events).
    pub rows: Vec<Value>,
    pub stderr_last: String,
}

/// A `vf` subprocess of `argv`, `stdin` written then closed; `quiet`: its
/// output goes nowhere (a call that does not wait).
pub fn spawn(
    s: &Settings,
    argv: &[String],
    stdin: Option<String>,
    quiet: bool,
) -> Result<Child, VfError> {
    let mut c = Command::new(&s.vf);
    let (cmd, rest) = argv
        .split_first()
        .ok_or_else(|| VfError::usage("no command"))?;
    c.arg(cmd);
    // Every command but `replay` works on the server's state dir.
    if cmd != "replay" {
        c.arg(format!("--state-dir={}", s.state_dir.display()));
    }
    c.args(rest).current_dir(&s.cwd);
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    if quiet {
        c.stdout(Stdio::null()).stderr(Stdio::null());
    } else {
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = c
        .spawn()
        .map_err(|e| VfError::state(format!("{}: {e}", s.vf.display())))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        tokio::spawn(async move {
            // A vf that refused early closes its stdin: nothing to report.
            let _ = pipe.write_all(text.as_bytes()).await;
        });
    }
    Ok(child)
}

/// Reads `child` to its end: each jsonl row to `progress`, `stop` cancelled
/// → SIGTERM (it goes on to write its interrupted result, read here too).
pub async fn finish(
    mut child: Child,
    mut progress: Option<Progress>,
    stop: impl std::future::Future<Output = ()>,
) -> Outcome {
    tokio::pin!(stop);
    let err = child.stderr.take().map(|e| tokio::spawn(last_line(e)));
    let mut last = None;
    let mut rows = Vec::new();
    let mut all = Vec::new();
    if let Some(out) = child.stdout.take() {
        let mut reader = BufReader::new(out).take(0);
        let mut signalled = false;
        // Kept across the loop: a read cut short by another branch left its
        // bytes here (read_until appends), and goes on.
        let mut buf = Vec::new();
        loop {
            let due = progress.as_ref().and_then(Progress::due);
            if buf.is_empty() {
                // Each row capped: a longer one is cut, the rest read as the next.
                reader.set_limit(MAX_ROW as u64);
            }
            tokio::select! {
                n = reader.read_until(b'\n', &mut buf) => {
                    let end = match n {
                        Err(_) => true,
                        Ok(0) => reader.limit() > 0,
                        Ok(_) => false,
                    };
                    if (end || buf.ends_with(b"\n") || reader.limit() == 0) && !buf.is_empty() {
                        last = take_row(&mut buf, &mut all, &mut rows, &mut progress)
                            .await
                            .or(last);
                    }
                    if end { break; }
                }
                _ = &mut stop, if !signalled => {
                    signalled = true;
                    terminate(&child);
                }
                _ = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => {
                    if let Some(p) = progress.as_mut() { p.flush().await; }
                }
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p.flush().await;
    }
    let code = match child.wait().await {
        Ok(st) => exit_code(st),
        Err(_) => crate::ground::error::exit::INTERNAL,
    };
    let stderr_last = match err {
        Some(h) => h.await.unwrap_or_default(),
        None => String::new(),
    };
    let whole = serde_json::from_slice(&all).ok();
    Outcome {
        code,
        last,
        whole,
        rows,
        stderr_last,
    }
}

/// One whole row: kept for the whole document, parsed, told to the progress.
async fn take_row(
    buf: &mut Vec<u8>,
    all: &mut Vec<u8>,
    rows: &mut Vec<Value>,
    progress: &mut Option<Progress>,
) -> Option<Value> {
    if all.len() < MAX_ROW {
        all.extend_from_slice(buf);
    }
    let v = serde_json::from_slice::<Value>(buf).ok();
    buf.clear();
    let v = v?;
    if let Some(p) = progress.as_mut() {
        p.row(&v).await;
    }
    if rows.len() < MAX_ROWS {
        rows.push(v.clone());
    }
    Some(v)
}

/// SIGTERM to the `vf` child (vf ends its engine and records `interrupted`).
pub fn terminate(child: &Child) {
    if let Some(pid) = child.id() {
        let _ = crate::sys::signal_child(pid, crate::sys::Sig::Terminate);
    }
}

/// The exit code; ended by a signal (the status does not say which without
/// naming the OS): as vf reports an unknown signal, 128 + SIGTERM.
fn exit_code(st: std::process::ExitStatus) -> i32 {
    st.code()
        .unwrap_or(128 + crate::sys::Sig::Terminate.number())
}

/// The last non-blank line of a pipe (cut short), the rest drained.
async fn last_line(pipe: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut lines = BufReader::new(pipe).take(0);
    let mut last = String::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        lines.set_limit(1 << 20);
        match lines.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return last,
            Ok(_) => {
                let l = String::from_utf8_lossy(&buf);
                if !l.trim().is_empty() {
                    last = crate::ground::text::cut(l.trim(), 500).to_string();
                }
            }
        }
    }
}

/// A tool error: `isError`, `{error, reason, exitCode}` as text and as
/// structured content.
pub fn tool_error(error: &str, reason: &str, code: i32) -> CallToolResult {
    let v = json!({"error": error, "reason": reason, "exitCode": code});
    let mut r = CallToolResult::error(vec![ContentBlock::text(v.to_string())]);
    r.structured_content = Some(v);
    r
}

/// vf's own refusal as a tool error.
pub fn vf_error(e: &VfError) -> CallToolResult {
    tool_error(&e.to_string(), e.reason().as_str(), e.exit_code())
}

/// A JSON value as the tool's result (text and structured content).
pub fn ok(v: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(v.to_string())]);
    r.structured_content = Some(v);
    r
}

/// The reason vf's exit-code table gives `code`.
fn reason_of(code: i32) -> &'static str {
    Reason::ALL
        .into_iter()
        .find(|r| r.exit_code() == code)
        .map_or(
            if code >= 128 {
                "interrupted"
            } else {
                "internal"
            },
            Reason::as_str,
        )
}

/// A finished subprocess as the tool's result: its result row (the
/// `dispatch.result` row's `kind` dropped) when it printed one, an error with
/// its exit code when it failed. A failed unit's result is an error result
/// carrying the whole result object plus `error`, `reason`, `exitCode`.
pub fn outcome(o: Outcome, result_kind: Option<&str>) -> CallToolResult {
    let mut last = o.last.filter(|v| v.is_object());
    if let (Some(k), Some(v)) = (result_kind, last.as_mut())
        && v.get("kind").and_then(Value::as_str) == Some(k)
        && let Some(m) = v.as_object_mut()
    {
        m.remove("kind");
    }
    let is_result = last
        .as_ref()
        .is_some_and(|v| result_kind.is_none_or(|_| v.get("kind").is_none()));
    match (o.code, last) {
        (0, Some(v)) if is_result => ok(v),
        (code, Some(mut v)) if is_result => {
            let m = v.as_object_mut().expect("an object");
            m.entry("exitCode").or_insert(json!(code));
            m.entry("reason").or_insert(json!(reason_of(code)));
            if m.get("error").is_none_or(Value::is_null) {
                m.insert("error".into(), json!(o.stderr_last));
            }
            let mut r = ok(v);
            r.is_error = Some(true);
            r
        }
        (code, _) => {
            let msg = if o.stderr_last.is_empty() {
                format!("vf exited {code}")
            } else {
                o.stderr_last
            };
            tool_error(&msg, reason_of(code), code)
        }
    }
}
