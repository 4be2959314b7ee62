//! Human-readable transcript rows, each with a `[lines a-b]` trace reference.

use std::io::{self, Write};

use super::event::{ConversationEvent, Level, RawRange};

fn trace(r: RawRange) -> String {
    match (r.start, r.end) {
        (0, _) => "[-]".to_string(),
        (a, b) if a == b => format!("[line {a}]"),
        (a, b) => format!("[lines {a}-{b}]"),
    }
}

fn level(l: Level) -> &'static str {
    match l {
        Level::Info => "info",
        Level::Warning => "warning",
        Level::Error => "error",
    }
}

fn indented(w: &mut impl Write, text: &str) -> io::Result<()> {
    for line in text.lines() {
        writeln!(w, "    {line}")?;
    }
    Ok(())
}

/// Writes one event as transcript rows. The engine's text is untrusted:
/// what could drive a terminal is shown escaped ([`crate::ground::text::visible`]).
pub fn write_human(w: &mut impl Write, ev: &ConversationEvent) -> io::Result<()> {
    let mut rows = Vec::new();
    write_rows(&mut rows, ev)?;
    let rows = String::from_utf8_lossy(&rows);
    w.write_all(crate::ground::text::visible(&rows).as_bytes())
}

fn write_rows(w: &mut impl Write, ev: &ConversationEvent) -> io::Result<()> {
    match ev {
        ConversationEvent::TaskAgent {
            text,
            raw_range,
            is_final,
        } => {
            let tag = if *is_final { " (final)" } else { "" };
            writeln!(w, "{} agent{tag}:", trace(*raw_range))?;
            indented(w, text)
        }
        ConversationEvent::User { text, raw_range } => {
            writeln!(w, "{} user:", trace(*raw_range))?;
            indented(w, text)
        }
        ConversationEvent::ToolBurst { tools, raw_range } => {
            writeln!(w, "{} tools:", trace(*raw_range))?;
            for t in tools {
                write!(w, "    - {}", t.name)?;
                if !t.input_summary.is_empty() {
                    write!(w, " `{}`", t.input_summary)?;
                }
                write!(w, " → {}", t.status)?;
                if let Some(c) = t.exit_code {
                    write!(w, ", exit {c}")?;
                }
                if let Some(o) = &t.output_summary {
                    write!(w, ": {o}")?;
                }
                writeln!(w)?;
            }
            Ok(())
        }
        ConversationEvent::Status {
            level: l,
            label,
            detail,
            session_id,
            raw_range,
            ..
        } => {
            write!(w, "{} {}: {label}", trace(*raw_range), level(*l))?;
            if let Some(s) = session_id {
                write!(w, " (session {s})")?;
            }
            match detail.as_deref().map(|d| d.split_once('\n')) {
                None => writeln!(w),
                Some(None) => writeln!(w, " — {}", detail.as_deref().unwrap_or("")),
                Some(Some(_)) => {
                    writeln!(w)?;
                    indented(w, detail.as_deref().unwrap_or(""))
                }
            }
        }
        ConversationEvent::UnknownFrame {
            message, raw_range, ..
        } => writeln!(
            w,
            "{} warning: Protocol drift — {message}",
            trace(*raw_range)
        ),
    }
}
