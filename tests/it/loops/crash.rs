//! A `kill -9` of vf in a round, then a resume: the loop goes on at that
//! round and never repeats a finished one.

use std::time::Duration;

use super::fakes::{Lab, result, rounds};
use crate::common::{wait_exit, wait_for};

/// Starts `args`, waits until `engine`'s run `n` has started, `kill -9`s vf.
fn kill_in(lab: &Lab, args: &[&str], engine: &str, n: u32) {
    lab.on(engine, n, "hang", "");
    let mut child = lab
        .cmd(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = lab.runs().join(format!("{engine}.{n}.started"));
    wait_for(
        "the round's engine to start",
        Duration::from_secs(30),
        || started.exists(),
    );
    child.kill().unwrap();
    wait_exit(&mut child);
    // The lifeline ends the engine's group with vf; the next run is not hung.
    std::fs::remove_file(lab.runs().join(format!("{engine}.{n}.hang"))).unwrap();
}

#[test]
fn a_kill_in_a_review_round_is_continued_by_resume_without_running_the_author_again() {
    let lab = Lab::new();
    lab.on("claude", 2, "answer", r#"{"verdict": "approve"}"#);
    let args = [
        "dispatch",
        "--engine",
        "codex",
        "--unit",
        "u",
        "--prompt",
        "task",
        "--review-engine",
        "claude",
        "--output",
        "json",
    ];
    kill_in(&lab, &args, "claude", 1);
    let m = lab.marker("u");
    assert_eq!(
        (m["state"].as_str(), m["loopOpen"].as_bool()),
        (Some("done"), Some(true)),
        "{m}"
    );
    assert_eq!(rounds(&m), ["review 1 running"]);
    let st = lab.run(&["status", "--json"]);
    assert_eq!(st.status.code(), Some(0));
    let out = lab.run(&["resume", "u", "--output", "json"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(rounds(&v), ["review 1 done"]);
    assert_eq!(v["rounds"][0]["verdict"]["verdict"], "approve");
    assert_eq!(lab.count("codex"), 1, "the author is not run again");
    assert_eq!(lab.count("claude"), 2);
    assert_eq!(lab.marker("u").get("loopOpen"), None);
}

#[test]
fn a_kill_in_a_fix_round_of_a_plan_is_continued_by_orchestrate_resume() {
    let lab = Lab::new();
    lab.write(
        "plan.toml",
        "[[unit]]\nname = \"u\"\nengine = \"codex\"\nprompt = \"write out.txt\"\nfix_rounds = 3\n\
         verify = \"grep -q fixed out.txt\"\n",
    );
    lab.on("codex", 3, "write", "out.txt\nfixed\n");
    kill_in(
        &lab,
        &["orchestrate", "plan.toml", "--output", "jsonl"],
        "codex",
        2,
    );
    let m = lab.marker("u");
    assert_eq!(rounds(&m), ["fix 1 running"], "{m}");
    let out = lab.run(&["orchestrate", "plan.toml", "--resume", "--output", "json"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    let m = lab.marker("u");
    assert_eq!(m["state"], "done", "{m}");
    assert_eq!(
        rounds(&m),
        ["fix 1 done"],
        "the interrupted round finished, no new one"
    );
    assert_eq!(
        lab.count("codex"),
        3,
        "the first attempt, the killed round, its resume"
    );
    assert!(
        lab.args("codex", 3).contains("resume"),
        "the round's session resumed"
    );
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let mut c = std::process::Command::new("git");
    c.arg("-C").arg(dir).args(args);
    crate::common::git_env(&mut c);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_kill_in_a_resolve_round_is_continued_by_orchestrate_resume_and_the_merge_committed_once() {
    let lab = Lab::new();
    let w = lab.work();
    git(&w, &["init", "-q", "-b", "main"]);
    lab.write("f.txt", "base\n");
    lab.write(".gitignore", "plan.toml\n");
    git(&w, &["add", "f.txt", ".gitignore"]);
    git(&w, &["commit", "-qm", "base"]);
    let head = git(&w, &["rev-parse", "HEAD"]);
    lab.write(
        "plan.toml",
        "[defaults]\nengine = \"codex\"\nworktree = true\n\n\
         [[unit]]\nname = \"a\"\nprompt = \"a\"\n\n[[unit]]\nname = \"b\"\nprompt = \"b\"\ndepends_on = [\"a\"]\n\n\
         [[unit]]\nname = \"c\"\nprompt = \"c\"\n\n\
         [[unit]]\nname = \"j\"\nprompt = \"join\"\ndepends_on = [\"b\", \"c\"]\non_conflict = \"resolve\"\n",
    );
    // a, then c and b write f.txt their own way; j merges b cleanly, c conflicts.
    lab.on("codex", 1, "write", "f.txt\nfrom a\n");
    for n in [2, 3] {
        lab.on("codex", n, "write", &format!("f.txt\nside {n}\n"));
    }
    lab.on("codex", 5, "write", "f.txt\nresolved\n");
    kill_in(
        &lab,
        &[
            "orchestrate",
            "plan.toml",
            "--jobs",
            "1",
            "--output",
            "jsonl",
        ],
        "codex",
        4,
    );
    let m = lab.marker("j");
    assert_eq!(rounds(&m), ["resolve 1 running"], "{m}");
    let out = lab.run(&["orchestrate", "plan.toml", "--resume", "--output", "json"]);
    let v = result(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    let m = lab.marker("j");
    assert_eq!(
        (m["state"].as_str(), rounds(&m)),
        (Some("done"), vec!["resolve 1 done".to_string()]),
        "{m}"
    );
    assert_eq!(
        lab.count("codex"),
        6,
        "a, b, c, the killed resolver, its resume, j's task"
    );
    // Killed before it had a session: the resolver starts again with the whole ask.
    let ask = lab.stdin("codex", 5);
    assert!(ask.contains("f.txt") && ask.contains("vf/c"), "{ask}");
    let wt = lab.state().join("worktrees/j");
    let merges = git(&wt, &["log", "--merges", "--format=%s"]);
    assert_eq!(
        merges
            .lines()
            .filter(|l| l.contains("resolved by codex"))
            .count(),
        1,
        "{merges}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("f.txt")).unwrap(),
        "resolved\n"
    );
    // The user's checkout is as it was.
    assert_eq!(git(&w, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        git(&w, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}
