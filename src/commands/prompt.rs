//! Reading the prompt from `--prompt`, `--prompt-file` or stdin, and a conv
//! handoff's `--file`, never more than [`MAX_PROMPT_BYTES`] (so `/dev/zero`
//! or an endless pipe is refused quickly, in bounded memory).

use std::io::{IsTerminal, Read};
use std::path::Path;

use crate::cli::PromptArgs;
use crate::dispatch::MAX_PROMPT_BYTES;
use crate::ground::error::{Result, VfError};

pub fn read(args: &PromptArgs) -> Result<String> {
    let prompt = if let Some(p) = &args.prompt {
        check_size("--prompt", p.len())?;
        p.clone()
    } else if let Some(path) = &args.prompt_file {
        read_file(path, "prompt file")?
    } else {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(VfError::usage(
                "no prompt: pass --prompt TEXT, --prompt-file FILE, or pipe it on stdin",
            ));
        }
        let what = "the prompt on stdin";
        text(read_capped(stdin.lock(), what)?, what)?
    };
    if prompt.trim().is_empty() {
        return Err(VfError::usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// A text file the user named, under the prompt's cap; its errors call it
/// `kind` (`prompt file`, `handoff file`) and name its path.
pub fn read_file(path: &Path, kind: &str) -> Result<String> {
    let what = format!("{kind} {}", path.display());
    let file = std::fs::File::open(path)
        .map_err(|e| VfError::usage(format!("cannot read {what}: {e}")))?;
    // A regular file says its size up front; devices and pipes are read up to the cap.
    if let Ok(m) = file.metadata()
        && m.is_file()
    {
        check_size(&what, usize::try_from(m.len()).unwrap_or(usize::MAX))?;
    }
    let text = text(read_capped(file, &what)?, &what)?;
    if text.trim().is_empty() {
        return Err(VfError::usage(format!("{what} is empty")));
    }
    Ok(text)
}

fn check_size(what: &str, len: usize) -> Result<()> {
    if len > MAX_PROMPT_BYTES {
        return Err(VfError::usage(format!(
            "{what} is over the limit of {MAX_PROMPT_BYTES} bytes (16 MiB)"
        )));
    }
    Ok(())
}

/// At most one byte past the cap is read: enough to know it is over.
fn read_capped(r: impl Read, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(MAX_PROMPT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| VfError::usage(format!("cannot read {what}: {e}")))?;
    check_size(what, bytes.len())?;
    Ok(bytes)
}

fn text(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| VfError::usage(format!("{what} is not UTF-8: {e}")))
}
