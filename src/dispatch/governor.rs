//! The quota governor at the start and end of every attempt (a dispatch,
//! a plan unit, a round, a conversation turn, a Temporal activity): the
//! account must be open before the engine starts, and what the run met
//! (a limit, a clean end) is taught to the shared ledger (`crate::quota`).

use super::{DispatchResult, EventSink, UnitSpec};
use crate::engine::EngineId;
use crate::ground::error::{Reason, Result, VfError};
use crate::quota;
use crate::unit::UnitState;

/// One attempt's turn at the governor.
pub(super) struct Turn {
    engine: EngineId,
    account: String,
    unit: String,
    started_ms: u64,
    /// What the ledger warned of at the start (the result carries it too).
    warnings: Vec<String>,
}

impl Turn {
    /// Takes a start of the unit's engine on its account, or refuses with
    /// what holds it (exit 75; nothing is written). A start that only waits
    /// its turn after a hold (`stagger`, seconds) waits for it instead.
    pub(super) async fn admit(spec: &UnitSpec, sink: &mut dyn EventSink) -> Result<Turn> {
        let account = spec.quota.account_name().to_string();
        let mut warnings = Vec::new();
        while !spec.quota.admitted.spend() {
            let (gate, warning) = quota::admit(spec.engine, &account, &spec.quota.limits);
            if let Some(w) = warning {
                sink.warning(&w);
                warnings.push(w);
            }
            match gate {
                Ok(()) => break,
                Err(held) if held.kind == quota::HoldKind::Stagger => {
                    let until = quota::entry::parse_ms(&held.until).unwrap_or(0);
                    let left = until.saturating_sub(quota::now_ms());
                    tokio::time::sleep(std::time::Duration::from_millis(left.max(1))).await;
                }
                Err(held) => return Err(VfError::Held(held)),
            }
        }
        Ok(Turn {
            engine: spec.engine,
            account,
            unit: spec.unit.clone(),
            started_ms: quota::now_ms(),
            warnings,
        })
    }

    /// A quota frame the engine printed while it ran.
    pub(super) fn signal(&self, signal: &quota::Signal, sink: &mut dyn EventSink) {
        let w = quota::learn_signal(self.engine, &self.account, &self.unit, signal);
        if let Some(w) = w {
            sink.warning(&w);
        }
    }

    /// What the attempt's end teaches: a limit holds the account for every
    /// vf process; any other end of a run that reached its engine (done, or
    /// failed for another reason) proves it open again.
    pub(super) fn learn(self, res: &mut DispatchResult, sink: &mut dyn EventSink) {
        res.account = (self.account != quota::DEFAULT_ACCOUNT).then(|| self.account.clone());
        let w = match (res.reason, res.state) {
            (Some(Reason::RateLimited), _) => {
                let source = match res.retry_at {
                    Some(_) => "rate-limited run, reset named by the engine",
                    None => "rate-limited run, no reset named",
                };
                let retry_at = res.retry_at.as_deref();
                quota::learn_limit(self.engine, &self.account, &self.unit, retry_at, source)
            }
            (_, UnitState::Done) => quota::learn_ok(self.engine, &self.account, self.started_ms),
            _ if res.exit_code.is_some() => {
                quota::learn_ok(self.engine, &self.account, self.started_ms)
            }
            _ => None,
        };
        res.warnings.extend(self.warnings);
        if let Some(w) = w {
            sink.warning(&w);
            res.warnings.push(w);
        }
        // Met first by a command's own account choice: still the result's.
        if let Some(t) = quota::ledger::trouble()
            && !res.warnings.contains(&t)
        {
            res.warnings.push(t);
        }
    }
}
