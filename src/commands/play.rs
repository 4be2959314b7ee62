//! `vf __play CAPTURE --file NAME` (hidden): the recorded engine's program.
//! Drains the prompt from stdin, writes the capture's tool output to NAME in
//! its cwd (the edit the capture's tool call stands for), then prints the
//! capture's stdout lines at a fixed cadence: the captures carry no
//! timestamps (docs/DEMO.md).

use std::io::{Read, Write};
use std::time::Duration;

use crate::cli::PlayArgs;
use crate::engine::recorded;
use crate::ground::error::{Result, VfError};

/// The pause before each line: a six-line capture lasts about 1.5 s.
pub const CADENCE: Duration = Duration::from_millis(250);

pub fn run(a: &PlayArgs) -> Result<i32> {
    let capture = recorded::find(&a.capture)
        .ok_or_else(|| VfError::usage(format!("no capture {:?}", a.capture)))?;
    crate::ground::names::check("file name", a.file.trim_end_matches(".txt"))?;
    let mut prompt = Vec::new();
    std::io::stdin().read_to_end(&mut prompt)?;
    std::fs::write(&a.file, capture.tool_output)?;
    let mut out = super::stdio::out();
    for line in capture.stdout.lines() {
        std::thread::sleep(CADENCE);
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(0)
}
