//! `vf demo`: vf's main job in seconds, with no CLI logged in. A temporary
//! git repository (under the OS temp dir, its state dir inside it), a
//! three-unit plan in worktrees (two in parallel, a third that depends on
//! both and merges their branches) on the recorded engine, then `vf status`
//! and `vf report`. The user config is ignored; nothing outside the
//! temporary directory is written (docs/DEMO.md).

use std::path::{Path, PathBuf};

use super::stdio::eprint_line;
use crate::cli::{DemoArgs, OrchestrateArgs, OutputArgs, OutputFormat, ReportArgs, StateDirArg};
use crate::ground::error::{Result, VfError};
use crate::workspace::git;

/// The plan the demo runs: `docs` and `tests` in parallel, `release` after
/// both, merging their branches into its worktree.
pub const PLAN: &str = r#"# vf demo: a three-unit plan on the recorded engine (docs/DEMO.md)
[defaults]
engine = "recorded"
worktree = true

[[unit]]
name = "docs"
prompt = "Write the docs page."

[[unit]]
name = "tests"
prompt = "Write the tests."

[[unit]]
name = "release"
prompt = "Prepare the release from the docs and the tests."
depends_on = ["docs", "tests"]
"#;

pub fn run(a: &DemoArgs) -> Result<i32> {
    // git is the one thing the demo needs from the machine.
    crate::process::binary::resolve_program("git").map_err(|e| {
        VfError::not_ready(format!(
            "vf demo needs git on PATH (its units run in git worktrees): {e}"
        ))
    })?;
    let dir = tempfile::Builder::new()
        .prefix("vf-demo-")
        .tempdir()
        .map_err(|e| VfError::state(format!("cannot make a temporary directory: {e}")))?
        .keep();
    eprint_line(format_args!(
        "vf demo: working in {} (a new git repository; the state dir is inside it; your user config is ignored)",
        dir.display()
    ));
    let repo = dir.join("repo");
    let state = dir.join("state");
    let plan = init_repo(&repo)?;
    let format = match a.json {
        true => OutputFormat::Json,
        false => OutputFormat::Human,
    };
    let orchestrate = OrchestrateArgs {
        plan: Some(plan.clone()),
        jobs: Some(2),
        resume: false,
        max_cost: None,
        max_tokens: None,
        hard_budget: false,
        govern: Default::default(),
        #[cfg(feature = "temporal")]
        temporal: Default::default(),
        output: OutputArgs {
            output: Some(format),
            json: false,
        },
        state: state_arg(&state),
    };
    let code = super::orchestrate::run_with(&orchestrate, &crate::plan::config::Config::default())?;
    if !a.json {
        super::status::table_of(&state)?;
    }
    write_report(&dir, &plan, &state, a.json)?;
    eprint_line(format_args!(
        "vf demo: the branches are in {} (git -C {} log --graph --all --oneline)",
        repo.display(),
        repo.display()
    ));
    Ok(code)
}

fn state_arg(state: &Path) -> StateDirArg {
    StateDirArg {
        state_dir: Some(state.to_path_buf()),
    }
}

/// `repo` with one commit holding a README and the plan; the plan's path.
fn init_repo(repo: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(repo)?;
    std::fs::write(
        repo.join("README.md"),
        "# vf demo\n\nA repository `vf demo` made.\n",
    )?;
    let plan = repo.join("plan.toml");
    std::fs::write(&plan, PLAN)?;
    let steps: [&[&str]; 3] = [
        &["init", "-q", "-b", "main"],
        &["add", "README.md", "plan.toml"],
        &[
            "-c",
            "user.name=vf demo",
            "-c",
            "user.email=demo@vf.invalid",
            "commit",
            "-q",
            "-m",
            "vf demo: start",
        ],
    ];
    for args in steps {
        git::run(repo, args).map_err(|e| VfError::state(e.to_string()))?;
    }
    Ok(plan)
}

/// `vf report` of the demo's state dir, written to `dir/report.html`.
fn write_report(dir: &Path, plan: &Path, state: &Path, json: bool) -> Result<()> {
    let output = dir.join("report.html");
    let args = ReportArgs {
        plan: Some(plan.to_path_buf()),
        units: Vec::new(),
        since: None,
        output: Some(output),
        open: false,
        json: false,
        state: state_arg(state),
    };
    match json {
        // stdout holds only the plan's result object.
        true => super::report::write_page(&args).map(|line| eprint_line(format_args!("{line}"))),
        false => super::report::run(&args).map(|_| ()),
    }
}
