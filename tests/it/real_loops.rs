//! The real-engine tier of issue 41's closed loops: the real CLIs, in the
//! loopback-only sandbox, against the fake model server's loop scenarios
//! (tests/support/fake_model_loops.py), whose request log proves what each
//! round's prompt delivered:
//! - fix rounds: `verify` fails after the first attempt, the exact resume of
//!   the author's session fixes the file, `verify` passes (every CLI);
//! - review: a claude author, a codex reviewer that asks for changes once, then
//!   approves; the author's resumed prompt carries the comment;
//! - resolve: a real git conflict between two dependencies of a plan, resolved
//!   by a real CLI (claude, codex) that edits the file; vf commits the merge.
//!
//! Skips like tests/it/real_engines.rs without the CLIs, and fails when
//! `VF_REAL_ENGINES=1` and one is missing. Linux only (`unshare -n`).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::first_session_id;
use crate::sandbox;
use sandbox::{Run, Sandbox, available, every_available, is_root, memo_id, versions};

/// The reviewer's one comment (fake_model_loops.py `REVIEW_COMMENT`).
const REVIEW_COMMENT: &str =
    "LAB-REVISE lab-loop.txt holds the draft line; replace it with the line 'lab-loop: revised'.";

/// Fails until lab-fix.txt holds the fixed line; its output names what the file
/// holds, which only the output (not the command) can carry to the fix prompt.
const FIX_VERIFY: &str = "grep -qx 'lab-fix: fixed' lab-fix.txt \
    || { echo \"LAB-FIXUP found: $(cat lab-fix.txt)\"; exit 1; }";

/// `git -C dir ARGS` with a fixed identity and no user config; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The sandbox's project as a repository with one commit of `files` (vf's state ignored).
fn init_repo(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join(".gitignore"), ".vibeflow/\n").unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// The user's checkout as vf must leave it: status, HEAD, branches not vf's.
fn checkout(repo: &Path) -> (String, String, String) {
    let branches = git(repo, &["branch", "--format=%(refname:short)"]);
    let mine: Vec<&str> = branches.lines().filter(|b| !b.starts_with("vf/")).collect();
    (
        git(repo, &["status", "--porcelain"]),
        git(repo, &["rev-parse", "HEAD"]),
        mine.join("\n"),
    )
}

/// As root, claude needs IS_SANDBOX=1 for --dangerously-skip-permissions.
fn engine_env(engine: &str) -> &'static [(&'static str, &'static str)] {
    match engine == "claude" && is_root() {
        true => &[("IS_SANDBOX", "1")],
        false => &[],
    }
}

/// The fake server's log entries whose answer was `served` (its first word).
fn served<'a>(log: &'a [Value], served: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|e| e["served"].as_str().and_then(|s| s.split(' ').next()) == Some(served))
        .collect()
}

/// Whether any string in `body` (a request) contains `needle`.
fn carries(body: &Value, needle: &str) -> bool {
    match body {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|v| carries(v, needle)),
        Value::Object(o) => o.values().any(|v| carries(v, needle)),
        _ => false,
    }
}

/// The one request the server answered as `what`: it carried the earlier turn
/// (`LAB-MEMO-<memo>`), so the session was resumed, not started afresh.
fn resumed_request<'a>(log: &'a [Value], what: &str, memo: &str) -> &'a Value {
    let hits = served(log, what);
    assert_eq!(hits.len(), 1, "{what}: {hits:?}");
    let memo = format!("LAB-MEMO-{memo}");
    assert_eq!(
        (
            &hits[0]["continuity"]["proven"],
            &hits[0]["continuity"]["memo"]
        ),
        (&Value::Bool(true), &Value::String(memo)),
        "{what}: the resumed session lost its first turn"
    );
    hits[0]
}

fn rounds(run: &Run) -> &Vec<Value> {
    run.result["rounds"]
        .as_array()
        .unwrap_or_else(|| panic!("no rounds: {}", run.result))
}

// ---------------------------------------------------------------- fix rounds

fn fix_rounds(sb: &Sandbox) {
    let memo = memo_id();
    let prompt = format!("LAB-FIXME Write lab-fix.txt. (LAB-MEMO-{memo})");
    let extra = [
        "--skip-permissions",
        "--fix-rounds",
        "2",
        "--verify",
        FIX_VERIFY,
    ];
    let run = sb.dispatch_env("fix", &prompt, &extra, engine_env(sb.engine));
    let what = format!("{} {}: fix rounds", sb.engine, sb.version);
    run.assert_done(&what);
    let rounds = rounds(&run);
    assert_eq!(rounds.len(), 1, "{what}: {rounds:?}");
    let r = &rounds[0];
    let shape = (&r["kind"], &r["trigger"], &r["n"], &r["of"], &r["attempt"]);
    assert_eq!(
        shape,
        (
            &"fix".into(),
            &"verify".into(),
            &1.into(),
            &2.into(),
            &2.into()
        ),
        "{what}: {r}"
    );
    assert_eq!(
        (&r["outcome"], &r["engine"]),
        (&"done".into(), &sb.engine.into())
    );
    let check = &r["verify"];
    assert_eq!(
        (&check["command"], &check["exitCode"], &check["passed"]),
        (&FIX_VERIFY.into(), &0.into(), &true.into()),
        "{what}: {r}"
    );
    // The round's usage is counted as the unit's (none where the CLI reports none).
    let counted = (r["usage"].is_object(), run.result["usage"].is_object());
    assert_eq!(counted.0, counted.1, "{what}: {r}");
    // Exact resume: the round ran in the session of the first attempt.
    let first = std::fs::read_to_string(sb.state_dir().join("units/fix/attempt-1.stdout.log"))
        .unwrap_or_default();
    let sid = first_session_id(&first).expect("attempt 1's raw log has the session id");
    assert_eq!(
        (&r["sessionId"], &run.result["sessionId"]),
        (&sid.clone().into(), &sid.into())
    );
    assert!(
        sb.state_dir()
            .join("units/fix/attempt-2.stdout.log")
            .is_file()
    );
    let text = std::fs::read_to_string(sb.workdir().join("lab-fix.txt")).unwrap();
    assert_eq!(text, "lab-fix: fixed\n", "{what}");
    // The fix prompt carried verify's output, to the resumed session.
    let log = sb.server_log();
    let req = resumed_request(&log, "fixup#0", &memo);
    assert!(
        carries(&req["body"], "LAB-FIXUP found: lab-fix: broken"),
        "{what}: the fix prompt lacks verify's output"
    );
}

fn fix_tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            fix_rounds(&Sandbox::new(engine, &version));
        }
    }
}

#[test]
fn real_fix_rounds_claude() {
    fix_tier("claude");
}

#[test]
fn real_fix_rounds_codex() {
    fix_tier("codex");
}

#[test]
fn real_fix_rounds_gemini() {
    fix_tier("gemini");
}

#[test]
fn real_fix_rounds_opencode() {
    fix_tier("opencode");
}

#[test]
fn real_fix_rounds_copilot() {
    fix_tier("copilot");
}

// ---------------------------------------------------------------- review

/// A claude author in a worktree, a codex reviewer (2 rounds): `changes`
/// once, the author's session resumed with the comment, then `approve`.
#[test]
fn real_review_claude_author_codex_reviewer() {
    if !every_available() {
        return;
    }
    let sb = Sandbox::every("claude");
    let repo = sb.workdir();
    init_repo(&repo, &[("README.md", "lab\n")]);
    let before = checkout(&repo);
    let memo = memo_id();
    let prompt = format!("LAB-LOOP Write lab-loop.txt. (LAB-MEMO-{memo})");
    let extra = [
        "--worktree",
        "--skip-permissions",
        "--review-engine",
        "codex",
        "--review-rounds",
        "2",
    ];
    let run = sb.dispatch_env("loop", &prompt, &extra, engine_env("claude"));
    run.assert_done("claude reviewed by codex");
    let author = run.result["sessionId"].as_str().unwrap().to_string();
    let rounds = rounds(&run);
    let kinds: Vec<&str> = rounds.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert_eq!(kinds, ["review", "fix", "review"], "{rounds:?}");
    for (r, n, engine) in [(&rounds[0], 1, "codex"), (&rounds[2], 2, "codex")] {
        assert_eq!(
            (&r["n"], &r["of"], &r["engine"], &r["outcome"]),
            (&n.into(), &2.into(), &engine.into(), &"done".into()),
            "{r}"
        );
        reviewer_session(&sb, r, &author);
    }
    assert_eq!(rounds[0]["verdict"]["verdict"], "changes", "{}", rounds[0]);
    assert_eq!(
        rounds[0]["verdict"]["comments"][0]["text"], REVIEW_COMMENT,
        "{}",
        rounds[0]
    );
    assert_eq!(rounds[2]["verdict"]["verdict"], "approve", "{}", rounds[2]);
    // The revision: the author's own session, resumed exactly.
    let fix = &rounds[1];
    assert_eq!(
        (
            &fix["trigger"],
            &fix["engine"],
            &fix["outcome"],
            &fix["attempt"]
        ),
        (
            &"review".into(),
            &"claude".into(),
            &"done".into(),
            &2.into()
        ),
        "{fix}"
    );
    assert_eq!(fix["sessionId"], author.as_str(), "{fix}");
    // What reached the model: two reviews on codex's API, the revision on claude's.
    let log = sb.server_log();
    let reviews: Vec<&str> = log
        .iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.contains("/responses")))
        .filter_map(|e| e["served"].as_str()?.split(' ').next())
        .filter(|s| s.starts_with("review-"))
        .collect();
    assert_eq!(reviews, ["review-changes#0", "review-approve#0"]);
    let revise = resumed_request(&log, "revise#0", &memo);
    assert!(
        revise["path"].as_str().unwrap().contains("/messages"),
        "{revise}"
    );
    assert!(
        carries(&revise["body"], REVIEW_COMMENT),
        "the author's resumed prompt lacks the reviewer's comment"
    );
    let file = git(&repo, &["show", "vf/loop:lab-loop.txt"]);
    assert_eq!(file, "lab-loop: revised");
    assert_eq!(checkout(&repo), before, "the user's checkout changed");
}

/// A review round's nested unit (`units/loop/rounds/units/<its unit>`)
/// printed the session id the round records, and it is not the author's.
fn reviewer_session(sb: &Sandbox, round: &Value, author: &str) {
    let name = round["unit"].as_str().unwrap_or_default();
    assert!(name.starts_with("review-"), "{round}");
    let dir = sb.state_dir().join("units/loop/rounds/units").join(name);
    let raw = std::fs::read_to_string(dir.join("attempt-1.stdout.log"))
        .unwrap_or_else(|e| panic!("{name}'s raw log in {}: {e}", dir.display()));
    let sid = first_session_id(&raw).expect("the reviewer printed a session id");
    assert_eq!(round["sessionId"], sid.as_str(), "{round}");
    assert_ne!(sid, author, "the reviewer ran in the author's session");
}

// ---------------------------------------------------------------- resolve

/// Two dependencies write the same new file differently; the unit that
/// depends on both merges them with `on_conflict = "resolve"`.
fn conflict_plan(engine: &str) -> String {
    let unit = |name: &str, prompt: &str, more: &str| {
        format!(
            "[[unit]]\nname = \"{name}\"\nengine = \"{engine}\"\nprompt = \"{prompt}\"\n\
             worktree = true\nskip_permissions = true\n{more}\n"
        )
    };
    [
        unit("left", "LAB-SIDE1 Write your side.", ""),
        unit("right", "LAB-SIDE2 Write your side.", ""),
        unit(
            "join",
            "Say what the merged tree holds.",
            &format!(
                "depends_on = [\"left\", \"right\"]\non_conflict = \"resolve\"\n\
                 resolver = \"{engine}\"\n"
            ),
        ),
    ]
    .concat()
}

fn conflict_resolved(sb: &Sandbox) {
    let what = format!("{} {}: conflict resolved", sb.engine, sb.version);
    let repo = sb.workdir();
    init_repo(&repo, &[("plan.toml", &conflict_plan(sb.engine))]);
    let before = checkout(&repo);
    let args = [
        "orchestrate",
        "plan.toml",
        "--jobs",
        "1",
        "--output",
        "jsonl",
    ];
    let out = sb.vf_env(&args, engine_env(sb.engine));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let end = lines.last().cloned().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{what}: {end}\n{stderr}");
    assert_eq!(end["ok"], true, "{what}: {end}");
    let join = lines
        .iter()
        .find(|l| l["kind"] == "dispatch.result" && l["unit"] == "join")
        .unwrap_or_else(|| panic!("{what}: no result of join"));
    assert_eq!(join["state"], "done", "{what}: {join}");
    let rounds = join["rounds"].as_array().expect("join has rounds");
    assert_eq!(rounds.len(), 1, "{what}: {rounds:?}");
    let r = &rounds[0];
    let shape = (&r["kind"], &r["engine"], &r["outcome"], &r["dependency"]);
    let want = (
        "resolve".into(),
        sb.engine.into(),
        "done".into(),
        "right".into(),
    );
    assert_eq!(shape, (&want.0, &want.1, &want.2, &want.3), "{what}: {r}");
    assert_eq!(
        r["paths"],
        serde_json::json!(["LAB-MERGE.txt"]),
        "{what}: {r}"
    );
    assert!(r["sessionId"].is_string(), "{what}: {r}");
    // The resolver's prompt named the conflicted path, and it edited the file.
    let log = sb.server_log();
    let asked = served(&log, "merge#0");
    assert_eq!(asked.len(), 1, "{what}: {asked:?}");
    assert!(carries(&asked[0]["body"], "LAB-MERGE.txt"));
    merge_committed(&repo, sb.engine, &what);
    assert_eq!(
        checkout(&repo),
        before,
        "{what}: the user's checkout changed"
    );
}

/// vf's merge commit of vf/right on vf/join: both parents, its message, the
/// resolved file without a conflict marker line.
fn merge_committed(repo: &Path, engine: &str, what: &str) {
    let subject = format!("vf: merge vf/right into vf/join (resolved by {engine})");
    let log = git(repo, &["log", "--format=%H %P%x09%s", "vf/join"]);
    let line = log
        .lines()
        .find(|l| l.ends_with(&subject))
        .unwrap_or_else(|| panic!("{what}: no merge commit {subject:?}:\n{log}"));
    let ids: Vec<&str> = line.split('\t').next().unwrap().split(' ').collect();
    let right = git(repo, &["rev-parse", "vf/right"]);
    assert_eq!(ids.len(), 3, "{what}: not a merge of two parents: {line}");
    assert_eq!(ids[2], right, "{what}: the second parent is not vf/right");
    let left = git(repo, &["rev-parse", "vf/left"]);
    let ancestry = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", &left, ids[1]])
        .status()
        .unwrap();
    assert!(ancestry.success(), "{what}: vf/left is not below the merge");
    let file = git(repo, &["show", &format!("{}:LAB-MERGE.txt", ids[0])]);
    assert_eq!(file, "side 1\nside 2", "{what}");
    let worktree = repo.join(".vibeflow/worktrees/join");
    let unmerged = git(&worktree, &["diff", "--name-only", "--diff-filter=U"]);
    assert_eq!(unmerged, "", "{what}: unmerged paths left");
}

fn resolve_tier(engine: &'static str) {
    for version in versions(engine) {
        if available(engine, &version) {
            conflict_resolved(&Sandbox::new(engine, &version));
        }
    }
}

#[test]
fn real_conflict_resolved_by_claude() {
    resolve_tier("claude");
}

#[test]
fn real_conflict_resolved_by_codex() {
    resolve_tier("codex");
}
