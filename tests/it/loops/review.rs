//! Review: a reviewer from another engine gates the unit.

use super::fakes::{Lab, result, rounds};

const CHANGES: &str = r#"{"verdict": "changes", "comments": [{"path": "out.txt", "line": 1, "text": "say hello, not hi"}]}"#;
const APPROVE: &str = r#"{"verdict": "approve"}"#;

fn dispatch(lab: &Lab, rounds: &str) -> std::process::Output {
    lab.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "u",
        "--prompt",
        "write out.txt",
        "--review-engine",
        "claude",
        "--review-rounds",
        rounds,
        "--output",
        "json",
    ])
}

#[test]
fn changes_go_back_to_the_author_then_the_reviewer_approves() {
    let lab = Lab::new();
    lab.on("claude", 1, "answer", CHANGES);
    lab.on("claude", 2, "answer", APPROVE);
    let out = dispatch(&lab, "2");
    let v = result(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["state"], "done");
    assert_eq!(rounds(&v), ["review 1 done", "fix 1 done", "review 2 done"]);
    assert_eq!(
        v["rounds"][0]["verdict"],
        serde_json::from_str::<serde_json::Value>(CHANGES).unwrap()
    );
    assert_eq!(v["rounds"][1]["trigger"], "review");
    assert_eq!(v["rounds"][2]["verdict"]["verdict"], "approve");
    // The author's resumed prompt carries the comment.
    let revise = lab.stdin("codex", 2);
    assert!(revise.contains("say hello, not hi"), "{revise}");
    assert!(lab.args("codex", 2).contains("resume"));
    // The reviewer ran read-only (claude's plan mode), in its own nested unit.
    assert!(
        lab.args("claude", 1).contains("--permission-mode\nplan"),
        "{}",
        lab.args("claude", 1)
    );
    let review = lab.stdin("claude", 1);
    assert!(
        review.contains("write out.txt"),
        "the task is in the review prompt: {review}"
    );
    let nested = lab
        .state()
        .join("units/u/rounds/units/review-1/marker.json");
    assert!(nested.is_file(), "the reviewer's own marker");
    // Usage adds up: the author's 120 tokens (its resume reports the same
    // thread total: nothing more) and each review's 120.
    assert_eq!(v["usage"]["totalTokens"], 360, "{v}");
}

#[test]
fn changes_in_the_last_round_fail_the_unit_with_reason_review() {
    let lab = Lab::new();
    lab.on("claude", 1, "answer", CHANGES);
    let out = dispatch(&lab, "1");
    let v = result(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("failed"), Some("review"))
    );
    assert!(
        v["error"].as_str().unwrap().contains("say hello, not hi"),
        "{v}"
    );
    assert_eq!(lab.count("codex"), 1, "no revision after the last round");
    assert_eq!(lab.marker("u")["state"], "failed");
}

#[test]
fn a_reviewer_that_answers_garbage_is_asked_once_more_then_fails_review() {
    let lab = Lab::new();
    lab.on("claude", 1, "answer", r#"{"verdict": "maybe"}"#);
    lab.on("claude", 2, "answer", "not json at all");
    let out = dispatch(&lab, "2");
    let v = result(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["reason"], "review");
    assert_eq!(rounds(&v), ["review 1 failed"]);
    assert_eq!(lab.count("claude"), 2, "one more reviewer attempt, no more");
    let again = lab.args("claude", 2);
    assert!(
        again.contains("5e0e0c89-f301-4ba6-8327-7b41f84dc493"),
        "asked again in its session: {again}"
    );
}

#[test]
fn a_reviewer_of_its_own_engine_is_allowed_with_a_warning() {
    let lab = Lab::new();
    lab.on("codex", 2, "answer", APPROVE);
    let out = lab.run(&[
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "u",
        "--prompt",
        "p",
        "--review-engine",
        "codex",
        "--output",
        "json",
    ]);
    let v = result(&out);
    assert_eq!(v["state"], "done", "{v}");
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("own work"), "{warnings}");
}

#[test]
fn a_plan_unit_its_reviewer_rejects_fails_review_and_blocks_its_dependents() {
    let lab = Lab::new();
    lab.on("claude", 1, "answer", CHANGES);
    lab.write(
        "plan.toml",
        "[[unit]]\nname = \"u\"\nengine = \"codex\"\nprompt = \"write out.txt\"\n\
         review = { engine = \"claude\" }\n\n\
         [[unit]]\nname = \"d\"\nengine = \"codex\"\nprompt = \"after u\"\ndepends_on = [\"u\"]\n",
    );
    let out = lab.run(&["orchestrate", "plan.toml", "--output", "json"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let row = |name: &str| {
        v["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["unit"] == name)
            .unwrap()
            .clone()
    };
    let u = row("u");
    assert_eq!(
        (u["state"].as_str(), u["reason"].as_str()),
        (Some("failed"), Some("review")),
        "{u}"
    );
    assert_eq!(rounds(&u), ["review 1 done"]);
    let d = row("d");
    assert_eq!(
        (d["state"].as_str(), d["reason"].as_str()),
        (Some("blocked"), Some("dependency")),
        "{d}"
    );
    assert_eq!(lab.count("codex"), 1, "d never ran");
}

#[test]
fn what_the_reviewers_run_warns_of_reaches_the_units_result() {
    let lab = Lab::new();
    lab.on("claude", 1, "answer", APPROVE);
    // A reviewer CLI of a version vf has not verified: its run warns.
    let fake = lab.dir.join("bin/claude");
    let script = std::fs::read_to_string(&fake).unwrap();
    std::fs::write(
        &fake,
        script.replace("2.1.332 (Claude Code)", "9.0.0 (Claude Code)"),
    )
    .unwrap();
    let v = result(&dispatch(&lab, "1"));
    assert_eq!(v["state"], "done", "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("reviewer (claude): claude 9.0.0 is unverified"),
        "{warnings}"
    );
}
