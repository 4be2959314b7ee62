//! `kill -9` of `vf orchestrate` mid-engine: every engine's group is gone
//! within a second (src/sys/lifeline.rs), and no unit's work runs to its end
//! twice, the `--resume` after the kill included.

use std::process::Stdio;
use std::time::Duration;

use super::*;

/// After vf is reaped (its pipe ends closed by the kernel), each group must
/// be gone within this.
const WITHIN: Duration = Duration::from_secs(1);

#[test]
fn kill_9_of_orchestrate_mid_engine_ends_every_group_and_resume_runs_each_once() {
    let env = PlanEnv::new();
    // a and b work silently until `go` exists (up to 30 s): killed midway,
    // and never ended by a write to a pipe vf no longer reads (SIGPIPE).
    let go = env.path().join("go");
    let wait = format!("FAKE_WAIT_FILE={}", go.display());
    env.unit_dir("a", CODEX, "0", &wait);
    env.unit_dir("b", CLAUDE, "0", &wait);
    env.unit_dir("c", CODEX, "0", "");
    env.plan(&format!(
        "{}{}{}",
        unit_toml("a", "codex", &[]),
        unit_toml("b", "claude", &[]),
        unit_toml("c", "codex", &["a"])
    ));
    let mut c = env.orchestrate(&["--output", "jsonl"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut vf_proc = c.spawn().unwrap();
    let started = |env: &PlanEnv| env.events().iter().filter(|e| e.0 == "start").count();
    wait_for("both engines to start", Duration::from_secs(30), || {
        started(&env) >= 2
    });
    let groups: Vec<i32> = env.events().iter().map(|e| e.2.parse().unwrap()).collect();
    assert!(
        groups
            .iter()
            .all(|g| !vf::process::orphans::group_members(*g).is_empty()),
        "an engine ended before the kill: {:?}",
        env.events()
    );
    vf_proc.kill().unwrap(); // SIGKILL: vf ends nothing itself
    vf_proc.wait().unwrap();
    for g in &groups {
        let took = group_ends_within(*g, WITHIN);
        eprintln!("group {g} gone {took:?} after vf was reaped");
    }
    // Killed mid-work: neither engine reached its end.
    assert!(
        env.events().iter().all(|e| e.0 == "start"),
        "{:?}",
        env.events()
    );

    std::fs::write(&go, "").unwrap();
    let out = env.run_plan(&["--resume", "--output", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(final_json(&out)["ok"], true);
    let ev = env.events();
    for u in ["a", "b", "c"] {
        let ends = ev.iter().filter(|e| e.0 == "end" && e.1 == u).count();
        assert_eq!(ends, 1, "{u}: {ev:?}");
    }
    // The killed runs' records are stale, not orphans: nothing is left.
    assert!(vf::process::orphans::scan(&env.state()).is_empty());
}
