//! The workflow as the quota governor of its plan (issue 42, point 6): a
//! limit learned on one worker holds that engine for every worker, and the
//! held units wait in the workflow until the reset. Each worker has a
//! quota ledger of its own, so nothing but the workflow can hold a unit
//! that runs on the other.

use std::time::Duration;

use serde_json::Value;

use super::{Lab, plan_units, row};
use crate::common::*;

/// How long the fake's wall stands after the first start meets it.
const WALL_SECS: u64 = 8;

/// claude as a fake with a wall: the first start of any unit raises it
/// for [`WALL_SECS`]; every start before it falls is refused with a
/// `rate_limit_event` naming the reset (`runs/wall.log` lists them), every
/// later one runs (`runs/times.log`: each start's unit and time in ms).
fn claude_with_a_wall(lab: &Lab, units: &[&str], ok_delay: &str) -> Vec<(String, String)> {
    let runs = lab.path().join("runs");
    let bin = lab.env.fake_for("claude");
    lab.env.write("bin/claude.env", "FAKE_VERSION=2.1.207\n");
    let cap = "claude/2.1.207/d_error429.stdout.jsonl";
    let mut limited: Vec<String> = read_text(&fixture(cap)).lines().map(String::from).collect();
    let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":@RESET@,"rateLimitType":"five_hour"},"session_id":"6194bcf3-613b-4938-813a-96fd27dc6521"}"#;
    limited.insert(1, event.to_string());
    let limited = lab.env.write("limited.jsonl", limited.join("\n") + "\n");
    let ok = fixture("claude/2.1.207/a_json.stdout.jsonl");
    let r = runs.display();
    let wall = format!(
        r#"if [ "${{1:-}}" != "--version" ]; then
  [ -f "{r}/reset" ] || echo $(( $(date +%s) + {WALL_SECS} )) > "{r}/reset"
  echo "$(basename "$PWD") $(date +%s%3N)" >> "{r}/times.log"
  if [ "$(date +%s)" -lt "$(cat "{r}/reset")" ]; then
    echo "$(basename "$PWD")" >> "{r}/wall.log"
    sed "s/@RESET@/$(cat "{r}/reset")/" "{limited}" > "{r}/limited.$$"
    FAKE_STDOUT="{r}/limited.$$"
    FAKE_EXIT=1
  else
    FAKE_STDOUT="{ok}"
    FAKE_DELAY={ok_delay}
  fi
fi
"#,
        limited = limited.display(),
        ok = ok.display(),
    );
    for u in units {
        lab.env.write(&format!("{u}/fake.env"), &wall);
    }
    vec![("VF_CLAUDE_BIN".into(), bin.display().to_string())]
}

/// `(unit, ms)` of each start the fake logged.
fn starts(lab: &Lab) -> Vec<(String, u64)> {
    super::server::lines(&lab.path().join("runs/times.log"))
        .iter()
        .map(|l| {
            let (u, t) = l.split_once(' ').unwrap();
            (u.to_string(), t.parse().unwrap())
        })
        .collect()
}

fn status(lab: &Lab, id: &str) -> Value {
    let out = lab.control("--status", id);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

/// A plan's run where only the workflow can hold: the units `walled` meet
/// the wall on worker 1 (their limit names the reset) while `held` waits,
/// shown `waiting` with `heldBy`; worker 1 (whose ledger learned the limit)
/// is then stopped, and worker 2, whose ledger never heard of it, runs the
/// rest. The result, worker 2's host, the reset (s).
struct Held {
    result: Value,
    w2: String,
    reset_s: u64,
    row: Value,
}

fn hold_then_swap(lab: &Lab, units: &[&str], jobs: &str, held: &str, ok_delay: &str) -> Held {
    let envs = claude_with_a_wall(lab, units, ok_delay);
    let deps: Vec<(&str, &[&str])> = units.iter().map(|u| (*u, &[][..])).collect();
    let plan = plan_units(&deps, "");
    lab.env
        .write("plan.toml", plan.replace("\"codex\"", "\"claude\""));
    let ledger = |w: &str| lab.path().join(format!("{w}-quota.json"));
    let worker = |w: &str| {
        let file = ledger(w).display().to_string();
        let mut e: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        e.push(("VF_QUOTA_FILE", &file));
        lab.worker_with(w, jobs, &e)
    };
    let orchestrate = |flags: &[&str]| {
        let mut c = lab.orchestrate(&[flags, &["--json", "--jobs", jobs]].concat());
        c.envs(envs.iter().map(|(k, v)| (k, v)));
        c
    };
    let mut w1 = worker("w1");
    let out = run_bounded(orchestrate(&["--detach"]), Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = id["workflowId"].as_str().unwrap().to_string();
    let mut row_seen = Value::Null;
    wait_for("a unit to be held", Duration::from_secs(60), || {
        row_seen = row(&status(lab, &id), held).clone();
        row_seen["heldBy"].is_object()
    });
    let reset_s: u64 = read_text(&lab.path().join("runs/reset"))
        .trim()
        .parse()
        .unwrap();
    let w2 = worker("w2");
    w1.kill9();
    let out = run_bounded(orchestrate(&["--follow"]), Duration::from_secs(180));
    let text = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    // Worker 2's own ledger was never taught the limit: the workflow held it.
    let w2_ledger = std::fs::read_to_string(ledger("w2")).unwrap_or_default();
    assert!(!w2_ledger.contains("heldUntil"), "{w2_ledger}");
    Held {
        result,
        w2: w2.host.clone(),
        reset_s,
        row: row_seen,
    }
}

/// Unit `a` meets the wall on worker 1; `b` and `c` are held in the
/// workflow and run on worker 2, only after the reset. One start in all
/// met the wall (without the governor each of the three would have).
#[test]
fn a_limit_learned_on_one_worker_holds_the_engine_on_the_other() {
    let Some(lab) = Lab::new("quota-hold") else {
        return;
    };
    let h = hold_then_swap(&lab, &["a", "b", "c"], "1", "b", "0");
    assert_eq!(h.row["state"], "waiting", "{}", h.row);
    let by = &h.row["heldBy"];
    assert_eq!(
        (&by["engine"], &by["account"], &by["kind"], &by["unit"]),
        (
            &"claude".into(),
            &"default".into(),
            &"rate-limited".into(),
            &"a".into()
        ),
        "{}",
        h.row
    );
    let r = &h.result;
    let a = row(r, "a");
    assert_eq!(
        (&a["state"], &a["reason"]),
        (&"failed".into(), &"rate-limited".into()),
        "{r}"
    );
    for u in ["b", "c"] {
        let x = row(r, u);
        assert_eq!(x["state"], "done", "{r}");
        assert_eq!(x["host"].as_str(), Some(h.w2.as_str()), "{r}");
        assert!(x.get("heldBy").is_none(), "{x}");
    }
    let walls = super::server::lines(&lab.path().join("runs/wall.log"));
    assert_eq!(walls, ["a"], "only a met the wall: {:?}", starts(&lab));
    let all = starts(&lab);
    for (u, t) in &all {
        if u != "a" {
            assert!(
                *t >= h.reset_s * 1000,
                "{u} started before the reset: {all:?}"
            );
        }
    }
    let count = |u: &str| all.iter().filter(|(x, _)| x == u).count();
    assert_eq!((count("a"), count("b"), count("c")), (1, 1, 1), "{all:?}");
}

/// `a` and `b` meet the wall together (`--jobs 2`); `c`, `d` and `e` are
/// held. At the reset they start one at a time, the default stagger
/// (5 s) apart, though there is room for two: `d` waits the stagger after
/// `c` (which runs longer than it), where without it both would start at
/// the reset; `e` starts once there is room.
#[test]
fn at_the_reset_the_held_units_start_a_stagger_apart() {
    let Some(lab) = Lab::new("quota-stagger") else {
        return;
    };
    let h = hold_then_swap(&lab, &["a", "b", "c", "d", "e"], "2", "c", "6");
    let r = &h.result;
    for u in ["c", "d", "e"] {
        assert_eq!(row(r, u)["state"], "done", "{r}");
        assert_eq!(row(r, u)["host"].as_str(), Some(h.w2.as_str()), "{r}");
    }
    let mut walls = super::server::lines(&lab.path().join("runs/wall.log"));
    walls.sort();
    assert_eq!(walls, ["a", "b"], "{:?}", starts(&lab));
    let all = starts(&lab);
    let first = |u: &str| all.iter().find(|(x, _)| x == u).map(|(_, t)| *t).unwrap();
    let mut released: Vec<(u64, &str)> = ["c", "d", "e"].iter().map(|u| (first(u), *u)).collect();
    released.sort();
    let (one, two) = (released[0].0, released[1].0);
    assert!(one >= h.reset_s * 1000, "{all:?}");
    // The workflow lets the second through a stagger after it let the
    // first; the fakes' own start times may differ by a moment's dispatch.
    assert!(
        two - one >= 4_000,
        "the second started {} ms after the first: {all:?}",
        two - one
    );
}
