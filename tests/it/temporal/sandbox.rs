//! A plan unit with `sandbox = "workspace"` runs confined on a Temporal
//! worker (issue 43): the worker re-reads the unit's keys, so its own
//! machine decides whether the sandbox is enforced, and the engine's writes
//! outside its working directory never reach the disk.

use super::{Lab, plan_units, row};

#[test]
fn a_sandboxed_unit_runs_confined_on_a_worker() {
    let Some(lab) = Lab::new("sandbox") else {
        return;
    };
    let probe = "if [ \"${1:-}\" != --version ]; then \
        (echo x > ./inside.txt) 2>/dev/null; (echo x > ../escaped-$(basename \"$PWD\").txt) 2>/dev/null; \
        (echo x > \"$HOME/home-$(basename \"$PWD\").txt\") 2>/dev/null; fi";
    lab.unit("s", probe);
    lab.unit("open", probe);
    let mut plan = plan_units(&[("s", &[])], "sandbox = \"workspace\"");
    plan.push_str(&plan_units(&[("open", &[])], ""));
    lab.env.write("plan.toml", plan);
    let home = lab.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let _w = lab.worker_env("w1", &[("HOME", home.to_str().unwrap())]);
    let r = lab.follow(0);
    assert_eq!(row(&r, "s")["state"], "done", "{r}");
    assert!(lab.path().join("s/inside.txt").exists());
    assert!(
        !lab.path().join("escaped-s.txt").exists(),
        "the sandboxed unit wrote outside its cwd"
    );
    assert!(
        !home.join("home-s.txt").exists(),
        "the sandboxed unit wrote its HOME"
    );
    assert!(home.join("home-open.txt").exists());
    // The unit without the key wrote where it liked (the probe can fail).
    assert!(lab.path().join("open/inside.txt").exists());
    assert!(
        lab.path().join("escaped-open.txt").exists(),
        "the open unit's write is the control"
    );
    let marker = super::walk_text(&lab.path().join("w1/temporal"), "units/s/marker.json");
    let m: serde_json::Value = serde_json::from_str(&marker).unwrap();
    assert_eq!(m["policy"]["sandbox"]["state"], "enforced", "{m}");
    assert_eq!(m["policy"]["sandbox"]["mode"], "workspace");
}
