//! The page: one self-contained HTML file (inline CSS, JS and SVG, no
//! network: its Content-Security-Policy allows nothing else). Every text that
//! came from an engine, a marker, a plan or a user is escaped here ([`esc`]),
//! or embedded as JSON with `<`, `>` and `&` escaped ([`json_island`]) and
//! put in the page by the script as text, never as markup.

use std::fmt::Write;

use super::{Report, UnitRow, timeline};

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// HTML-escapes text for an element or a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON for a `<script type="application/json">`: nothing in it can close
/// the element or open a comment.
pub fn json_island(v: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    text.replace('&', "\\u0026")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// The whole page.
pub fn render(r: &Report) -> String {
    let mut h = String::with_capacity(64 << 10);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>vf report</title><style>{CSS}</style></head><body>\
         <header><h1>vf report</h1><p class=\"meta\">state dir <code>{}</code>{} · generated {}</p></header>",
        esc(&r.state_dir),
        r.plan
            .as_deref()
            .map(|p| format!(" · plan <code>{}</code>", esc(p)))
            .unwrap_or_default(),
        esc(&r.generated_at),
    );
    totals(&mut h, r);
    h.push_str("<section id=\"timeline\"><h2>Timeline</h2>");
    h.push_str(&timeline_svg(r));
    h.push_str("</section><section id=\"units\"><h2>Units</h2>");
    for u in &r.unusable {
        let _ = write!(
            h,
            "<div class=\"unusable warning\">⚠ <b>{}</b>: {} marker, not read: {}</div>",
            esc(&u.unit),
            esc(&u.problem),
            esc(&u.error)
        );
    }
    for (i, u) in r.units.iter().enumerate() {
        unit(&mut h, i, u);
    }
    h.push_str("</section>");
    quota(&mut h, r);
    conversations(&mut h, r);
    let _ = writeln!(h, "<script>{JS}</script></body></html>");
    h
}

fn totals(h: &mut String, r: &Report) {
    let t = &r.totals;
    let _ = write!(
        h,
        "<section id=\"totals\"><h2>Totals</h2><p>{} unit(s) · wall time {} · engine time {}</p>\
         <table><tr><th>engine</th><th>units</th><th>tokens</th><th>cost</th></tr>",
        t.units,
        duration(t.wall_ms),
        duration(t.engine_ms)
    );
    for e in &t.per_engine {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.engine),
            e.units,
            tokens(e.usage.as_ref()),
            cost(e.usage.as_ref())
        );
    }
    h.push_str("</table>");
    if !t.drift.is_empty() {
        h.push_str("<h3>Unknown frames (drift)</h3><table><tr><th>engine</th><th>version</th><th>count</th><th>frame kinds</th></tr>");
        for d in &t.drift {
            let kinds: Vec<String> = d.kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.engine),
                esc(d.version.as_deref().unwrap_or("?")),
                d.count,
                esc(&kinds.join(", "))
            );
        }
        h.push_str("</table>");
    }
    if !t.warnings.is_empty() {
        h.push_str("<h3>Warnings</h3><ul class=\"warnings\">");
        for w in &t.warnings {
            let _ = write!(h, "<li>{}</li>", esc(w));
        }
        h.push_str("</ul>");
    }
    h.push_str("</section>");
}

/// The quota ledger's entries as the report found them (never an
/// account's env: the ledger holds none).
fn quota(h: &mut String, r: &Report) {
    use super::quota::{reset_of, utc, utilization};
    if r.quota.is_empty() && r.quota_warning.is_none() {
        return;
    }
    h.push_str("<section id=\"quota\"><h2>Quota</h2>");
    if let Some(w) = &r.quota_warning {
        let _ = write!(h, "<p class=\"warning\">⚠ {}</p>", esc(w));
    }
    h.push_str(
        "<table><tr><th>engine</th><th>account</th><th>state</th><th>used</th>\
         <th>window</th><th>reset (UTC)</th><th>source</th><th>waiting</th></tr>",
    );
    for v in &r.quota {
        let e = &v.entry;
        let waiting: Vec<&str> = e.waiting.iter().map(|w| w.unit.as_str()).collect();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"state-{st}\">{st}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.engine),
            esc(&e.account),
            esc(&utilization(e)),
            esc(e
                .window
                .as_ref()
                .and_then(|w| w.name.as_deref())
                .unwrap_or("-")),
            reset_of(v).map_or_else(|| "-".into(), utc),
            esc(e.source.as_deref().unwrap_or("-")),
            esc(&waiting.join(", ")),
            st = v.state.as_str(),
        );
    }
    h.push_str("</table></section>");
}

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 60.0;
const LANE: f64 = 26.0;

fn timeline_svg(r: &Report) -> String {
    let mut s = String::new();
    if r.bars.is_empty() {
        return "<p>No attempt has a start time yet.</p>".into();
    }
    let t0 = r.bars.iter().map(|b| b.start_ms).min().unwrap_or(0);
    let t1 = r
        .bars
        .iter()
        .map(|b| b.end_ms)
        .max()
        .unwrap_or(t0)
        .max(t0 + 1);
    let x = |t: u64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * (WIDTH - LEFT - 10.0);
    let height = 30.0 + LANE * r.lanes as f64;
    let _ = write!(
        s,
        "<svg id=\"gantt\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"timeline\">\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" \
         markerHeight=\"6\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\"/></marker>\
         <pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#c9a227\"/></pattern></defs>"
    );
    for lane in 0..r.lanes {
        let y = 20.0 + LANE * lane as f64;
        let _ = write!(
            s,
            "<text class=\"lane\" x=\"4\" y=\"{}\">lane {}</text>",
            y + 15.0,
            lane + 1
        );
    }
    let _ = write!(
        s,
        "<text class=\"axis\" x=\"{LEFT}\" y=\"12\">0 s</text><text class=\"axis\" x=\"{}\" y=\"12\" text-anchor=\"end\">{}</text>",
        WIDTH - 10.0,
        duration(t1 - t0)
    );
    let unit_index = |name: &str| r.units.iter().position(|u| u.unit == name);
    for b in &r.bars {
        bar(&mut s, b, x(b.start_ms), x(b.end_ms), unit_index(&b.unit));
    }
    for e in &r.edges {
        let from = r
            .bars
            .iter()
            .filter(|b| b.unit == e.from && !matches!(b.outcome, "waiting" | "held"))
            .max_by_key(|b| b.end_ms);
        let to = r
            .bars
            .iter()
            .filter(|b| b.unit == e.to)
            .min_by_key(|b| b.start_ms);
        if let (Some(f), Some(t)) = (from, to) {
            let (y1, y2) = (mid(f.lane), mid(t.lane));
            let _ = write!(
                s,
                "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"M {:.1} {y1:.1} C {:.1} {y1:.1}, {:.1} {y2:.1}, {:.1} {y2:.1}\" marker-end=\"url(#arrow)\"><title>{} → {}</title></path>",
                esc(&e.from),
                esc(&e.to),
                x(f.end_ms),
                x(f.end_ms) + 20.0,
                x(t.start_ms) - 20.0,
                x(t.start_ms),
                esc(&e.from),
                esc(&e.to)
            );
        }
    }
    s.push_str("</svg><p class=\"legend\">");
    for o in [
        "done",
        "failed",
        "blocked",
        "rateLimited",
        "waiting",
        "held",
        "interrupted",
        "running",
    ] {
        let _ = write!(s, "<span class=\"key o-{o}\"></span>{o} ");
    }
    s.push_str("</p>");
    s
}

fn mid(lane: u32) -> f64 {
    20.0 + LANE * lane as f64 + 10.0
}

fn bar(s: &mut String, b: &timeline::Bar, x1: f64, x2: f64, unit: Option<usize>) {
    let kind = if b.is_attempt() { "bar attempt" } else { "bar" };
    let w = (x2 - x1).max(4.0);
    let y = 20.0 + LANE * b.lane as f64;
    let reason = b
        .reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let est = if b.estimated {
        ", times from its raw log"
    } else {
        ""
    };
    let what = match &b.round {
        Some(r) => format!("round {r}"),
        None => format!("attempt {}", b.attempt),
    };
    let title = format!(
        "{} · {} · {what} · {} · {}{reason}{est}",
        b.unit,
        b.engine,
        duration(b.end_ms - b.start_ms),
        b.outcome
    );
    let round = b
        .round
        .as_deref()
        .map(|r| format!(" data-round=\"{}\"", esc(r)))
        .unwrap_or_default();
    let _ = write!(
        s,
        "<g class=\"{kind} o-{}\" data-unit=\"{}\" data-idx=\"{}\" data-attempt=\"{}\"{round}><title>{}</title>\
         <rect x=\"{x1:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"20\" rx=\"3\"/>",
        b.outcome,
        esc(&b.unit),
        unit.map(|i| i.to_string()).unwrap_or_default(),
        b.attempt,
        esc(&title)
    );
    if w > 40.0 {
        // A round's bar says which round; a reviewer's or resolver's, whose.
        let text = match &b.round {
            Some(r) if r.starts_with("fix") => r.clone(),
            Some(r) => format!("{r} · {}", b.engine),
            None => b.unit.clone(),
        };
        let label = crate::ground::text::cut(&text, (w / 7.0) as usize);
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\">{}</text>",
            x1 + 4.0,
            y + 14.0,
            esc(label)
        );
    }
    s.push_str("</g>");
}

fn unit(h: &mut String, i: usize, u: &UnitRow) {
    let state_class = match u.state {
        "done" => "done",
        "failed" => "failed",
        "blocked" => "blocked",
        _ => "other",
    };
    let _ = write!(
        h,
        "<details class=\"unit s-{state_class}\" id=\"u{i}\" data-idx=\"{i}\" data-unit=\"{}\"{}>\
         <summary><b class=\"name\">{}</b> <span class=\"state\">{}</span> {} {} · {} · {} · {}</summary><dl>",
        esc(&u.unit),
        // A child under its parent, indented a step per level.
        u.depth
            .map(|d| format!(
                " style=\"margin-left:{}em\"",
                1.5 * f64::from(d.min(20) - 1)
            ))
            .unwrap_or_default(),
        esc(&u.unit),
        esc(u.state),
        esc(&u.engine),
        esc(u.engine_version.as_deref().unwrap_or("")),
        u.duration_ms.map(duration).unwrap_or_else(|| "–".into()),
        tokens(u.usage.as_ref()),
        cost(u.usage.as_ref())
    );
    let mut field = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            let _ = write!(h, "<dt>{k}</dt><dd>{}</dd>", esc(&v));
        }
    };
    field(
        "model",
        u.model.clone().map(|m| match &u.effort {
            Some(e) => format!("{m} (effort {e})"),
            None => m,
        }),
    );
    field("session", u.session_id.clone());
    field(
        "parent",
        u.parent
            .as_ref()
            .map(|p| format!("{p} (depth {})", u.depth.unwrap_or(1))),
    );
    field(
        "children",
        (!u.children.is_empty()).then(|| u.children.join(", ")),
    );
    field(
        "tree usage",
        u.tree_usage
            .as_ref()
            .map(|t| format!("{} · {}", tokens(Some(t)), cost(Some(t)))),
    );
    field("attempts", Some(u.attempts.to_string()));
    field(
        "depends on",
        (!u.depends_on.is_empty()).then(|| u.depends_on.join(", ")),
    );
    field(
        "error",
        u.error.clone().map(|e| match &u.reason {
            Some(r) => format!("{r}: {e}"),
            None => e,
        }),
    );
    field("verify", u.verify.map(str::to_string));
    field(
        "summary",
        u.summary.as_ref().map(|s| match s {
            serde_json::Value::String(t) => t.clone(),
            v => serde_json::to_string_pretty(v).unwrap_or_default(),
        }),
    );
    for w in &u.warnings {
        field("warning", Some(w.clone()));
    }
    if let Some(w) = &u.workspace {
        field(
            "branch",
            Some(format!(
                "{} (base {})",
                w.branch,
                crate::ground::text::cut(&w.base, 12)
            )),
        );
        field("changed files", Some(w.changed_files.join(", ")));
    }
    h.push_str("</dl>");
    rounds(h, &u.rounds);
    if let Some(w) = u.workspace.as_ref().filter(|w| !w.diff.is_empty()) {
        h.push_str("<div class=\"diff\"><h4>Diff against its base</h4>");
        for f in &w.diff {
            let _ = write!(
                h,
                "<details class=\"file\"><summary>{}</summary><pre>{}</pre></details>",
                esc(&f.file),
                esc(&f.patch)
            );
        }
        if w.diff_truncated {
            h.push_str("<p class=\"note\">The diff is cut here (the page's size cap).</p>");
        }
        h.push_str("</div>");
    }
    let _ = write!(
        h,
        "<div class=\"events\"><h4>Events ({} of {}){}</h4><div class=\"ev-list\"></div></div>\
         <script type=\"application/json\" id=\"ev{i}\">{}</script></details>",
        u.events.len(),
        u.events_total,
        u.raw_log
            .as_deref()
            .map(|l| format!(" · <a href=\"{}\">raw log</a>", esc(l)))
            .unwrap_or_default(),
        json_island(&serde_json::json!({"events": u.events, "raw": u.raw_lines})),
    );
}

/// A unit's rounds: a table row each (engine, outcome, a review's verdict,
/// a fix round's verify exit status), a review's comments under it. The
/// comments are a reviewer's words: hostile text, escaped.
fn rounds(h: &mut String, rounds: &[crate::unit::marker::rounds::Round]) {
    use crate::unit::marker::rounds::{RoundOutcome, VerdictKind};
    if rounds.is_empty() {
        return;
    }
    h.push_str(
        "<div class=\"rounds\"><h4>Rounds</h4><table><tr><th>round</th><th>engine</th>\
         <th>outcome</th><th>verdict</th><th>verify</th><th>started</th></tr>",
    );
    for r in rounds {
        let outcome = match r.outcome {
            RoundOutcome::Running => "running",
            RoundOutcome::Done => "done",
            RoundOutcome::Failed => "failed",
        };
        let outcome = match (&r.reason, &r.error) {
            (Some(why), Some(e)) => format!("{outcome} ({}: {e})", why.as_str()),
            (None, Some(e)) => format!("{outcome} ({e})"),
            _ => outcome.to_string(),
        };
        let verdict = r.verdict.as_ref().map(|v| match v.verdict {
            VerdictKind::Approve => "approve",
            VerdictKind::Changes => "changes",
        });
        let verify = r.verify.as_ref().map(|v| {
            let code = v
                .exit_code
                .map_or("no exit code".into(), |c| format!("exit {c}"));
            let passed = if v.passed { "passed" } else { "failed" };
            format!("{passed}, {code}: {}", v.command)
        });
        let _ = write!(
            h,
            "<tr class=\"round\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&timeline::round_name(r)),
            esc(r.engine.as_str()),
            esc(&outcome),
            verdict.unwrap_or(""),
            esc(verify.as_deref().unwrap_or("")),
            esc(&r.started_at)
        );
        let comments = r.verdict.iter().flat_map(|v| &v.comments);
        for c in comments {
            let at = match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("{p}:{l}"),
                (Some(p), None) => p.clone(),
                _ => String::new(),
            };
            let _ = write!(
                h,
                "<tr class=\"comment\"><td colspan=\"2\"><code>{}</code></td><td colspan=\"4\"><pre>{}</pre></td></tr>",
                esc(&at),
                esc(&c.text)
            );
        }
    }
    h.push_str("</table></div>");
}

fn conversations(h: &mut String, r: &Report) {
    if r.conversations.is_empty() {
        return;
    }
    h.push_str("<section id=\"conversations\"><h2>Conversations</h2>");
    for c in &r.conversations {
        let _ = write!(
            h,
            "<details class=\"conv\"><summary>{}</summary>",
            esc(&c.name)
        );
        if let Some(e) = &c.error {
            let _ = write!(h, "<p class=\"warning\">{}</p>", esc(e));
        }
        for p in &c.participants {
            let _ = write!(
                h,
                "<p class=\"participant\">{} · {}{} · {} turn(s)</p>",
                esc(&p.alias),
                esc(&p.engine),
                p.model
                    .as_deref()
                    .map(|m| format!(" ({})", esc(m)))
                    .unwrap_or_default(),
                p.turns
            );
        }
        for t in &c.transcript {
            let to = match t.to.is_empty() {
                true => String::new(),
                false => format!(" → {}", t.to.join(", ")),
            };
            let _ = write!(
                h,
                "<div class=\"turn {}\"><div class=\"who\">#{} {}{}{}</div><pre>{}</pre></div>",
                t.kind,
                t.id,
                esc(&t.from),
                esc(&to),
                t.delivery
                    .map(|d| format!(" <span class=\"delivery\">{d}</span>"))
                    .unwrap_or_default(),
                esc(&t.text)
            );
        }
        h.push_str("</details>");
    }
    h.push_str("</section>");
}

fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{}m {:02}s", ms / 60_000, ms / 1000 % 60),
    }
}

fn tokens(u: Option<&crate::engine::usage::Usage>) -> String {
    let n = u.and_then(|u| {
        u.total_tokens
            .or_else(|| Some(u.input_tokens? + u.output_tokens.unwrap_or(0)))
    });
    n.map(|n| format!("{n} tokens"))
        .unwrap_or_else(|| "– tokens".into())
}

fn cost(u: Option<&crate::engine::usage::Usage>) -> String {
    match u.and_then(|u| u.cost_usd) {
        Some(c) => format!("${c:.4}"),
        None => "$ –".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        let island = json_island(&serde_json::json!({"t": "</script><!-- &"}));
        assert_eq!(island, r#"{"t":"\u003c/script\u003e\u003c!-- \u0026"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&island).unwrap()["t"],
            "</script><!-- &"
        );
    }
}
