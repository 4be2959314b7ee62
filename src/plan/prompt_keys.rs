//! A plan unit's prompt: `prompt`, or the text of `prompt_file`, read
//! without ever blocking on or exhausting vf (a plan can come with a
//! repository).

use std::path::{Path, PathBuf};

use crate::dispatch::MAX_PROMPT_BYTES;

use super::show_path;

/// `prompt`, or `prompt_file`'s text (relative: the plan's directory):
/// exactly one, not blank.
pub(super) fn prompt_of(
    prompt: Option<String>,
    file: Option<PathBuf>,
    dir: &Path,
) -> std::result::Result<String, String> {
    let prompt = match (prompt, file) {
        (Some(_), Some(_)) => return Err("has both `prompt` and `prompt_file`; give one".into()),
        (None, None) => return Err("has no `prompt` or `prompt_file`".into()),
        (Some(p), None) => p,
        (None, Some(f)) => read_prompt_file(&dir.join(f))?,
    };
    if prompt.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(prompt)
}

/// Reads a regular file of at most [`MAX_PROMPT_BYTES`]. A FIFO, a device
/// (`/dev/zero`) or a directory is refused without being read: a plan can come
/// with a repository, and nothing in it may block or exhaust vf.
fn read_prompt_file(p: &Path) -> std::result::Result<String, String> {
    use crate::ground::fsutil::{CappedReadError, read_regular_capped};
    let shown = show_path(p);
    let bytes = read_regular_capped(p, MAX_PROMPT_BYTES as u64).map_err(|e| match e {
        CappedReadError::Io(e) => format!("cannot read prompt_file {shown}: {e}"),
        CappedReadError::NotRegular => format!("prompt_file {shown} is not a regular file"),
        CappedReadError::TooLarge => format!(
            "prompt_file {shown} is over the prompt limit of {MAX_PROMPT_BYTES} bytes (16 MiB)"
        ),
    })?;
    String::from_utf8(bytes)
        .map_err(|e| format!("cannot read prompt_file {}: not UTF-8 ({e})", show_path(p)))
}
