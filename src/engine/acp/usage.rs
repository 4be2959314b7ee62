//! The turn's usage, from every place ACP agents report it (docs/ACP.md,
//! "Usage"): the prompt result's `usage` (ACP's own; opencode), its
//! `_meta.quota.token_count` (gemini), figures in `_meta` on session updates
//! (`_meta.usage`, `_meta.quota.token_count`), and `usage_update`'s cost.
//! One source gives the tokens, never two: they would be the same tokens.

use serde_json::Value;

use crate::engine::usage::Usage;

/// Where each shape is read, as `usage.source` names it.
pub const PROMPT_USAGE: &str = "session/prompt.usage";
pub const PROMPT_QUOTA: &str = "session/prompt._meta.quota.token_count";
pub const UPDATE_META_USAGE: &str = "session/update._meta.usage";
pub const UPDATE_META_QUOTA: &str = "session/update._meta.quota.token_count";
pub const USAGE_UPDATE: &str = "session/update.usage_update";

fn count(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// ACP's `Usage` shape (`inputTokens`, …), as the prompt result and
/// `_meta.usage` carry it.
fn acp_shape(u: &Value, source: &str) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let usage = Usage {
        input_tokens: count(u, "inputTokens"),
        cached_input_tokens: count(u, "cachedReadTokens"),
        output_tokens: count(u, "outputTokens"),
        reasoning_tokens: count(u, "thoughtTokens"),
        total_tokens: count(u, "totalTokens"),
        cost_usd: None,
        source: source.to_string(),
    };
    (!usage.is_empty()).then(|| usage.with_total())
}

/// gemini's `token_count {input_tokens, output_tokens}`.
fn quota_shape(t: &Value, source: &str) -> Option<Usage> {
    let usage = Usage {
        input_tokens: count(t, "input_tokens"),
        output_tokens: count(t, "output_tokens"),
        source: source.to_string(),
        ..Usage::default()
    };
    (!usage.is_empty()).then(|| usage.with_total())
}

/// The turn's tokens from the prompt result: `usage`, else
/// `_meta.quota.token_count`. Unknown shapes give `None`.
pub fn usage_of(result: &Value) -> Option<Usage> {
    if let Some(u) = result.get("usage").filter(|u| u.is_object()) {
        return acp_shape(u, PROMPT_USAGE);
    }
    quota_shape(result.pointer("/_meta/quota/token_count")?, PROMPT_QUOTA)
}

/// Figures in a session update's `_meta` (the notification's or the
/// update's own): `_meta.usage`, else `_meta.quota.token_count`.
fn meta_usage(params: &Value) -> Option<Usage> {
    let metas = [params.get("_meta"), params.pointer("/update/_meta")];
    metas.into_iter().flatten().find_map(|m| {
        m.get("usage")
            .and_then(|u| acp_shape(u, UPDATE_META_USAGE))
            .or_else(|| {
                let t = m.pointer("/quota/token_count")?;
                quota_shape(t, UPDATE_META_QUOTA)
            })
    })
}

/// What the turn's session updates said about usage so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageSeen {
    /// The latest `_meta` figures: an agent repeats them on each chunk of a
    /// message or runs them up, so adding them up would count tokens twice.
    meta: Option<Usage>,
    /// The latest `usage_update` cost in USD: the session's so far.
    cost: Option<f64>,
}

impl UsageSeen {
    /// One `session/update`'s `params`, during the turn.
    pub fn update(&mut self, params: &Value) {
        if let Some(u) = meta_usage(params) {
            self.meta = Some(u);
        }
        let u = params.get("update").unwrap_or(&Value::Null);
        if u.get("sessionUpdate").and_then(Value::as_str) == Some("usage_update")
            && let Some(c) = u.get("cost")
            && c.get("currency").and_then(Value::as_str) == Some("USD")
            && let Some(amount) = c.get("amount").and_then(Value::as_f64)
            && amount.is_finite()
            && amount >= 0.0
        {
            self.cost = Some(amount);
        }
    }

    /// The turn's usage once the prompt is answered with `result`, and
    /// whether its cost is the session's running total (`usage_update`'s).
    /// Tokens: the result's own figures win over the updates' (they are the
    /// turn's whole, the updates' a part or a running count); cost: only
    /// `usage_update` has one. `None` when no source said anything.
    pub fn turn(&self, result: &Value) -> (Option<Usage>, bool) {
        let tokens = usage_of(result).or_else(|| self.meta.clone());
        let Some(cost) = self.cost else {
            return (tokens, false);
        };
        let usage = match tokens {
            Some(u) => Usage {
                cost_usd: Some(cost),
                source: format!("{}+{USAGE_UPDATE}", u.source),
                ..u
            },
            None => Usage {
                cost_usd: Some(cost),
                source: USAGE_UPDATE.to_string(),
                ..Usage::default()
            },
        };
        (Some(usage), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_prompt_result_in_acps_shape_and_geminis() {
        let own = usage_of(
            &json!({"usage": {"inputTokens": 5, "outputTokens": 2, "thoughtTokens": 1, "cachedReadTokens": 3}}),
        );
        let want = Usage {
            input_tokens: Some(5),
            cached_input_tokens: Some(3),
            output_tokens: Some(2),
            reasoning_tokens: Some(1),
            total_tokens: Some(7),
            cost_usd: None,
            source: PROMPT_USAGE.to_string(),
        };
        assert_eq!(own, Some(want));
        let quota = usage_of(
            &json!({"_meta": {"quota": {"token_count": {"input_tokens": 100, "output_tokens": 20}}}}),
        );
        assert_eq!(
            quota.map(|u| (u.total_tokens, u.source)),
            Some((Some(120), PROMPT_QUOTA.to_string()))
        );
        for unknown in [
            json!({}),
            json!({"usage": {}}),
            json!({"usage": 3}),
            json!({"_meta": {"tokens": 9}}),
        ] {
            assert_eq!(usage_of(&unknown), None, "{unknown}");
        }
    }

    fn chunk_with(meta: Value) -> Value {
        json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
               "content": {"type": "text", "text": "x"}, "_meta": meta}})
    }

    /// Input, output, total and source.
    type Tokens<'a> = (Option<u64>, Option<u64>, Option<u64>, &'a str);

    fn tokens(u: &Option<Usage>) -> Option<Tokens<'_>> {
        u.as_ref().map(|u| {
            (
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
                u.source.as_str(),
            )
        })
    }

    #[test]
    fn meta_figures_on_updates_the_latest_counts_once() {
        let mut seen = UsageSeen::default();
        // Repeated on each chunk of one message: taken once, not added up.
        for _ in 0..3 {
            seen.update(&chunk_with(
                json!({"usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}}),
            ));
        }
        let (u, running) = seen.turn(&json!({"stopReason": "end_turn"}));
        assert_eq!(
            tokens(&u),
            Some((Some(10), Some(4), Some(14), UPDATE_META_USAGE))
        );
        assert!(!running);
        // The notification's own `_meta`, in gemini's quota shape, later.
        seen.update(&json!({"sessionId": "s", "_meta": {"quota": {"token_count":
            {"input_tokens": 30, "output_tokens": 6}}}, "update": {"sessionUpdate": "plan"}}));
        let (u, _) = seen.turn(&json!({"stopReason": "end_turn"}));
        assert_eq!(
            tokens(&u),
            Some((Some(30), Some(6), Some(36), UPDATE_META_QUOTA))
        );
        // The prompt result's own figures win over the updates'.
        let (u, _) = seen.turn(&json!({"usage": {"inputTokens": 1, "outputTokens": 1}}));
        assert_eq!(tokens(&u), Some((Some(1), Some(1), Some(2), PROMPT_USAGE)));
        // Unknown `_meta` is no usage.
        let mut seen = UsageSeen::default();
        seen.update(&chunk_with(json!({"usage": "lots", "quota": 3})));
        assert_eq!(seen.turn(&json!({})), (None, false));
    }

    #[test]
    fn usage_update_gives_the_sessions_cost_beside_the_tokens() {
        let update = |amount: Value, currency: &str| {
            json!({"sessionId": "s", "update": {"sessionUpdate": "usage_update",
                   "used": 53000, "size": 200000,
                   "cost": {"amount": amount, "currency": currency}}})
        };
        let mut seen = UsageSeen::default();
        seen.update(&update(json!(0.01), "USD"));
        seen.update(&update(json!(0.045), "USD"));
        // Not dollars, or nonsense: not a cost.
        seen.update(&update(json!(7), "credits"));
        seen.update(&update(json!(-1), "USD"));
        let (u, running) = seen.turn(&json!({"usage": {"inputTokens": 100, "outputTokens": 20,
                                                      "totalTokens": 120}}));
        let u = u.unwrap();
        assert_eq!(
            (u.total_tokens, u.cost_usd, u.source.as_str(), running),
            (
                Some(120),
                Some(0.045),
                "session/prompt.usage+session/update.usage_update",
                true
            )
        );
        // `used`/`size` are the context window, not tokens spent: a
        // usage_update alone gives only the cost.
        let mut seen = UsageSeen::default();
        seen.update(&update(json!(0.5), "USD"));
        let (u, _) = seen.turn(&json!({"stopReason": "end_turn"}));
        let u = u.unwrap();
        assert_eq!(
            (
                u.total_tokens,
                u.input_tokens,
                u.cost_usd,
                u.source.as_str()
            ),
            (None, None, Some(0.5), USAGE_UPDATE)
        );
    }
}
