//! Reading the prompt from `--prompt`, `--prompt-file` or stdin.

use std::io::{IsTerminal, Read};

use crate::cli::PromptArgs;
use crate::error::{Result, VfError};

pub fn read(args: &PromptArgs) -> Result<String> {
    let prompt = if let Some(p) = &args.prompt {
        p.clone()
    } else if let Some(path) = &args.prompt_file {
        let bytes = std::fs::read(path).map_err(|e| {
            VfError::usage(format!("cannot read prompt file {}: {e}", path.display()))
        })?;
        String::from_utf8(bytes).map_err(|e| {
            VfError::usage(format!("prompt file {} is not UTF-8: {e}", path.display()))
        })?
    } else {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(VfError::usage(
                "no prompt: pass --prompt TEXT, --prompt-file FILE, or pipe it on stdin",
            ));
        }
        let mut bytes = Vec::new();
        stdin.lock().read_to_end(&mut bytes)?;
        String::from_utf8(bytes)
            .map_err(|e| VfError::usage(format!("the prompt on stdin is not UTF-8: {e}")))?
    };
    if prompt.trim().is_empty() {
        return Err(VfError::usage("the prompt is empty"));
    }
    Ok(prompt)
}
