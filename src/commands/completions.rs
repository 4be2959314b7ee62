//! `vf completions <shell>` and `vf man`, generated from the clap definitions.

use crate::cli::{CompletionsArgs, Shell};
use crate::ground::error::Result;

pub fn run(args: &CompletionsArgs) -> Result<i32> {
    use clap_complete::Shell as S;
    let shell = match args.shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    let mut cmd = crate::cli::full_command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "vf", &mut buf);
    write_stdout(&buf)?;
    Ok(0)
}

pub fn man() -> Result<i32> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(crate::cli::full_command()).render(&mut buf)?;
    write_stdout(&buf)?;
    Ok(0)
}

fn write_stdout(buf: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = super::stdio::out();
    out.write_all(buf)?;
    out.flush()?;
    Ok(())
}
