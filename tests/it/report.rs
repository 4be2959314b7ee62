//! `vf report` over a state dir vf itself wrote: a plan of worktree units on
//! the fake engine (two in parallel, one failing after them, one blocked),
//! its data model (`--json`), the page's escaping of hostile engine output,
//! bad input, and the page in a real browser (headless chromium, driven over
//! the DevTools protocol by `tests/support/report_browser.py`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common;
use common::*;

/// What the hostile unit's engine says and writes: markup that must stay text.
const HOSTILE_TEXT: &str = "<img src=x onerror=alert(1)></script><script>alert(2)</script>";
const HOSTILE_FILE: &str = "</pre><script>alert(3)</script>";

/// A repository, a plan of four worktree units and the state dir vf left.
struct Ran {
    env: Env,
}

impl Ran {
    fn repo(&self) -> PathBuf {
        self.env.path().join("repo")
    }
    fn plan(&self) -> PathBuf {
        self.repo().join("plan.toml")
    }
    fn git(&self, args: &[&str]) {
        let mut c = Command::new("git");
        c.arg("-C").arg(self.repo()).args(args);
        git_env(&mut c);
        let out = c.output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    }
    /// `vf report ARGS` with the state dir.
    fn report(&self, args: &[&str]) -> Output {
        let mut c = self.env.cmd(&["report"]);
        c.args(args);
        git_env(&mut c);
        run_bounded(c, Duration::from_secs(60))
    }
}

/// `a` and `b` in parallel (`a`'s engine hostile), `c` after both, failing,
/// `d` after `c`, blocked.
fn ran() -> Ran {
    let r = Ran { env: Env::new() };
    std::fs::create_dir_all(r.repo()).unwrap();
    r.git(&["init", "-q", "-b", "main"]);
    let good = fixture("codex/0.171.0/b_tool.stdout.jsonl");
    let text = read_text(&good)
        .replace(
            "I will run the command.",
            &HOSTILE_TEXT.replace('"', "\\\""),
        )
        .replace(
            "{\\\"confidence\\\":0.9,\\\"files_changed\\\":[]}",
            "{\\\"note\\\":\\\"</dd><script>alert(4)</script>\\\"}",
        );
    let text = text.replacen('\n', "\n{\"type\":\"mystery.frame\",\"x\":1}\n", 1);
    let hostile = r.env.write("hostile.jsonl", text);
    let fail = fixture("codex/0.171.0/d_error500.stdout.jsonl");
    let unit_env = |dir: &str, body: String| r.env.write(&format!("repo/{dir}/fake.env"), body);
    unit_env(
        "a",
        format!(
            "FAKE_STDOUT={}\nFAKE_WRITE=evil.html\nFAKE_NAME='{HOSTILE_FILE}'\nFAKE_DELAY=0.3\nFAKE_SLEEP_BEFORE=1\n",
            hostile.display()
        ),
    );
    unit_env(
        "b",
        format!(
            "FAKE_STDOUT={}\nFAKE_WRITE=b.txt\nFAKE_DELAY=0.2\nFAKE_SLEEP_BEFORE=1\n",
            good.display()
        ),
    );
    unit_env(
        "c",
        format!("FAKE_STDOUT={}\nFAKE_EXIT=1\n", fail.display()),
    );
    r.git(&["add", "."]);
    r.git(&["commit", "-q", "-m", "init"]);
    let unit = |name: &str, deps: &[&str], extra: &str| {
        format!(
            "[[unit]]\nname = \"{name}\"\nengine = \"codex\"\nprompt = \"work\"\nworktree = true\ncwd = \"{name}\"\ndepends_on = {deps:?}\n{extra}\n"
        )
    };
    let plan = [
        unit("a", &[], ""),
        unit("b", &[], "verify = \"true\""),
        unit("c", &["a", "b"], ""),
        unit("d", &["c"], ""),
    ]
    .join("\n");
    std::fs::write(r.plan(), plan).unwrap();
    let mut c = r.env.cmd(&[
        "orchestrate",
        r.plan().to_str().unwrap(),
        "--jobs",
        "2",
        "--json",
    ]);
    c.current_dir(r.repo())
        .env("VF_CODEX_BIN", r.env.fake_for("codex"));
    git_env(&mut c);
    let out = run_bounded(c, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    r
}

/// What the data model says, less what changes from run to run (times,
/// session ids, commit ids).
fn shape(v: &Value) -> Value {
    let units: Vec<Value> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let ws = &u["workspace"];
            json!({
                "unit": u["unit"], "state": u["state"], "engine": u["engine"],
                "engineVersion": u["engineVersion"], "reason": u["reason"],
                "verify": u["verify"], "dependsOn": u["dependsOn"], "attempts": u["attempts"],
                "sessionId": u["sessionId"].is_string(), "usage": u["usage"]["totalTokens"],
                "changedFiles": ws["changedFiles"],
                "diffFiles": ws["diff"].as_array().map(|d| d.iter().map(|f| f["file"].clone()).collect::<Vec<_>>()),
                "events": [u["events"].as_array().unwrap().len(), u["eventsTotal"]],
                "kinds": u["events"].as_array().unwrap().iter().map(|e| e["kind"].clone()).collect::<Vec<_>>(),
                "rawLines": u["rawLines"].as_object().unwrap().len(),
                "unknownFrames": u["unknownFrames"], "warnings": u["warnings"],
                "rawLog": u["rawLog"],
            })
        })
        .collect();
    let mut bars: Vec<Value> = v["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            json!([
                b["unit"],
                b["attempt"],
                b["outcome"],
                b["reason"],
                b["estimated"]
            ])
        })
        .collect();
    bars.sort_by_key(|b| b.to_string());
    json!({
        "format": v["format"], "units": units, "bars": bars, "edges": v["edges"],
        "unusable": v["unusable"], "drift": v["totals"]["drift"],
        "perEngine": v["totals"]["perEngine"].as_array().unwrap().iter()
            .map(|e| json!([e["engine"], e["units"], e["usage"]["totalTokens"]])).collect::<Vec<_>>(),
        "warnings": v["totals"]["warnings"],
        "lanes": v["lanes"].as_u64().map(|n| n <= 2),
    })
}

#[test]
fn the_data_model_of_a_plan() {
    let r = ran();
    let out = r.report(&["--plan", r.plan().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    let unit = |name: &str, state: &str, reason: Value, deps: &[&str], extra: Value| {
        let log = format!("units/{name}/attempt-1.stdout.log");
        let mut u = json!({
            "unit": name, "state": state, "engine": "codex", "engineVersion": "0.171.0",
            "reason": reason, "verify": null, "dependsOn": deps, "attempts": 1,
            "sessionId": true, "usage": 240, "changedFiles": null, "diffFiles": null,
            "events": [0, 0], "kinds": [], "rawLines": 0, "unknownFrames": {}, "warnings": [],
            "rawLog": log,
        });
        for (k, x) in extra.as_object().unwrap() {
            u[k] = x.clone();
        }
        u
    };
    let tool_kinds = json!([
        "system.status",
        "system.status",
        "message.taskAgent",
        "toolBurst",
        "message.taskAgent",
        "system.status"
    ]);
    let expected = json!({
        "format": 1,
        "units": [
            unit("a", "done", Value::Null, &[], json!({
                "changedFiles": ["a/evil.html"], "diffFiles": ["a/evil.html"],
                "events": [7, 7],
                "kinds": ["system.status", "system.unknownFrame", "system.status", "message.taskAgent", "toolBurst", "message.taskAgent", "system.status"],
                "rawLines": 8, "unknownFrames": {"mystery.frame": 1},
            })),
            unit("b", "done", Value::Null, &[], json!({
                "verify": "passed", "changedFiles": ["b/b.txt"], "diffFiles": ["b/b.txt"],
                "events": [6, 6], "kinds": tool_kinds, "rawLines": 7,
            })),
            // Its branch has its dependencies' branches merged in.
            unit("c", "failed", json!("engine"), &["a", "b"], json!({
                "usage": null, "changedFiles": ["a/evil.html", "b/b.txt"],
                "diffFiles": ["a/evil.html", "b/b.txt"],
                "events": [9, 9], "kinds": vec!["system.status"; 9],
                "rawLines": 9,
            })),
            unit("d", "blocked", json!("dependency"), &["c"], json!({
                "attempts": 0, "sessionId": false, "usage": null, "engineVersion": null,
                "rawLog": null,
            })),
        ],
        "bars": [
            ["a", 1, "done", null, false],
            ["b", 1, "done", null, false],
            ["c", 1, "failed", "engine", false],
            ["d", 0, "blocked", "dependency", false],
        ],
        "edges": [
            {"from": "a", "to": "c"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"},
        ],
        "unusable": [],
        "drift": [{"engine": "codex", "version": "0.171.0", "count": 1, "kinds": {"mystery.frame": 1}}],
        "perEngine": [["codex", 4, 480]],
        "warnings": [],
        "lanes": true,
    });
    assert_json_eq(&shape(&v), &expected);
}

/// Each embedded event is what `vf replay --output human` prints for it.
#[test]
fn events_are_rendered_as_replay_renders_them() {
    let r = ran();
    let v = stdout_json(&r.report(&["--json", "--units", "b,c"]));
    let units: Vec<&str> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["unit"].as_str().unwrap())
        .collect();
    assert_eq!(units, ["b", "c"]);
    for u in v["units"].as_array().unwrap() {
        let log = r.env.state().join(format!(
            "units/{}/attempt-1.stdout.log",
            u["unit"].as_str().unwrap()
        ));
        let out = r.env.run(&[
            "replay",
            "--cli",
            "codex",
            "--cli-version",
            "0.171.0",
            log.to_str().unwrap(),
            "--output",
            "human",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let shown: Vec<&str> = u["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(
            shown.join("\n") + "\n",
            String::from_utf8_lossy(&out.stdout)
        );
        // Each event's raw lines are the raw log's own.
        let raw = std::fs::read_to_string(&log).unwrap();
        for (n, line) in u["rawLines"].as_object().unwrap() {
            let n: usize = n.parse().unwrap();
            assert_eq!(line.as_str().unwrap(), raw.lines().nth(n - 1).unwrap());
        }
    }
}

/// Markup an engine wrote (its messages, its summary, a file it changed) is
/// text on the page: no element of it is ever parsed.
#[test]
fn hostile_output_stays_text_and_damage_is_a_warning_row() {
    let r = ran();
    // A corrupt marker and an unreadable raw log: rows with warnings.
    r.env
        .write("state/units/zz/marker.json", "{\"format\":1,\"unit\":");
    let log_b = r.env.state().join("units/b/attempt-1.stdout.log");
    std::fs::remove_file(&log_b).unwrap();
    std::fs::create_dir(&log_b).unwrap();
    let page = r.env.path().join("out/page.html");
    std::fs::create_dir_all(page.parent().unwrap()).unwrap();
    let out = r.report(&["-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap()
            .split(" (")
            .next()
            .unwrap(),
        format!("wrote {}", page.display())
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for bad in [
        HOSTILE_TEXT,
        HOSTILE_FILE,
        "<script>alert",
        "<img src=x",
        "</dd><script>",
    ] {
        assert!(!html.contains(bad), "{bad} is in the page");
    }
    // The markup is there, escaped: the diff and the summary as HTML text,
    // the events as JSON text.
    assert!(html.contains("+&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;"));
    assert!(html.contains("&lt;/dd&gt;&lt;script&gt;alert(4)&lt;/script&gt;"));
    assert!(html.contains(r"\u003cimg src=x onerror=alert(1)\u003e"));
    // One script of the page's own, and the JSON islands.
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(html.matches("<script type=\"application/json\"").count(), 4);
    assert!(
        html.contains("⚠ <b>zz</b>: corrupt marker, not read"),
        "no warning row"
    );
    let v = stdout_json(&r.report(&["--json"]));
    assert_eq!(v["unusable"][0]["unit"], "zz");
    let warnings = v["totals"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("b: cannot read its raw log"),
        "{warnings:?}"
    );
    assert!(
        warnings[1]
            .as_str()
            .unwrap()
            .starts_with("zz: corrupt marker"),
        "{warnings:?}"
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let env = Env::new();
    let missing = env.path().join("nowhere");
    let page = env.path().join("p.html");
    let out = env.run(&[
        "report",
        "--state-dir",
        missing.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no state dir at"), "{}", stderr(&out));
    std::fs::create_dir_all(env.state()).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["-o", "missing/dir/p.html"], "does not exist"),
        (&["-o", "."], "is a directory"),
        (&["--units", "a,../b"], "unit name"),
        (&["--since", "yesterday"], "invalid --since"),
        (&["--plan", "nope.toml"], "nope.toml"),
    ];
    for (args, says) in cases {
        let mut all = vec!["report"];
        all.extend_from_slice(args);
        let out = env.run(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(files_under(env.path()), Vec::<PathBuf>::new());
}

/// `--open` hands the written page to the platform's opener (`xdg-open`
/// here, a recording stand-in on PATH) and does not wait for it; an opener
/// that cannot be started is a warning, the page is still written, exit 0.
#[test]
fn open_hands_the_page_to_the_opener_and_a_missing_one_is_a_warning() {
    let env = Env::new();
    std::fs::create_dir_all(env.state()).unwrap();
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let said = env.path().join("opened.txt");
    write_exe(
        &bin.join("xdg-open"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp\nmv {0}.tmp {0}\n",
            said.display()
        ),
    );
    let mut c = env.cmd(&["report", "--open", "-o", "page.html"]);
    c.current_dir(env.path())
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = env.path().join("page.html");
    assert!(page.is_file());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !said.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = std::fs::read_to_string(&said).unwrap_or_default();
    let page = page.canonicalize().unwrap();
    assert_eq!(got, format!("{}\n", page.display()));
    let mut c = env.cmd(&["report", "--open", "-o", "page2.html"]);
    c.current_dir(env.path()).env("PATH", "/nonexistent");
    let out = run_bounded(c, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.path().join("page2.html").is_file());
    assert!(
        stderr(&out).contains("cannot open the page"),
        "{}",
        stderr(&out)
    );
}

/// The page in headless chromium, opened from disk: one bar per attempt,
/// a click opens a unit's events and one of their raw lines, no console
/// error, no request. Skipped loudly without chromium, unless
/// `VF_BROWSER_TEST=1` (CI) makes a missing browser a failure.
#[test]
fn the_page_in_a_real_browser() {
    let Some(chromium) = browser() else { return };
    let r = ran();
    with_rounds(&r, "c");
    let page = r.env.path().join("report.html");
    let out = r.report(&[
        "--plan",
        r.plan().to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shot = root().join("target/report-screenshot.png");
    let helper = root().join("tests/support/report_browser.py");
    let mut c = Command::new("python3");
    c.arg(helper).arg(&chromium).arg(&page).arg("c").arg(&shot);
    let out = run_bounded(c, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = stdout_json(&out);
    let expected = json!({
        "bars": 4, "allBars": 5, "units": 4, "scripts": 1,
        "rounds": [["fix 1/2", "fix 1/2"], ["review 1/1", "review 1/1 · claude"]],
        "comments": [HOSTILE_COMMENT],
        "clicked": {"unit": "c", "eventsBefore": 0, "events": 9, "rawShown": seen["clicked"]["rawShown"]},
        "consoleErrors": [], "exceptions": [], "dialogs": [], "requests": [],
    });
    assert_json_eq(&seen, &expected);
    let raw = seen["clicked"]["rawShown"].as_str().unwrap_or("");
    assert!(raw.starts_with("1: {\"type\":\"thread.started\""), "{raw}");
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(HOSTILE_COMMENT), "the comment is markup");
    assert!(html.contains("&lt;script&gt;alert(5)&lt;/script&gt;"));
}

/// A reviewer's comment: a dialog if it ever ran.
const HOSTILE_COMMENT: &str = "<script>alert(5)</script><img src=x onerror=alert(6)>";

/// Gives `unit` the rounds of a closed loop (issue 41) in its marker: its
/// attempt 1 as a fix round whose verify failed, then a reviewer's round
/// (claude) asking for changes with a hostile comment. Two seconds each, so
/// that each bar is wide enough to show its label.
fn with_rounds(r: &Ran, unit: &str) {
    let path = r.env.state().join(format!("units/{unit}/marker.json"));
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let start = m["startedAt"].as_str().unwrap().to_string();
    let (end, review_end) = (later(&start, 2), later(&start, 4));
    m["rounds"] = json!([
        {"kind": "fix", "n": 1, "of": 2, "engine": "codex", "sessionId": null, "attempt": 1,
         "trigger": "verify", "outcome": "failed", "reason": "verify", "usage": null,
         "verify": {"command": "cargo test", "exitCode": 101, "passed": false},
         "startedAt": start, "finishedAt": end},
        {"kind": "review", "n": 1, "of": 1, "engine": "claude", "sessionId": null,
         "unit": "review-1", "outcome": "done", "usage": null,
         "verdict": {"verdict": "changes", "comments": [
             {"path": "src/a.rs", "line": 3, "text": HOSTILE_COMMENT}]},
         "startedAt": end, "finishedAt": review_end},
    ]);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
}

/// An RFC 3339 UTC time `secs` seconds after `t` (`...:SS.fffZ` or `...:SSZ`).
fn later(t: &str, secs: u64) -> String {
    let at = vf::ground::fsutil::parse_rfc3339(t).unwrap() + secs;
    vf::ground::fsutil::rfc3339(at, 0)
}

fn browser() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"]
        .iter()
        .find_map(|b| which(b));
    if found.is_none() {
        assert!(
            std::env::var_os("VF_BROWSER_TEST").is_none(),
            "VF_BROWSER_TEST is set and no chromium is on PATH"
        );
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"SKIPPED the_page_in_a_real_browser: no chromium on PATH (apt-get install chromium)\n",
        );
    }
    found
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| Path::is_file(p))
}
