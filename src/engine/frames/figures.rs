//! Usage figures and rate-limit evidence read off a frame, as the manifest's
//! `UsageSpec` and `RateLimits` say (the data lives in `manifests/`).

use serde_json::Value;

use super::fields::{at, field};
use super::manifest::{Path, UsageSpec};
use crate::engine::usage::Usage;

/// A non-negative whole number at `path` (`null` when absent or not one).
fn count(v: &Value, path: Path) -> Option<u64> {
    let n = field(v, path)?;
    n.as_u64()
        .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn figures(spec: &UsageSpec, v: &Value) -> Usage {
    Usage {
        input_tokens: count(v, spec.input),
        cached_input_tokens: count(v, spec.cached),
        output_tokens: count(v, spec.output),
        reasoning_tokens: count(v, spec.reasoning),
        total_tokens: count(v, spec.total),
        cost_usd: None,
        source: spec.source.to_string(),
    }
}

/// The usage this frame reports, `None` when it names no figure at all.
pub(super) fn read_usage(spec: &UsageSpec, frame: &Value) -> Option<Usage> {
    let mut u = if spec.each.is_empty() {
        figures(spec, frame)
    } else {
        let each = at(frame, spec.each)?.as_object()?;
        let all: Vec<Usage> = each.values().map(|m| figures(spec, m)).collect();
        crate::engine::usage::total(&all)?
    };
    u.cost_usd = field(frame, spec.cost)
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0);
    u.source = spec.source.to_string();
    (!u.is_empty()).then(|| u.with_total())
}

/// `retryAt` from epoch seconds (claude's `resetsAt`), epoch milliseconds,
/// seconds from now (an HTTP `retry-after` an engine echoes: opencode's
/// `responseHeaders`), each as a number or a string of one, or an RFC 3339
/// string.
pub(super) fn read_retry_at(frame: &Value, path: Path) -> Option<String> {
    let v = field(frame, path)?;
    let secs = match v.as_str() {
        Some(s) => match s.trim().parse::<f64>() {
            Ok(n) => n,
            Err(_) => {
                return Some(s.to_string())
                    .filter(|s| crate::ground::fsutil::parse_rfc3339(s).is_some());
            }
        },
        None => v.as_f64()?,
    };
    let secs = Some(secs).filter(|f| f.is_finite() && *f > 0.0)?;
    let secs = if secs > 1e11 {
        // Milliseconds when the figure is too large to be seconds.
        secs / 1000.0
    } else if secs < 1e9 {
        // Before 2001: a delay, not a time (no reset is 31 years away).
        now_secs() + secs.ceil()
    } else {
        secs
    };
    Some(crate::ground::fsutil::rfc3339(secs as u64, 0))
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as f64
}

/// One reading of a window: status, percent used, reset (epoch ms), name.
type Reading = (Option<String>, Option<f64>, Option<u64>, Option<String>);

/// What `q` reads at `base` (the frame, or one of its windows, where only
/// the last name of each path is looked up).
fn reading(q: &super::manifest::QuotaFrame, base: &Value, rel: bool) -> Reading {
    let p = |path: Path| {
        if rel {
            path.last().map_or(path, std::slice::from_ref)
        } else {
            path
        }
    };
    let text = |path: Path| {
        field(base, p(path))
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| s.len() <= 64)
    };
    let utilization = field(base, p(q.utilization))
        .and_then(Value::as_f64)
        .map(|u| u * q.utilization_scale)
        .filter(|u| u.is_finite() && (0.0..=1000.0).contains(u));
    let resets_at = read_retry_at(base, p(q.resets_at))
        .and_then(|t| crate::ground::fsutil::parse_rfc3339(&t))
        .map(|s| s * 1000);
    (text(q.status), utilization, resets_at, text(q.window))
}

/// The fullest of the frame's windows (`QuotaFrame::windows`), named by its key.
fn fullest_window(q: &super::manifest::QuotaFrame, frame: &Value) -> Option<Reading> {
    if q.windows.is_empty() {
        return None;
    }
    let windows = field(frame, q.windows)?.as_object()?;
    windows
        .iter()
        .take(16)
        .filter(|(name, _)| name.len() <= 64)
        .map(|(name, w)| {
            let (status, u, at, _) = reading(q, w, true);
            (status, u, at, Some(name.clone()))
        })
        .filter(|r| r.1.is_some())
        .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal))
}

/// The quota reading a [`QuotaFrame`](super::manifest::QuotaFrame) names,
/// `None` when the frame says nothing the governor can use. A frame without
/// a figure of its own takes its fullest window's, status and all, unless it
/// says `rejected` (claude says `allowed` while a window is at 92 % early in
/// the window: fixtures/quota/claude/2.1.332/q_warning_late).
pub(super) fn read_quota(
    q: &super::manifest::QuotaFrame,
    frame: &Value,
) -> Option<super::quota_signal::Signal> {
    let mut r = reading(q, frame, false);
    if r.1.is_none()
        && let Some(w) = fullest_window(q, frame)
    {
        let rejected = r.0.as_deref() == Some("rejected");
        r = (
            if rejected { r.0 } else { w.0.or(r.0) },
            w.1,
            w.2.or(r.2),
            w.3,
        );
    }
    let (status, utilization, resets_at, window) = r;
    (status.is_some() || utilization.is_some()).then(|| super::quota_signal::Signal {
        status,
        utilization,
        window,
        resets_at,
        source: q.kind.to_string(),
    })
}
