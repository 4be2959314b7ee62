//! Fix rounds: a failed `verify` goes back to the author's session.

use super::fakes::{Lab, result, rounds};

const VERIFY: &str = "grep -q fixed out.txt || { echo 'out.txt is not fixed: oops' >&2; exit 3; }";

fn dispatch(lab: &Lab, unit: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        unit,
        "--prompt",
        "write out.txt",
        "--verify",
        VERIFY,
        "--output",
        "json",
    ];
    args.extend_from_slice(extra);
    lab.run(&args)
}

#[test]
fn a_unit_that_fails_verify_once_is_fixed_in_its_own_session() {
    let lab = Lab::new();
    lab.on("codex", 2, "write", "out.txt\nfixed\n");
    let out = dispatch(&lab, "u", &["--fix-rounds", "3"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(
        (v["state"].as_str(), v["attempt"].as_u64()),
        (Some("done"), Some(2))
    );
    assert_eq!(rounds(&v), ["fix 1 done"]);
    let r = &v["rounds"][0];
    assert_eq!(r["trigger"], "verify");
    assert_eq!(r["of"], 3);
    assert_eq!(
        r["verify"],
        serde_json::json!({"command": VERIFY, "exitCode": 0, "passed": true})
    );
    // The same session, resumed, with the check's command, status and output.
    let args = lab.args("codex", 2);
    assert!(
        args.contains("resume\n01a229fa-c269-71a3-a12b-439065dbf14b"),
        "{args}"
    );
    let prompt = lab.stdin("codex", 2);
    for part in [VERIFY, "3", "out.txt is not fixed: oops"] {
        assert!(
            prompt.contains(part),
            "{part:?} not in the fix prompt: {prompt}"
        );
    }
    // Usage adds up over the attempts; codex's thread total is cumulative,
    // and the fake's resumed run reports the same total: nothing more.
    assert_eq!(v["rounds"][0]["usage"]["totalTokens"], 0, "{v}");
    assert_eq!(v["usage"]["totalTokens"], 120, "{v}");
    let m = lab.marker("u");
    assert_eq!(m["rounds"], v["rounds"]);
    assert_eq!(m.get("loopOpen"), None, "the loop is closed: {m}");
}

#[test]
fn rounds_exhausted_fail_with_reason_verify_and_say_how_many_ran() {
    let lab = Lab::new();
    let out = dispatch(&lab, "u", &["--fix-rounds", "2"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("failed"), Some("verify"))
    );
    assert_eq!(rounds(&v), ["fix 1 failed", "fix 2 failed"]);
    assert_eq!(v["rounds"][1]["verify"]["exitCode"], 3);
    assert_eq!(
        lab.count("codex"),
        3,
        "the first attempt and two rounds, no more"
    );
}

#[test]
fn without_fix_rounds_a_failed_verify_ends_the_unit_as_before() {
    let lab = Lab::new();
    let v = result(&dispatch(&lab, "u", &[]));
    assert_eq!(v["reason"], "verify");
    assert_eq!(v.get("rounds"), None);
    assert_eq!(lab.count("codex"), 1);
}

#[test]
fn a_token_budget_stops_further_rounds_with_reason_budget() {
    let lab = Lab::new();
    // Each codex run reports 120 tokens: the first attempt reaches 100.
    let out = dispatch(&lab, "u", &["--fix-rounds", "5", "--max-tokens", "100"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["reason"], "budget", "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("no further round"),
        "{v}"
    );
    assert_eq!(lab.count("codex"), 1, "no round started");
    assert_eq!(lab.marker("u")["reason"], "budget");
}
