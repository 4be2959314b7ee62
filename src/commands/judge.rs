//! `vf judge UNIT`: a verdict on a unit's recorded answers from the
//! configured judge (docs/JUDGE.md). Exit 0 pass; 1 fail, uncertain, an
//! HTTP error or an invalid response; 2 unconfigured or a bad unit (nothing
//! sent); 3 unreachable or no verified TLS connection; 4 no answer within `--timeout`.

use std::io::Write;
use std::time::Duration;

use serde_json::json;

use crate::cli::JudgeArgs;
use crate::ground::error::{Result, exit};
use crate::report::judge::{self, Config, Decision, Failure};

pub fn run(a: &JudgeArgs) -> Result<i32> {
    let var = |name: &str| std::env::var(name).ok();
    // Configuration first: unconfigured, vf reads and sends nothing.
    let cfg = Config::from_values(
        var(judge::ENDPOINT_VAR),
        var(judge::MODEL_VAR),
        var(judge::KEY_VAR),
        var(crate::ground::tls::CA_FILE_VAR),
        Duration::from_secs(a.timeout),
    )?;
    let cwd = std::env::current_dir()?;
    let state_dir = super::config::state_dir(a.state.state_dir.as_deref(), &cwd)?;
    let input = judge::load_input(&state_dir, &a.unit)?;
    let verdict = match judge::judge(&cfg, &input) {
        Ok(v) => v,
        Err(f) => {
            super::stdio::eprint_line(format_args!("vf: judge: {f}"));
            return Ok(match f {
                Failure::Unreachable(_) | Failure::Tls(_) => exit::NOT_READY,
                Failure::Timeout(_) => exit::TIMEOUT,
                Failure::Status(_) | Failure::Invalid(_) => exit::ENGINE_FAILED,
            });
        }
    };
    for w in &verdict.warnings {
        super::stdio::eprint_line(format_args!("vf: warning: {w}"));
    }
    if a.json {
        super::print_json(&json!({
            "unit": input.unit,
            "model": cfg.model,
            "verdict": verdict.verdict,
            "score": verdict.score,
            "reason": verdict.reason,
            "answers": verdict.answers,
            "warnings": verdict.warnings,
        }))?;
    } else {
        let mut out = super::stdio::out();
        writeln!(
            out,
            "{}: {:?} (score {}) {}",
            input.unit, verdict.verdict, verdict.score, verdict.reason
        )?;
        for a in &verdict.answers {
            writeln!(
                out,
                "  {} score {} {}",
                a.id,
                a.score,
                a.note.as_deref().unwrap_or("")
            )?;
        }
    }
    Ok(match verdict.verdict {
        Decision::Pass => exit::OK,
        Decision::Fail | Decision::Uncertain => exit::ENGINE_FAILED,
    })
}
