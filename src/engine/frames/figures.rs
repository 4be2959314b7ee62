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

/// `retryAt` from epoch seconds (claude's `resetsAt`) or an RFC 3339 string.
pub(super) fn read_retry_at(frame: &Value, path: Path) -> Option<String> {
    let v = field(frame, path)?;
    if let Some(s) = v.as_str() {
        return Some(s.to_string()).filter(|s| crate::ground::fsutil::parse_rfc3339(s).is_some());
    }
    let secs = v.as_f64().filter(|f| f.is_finite() && *f > 0.0)?;
    // Milliseconds when the figure is too large to be seconds.
    let secs = if secs > 1e11 { secs / 1000.0 } else { secs };
    Some(crate::ground::fsutil::rfc3339(secs as u64, 0))
}

/// The quota reading a [`QuotaFrame`](super::manifest::QuotaFrame) names,
/// `None` when the frame says nothing the governor can use.
pub(super) fn read_quota(
    q: &super::manifest::QuotaFrame,
    frame: &Value,
) -> Option<super::quota_signal::Signal> {
    let text = |p: Path| field(frame, p).and_then(Value::as_str).map(str::to_string);
    let utilization = field(frame, q.utilization)
        .and_then(Value::as_f64)
        .map(|u| u * q.utilization_scale)
        .filter(|u| u.is_finite() && (0.0..=1000.0).contains(u));
    let resets_at = read_retry_at(frame, q.resets_at)
        .and_then(|t| crate::ground::fsutil::parse_rfc3339(&t))
        .map(|s| s * 1000);
    let status = text(q.status).filter(|s| s.len() <= 64);
    (status.is_some() || utilization.is_some()).then(|| super::quota_signal::Signal {
        status,
        utilization,
        window: text(q.window).filter(|w| w.len() <= 64),
        resets_at,
        source: q.kind.to_string(),
    })
}
