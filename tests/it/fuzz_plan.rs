//! Bounded fuzz of plan parsing (issue 11; docs/FUZZING.md): arbitrary text,
//! generated plans with values of every type, and damaged plans through
//! `vf::plan::parse` give either a valid plan in dependency order or one
//! clean one-line message. Budget: `VF_FUZZ_CASES=N` runs N cases of each property.

use crate::common;
use crate::fuzz_support;

use std::path::Path;
use std::time::Duration;

use fuzz_support::{CASE_LIMIT, bounded, config};
use proptest::prelude::*;
use vf::plan::{PlanUnit, parse};

/// The plan's directory: `p.md` (a prompt file), `sub/` (a directory).
fn plan_dir() -> common::TempDir {
    let t = common::tempdir();
    std::fs::write(t.path().join("p.md"), "a prompt from a file").unwrap();
    std::fs::create_dir(t.path().join("sub")).unwrap();
    t
}

/// A TOML basic string (escapes written out, so any text is a valid value).
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

const GOOD_NAMES: &[&str] = &["a", "b", "c", "d", "e", "api", "a.b", "x_1", "y-2"];
const BAD_NAMES: &[&str] = &["../x", "", "-x", "x y", "é", ".a", "a/b"];

fn pick(v: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(v).prop_map(str::to_string).boxed()
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => pick(GOOD_NAMES),
        1 => pick(BAD_NAMES),
        1 => "[a-z]{65,80}",
        1 => any::<String>(),
    ]
}

/// Values for `key`: mostly valid, sometimes odd, rarely of another type.
fn field_value(key: &'static str) -> BoxedStrategy<String> {
    let quoted = |good: &'static [&'static str], bad: &'static [&'static str]| {
        prop_oneof![6 => pick(good), 1 => pick(bad)]
            .prop_map(|v| toml_str(&v))
            .boxed()
    };
    let right = match key {
        "name" => name().prop_map(|n| toml_str(&n)).boxed(),
        "engine" => quoted(&["codex", "auto", "claude", "agy"], &["gpt", "", "CODEX"]),
        "prompt" => prop_oneof![
            6 => quoted(&["x", "do it"], &["", "  \n "]),
            1 => any::<String>().prop_map(|p| toml_str(&p)),
        ]
        .boxed(),
        "prompt_file" => quoted(&["p.md"], &["missing.md", "sub", "/dev/null", "a\nb", ""]),
        "cwd" => quoted(&["sub", ".", ""], &["nope", "p.md", "a\nb", "/"]),
        "depends_on" | "attachments" => prop::collection::vec(name(), 0..2)
            .prop_map(|v| {
                let items: Vec<String> = v.iter().map(|n| toml_str(n)).collect();
                format!("[{}]", items.join(", "))
            })
            .boxed(),
        "skip_permissions" | "worktree" => pick(&["true", "false"]),
        "push" => quoted(
            &["origin", "team/fork"],
            &["-x", "a b", "a:b", "..", "", "a\u{1b}"],
        ),
        _ => prop_oneof![
            6 => pick(&["1", "1.5", "30"]),
            1 => pick(&["0", "-1", "1e9", "1e300", "nan", "inf", "-inf", "9223372036854775807"]),
        ]
        .boxed(),
    };
    let wrong = pick(&[
        "1",
        "true",
        "\"s\"",
        "[]",
        "[1, \"a\"]",
        "{ a = 1 }",
        "1979-05-27",
    ]);
    prop_oneof![40 => right, 1 => wrong].boxed()
}

/// Keys of a unit with how often each is present.
const KEYS: &[(&str, f64)] = &[
    ("name", 0.97),
    ("engine", 0.97),
    ("prompt", 0.9),
    ("prompt_file", 0.1),
    ("cwd", 0.3),
    ("depends_on", 0.3),
    ("attachments", 0.2),
    ("skip_permissions", 0.2),
    ("stall_timeout", 0.2),
    ("timeout", 0.2),
    ("retries", 0.1),
    ("worktree", 0.1),
    ("push", 0.1),
    ("colour", 0.01),
];

/// One `[[unit]]` table: each key present or not, in file order.
fn unit() -> impl Strategy<Value = String> {
    let fields: Vec<_> = KEYS
        .iter()
        .map(|&(k, weight)| {
            prop::option::weighted(weight, field_value(k))
                .prop_map(move |v| v.map(|v| format!("{k} = {v}\n")))
        })
        .collect();
    fields.prop_map(|lines| {
        format!(
            "[[unit]]\n{}",
            lines.into_iter().flatten().collect::<String>()
        )
    })
}

fn plan() -> impl Strategy<Value = String> {
    prop::collection::vec(unit(), 1..5).prop_map(|u| u.join("\n"))
}

/// Character-level damage to TOML text.
#[derive(Debug, Clone)]
enum Damage {
    Delete { at: usize, len: usize },
    Insert { at: usize, text: String },
    Duplicate { at: usize, len: usize },
    Truncate { at: usize },
}

fn damage() -> impl Strategy<Value = Damage> {
    let ix = || 0usize..1 << 12;
    let tokens = prop::sample::select(
        &[
            "[",
            "]",
            "[[unit]]\n",
            "=",
            "\"",
            "'''",
            "\n",
            "#",
            ",",
            "{",
            "}",
            "\\",
            "\u{0}",
            "é",
            "name = \"a\"\n",
        ][..],
    );
    prop_oneof![
        (ix(), 1usize..8).prop_map(|(at, len)| Damage::Delete { at, len }),
        (
            ix(),
            prop_oneof![tokens.prop_map(str::to_string), any::<String>()]
        )
            .prop_map(|(at, text)| Damage::Insert { at, text }),
        (ix(), 1usize..40).prop_map(|(at, len)| Damage::Duplicate { at, len }),
        ix().prop_map(|at| Damage::Truncate { at }),
    ]
}

fn apply(text: &str, d: &Damage) -> String {
    let mut c: Vec<char> = text.chars().collect();
    let pos = |at: usize, n: usize| at % (n + 1);
    match d {
        Damage::Delete { at, len } => {
            let a = pos(*at, c.len());
            c.drain(a..(a + len).min(c.len()));
        }
        Damage::Insert { at, text } => {
            let a = pos(*at, c.len());
            c.splice(a..a, text.chars());
        }
        Damage::Duplicate { at, len } => {
            let a = pos(*at, c.len());
            let piece: Vec<char> = c[a..(a + len).min(c.len())].to_vec();
            c.splice(a..a, piece);
        }
        Damage::Truncate { at } => c.truncate(pos(*at, c.len())),
    }
    c.into_iter().collect()
}

/// A plan is valid and in dependency order, or the error is one line.
fn check(text: String) -> Result<(), String> {
    let t = plan_dir();
    let dir = t.path().to_path_buf();
    match parse(&text, &dir) {
        Ok(units) => check_plan(&units, &dir),
        Err(msg) if msg.trim().is_empty() => Err("an empty error".into()),
        // Paths and values from the plan are escaped and cut
        // (`plan_errors_show_paths_on_one_line`).
        Err(msg) if msg.contains('\n') || msg.contains('\u{1b}') => {
            Err(format!("error spans lines or carries escapes: {msg:?}"))
        }
        Err(msg) if msg.len() > MAX_MESSAGE => Err(format!("error of {} bytes", msg.len())),
        Err(_) => Ok(()),
    }
}

/// Longest plan error accepted (a cut path or value, and vf's words).
const MAX_MESSAGE: usize = 1024;

fn check_plan(units: &[PlanUnit], dir: &Path) -> Result<(), String> {
    if units.is_empty() {
        return Err("a plan without units was accepted".into());
    }
    // Names of the units before this one (a set: plans can be long).
    let mut before = std::collections::HashSet::new();
    for u in units {
        vf::ground::names::check("unit name", &u.name).map_err(|e| format!("accepted: {e}"))?;
        for d in &u.depends_on {
            if !before.contains(d.as_str()) {
                return Err(format!("{:?} runs before its dependency {d:?}", u.name));
            }
        }
        if !before.insert(u.name.as_str()) {
            return Err(format!("duplicate unit {:?} accepted", u.name));
        }
        // `cwd = "/"` is the root: `/` on Unix, the current drive's on Windows.
        let outside = !u.cwd.starts_with(dir) && u.cwd.parent().is_some();
        if u.prompt.trim().is_empty() || !u.cwd.is_dir() || outside {
            return Err(format!(
                "unit {:?} accepted with prompt {:?}, cwd {:?}",
                u.name, u.prompt, u.cwd
            ));
        }
        let positive = |d: Option<Duration>| d.is_none_or(|d| !d.is_zero());
        if !positive(u.timeout) || !positive(u.stall_timeout) {
            return Err(format!("unit {:?} accepted with a zero timeout", u.name));
        }
        if u.retries > vf::plan::MAX_RETRIES {
            return Err(format!(
                "unit {:?} accepted with retries {}",
                u.name, u.retries
            ));
        }
        let push = u.worktree.as_ref().and_then(|w| w.push.as_deref());
        if let Some(p) = push.filter(|p| vf::workspace::remote::check_name(p).is_err()) {
            return Err(format!("unit {:?} accepted with push {p:?}", u.name));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_text_parses_or_fails_cleanly(text in any::<String>()) {
        let r = bounded(CASE_LIMIT, move || check(text));
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }

    #[test]
    fn generated_plans_parse_or_fail_cleanly(text in plan()) {
        let shown = text.clone();
        let r = bounded(CASE_LIMIT, move || check(text));
        prop_assert!(r.is_ok(), "{}\n{shown}", r.unwrap_err());
    }

    #[test]
    fn damaged_plans_parse_or_fail_cleanly(text in plan(), damage in prop::collection::vec(damage(), 1..5)) {
        let damaged = damage.iter().fold(text, |t, d| apply(&t, d));
        let shown = damaged.clone();
        let r = bounded(CASE_LIMIT, move || check(damaged));
        prop_assert!(r.is_ok(), "{}\n{shown}", r.unwrap_err());
    }
}

/// The shape of a long plan's dependencies.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Each unit needs the next.
    Chain,
    /// The chain, closed: the last needs the first.
    Cycle,
    /// Up to three dependencies on later units: acyclic.
    Dag,
    /// Up to three dependencies on any other units: cyclic, almost surely.
    Graph,
}

/// A plan of `n` units whose dependencies (from `seed`) have `shape`. The
/// dependencies come from a small generator, not proptest values, so a case
/// of 10,000 units stays cheap to make and to shrink.
fn long_plan(n: usize, shape: Shape, seed: u64) -> String {
    let mut x = seed | 1;
    let mut next = move |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut s = String::new();
    for i in 0..n {
        let mut deps: Vec<usize> = match shape {
            Shape::Chain if i + 1 < n => vec![i + 1],
            Shape::Chain => vec![],
            Shape::Cycle => vec![(i + 1) % n],
            Shape::Dag if i + 1 < n => (0..next(4)).map(|_| i + 1 + next(n - i - 1)).collect(),
            Shape::Dag => vec![],
            Shape::Graph => (0..next(4)).map(|_| (i + 1 + next(n - 1)) % n).collect(),
        };
        deps.sort();
        deps.dedup();
        let deps: Vec<String> = deps.iter().map(|j| format!("\"u{j}\"")).collect();
        s.push_str(&format!(
            "[[unit]]\nname=\"u{i}\"\nengine=\"codex\"\nprompt=\"x\"\ndepends_on=[{}]\n",
            deps.join(",")
        ));
    }
    s
}

proptest! {
    // Long plans cost seconds each in a debug build: few cases.
    #![proptest_config(config(6))]

    /// Plans of up to 10,000 units, in every shape: ordered or refused in
    /// bounded time, with a short one-line message (a cycle's is cut).
    #[test]
    fn long_plans_parse_or_fail_cleanly(
        n in prop_oneof![2usize..200, 200usize..10_000],
        shape in prop::sample::select(vec![Shape::Chain, Shape::Cycle, Shape::Dag, Shape::Graph]),
        seed in any::<u64>(),
    ) {
        let text = long_plan(n, shape, seed);
        let r = bounded(CASE_LIMIT, move || check(text));
        prop_assert!(r.is_ok(), "{n} units, {shape:?}, seed {seed}: {}", r.unwrap_err());
    }
}

#[test]
fn the_generator_reaches_valid_plans_and_each_kind_of_error() {
    // A check on the harness itself: generated plans are not all refused.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut ok, mut err) = (0, 0);
    for _ in 0..300 {
        let text = plan().new_tree(&mut runner).unwrap().current();
        match parse(&text, plan_dir().path()) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    assert!(ok >= 30 && err >= 30, "{ok} valid, {err} refused");
}

/// Fuzz finding 3 (docs/FUZZING.md): a `cwd` or `prompt_file` holding a
/// newline (or a terminal escape) was printed raw, so the error spanned lines.
#[test]
fn plan_errors_show_paths_on_one_line() {
    let t = plan_dir();
    for field in ["cwd", "prompt_file"] {
        let text = format!(
            "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt = \"x\"\n{field} = \"a\\nb\\u001b[2J\"\n"
        );
        let text = text.replace("prompt = \"x\"\nprompt_file", "prompt_file");
        let msg = parse(&text, t.path()).unwrap_err();
        assert!(
            !msg.contains('\n') && !msg.contains('\u{1b}'),
            "{field}: {msg:?}"
        );
    }
}

/// A plan of `n` units, each depending on the next; with `cycle`, the last
/// depends on the first.
fn chain(n: usize, cycle: bool) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "[[unit]]\nname=\"u{i}\"\nengine=\"codex\"\nprompt=\"x\"\n"
        ));
        if i + 1 < n || cycle {
            s.push_str(&format!("depends_on=[\"u{}\"]\n", (i + 1) % n));
        }
    }
    s
}

/// Fuzz finding 4 (docs/FUZZING.md): the dependency order was quadratic (it
/// rescanned every unit for each one placed): a 20,000-unit chain (1.4 MB,
/// well under the 4 MiB plan cap) took 277 s to parse in a debug build.
#[test]
fn a_long_dependency_chain_parses_quickly() {
    let text = chain(20_000, false);
    assert!(text.len() < vf::plan::MAX_PLAN_BYTES as usize);
    // On an ordinary test thread's stack: nothing recurses per unit.
    let r = bounded(Duration::from_secs(30), move || {
        parse(&text, plan_dir().path()).map(|u| u.len())
    });
    assert_eq!(r, Ok(20_000));
}

/// Fuzz finding 5 (docs/FUZZING.md): the cycle search recursed once per
/// unit, so a 55,000-unit cycle (3.9 MB, under the plan cap) overflowed the
/// stack: `vf orchestrate` aborted (SIGABRT, exit 134) instead of exiting 2,
/// and shorter cycles were named in full (289 KB for 30,000 units).
#[test]
fn a_long_cycle_is_refused_with_exit_2_and_a_short_message() {
    let t = plan_dir();
    let text = chain(55_000, true);
    assert!(text.len() < vf::plan::MAX_PLAN_BYTES as usize);
    let plan = t.path().join("plan.toml");
    std::fs::write(&plan, text).unwrap();
    let mut cmd = std::process::Command::new(common::vf());
    cmd.env("VF_CONFIG", common::no_config())
        .arg("orchestrate")
        .arg(&plan)
        .arg("--state-dir")
        .arg(t.path().join("state"));
    let out = common::run_bounded(cmd, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", &err[..err.len().min(300)]);
    assert!(
        err.contains("dependency cycle") && err.len() < 4096,
        "{} bytes",
        err.len()
    );
}

/// Fuzz finding 6 (docs/FUZZING.md): `prompt_file` was read with no
/// file-type check: `/dev/zero` grew until memory ran out (since capped at
/// 16 MiB), and a FIFO blocked `vf orchestrate` forever. A prompt file must be
/// a regular file, checked on the opened file before reading.
#[cfg(unix)] // /dev/zero and a FIFO
#[test]
fn a_prompt_file_that_never_ends_is_refused() {
    let t = plan_dir();
    let fifo = t.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let text = "[[unit]]\nname = \"a\"\nengine = \"codex\"\nprompt_file = \"fifo\"\n";
    let dir = t.path().to_path_buf();
    let r = bounded(Duration::from_secs(10), move || {
        Ok(parse(text, &dir).map(drop))
    });
    let refused = r.expect("parse returns").unwrap_err();
    assert!(refused.contains("prompt_file"), "{refused}");
}

#[test]
fn the_long_plan_shapes_are_what_they_say() {
    // A check on the harness itself.
    let dir = plan_dir();
    let parsed = |shape| parse(&long_plan(300, shape, 7), dir.path());
    assert_eq!(
        parsed(Shape::Chain).map(|u| u[0].name.clone()),
        Ok("u299".into())
    );
    assert!(parsed(Shape::Dag).is_ok());
    for shape in [Shape::Cycle, Shape::Graph] {
        let e = parsed(shape).unwrap_err();
        assert!(e.starts_with("dependency cycle"), "{shape:?}: {e}");
    }
}
