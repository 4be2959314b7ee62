use super::*;

const S: u64 = 1000;

fn by(now: u64) -> Learned<'static> {
    Learned {
        now,
        unit: "a",
        source: "exit 75",
    }
}

fn lim(pause_at: Option<f64>) -> Limits {
    Limits {
        pause_at,
        stagger_ms: 5 * S,
    }
}

fn held(until: u64, kind: HoldKind) -> Gate {
    Gate::Held { until, kind }
}

#[test]
fn a_known_reset_holds_until_it_then_starts_go_one_per_stagger_until_one_succeeds() {
    let mut e = Entry::new("claude", "default");
    assert_eq!(gate(&mut e, 0, &lim(None)), Gate::Open { release: false });
    learn_limit(&mut e, Some(60 * S), |_| unreachable!(), by(10 * S));
    assert_eq!(
        gate(&mut e, 59 * S, &lim(None)),
        held(60 * S, HoldKind::RateLimited)
    );
    // At the reset: one start, then the next waits its stagger.
    let g = gate(&mut e, 60 * S, &lim(None));
    assert_eq!(g, Gate::Open { release: true });
    started(&mut e, 60 * S, &g);
    assert_eq!(
        gate(&mut e, 61 * S, &lim(None)),
        held(65 * S, HoldKind::Stagger)
    );
    assert_eq!(
        gate(&mut e, 65 * S, &lim(None)),
        Gate::Open { release: true }
    );
    // A run that began before the release proves nothing; one after it does.
    learn_ok(&mut e, 59 * S);
    assert!(e.releasing);
    learn_ok(&mut e, 60 * S);
    assert!(!e.releasing && e.is_idle(), "{e:?}");
    assert_eq!(
        gate(&mut e, 61 * S, &lim(None)),
        Gate::Open { release: false }
    );
}

#[test]
fn an_unknown_reset_backs_off_longer_with_each_refusal_and_a_success_forgets() {
    let mut e = Entry::new("codex", "default");
    let backoff = |n: u32| (1u64 << n) * S;
    learn_limit(&mut e, None, backoff, by(0));
    assert_eq!(gate(&mut e, 0, &lim(None)), held(S, HoldKind::Backoff));
    learn_limit(&mut e, None, backoff, by(S));
    assert_eq!(gate(&mut e, S, &lim(None)), held(3 * S, HoldKind::Backoff));
    assert_eq!(e.strikes, 2);
    assert_eq!(
        gate(&mut e, 3 * S, &lim(None)),
        Gate::Open { release: true }
    );
    learn_ok(&mut e, 3 * S);
    assert!(e.is_idle(), "{e:?}");
}

#[test]
fn a_later_fact_never_shortens_a_hold() {
    let mut e = Entry::new("claude", "default");
    learn_limit(&mut e, Some(100 * S), |_| 0, by(0));
    learn_limit(&mut e, Some(50 * S), |_| 0, by(S));
    assert_eq!(e.held_until, Some(100 * S));
}

fn signal(status: &str, utilization: Option<f64>, resets_at: Option<u64>) -> Signal {
    Signal {
        status: Some(status.into()),
        utilization,
        window: Some("five_hour".into()),
        resets_at,
        source: "rate_limit_event".into(),
    }
}

#[test]
fn pause_at_stops_starts_until_the_window_resets() {
    let mut e = Entry::new("claude", "default");
    learn_signal(&mut e, &signal("allowed", Some(91.0), Some(100 * S)), by(0));
    // Without a threshold only the wall holds; with one, 91 % pauses at 90.
    assert_eq!(gate(&mut e, S, &lim(None)), Gate::Open { release: false });
    assert_eq!(
        gate(&mut e, S, &lim(Some(90.0))),
        held(100 * S, HoldKind::Paused)
    );
    assert_eq!(
        gate(&mut e, S, &lim(Some(95.0))),
        Gate::Open { release: false }
    );
    let g = gate(&mut e, 100 * S, &lim(Some(90.0)));
    assert_eq!(g, Gate::Open { release: true });
    assert_eq!(e.window, None);
}

#[test]
fn a_warning_without_a_figure_reaches_the_threshold_and_a_rejection_holds() {
    let mut e = Entry::new("claude", "default");
    learn_signal(
        &mut e,
        &signal("allowed_warning", None, Some(10 * S)),
        by(0),
    );
    assert_eq!(
        gate(&mut e, 0, &lim(Some(100.0))),
        held(10 * S, HoldKind::Paused)
    );
    let mut r = Entry::new("claude", "default");
    learn_signal(&mut r, &signal("rejected", None, Some(20 * S)), by(0));
    assert_eq!(
        gate(&mut r, 0, &lim(None)),
        held(20 * S, HoldKind::RateLimited)
    );
    // A rejection with no reset is learned when the run ends, not here.
    let mut n = Entry::new("claude", "default");
    learn_signal(&mut n, &signal("rejected", None, None), by(0));
    assert_eq!(n.held_until, None);
}

#[test]
fn held_by_names_the_account_the_time_and_the_teacher() {
    let mut e = Entry::new("claude", "work");
    learn_signal(
        &mut e,
        &signal("allowed", Some(93.5), Some(1_796_000_000_000)),
        by(0),
    );
    let h = held_by(&e, 1_796_000_000_000, HoldKind::Paused);
    assert_eq!(h.short(), "quota: claude/work until 00:53:20");
    let text = h.to_string();
    assert!(
        text.contains("at 94 % of five_hour, learned from unit a (exit 75)"),
        "{text}"
    );
}
