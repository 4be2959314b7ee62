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
fn claude_with_a_wall(lab: &Lab, units: &[&str]) -> Vec<(String, String)> {
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

/// Unit `a` meets the wall on worker 1 (its rate limit names the reset);
/// `b` and `c` are held in the workflow, shown waiting with `heldBy`.
/// Worker 1 is then stopped: worker 2, whose own ledger never heard of the
/// limit, runs `b` and `c`, and only after the reset. One start in all
/// met the wall (without the governor each of the three would have).
#[test]
fn a_limit_learned_on_one_worker_holds_the_engine_on_the_other() {
    let Some(lab) = Lab::new("quota-hold") else {
        return;
    };
    let envs = claude_with_a_wall(&lab, &["a", "b", "c"]);
    let plan = plan_units(&[("a", &[]), ("b", &[]), ("c", &[])], "");
    lab.env.write("plan.toml", plan.replace("\"codex\"", "\"claude\""));
    let ledger = |w: &str| lab.path().join(format!("{w}-quota.json"));
    let worker = |w: &str| {
        let file = ledger(w).display().to_string();
        let mut e: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        e.push(("VF_QUOTA_FILE", &file));
        lab.worker_with(w, "1", &e)
    };
    let mut w1 = worker("w1");
    let mut submit = lab.orchestrate(&["--detach", "--json", "--jobs", "1"]);
    submit.envs(envs.iter().map(|(k, v)| (k, v)));
    let out = run_bounded(submit, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let id: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = id["workflowId"].as_str().unwrap().to_string();
    // `b` waits in the workflow, held by what `a` met on worker 1.
    let mut held = Value::Null;
    wait_for("b to be held", Duration::from_secs(60), || {
        held = row(&status(&lab, &id), "b").clone();
        held["heldBy"].is_object()
    });
    assert_eq!(held["state"], "waiting", "{held}");
    let by = &held["heldBy"];
    assert_eq!(
        (&by["engine"], &by["account"], &by["kind"], &by["unit"]),
        (&"claude".into(), &"default".into(), &"rate-limited".into(), &"a".into()),
        "{held}"
    );
    let reset_s: u64 = read_text(&lab.path().join("runs/reset")).trim().parse().unwrap();
    assert!(by["until"].as_str().unwrap().contains('T'), "{by}");
    // Worker 1 (whose ledger learned the limit) goes; worker 2 knows nothing.
    let w2 = worker("w2");
    w1.kill9();
    let out = run_bounded(
        {
            let mut c = lab.orchestrate(&["--follow", "--json", "--jobs", "1"]);
            c.envs(envs.iter().map(|(k, v)| (k, v)));
            c
        },
        Duration::from_secs(180),
    );
    let r: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let a = row(&r, "a");
    assert_eq!((&a["state"], &a["reason"]), (&"failed".into(), &"rate-limited".into()), "{r}");
    for u in ["b", "c"] {
        let x = row(&r, u);
        assert_eq!(x["state"], "done", "{r}");
        assert_eq!(x["host"].as_str(), Some(w2.host.as_str()), "{r}");
        assert!(x.get("heldBy").is_none(), "{x}");
    }
    let walls = super::server::lines(&lab.path().join("runs/wall.log"));
    assert_eq!(walls, ["a"], "only a met the wall: {:?}", starts(&lab));
    let all = starts(&lab);
    for (u, t) in &all {
        if u != "a" {
            assert!(*t >= reset_s * 1000, "{u} started before the reset: {all:?}");
        }
    }
    let count = |u: &str| all.iter().filter(|(x, _)| x == u).count();
    assert_eq!((count("a"), count("b"), count("c")), (1, 1, 1), "{all:?}");
    // Worker 2's own ledger was never taught the limit: the workflow held it.
    let w2_ledger = std::fs::read_to_string(ledger("w2")).unwrap_or_default();
    assert!(!w2_ledger.contains("heldUntil"), "{w2_ledger}");
}
