//! The closed loops' keys and flags (issue 41): each bad value is exit 2
//! with a clear message and nothing written, from a flag, a plan or the user
//! config; the origins a dispatch reports for them.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::json;

use crate::common;
use common::{Env, stderr, stdout_json};

fn run(c: std::process::Command) -> Output {
    common::run_bounded(c, Duration::from_secs(60))
}

/// Exit 2, nothing under the state dir; the stderr.
fn refused(env: &Env, out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    assert!(
        !env.state().exists(),
        "a refused command wrote its state dir"
    );
    stderr(out)
}

/// `vf dispatch -e codex --prompt x EXTRA` (no engine runs: each is refused first).
fn dispatch(env: &Env, extra: &[&str]) -> Output {
    let mut args = vec!["dispatch", "-e", "codex", "--unit", "u", "--prompt", "x"];
    args.extend_from_slice(extra);
    env.run(&args)
}

#[test]
fn each_bad_loop_flag_is_exit_2_and_writes_nothing() {
    let env = Env::new();
    for (extra, part) in [
        (
            &["--fix-rounds", "21"][..],
            "--fix-rounds must be from 0 to 20, not 21",
        ),
        (
            &["--fix-rounds=-1"],
            "invalid value '-1' for '--fix-rounds <N>'",
        ),
        (
            &["--fix-rounds", "two"],
            "invalid value 'two' for '--fix-rounds <N>'",
        ),
        (
            &["--review-engine", "claude", "--review-rounds", "0"],
            "--review-rounds must be from 1 to 10, not 0",
        ),
        (
            &["--review-engine", "claude", "--review-rounds", "11"],
            "--review-rounds must be from 1 to 10, not 11",
        ),
        (
            &["--review-rounds", "2"],
            "--review-rounds, --review-model and --review-prompt need --review-engine",
        ),
        (
            &["--review-engine", "gpt"],
            "invalid value 'gpt' for '--review-engine <ENGINE>'",
        ),
        (
            &["--review-engine", "bridge"],
            "review.engine: unknown engine \"bridge\" (known: claude, codex, copilot, opencode, gemini, agy)",
        ),
        (
            &["--review-engine", "copilot", "--require-enforced"],
            "require-enforced: the reviewer copilot cannot run read-only",
        ),
        (&["--max-tokens", "0"], "--max-tokens must be at least 1"),
    ] {
        let e = refused(&env, &dispatch(&env, extra));
        assert!(e.contains(part), "{extra:?}: {e}");
    }
    // `vf resume` reads the same flags (refused before it looks for the unit).
    let out = env.run(&["resume", "u", "--fix-rounds", "x"]);
    assert!(refused(&env, &out).contains("invalid value 'x' for '--fix-rounds <N>'"));
}

#[test]
fn each_bad_plan_key_is_exit_2_naming_the_unit_and_writes_nothing() {
    let env = Env::new();
    let unit = |extra: &str| {
        format!("[[unit]]\nname = \"a\"\nengine = \"claude\"\nprompt = \"x\"\n{extra}\n")
    };
    for (extra, part) in [
        (
            "fix_rounds = 21",
            "`fix_rounds` must be a whole number from 0 to 20, not 21",
        ),
        (
            "fix_rounds = -3",
            "`fix_rounds` must be a whole number from 0 to 20, not -3",
        ),
        (
            "fix_rounds = \"2\"",
            "invalid type: string \"2\", expected i64",
        ),
        (
            "review = { engine = \"codex\", rounds = 11 }",
            "`review.rounds` must be a whole number from 1 to 10, not 11",
        ),
        ("review = { model = \"m\" }", "`review` needs `engine`"),
        (
            "review = { engine = \"gpt\" }",
            "`review.engine`: unknown engine \"gpt\" (known: claude, codex",
        ),
        (
            "on_conflict = \"ours\"",
            "`on_conflict` must be \"fail\" or \"resolve\", not \"ours\"",
        ),
        (
            "on_conflict = \"resolve\"\nresolver = \"nope\"",
            "`resolver`: unknown engine \"nope\"",
        ),
        (
            "resolver = \"codex\"",
            "`resolver` goes with `on_conflict = \"resolve\"`",
        ),
        (
            "require_enforced = true\nreview = { engine = \"agy\" }",
            "require-enforced: the reviewer agy cannot run read-only",
        ),
    ] {
        let plan = env.write("plan.toml", unit(extra));
        let out = env.run(&["orchestrate", plan.to_str().unwrap(), "--json"]);
        let e = refused(&env, &out);
        assert!(e.contains("unit \"a\": "), "{extra}: {e}");
        assert!(e.contains(part), "{extra}: {e}");
    }
}

/// `vf config` with `config` as the user config file.
fn config(env: &Env, config: &Path, args: &[&str]) -> Output {
    let mut c = env.cmd(args);
    c.env("VF_CONFIG", config);
    run(c)
}

#[test]
fn the_user_config_takes_the_loop_keys_checked_as_a_units() {
    let env = Env::new();
    for (text, part) in [
        (
            "[defaults]\n\nfix_rounds = 30\n",
            ":3: [defaults] `fix_rounds`: `fix_rounds` must be",
        ),
        (
            "[defaults]\nreview = { rounds = 1 }\n",
            ":2: [defaults] `review`: `review` needs `engine`",
        ),
        (
            "[defaults]\non_conflict = \"x\"\n",
            ":2: [defaults] `on_conflict`: `on_conflict` must be",
        ),
    ] {
        let p = env.write("bad.toml", text);
        let e = refused(&env, &config(&env, &p, &["config"]));
        assert!(e.contains(part), "{text}: {e}");
    }
    // A default resolver alone is fine: it reaches only units that resolve.
    let good = env.write(
        "good.toml",
        "[defaults]\nfix_rounds = 2\nreview = { engine = \"codex\", rounds = 3 }\nresolver = \"gemini\"\n",
    );
    let out = config(&env, &good, &["config", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    let origin = json!(format!("config:{}", good.display()));
    let setting = |key: &str| {
        let s = v["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key);
        let s = s.unwrap_or_else(|| panic!("no {key} in {v}"));
        (s["value"].clone(), s["origin"].clone())
    };
    assert_eq!(setting("fix_rounds"), (json!(2), origin.clone()));
    assert_eq!(
        setting("review"),
        (json!({"engine": "codex", "rounds": 3}), origin.clone())
    );
    assert_eq!(setting("resolver"), (json!("gemini"), origin.clone()));
    assert_eq!(setting("on_conflict"), (json!("fail"), json!("builtin")));
    // A dispatch takes the config's below its flags, and names each origin.
    let dry = |extra: &[&str]| {
        let mut args = vec![
            "dispatch",
            "--dry-run",
            "--json",
            "-e",
            "claude",
            "--prompt",
            "x",
            "--unit",
            "u",
        ];
        args.extend_from_slice(extra);
        let out = config(&env, &good, &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout_json(&out)["origins"].clone()
    };
    let o = dry(&["--fix-rounds", "0"]);
    assert_eq!(
        (
            &o["fix_rounds"],
            &o["review"],
            &o["on_conflict"],
            &o["resolver"]
        ),
        (
            &json!("flag"),
            &origin,
            &json!("builtin"),
            &json!("builtin")
        )
    );
}
