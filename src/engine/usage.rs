//! What a run consumed: the normalised `usage` object of results, markers,
//! `vf status` and `orchestrate.result`.
//!
//! Figures are the engine's own (see ENGINES.md, "Usage"); a figure the
//! engine does not report stays `null`, never 0, and a run whose engine
//! reported nothing has no `usage` at all.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The frame the figures came from (`result.usage`, `turn.completed.usage`, ...).
    pub source: String,
}

/// `a + b` where either may be unknown: unknown only when both are.
fn add_opt<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// `a - b` for cumulative counters; a counter that went down (a new thread)
/// keeps `a` whole.
fn sub_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) if a >= b => Some(a - b),
        (a, _) => a,
    }
}

impl Usage {
    /// Whether any figure is known.
    pub fn is_empty(&self) -> bool {
        self.input_tokens.is_none()
            && self.cached_input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.reasoning_tokens.is_none()
            && self.total_tokens.is_none()
            && self.cost_usd.is_none()
    }

    /// Both runs' figures together (opencode steps, a plan's units).
    pub fn plus(&self, o: &Usage) -> Usage {
        Usage {
            input_tokens: add_opt(self.input_tokens, o.input_tokens),
            cached_input_tokens: add_opt(self.cached_input_tokens, o.cached_input_tokens),
            output_tokens: add_opt(self.output_tokens, o.output_tokens),
            reasoning_tokens: add_opt(self.reasoning_tokens, o.reasoning_tokens),
            total_tokens: add_opt(self.total_tokens, o.total_tokens),
            cost_usd: add_opt(self.cost_usd, o.cost_usd),
            source: if self.source.is_empty() || self.source == o.source {
                o.source.clone()
            } else {
                "sum".to_string()
            },
        }
    }

    /// This cumulative figure less an earlier one of the same thread (codex).
    pub fn minus(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: sub_opt(self.input_tokens, earlier.input_tokens),
            cached_input_tokens: sub_opt(self.cached_input_tokens, earlier.cached_input_tokens),
            output_tokens: sub_opt(self.output_tokens, earlier.output_tokens),
            reasoning_tokens: sub_opt(self.reasoning_tokens, earlier.reasoning_tokens),
            total_tokens: sub_opt(self.total_tokens, earlier.total_tokens),
            cost_usd: match (self.cost_usd, earlier.cost_usd) {
                (Some(a), Some(b)) if a >= b => Some(a - b),
                (a, _) => a,
            },
            source: self.source.clone(),
        }
    }

    /// The total, or input + output when the engine gives no total.
    pub fn with_total(mut self) -> Usage {
        if self.total_tokens.is_none()
            && let (Some(i), Some(o)) = (self.input_tokens, self.output_tokens)
        {
            self.total_tokens = Some(i + o);
        }
        self
    }

    /// `1.2k tokens · $0.0012` for human lines and tables.
    pub fn short(&self) -> String {
        let tokens = match self.total_tokens {
            Some(t) if t >= 10_000 => format!("{:.1}k tokens", t as f64 / 1000.0),
            Some(t) => format!("{t} tokens"),
            None => "? tokens".to_string(),
        };
        match self.cost_usd {
            Some(c) => format!("{tokens} · ${c:.4}"),
            None => tokens,
        }
    }
}

/// Which of the figures an engine reported are the session's running total
/// rather than the run's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Running {
    /// All are the run's own.
    #[default]
    None,
    /// All are the thread's so far (codex).
    All,
    /// The cost is the session's so far, the tokens the run's (claude on a
    /// resume, from 2.1.332).
    Cost,
}

/// One run's usage and the session's new running total, from what the
/// engine reported: the `running` figures are the session's so far, so a
/// resumed run's are those less `previous` (the last run's total).
pub fn per_run(
    reported: Option<&Usage>,
    running: Running,
    previous: Option<&Usage>,
) -> (Option<Usage>, Option<Usage>) {
    let Some(u) = reported else {
        let kept = (running != Running::None).then(|| previous.cloned());
        return (None, kept.flatten());
    };
    match (running, previous) {
        (Running::None, _) => (Some(u.clone()), None),
        (_, None) => (Some(u.clone()), Some(u.clone())),
        (Running::All, Some(p)) => (Some(u.minus(p)), Some(u.clone())),
        (Running::Cost, Some(p)) => {
            let run = Usage {
                cost_usd: u.minus(p).cost_usd,
                ..u.clone()
            };
            // The session's tokens add up; its cost is what the engine says.
            let total = Usage {
                cost_usd: u.cost_usd,
                ..p.plus(u)
            };
            (Some(run), Some(total))
        }
    }
}

/// A plan's budget (`[budget]` in the plan, `--max-cost` / `--max-tokens`):
/// once the running total reaches it, no new unit starts (and with `hard`,
/// `--hard-budget`, the running ones are ended).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub cost_usd: Option<f64>,
    pub tokens: Option<u64>,
    #[serde(default)]
    pub hard: bool,
}

impl Budget {
    /// Checked values (the caller names where they came from).
    pub fn checked(self) -> Result<Budget, String> {
        match self.cost_usd {
            Some(c) if !(c.is_finite() && c > 0.0) => Err(format!(
                "the cost budget must be a positive number of USD, not {c}"
            )),
            _ if self.tokens == Some(0) => Err("the token budget must be at least 1".into()),
            _ => Ok(self),
        }
    }

    /// Whether it sets a limit at all.
    pub fn limits(&self) -> bool {
        self.cost_usd.is_some() || self.tokens.is_some()
    }

    /// A hard budget needs a limit to enforce (checked once flags and plan are merged).
    pub fn checked_hard(self) -> Result<Budget, String> {
        match (self.hard, self.cost_usd, self.tokens) {
            (true, None, None) => Err(
                "--hard-budget (or [budget] hard) needs a limit: --max-cost, --max-tokens, or [budget] cost_usd / tokens".into(),
            ),
            _ => Ok(self),
        }
    }

    /// `other`'s limits where it sets them, else this one's.
    pub fn or(self, other: Budget) -> Budget {
        Budget {
            cost_usd: other.cost_usd.or(self.cost_usd),
            tokens: other.tokens.or(self.tokens),
            hard: other.hard || self.hard,
        }
    }

    /// What is reached by `spent`, in words (`None`: not reached).
    pub fn reached(&self, spent: Option<&Usage>) -> Option<String> {
        let u = spent?;
        if let (Some(max), Some(c)) = (self.cost_usd, u.cost_usd)
            && c >= max
        {
            return Some(format!("budget reached: ${c:.4} of ${max:.4}"));
        }
        match (self.tokens, u.total_tokens) {
            (Some(max), Some(t)) if t >= max => {
                Some(format!("budget reached: {t} of {max} tokens"))
            }
            _ => None,
        }
    }
}

/// The sum of every known usage; `None` when none is known.
pub fn total<'a>(all: impl IntoIterator<Item = &'a Usage>) -> Option<Usage> {
    all.into_iter()
        .fold(None, |acc: Option<Usage>, u| match acc {
            Some(a) => Some(a.plus(u)),
            None => Some(u.clone()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(i: Option<u64>, o: Option<u64>, cost: Option<f64>) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            cost_usd: cost,
            source: "x".into(),
            ..Usage::default()
        }
    }

    #[test]
    fn unknown_figures_stay_unknown_through_sums() {
        let s = u(Some(1), None, None).plus(&u(Some(2), None, None));
        assert_eq!(s, u(Some(3), None, None));
        assert!(u(None, None, None).is_empty());
        assert_eq!(total([]), None);
    }

    #[test]
    fn a_cumulative_figure_less_the_previous_one() {
        let now = u(Some(300), Some(60), None);
        assert_eq!(
            now.minus(&u(Some(100), Some(20), None)),
            u(Some(200), Some(40), None)
        );
        // A counter that went down started over: keep it whole.
        assert_eq!(now.minus(&u(Some(900), None, None)), now);
    }

    #[test]
    fn a_resumed_cumulative_run_is_the_difference_never_a_sum() {
        let first = u(Some(100), Some(20), None);
        let now = u(Some(250), Some(45), None);
        assert_eq!(
            per_run(Some(&first), Running::All, None),
            (Some(first.clone()), Some(first.clone()))
        );
        assert_eq!(
            per_run(Some(&now), Running::All, Some(&first)),
            (Some(u(Some(150), Some(25), None)), Some(now.clone()))
        );
        // A run that reported nothing keeps the thread's total for the next one.
        assert_eq!(
            per_run(None, Running::All, Some(&first)),
            (None, Some(first.clone()))
        );
        assert_eq!(per_run(None, Running::None, Some(&first)), (None, None));
        assert_eq!(
            per_run(Some(&now), Running::None, Some(&first)),
            (Some(now), None)
        );
    }

    /// claude 2.1.332 on a resume: 100/20 tokens each run, `total_cost_usd`
    /// 0.0008, 0.0016, 0.0024 (the session's so far; tests/it/real_usage.rs).
    #[test]
    fn a_resumed_session_cost_is_the_runs_own_and_its_tokens_add_up() {
        let reported = |cost| u(Some(100), Some(20), Some(cost));
        let (run, first) = per_run(Some(&reported(0.0008)), Running::Cost, None);
        assert_eq!(run, Some(reported(0.0008)));
        let (run, second) = per_run(Some(&reported(0.0016)), Running::Cost, first.as_ref());
        assert_eq!(run.as_ref().map(|r| r.input_tokens), Some(Some(100)));
        let cost = run.unwrap().cost_usd.unwrap();
        assert!((cost - 0.0008).abs() < 1e-12, "{cost}");
        assert_eq!(second, Some(u(Some(200), Some(40), Some(0.0016))));
        let (run, third) = per_run(Some(&reported(0.0024)), Running::Cost, second.as_ref());
        let cost = run.unwrap().cost_usd.unwrap();
        assert!((cost - 0.0008).abs() < 1e-12, "{cost}");
        assert_eq!(third.unwrap().output_tokens, Some(60));
    }

    #[test]
    fn a_budget_is_reached_by_cost_or_tokens() {
        let b = Budget {
            cost_usd: Some(0.01),
            tokens: Some(200),
            hard: false,
        };
        let spent = u(Some(100), Some(20), Some(0.001)).with_total();
        assert_eq!(b.reached(Some(&spent)), None);
        assert_eq!(b.reached(None), None);
        let more = spent.plus(&spent);
        assert_eq!(
            b.reached(Some(&more)),
            Some("budget reached: 240 of 200 tokens".into())
        );
        let pricey = u(None, None, Some(0.02));
        assert_eq!(
            b.reached(Some(&pricey)),
            Some("budget reached: $0.0200 of $0.0100".into())
        );
        assert!(
            Budget {
                cost_usd: Some(-1.0),
                tokens: None,
                hard: false,
            }
            .checked()
            .is_err()
        );
        assert_eq!(Budget::default().or(b), b);
        let hard = Budget {
            hard: true,
            ..Budget::default()
        };
        assert!(hard.checked_hard().is_err());
        assert_eq!(hard.or(b).checked_hard(), Ok(Budget { hard: true, ..b }));
    }

    #[test]
    fn total_is_derived_only_when_missing() {
        assert_eq!(
            u(Some(100), Some(20), None).with_total().total_tokens,
            Some(120)
        );
        assert_eq!(u(Some(100), None, None).with_total().total_tokens, None);
        assert_eq!(
            u(Some(100), Some(20), Some(0.001)).with_total().short(),
            "120 tokens · $0.0010"
        );
    }
}
