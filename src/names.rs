//! Names that become file names under the state dir (units, attachments).

use crate::error::{Result, VfError};

pub const MAX_NAME_LEN: usize = 64;

/// Checks that `name` is safe as a single path component: ASCII letters,
/// digits, `.`, `_`, `-`; not starting with `.` or `-`; no `..`; at most
/// [`MAX_NAME_LEN`] bytes. `what` names the thing in the error ("unit name").
pub fn check(what: &str, name: &str) -> Result<()> {
    let bad = |why: &str| Err(VfError::usage(format!("invalid {what} {name:?}: {why}")));
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad(&format!("longer than {MAX_NAME_LEN} bytes"));
    }
    if name.chars().any(|c| c.is_control()) {
        return bad("it contains control characters");
    }
    if name.contains('/') || name.contains('\\') {
        return bad("it contains a path separator");
    }
    if name.contains("..") {
        return bad("it contains `..`");
    }
    if name.starts_with('.') || name.starts_with('-') {
        return bad("it starts with `.` or `-`");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(&format!(
            "character {c:?} is not allowed (use letters, digits, `.`, `_`, `-`)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn hostile_names_are_refused() {
        for n in [
            "",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "-rf",
            "a..b",
            "x\ny",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            assert!(check("unit name", n).is_err(), "{n:?} accepted");
        }
        for n in ["schema", "api-v2", "a.b_c", "X1"] {
            assert!(check("unit name", n).is_ok(), "{n:?} refused");
        }
    }
}
