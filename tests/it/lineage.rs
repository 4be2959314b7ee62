//! Lineage (issue 44): a unit whose engine runs `vf dispatch` has a child,
//! `<parent>.<n>`, one level deeper; the engine is told its unit and depth;
//! the parent's result lists its children and the tree's usage; status,
//! report and a plan's budget see the tree; hostile values are refused.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::*;

/// A bridge agent that records what it was told, then delegates to a claude
/// unit through vf (`$CHILD_VF`, the fake claude `$CHILD_BIN`).
const DELEGATING: &str = r#"#!/bin/sh
cat > /dev/null
here="$(dirname "$0")"
env | grep '^VF_\(PARENT_UNIT\|DEPTH\)=' | sort > "$here/parent.env"
"$CHILD_VF" dispatch --engine claude --engine-bin "$CHILD_BIN" --prompt "a sub-task" --output json > "$here/child.json"
echo "delegated: $?"
"#;

/// A fake claude that records what it was told before it answers.
const TELLING_CLAUDE: &str = r#"#!/bin/sh
env | grep '^VF_\(PARENT_UNIT\|DEPTH\)=' | sort > "$TOLD_FILE"
exec "$FAKE_ENGINE" "$@"
"#;

const CLAUDE_CAPTURE: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";

fn run(c: Command) -> Output {
    run_bounded(c, Duration::from_secs(60))
}

/// The fake claude that tells into `$TOLD_FILE`.
fn telling_claude(env: &Env) -> std::path::PathBuf {
    std::fs::create_dir_all(env.path().join("bin")).unwrap();
    write_exe(&env.path().join("bin/claude"), TELLING_CLAUDE)
}

/// `cmd` set up for the fake claude (its capture and version).
fn with_claude(mut c: Command, env: &Env, told: &Path) -> Command {
    c.env("FAKE_STDOUT", fixture(CLAUDE_CAPTURE))
        .env("FAKE_VERSION", "2.1.332")
        .env("FAKE_ENGINE", fake())
        .env("TOLD_FILE", told)
        .env("CHILD_VF", vf())
        .env("CHILD_BIN", telling_claude(env));
    c
}

/// Unit `lead` on the delegating bridge; its result.
fn delegate(env: &Env) -> Value {
    delegate_with(env, &[])
}

/// [`delegate`] with these variables for the engines.
fn delegate_with(env: &Env, vars: &[(&str, &str)]) -> Value {
    write_exe(&env.path().join("agent.sh"), DELEGATING);
    let told = env.path().join("claude.env");
    let c = env.cmd(&[
        "dispatch",
        "--engine",
        "bridge",
        "--bridge",
        "./agent.sh",
        "--unit",
        "lead",
        "--prompt",
        "lead it",
        "--output",
        "json",
    ]);
    let mut c = with_claude(c, env, &told);
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    last_json(&out)
}

#[test]
fn an_engine_that_dispatches_through_vf_has_a_child_one_level_deeper() {
    let env = Env::new();
    let lead = delegate(&env);
    // The bridge was told its unit and depth; its child vf ran a claude unit.
    let told = read_text(&env.path().join("parent.env"));
    assert_eq!(told, "VF_DEPTH=1\nVF_PARENT_UNIT=lead\n");
    let child = serde_json::from_str::<Value>(&read_text(&env.path().join("child.json"))).unwrap();
    assert_eq!(child["unit"], "lead.1", "{child}");
    assert_eq!(
        (&child["parent"], &child["depth"]),
        (&"lead".into(), &2.into())
    );
    let m = env.marker("lead.1");
    assert_eq!((&m["parent"], &m["depth"]), (&"lead".into(), &2.into()));
    // The child's engine is told its own unit, one level deeper.
    let told = read_text(&env.path().join("claude.env"));
    assert_eq!(told, "VF_DEPTH=2\nVF_PARENT_UNIT=lead.1\n");
    // The parent: a top unit (no parent, no depth), its child, the tree's usage.
    assert!(
        lead.get("parent").is_none() && lead.get("depth").is_none(),
        "{lead}"
    );
    let top = env.marker("lead");
    assert!(
        top.get("parent").is_none() && top.get("depth").is_none(),
        "{top}"
    );
    assert_eq!(lead["children"], serde_json::json!(["lead.1"]), "{lead}");
    assert_eq!(
        lead["treeUsage"]["costUsd"], child["usage"]["costUsd"],
        "{lead}"
    );
    assert_eq!(lead["treeUsage"]["totalTokens"], 120, "{lead}");
    assert!(child.get("children").is_none() && child.get("treeUsage").is_none());
}

#[test]
fn a_resumed_child_keeps_its_lineage_and_its_engine_is_told_it() {
    let env = Env::new();
    // The child fails (its CLI exits 1), so that it can be resumed.
    delegate_with(&env, &[("FAKE_EXIT", "1")]);
    assert_eq!(env.marker("lead.1")["state"], "failed");
    let told = env.path().join("resumed.env");
    // Resumed from the top (no variables): never re-parented.
    let bin = env.path().join("bin/claude");
    let c = env.cmd(&[
        "resume",
        "lead.1",
        "--prompt",
        "more",
        "--output",
        "json",
        "--engine-bin",
        bin.to_str().unwrap(),
    ]);
    let mut c = with_claude(c, &env, &told);
    c.env("TOLD_FILE", &told);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = last_json(&out);
    assert_eq!(
        (&r["parent"], &r["depth"]),
        (&"lead".into(), &2.into()),
        "{r}"
    );
    let m = env.marker("lead.1");
    assert_eq!(
        (&m["parent"], &m["depth"], &m["attempts"]),
        (&"lead".into(), &2.into(), &2.into())
    );
    assert_eq!(read_text(&told), "VF_DEPTH=2\nVF_PARENT_UNIT=lead.1\n");
}

#[test]
fn hostile_lineage_variables_are_refused_before_anything_is_written() {
    let env = Env::new();
    let hostile: [&[(&str, &str)]; 5] = [
        &[("VF_DEPTH", "1")],
        &[("VF_PARENT_UNIT", "lead")],
        &[("VF_PARENT_UNIT", "lead"), ("VF_DEPTH", "x")],
        &[("VF_PARENT_UNIT", "lead"), ("VF_DEPTH", "0")],
        &[("VF_PARENT_UNIT", "../etc"), ("VF_DEPTH", "1")],
    ];
    let plan = env.write(
        "plan.toml",
        "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"p\"\n",
    );
    for vars in hostile {
        for args in [
            vec!["dispatch", "--engine", "codex", "--prompt", "p"],
            vec!["orchestrate", plan.to_str().unwrap()],
            vec!["resume", "lead"],
        ] {
            let mut c = env.cmd(&args);
            for (k, v) in vars {
                c.env(k, v);
            }
            let out = run(c);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{vars:?} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                !env.state().exists(),
                "{vars:?} {args:?} wrote the state dir"
            );
        }
    }
}

#[test]
fn a_dry_run_of_a_child_names_it_and_reserves_nothing() {
    let env = Env::new();
    let bin = env.fake_for("codex");
    let mut c = env.cmd(&[
        "dispatch",
        "--engine",
        "codex",
        "--engine-bin",
        bin.to_str().unwrap(),
        "--prompt",
        "p",
        "--dry-run",
        "--output",
        "json",
    ]);
    c.env("VF_PARENT_UNIT", "lead").env("VF_DEPTH", "1");
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(last_json(&out)["unit"], "lead.1");
    assert!(!env.state().join("units/lead.1").exists());
}

#[test]
fn status_and_report_show_the_tree() {
    let env = Env::new();
    delegate(&env);
    let out = env.run(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |u: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["unit"] == u)
            .cloned()
            .unwrap_or_else(|| panic!("{u} in {rows}"))
    };
    let (lead, child) = (row("lead"), row("lead.1"));
    assert_eq!(lead["children"], serde_json::json!(["lead.1"]), "{lead}");
    assert!(lead.get("parent").is_none(), "{lead}");
    assert_eq!(
        (&child["parent"], &child["depth"]),
        (&"lead".into(), &2.into())
    );
    // The human table: the child right under its parent, indented.
    let out = env.run(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("lead "))
        .expect(&text);
    assert!(lines[at + 1].starts_with("  lead.1 "), "{text}");
    // The report: the child's row right after its parent's, with its parent
    // and depth; the parent's tree usage; the totals count the child once.
    let out = env.run(&["report", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let units = r["units"].as_array().unwrap();
    let names: Vec<&str> = units.iter().map(|u| u["unit"].as_str().unwrap()).collect();
    assert_eq!(names, ["lead", "lead.1"], "{r}");
    assert_eq!(units[0]["children"], serde_json::json!(["lead.1"]));
    assert_eq!(
        units[0]["treeUsage"]["costUsd"],
        units[1]["usage"]["costUsd"]
    );
    assert_eq!(
        (&units[1]["parent"], &units[1]["depth"]),
        (&"lead".into(), &2.into())
    );
    let claude = r["totals"]["perEngine"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["engine"] == "claude")
        .cloned()
        .unwrap();
    assert_eq!(
        claude["usage"]["costUsd"], units[1]["usage"]["costUsd"],
        "{r}"
    );
    let out = env.run(&["report", "-o", "page.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = read_text(&env.path().join("page.html"));
    assert!(
        page.contains("data-unit=\"lead.1\" style=\"margin-left:1.5em\""),
        "indented child"
    );
    assert!(page.contains("<dt>parent</dt><dd>lead (depth 2)</dd>"));
}

#[test]
fn a_plan_budget_counts_what_a_units_children_spent() {
    let env = Env::new();
    write_exe(&env.path().join("agent.sh"), DELEGATING);
    // The lead's own run costs nothing it reports; its child's 0.0008 does.
    let plan = env.write(
        "plan.toml",
        "[budget]\ncost_usd = 0.0005\n\n\
         [[unit]]\nname = \"lead\"\nengine = \"bridge\"\nbridge = \"./agent.sh\"\nprompt = \"p\"\n\n\
         [[unit]]\nname = \"after\"\nengine = \"bridge\"\nbridge = \"./agent.sh\"\nprompt = \"p\"\ndepends_on = [\"lead\"]\n",
    );
    let told = env.path().join("claude.env");
    let c = env.cmd(&["orchestrate", plan.to_str().unwrap(), "--output", "json"]);
    let out = run(with_claude(c, &env, &told));
    let r = last_json(&out);
    let unit = |u: &str| {
        r["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["unit"] == u)
            .cloned()
            .unwrap_or_else(|| panic!("{u} in {r}"))
    };
    let lead = unit("lead");
    assert_eq!(lead["children"], serde_json::json!(["lead.1"]), "{r}");
    let after = unit("after");
    assert_eq!(
        (&after["state"], &after["reason"]),
        (&"notStarted".into(), &"budget".into()),
        "{r}"
    );
}
