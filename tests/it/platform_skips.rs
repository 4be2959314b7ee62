//! What an OS does not run is said in every run's output, never left out in
//! silence (issue 45: the macOS and Windows CI jobs run `cargo test`
//! natively): libtest lists each notice below as `ignored`, with its reason.
//! The test at the end keeps the notices naming what tests/it/main.rs gates.

use std::collections::BTreeSet;

use crate::common;

#[cfg(not(target_os = "linux"))]
#[test]
#[ignore = "SKIPPED on this OS, Linux only: the real-engine tier (real_*: its sandbox is a \
            network namespace, unshare -n), temporal (the Temporal dev server .ci/run \
            installs) and binary_shape (the ELF); docs/PLATFORMS.md"]
fn skipped_here_linux_only_areas() {}

#[cfg(windows)]
#[test]
#[ignore = "SKIPPED on Windows: the areas of tests/it marked cfg(unix) in tests/it/main.rs \
            (dispatch, conv, orchestrate, quota_*, readers, report, workspace...: POSIX sh \
            fakes, signals or process groups), the tests marked cfg(unix) in the others (a \
            POSIX sh or bash fake engine: agy_workspace::\
            dispatch_agent_needs_the_workspace_file_then_passes_it, engine_argv::mcp::\
            an_opencode_run_reads_its_servers_from_the_units_own_file and \
            resuming_a_codex_unit_with_mcp_is_refused_and_nothing_is_written, \
            engine_argv::policy::\
            copilot_1_0_83_refuses_an_unknown_tool_under_require_enforced; a symbolic link, \
            device or FIFO: agy_workspace::a_link_planted_in_agents_is_refused_even_with_force, \
            fuzz_plan::a_prompt_file_that_never_ends_is_refused) and \
            tests/orchestrate_memory.rs; tests/windows.rs runs the Windows side; \
            docs/PLATFORMS.md"]
fn skipped_here_unix_only_areas() {}

/// The reason of the notice `fn NAME` (its `\`-continued lines joined).
fn notice(source: &str, name: &str) -> String {
    let end = source
        .find(&format!("fn {name}()"))
        .unwrap_or_else(|| panic!("no notice {name}"));
    let start = source[..end].rfind("#[ignore = \"").expect("its #[ignore]") + 12;
    let reason = &source[start..source[start..end].rfind("\"]").expect("its end") + start];
    reason
        .split("\\\n")
        .map(str::trim_start)
        .collect::<String>()
}

/// The modules of tests/it/main.rs whose `#[cfg(...)]` line holds `gate`.
fn gated_modules(main: &str, gate: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = main.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("#[cfg(") && w[0].contains(gate))
        .filter_map(|w| w[1].strip_prefix("mod ")?.strip_suffix(';'))
        .map(String::from)
        .collect()
}

/// The tests marked `#[cfg(unix)]` (just before their `#[test]`) in the files of
/// tests/it's modules that main.rs does not gate.
fn gated_tests(main: &str) -> BTreeSet<String> {
    let gated: BTreeSet<String> = ["unix", "target_os"]
        .iter()
        .flat_map(|g| gated_modules(main, g))
        .collect();
    let it = common::root().join("tests/it");
    let mut found = BTreeSet::new();
    for f in common::files_under(&it) {
        let rel = f
            .strip_prefix(&it)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs");
        if !rel.ends_with(".rs") || gated.contains(top) {
            continue;
        }
        let text = common::read_text(&f);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(3) {
            if w[0].starts_with("#[cfg(unix)]") && w[1] == "#[test]" {
                let name = w[2].strip_prefix("fn ").and_then(|l| l.split('(').next());
                found.insert(name.unwrap_or(w[2]).to_string());
            }
        }
    }
    found
}

#[test]
fn the_notices_name_every_gated_area() {
    let this = common::read_text(&common::root().join("tests/it/platform_skips.rs"));
    let main = common::read_text(&common::root().join("tests/it/main.rs"));

    let linux = notice(&this, "skipped_here_linux_only_areas");
    let linux_only = gated_modules(&main, "target_os = \"linux\"");
    assert!(linux_only.contains("real_engines"), "{linux_only:?}");
    for m in &linux_only {
        let named = if m.starts_with("real_") { "real_*" } else { m };
        assert!(
            linux.contains(named),
            "the Linux-only notice does not name {m}: {linux}"
        );
    }

    let windows = notice(&this, "skipped_here_unix_only_areas");
    assert!(
        windows.contains("marked cfg(unix) in tests/it/main.rs"),
        "{windows}"
    );
    assert!(gated_modules(&main, "unix").contains("dispatch"));
    let tests = gated_tests(&main);
    assert!(
        tests.contains("an_opencode_run_reads_its_servers_from_the_units_own_file"),
        "{tests:?}"
    );
    for t in &tests {
        assert!(
            windows.contains(t.as_str()),
            "not named: test {t}: {windows}"
        );
    }
    for f in std::fs::read_dir(common::root().join("tests")).unwrap() {
        let path = f.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("#![cfg(unix)]") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                windows.contains(&format!("tests/{name}")),
                "not named: {name}: {windows}"
            );
        }
    }
}
