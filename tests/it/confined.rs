//! Sandboxed units (issue 43, docs/SANDBOX.md): an engine's whole process
//! tree writes only in its working directory, its unit's folder, its temp
//! dir and its own state paths, and reads nothing under `deny_read`; a
//! child, a grandchild and a background process are held the same. A
//! machine without a mechanism says `unenforced` (and `--require-enforced`
//! refuses, nothing written); bad paths and modes are exit 2, nothing
//! written. Where this kernel has no Landlock the enforcement tests say so
//! loudly and check the unenforced record instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

#[path = "confined/kinds.rs"]
mod kinds;
use common::{Env, fixture, last_json, stderr};

const CLAUDE_OK: &str = "claude/2.1.332/a_json_stream.stdout.jsonl";

/// The probes a confined process runs: one line per try, `NAME ok` or
/// `NAME refused`, into `$OUT` (a file its rules let it write).
const PROBES: &str = r#"
w() { if (printf x > "$2") 2>/dev/null; then echo "$1 ok"; else echo "$1 refused"; fi; }
r() { if cat "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 refused"; fi; }
probe() {
  w "$1:cwd" "./in-$1.txt"
  w "$1:outside" "../outside-$1.txt"
  w "$1:home" "$HOME/home-$1.txt"
  w "$1:other-repo" "$OTHER/other-$1.txt"
  w "$1:tmp" "$TMPDIR/tmp-$1.txt"
  r "$1:ssh" "$HOME/.ssh/id_test"
  r "$1:netrc" "$HOME/.netrc"
  r "$1:readme" "$HOME/readme.txt"
}
"#;

/// A temp dir with a HOME (credentials in it), a working dir `work/repo`,
/// another repository beside it, and the env to run vf confined.
struct Lab {
    env: Env,
}

impl Lab {
    fn new() -> Lab {
        let env = Env::new();
        env.write("home/.ssh/id_test", "PRIVATE KEY");
        env.write("home/.netrc", "machine x password hunter2");
        env.write("home/readme.txt", "readable");
        env.write("work/repo/README", "the project");
        env.write("other/README", "another repository");
        Lab { env }
    }

    fn home(&self) -> PathBuf {
        self.env.path().join("home")
    }

    fn work(&self) -> PathBuf {
        self.env.path().join("work/repo")
    }

    /// `vf ARGS` in the working dir, HOME the lab's; a sandboxed run may
    /// also write the probes' folder (`--writable`), where `$PROBE_OUT` is.
    fn vf(&self, args: &[&str]) -> Command {
        let out = self.env.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let mut c = self.env.cmd(args);
        c.current_dir(self.work())
            .env("HOME", self.home())
            .env("OTHER", self.env.path().join("other"))
            .env("PROBE_OUT", self.probe_file());
        if args.contains(&"--sandbox") {
            c.arg("--writable").arg(&out);
        }
        c
    }

    /// Where the probes write their lines.
    fn probe_file(&self) -> PathBuf {
        self.env.path().join("out/probes.txt")
    }

    /// A bridge unit whose command runs `script` (after the probes' functions).
    fn bridge(&self, unit: &str, script: &str, extra: &[&str]) -> Command {
        let file = self.env.write(
            &format!("scripts/{unit}.sh"),
            format!("{PROBES}\n{script}\n"),
        );
        let line = format!("sh {}", file.display());
        let mut args = vec![
            "dispatch", "--engine", "bridge", "--bridge", &line, "--unit", unit, "--prompt", "go",
            "--output", "json",
        ];
        args.extend_from_slice(extra);
        self.vf(&args)
    }

    fn unit_dir(&self, unit: &str) -> PathBuf {
        self.env.state().join("units").join(unit)
    }
}

/// The probe lines a run left in `file`, as `name -> ok|refused`.
fn probes(file: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether this machine enforces the sandbox (vf's own dry run says); when
/// it does not, says so loudly: those tests check the unenforced record.
fn enforced_here(lab: &Lab) -> bool {
    let out = lab
        .vf(&[
            "dispatch",
            "--engine",
            "bridge",
            "--bridge",
            "true",
            "--unit",
            "probe",
            "--prompt",
            "x",
            "--sandbox",
            "workspace",
            "--dry-run",
            "--output",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "dry run: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        )
    });
    let state = v["policy"]["sandbox"]["state"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    if state != "enforced" {
        eprintln!(
            "confined: WARNING: this machine cannot enforce the sandbox ({state}, {}): \
             the enforcement checks are SKIPPED here",
            v["policy"]["sandbox"]["mechanism"]
        );
    }
    state == "enforced"
}

fn result(out: &std::process::Output) -> Value {
    last_json(out)
}

#[test]
fn a_confined_engine_writes_only_where_it_may_and_so_do_its_children() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    let script = r#"
OUT="$PROBE_OUT"
probe engine >> "$OUT"
# vf's own files in the unit's folder: the marker and the lock.
w unit-marker "$TMPDIR/../marker.json" >> "$OUT"
if rm -f "$TMPDIR/../lock" 2>/dev/null && [ ! -e "$TMPDIR/../lock" ]; then echo "unit-lock ok"; else echo "unit-lock refused"; fi >> "$OUT"
sh -c '. "$0"; probe child' "$PROBES_FILE" >> "$OUT"
sh -c 'sh -c ". \"\$0\"; probe grandchild" "$0"' "$PROBES_FILE" >> "$OUT"
( probe background >> "$OUT" ) &
wait
echo finished
"#;
    let probes_file = lab.env.write("scripts/probes.sh", PROBES);
    let mut c = lab.bridge("u1", script, &["--sandbox", "workspace"]);
    c.env("PROBES_FILE", &probes_file);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = probes(&lab.probe_file());
    for who in ["engine", "child", "grandchild", "background"] {
        let of = |what: &str| got.get(&format!("{who}:{what}")).map(String::as_str);
        assert_eq!(
            [of("cwd"), of("tmp"), of("readme")],
            [Some("ok"); 3],
            "{who}: {got:?}"
        );
        assert_eq!(
            [
                of("outside"),
                of("home"),
                of("other-repo"),
                of("ssh"),
                of("netrc")
            ],
            [Some("refused"); 5],
            "{who}: {got:?}"
        );
    }
    assert_eq!(
        (got["unit-marker"].as_str(), got["unit-lock"].as_str()),
        ("refused", "refused"),
        "{got:?}"
    );
    // A refused write never reaches the disk.
    for p in [
        "work/outside-engine.txt",
        "home/home-engine.txt",
        "other/other-child.txt",
    ] {
        assert!(!lab.env.path().join(p).exists(), "{p} was written");
    }
    assert!(lab.work().join("in-grandchild.txt").exists());
    let r = result(&out);
    let sb = &r["policy"]["sandbox"];
    assert_eq!(
        (sb["mode"].as_str(), sb["state"].as_str()),
        (Some("workspace"), Some("enforced"))
    );
    assert!(
        sb["mechanism"]
            .as_str()
            .unwrap()
            .starts_with("landlock-abi-"),
        "{sb}"
    );
    let writable: Vec<&str> = sb["writable"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        writable.contains(&lab.work().to_str().unwrap()),
        "{writable:?}"
    );
    let denied = sb["denyRead"].to_string();
    assert!(
        denied.contains(".ssh") && denied.contains(".netrc"),
        "{denied}"
    );
    // The marker records the same, and the private temp dir is gone.
    let marker: Value =
        serde_json::from_str(&common::read_text(&lab.unit_dir("u1").join("marker.json"))).unwrap();
    assert_eq!(marker["policy"]["sandbox"], *sb);
    assert!(!lab.unit_dir("u1").join("tmp").exists());
}

#[test]
fn the_engines_own_state_stays_writable_and_readable() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    // claude's state: ~/.claude (made by vf when missing) and ~/.claude.json.
    lab.env.write("home/.claude.json", "{}");
    let bin = lab.env.fake_for("claude");
    lab.env.write(
        "bin/claude.env",
        format!(
            "FAKE_VERSION=2.1.332\nFAKE_STDOUT={}\n{PROBES}\n\
             if [ \"${{1:-}}\" != --version ]; then OUT=\"$PROBE_OUT\"; \
             w state-dir \"$HOME/.claude/note.txt\" >> \"$OUT\"; \
             w state-file \"$HOME/.claude.json\" >> \"$OUT\"; \
             w home-file \"$HOME/.claude.json.tmp\" >> \"$OUT\"; probe engine >> \"$OUT\"; fi\n",
            fixture(CLAUDE_OK).display()
        ),
    );
    let out = lab
        .vf(&[
            "dispatch",
            "--engine",
            "claude",
            "--engine-bin",
            bin.to_str().unwrap(),
            "--unit",
            "c1",
            "--prompt",
            "hi",
            "--output",
            "json",
            "--sandbox",
            "workspace",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = probes(&lab.probe_file());
    let of = |k: &str| got.get(k).map(String::as_str);
    assert_eq!(
        [
            of("state-dir"),
            of("state-file"),
            of("home-file"),
            of("engine:home"),
            of("engine:cwd")
        ],
        [
            Some("ok"),
            Some("ok"),
            Some("refused"),
            Some("refused"),
            Some("ok")
        ],
        "{got:?}"
    );
    assert_eq!(common::read_text(&lab.home().join(".claude/note.txt")), "x");
}

#[test]
fn read_only_refuses_the_working_directory_too() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    let script = "OUT=\"$PROBE_OUT\"; probe engine >> \"$OUT\"";
    // `--sandbox read-only`, and `--read-only` under `--sandbox workspace`.
    for (unit, flags) in [
        ("ro1", &["--sandbox", "read-only"][..]),
        ("ro2", &["--sandbox", "workspace", "--read-only"][..]),
    ] {
        let _ = std::fs::remove_file(lab.probe_file());
        let out = lab.bridge(unit, script, flags).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let got = probes(&lab.probe_file());
        assert_eq!(
            (got["engine:cwd"].as_str(), got["engine:tmp"].as_str()),
            ("refused", "ok"),
            "{unit}: {got:?}"
        );
        let r = result(&out);
        assert_eq!(r["policy"]["sandbox"]["mode"], "read-only", "{unit}");
        assert!(!lab.work().join("in-engine.txt").exists());
        if unit == "ro2" {
            // The bridge has no read-only mode of its own: the sandbox holds it.
            assert_eq!(r["policy"]["readOnly"], "enforced", "{r}");
            assert!(
                !r["warnings"].to_string().contains("read-only unenforced"),
                "{r}"
            );
        }
    }
}

#[test]
fn deny_read_given_replaces_the_built_in_list() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    lab.env.write("home/secret/plan.txt", "the plan");
    let script = "OUT=\"$PROBE_OUT\"; probe engine >> \"$OUT\"; r secret \"$HOME/secret/plan.txt\" >> \"$OUT\"";
    let out = lab
        .bridge(
            "d1",
            script,
            &["--sandbox", "workspace", "--deny-read", "~/secret"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = probes(&lab.probe_file());
    assert_eq!(
        (got["secret"].as_str(), got["engine:ssh"].as_str()),
        ("refused", "ok"),
        "{got:?}"
    );
    let denied = &result(&out)["policy"]["sandbox"]["denyRead"];
    assert_eq!(*denied, serde_json::json!([lab.home().join("secret")]));
}

#[test]
fn a_machine_without_a_mechanism_says_unenforced_and_require_enforced_refuses() {
    let lab = Lab::new();
    let script = "OUT=\"$PROBE_OUT\"; probe engine >> \"$OUT\"";
    let mut c = lab.bridge("n1", script, &["--sandbox", "workspace"]);
    c.env("VF_TEST_SANDBOX", "none");
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = result(&out);
    let sb = &r["policy"]["sandbox"];
    assert_eq!(
        (sb["state"].as_str(), &sb["mechanism"]),
        (Some("unenforced"), &Value::Null)
    );
    assert!(r["warnings"].to_string().contains("simulated: none"), "{r}");
    // Nothing held it: the write outside happened.
    assert_eq!(probes(&lab.probe_file())["engine:outside"], "ok");
    // --require-enforced: exit 2, nothing of the unit written.
    for sim in ["none", "landlock-abi-2"] {
        let mut c = lab.bridge(
            "n2",
            script,
            &["--sandbox", "workspace", "--require-enforced"],
        );
        c.env("VF_TEST_SANDBOX", sim);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{sim}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("require-enforced: the sandbox cannot be enforced"),
            "{}",
            stderr(&out)
        );
        assert!(!lab.unit_dir("n2").exists(), "{sim}");
    }
}

#[test]
fn bad_paths_and_modes_are_refused_before_anything_is_written() {
    let lab = Lab::new();
    std::fs::create_dir_all(lab.home().join(".ssh/work")).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--sandbox", "strict"], "strict"),
        (
            &["--sandbox", "workspace", "--deny-read", "relative/x"],
            "is relative",
        ),
        (
            &["--sandbox", "workspace", "--deny-read", "/"],
            "root of the file system",
        ),
        (
            &["--sandbox", "workspace", "--deny-read", "/a/../b"],
            "contains `..`",
        ),
        (
            &["--sandbox", "workspace", "--writable", "x/y"],
            "writable: ",
        ),
        (
            &[
                "--sandbox",
                "workspace",
                "--deny-read",
                &lab.work().display().to_string(),
            ],
            "inside deny_read path",
        ),
    ];
    for (flags, says) in cases {
        let out = lab.bridge("b1", "true", flags).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flags:?}: {}", stderr(&out));
        assert!(!lab.env.state().exists(), "{flags:?} wrote the state dir");
    }
    // A NUL cannot come through argv: a plan key carries it.
    let plan = lab.env.write(
        "work/repo/plan.toml",
        "[[unit]]\nname = \"p\"\nengine = \"bridge\"\nbridge = \"true\"\nprompt = \"x\"\nsandbox = \"workspace\"\ndeny_read = [\"/a/\\u0000b\"]\n",
    );
    let out = lab
        .vf(&["orchestrate", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("NUL"), "{}", stderr(&out));
    let plan = lab.env.write(
        "work/repo/plan2.toml",
        "[[unit]]\nname = \"p\"\nengine = \"bridge\"\nbridge = \"true\"\nprompt = \"x\"\nsandbox = \"everything\"\n",
    );
    let out = lab
        .vf(&["orchestrate", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown sandbox mode"),
        "{}",
        stderr(&out)
    );
    assert!(!lab.env.state().exists());
}

#[test]
fn the_dry_run_shows_the_sandbox() {
    let lab = Lab::new();
    let out = lab
        .vf(&[
            "dispatch",
            "--engine",
            "bridge",
            "--bridge",
            "true",
            "--unit",
            "dr",
            "--prompt",
            "x",
            "--sandbox",
            "read-only",
            "--writable",
            "~/cache",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("# sandbox: read-only ("), "{text}");
    assert!(
        text.contains(&lab.home().join("cache").display().to_string()),
        "{text}"
    );
    assert!(
        !text.contains(&format!("{},", lab.work().display())),
        "read-only: the cwd is not writable: {text}"
    );
    assert!(!lab.env.state().exists());
}

/// `git -C dir ARGS`, its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    common::git_env(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_confined_worktree_unit_commits_on_its_branch_and_never_moves_the_users() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    let repo = lab.work();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let main_before = git(&repo, &["rev-parse", "main"]);
    let script = r##"
OUT="$PROBE_OUT"
t() { if "$@" >/dev/null 2>&1; then echo "$N ok"; else echo "$N refused"; fi >> "$OUT"; }
export GIT_AUTHOR_NAME=e GIT_AUTHOR_EMAIL=e@x.invalid GIT_COMMITTER_NAME=e GIT_COMMITTER_EMAIL=e@x.invalid
echo change > change.txt
N=status t git status --porcelain
N=add t git add change.txt
N=commit t git commit -q -m engine
N=move-main t git branch -f main HEAD
N=update-main t git update-ref refs/heads/main HEAD
N=hook t sh -c 'echo "#!/bin/sh" > "$(git rev-parse --git-common-dir)/hooks/pre-commit"'
N=main-checkout t sh -c 'echo x > "$REPO/planted.txt"'
"##;
    let mut c = lab.bridge("wt", script, &["--sandbox", "workspace", "--worktree"]);
    c.env("REPO", &repo);
    common::git_env(&mut c);
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = probes(&lab.probe_file());
    let of = |k: &str| got.get(k).map(String::as_str);
    assert_eq!(
        [of("status"), of("add"), of("commit")],
        [Some("ok"); 3],
        "{got:?}"
    );
    assert_eq!(
        [
            of("move-main"),
            of("update-main"),
            of("hook"),
            of("main-checkout")
        ],
        [Some("refused"); 4],
        "{got:?}"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        main_before,
        "the user's branch moved"
    );
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join("planted.txt").exists());
    let log = git(&repo, &["log", "--format=%s", "vf/wt"]);
    assert!(log.starts_with("engine"), "{log}");
}

#[test]
fn plan_units_run_their_steps_in_the_sandbox_unless_told_otherwise() {
    let lab = Lab::new();
    if !enforced_here(&lab) {
        return;
    }
    // verify writes outside its cwd: refused inside the sandbox, fine outside it.
    let verify = "echo ok > ../verify-$VF_UNIT.txt";
    let plan = lab.env.write(
        "work/repo/plan.toml",
        format!(
            "[defaults]\nengine = \"bridge\"\nbridge = \"true\"\nprompt = \"x\"\nsandbox = \"workspace\"\nverify = \"{verify}\"\n\
             [[unit]]\nname = \"inside\"\n\
             [[unit]]\nname = \"outside\"\nverify_sandbox = false\n"
        ),
    );
    let out = lab
        .vf(&["orchestrate", plan.to_str().unwrap(), "--output", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(!lab.env.path().join("work/verify-inside.txt").exists());
    assert!(
        lab.env.path().join("work/verify-outside.txt").exists(),
        "{text}{}",
        stderr(&out)
    );
    let marker = |u: &str| -> Value {
        serde_json::from_str(&common::read_text(&lab.unit_dir(u).join("marker.json"))).unwrap()
    };
    assert_eq!(marker("inside")["reason"], "verify");
    assert_eq!(marker("outside")["state"], "done");
    assert_eq!(marker("inside")["policy"]["sandbox"]["state"], "enforced");
    assert_eq!(marker("outside")["asked"]["stepsUnsandboxed"], true);
}

#[test]
fn resume_keeps_the_sandbox_the_unit_asked_for() {
    let lab = Lab::new();
    // A failed unit (its engine exits 1) is resumed.
    let script = "echo hi; exit 1";
    let out = lab
        .bridge(
            "k1",
            script,
            &["--sandbox", "read-only", "--deny-read", "~/secret"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let marker: Value =
        serde_json::from_str(&common::read_text(&lab.unit_dir("k1").join("marker.json"))).unwrap();
    assert_eq!(marker["asked"]["sandbox"], "read-only");
    assert_eq!(marker["asked"]["denyRead"], serde_json::json!(["~/secret"]));
    let out = lab
        .vf(&["resume", "k1", "--prompt", "again", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = result(&out);
    assert_eq!(r["policy"]["sandbox"]["mode"], "read-only", "{r}");
    assert_eq!(
        r["policy"]["sandbox"]["denyRead"],
        serde_json::json!([lab.home().join("secret")])
    );
    // `--clear sandbox` drops it.
    let out = lab
        .vf(&[
            "resume", "k1", "--prompt", "again", "--output", "json", "--clear", "sandbox",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(result(&out)["policy"].get("sandbox"), None);
}
