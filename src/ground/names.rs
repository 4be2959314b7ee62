//! Names that become file names under the state dir (units, attachments).

use crate::ground::error::{Result, VfError};
use crate::ground::text::is_invisible;

pub const MAX_NAME_LEN: usize = 64;

/// Checks that `name` is safe as a single path component: ASCII letters,
/// digits, `.`, `_`, `-`; not starting with `.` or `-`; no `..`; at most
/// [`MAX_NAME_LEN`] bytes. `what` names the thing in the error ("unit name").
pub fn check(what: &str, name: &str) -> Result<()> {
    // `{:?}` escapes control and bidi characters, so the error is safe to print;
    // a huge name is cut so the error stays one readable line.
    let shown = shown(name);
    let bad = |why: &str| Err(VfError::usage(format!("invalid {what} {shown}: {why}")));
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad(&format!(
            "it is {} bytes long; at most {MAX_NAME_LEN} are allowed",
            name.len()
        ));
    }
    if let Some(c) = name.chars().find(|c| is_invisible(*c)) {
        return bad(&format!(
            "it contains the control or invisible character U+{:04X}",
            c as u32
        ));
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
    if name.ends_with('.') {
        return bad("it ends with `.`");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(&format!(
            "character {c:?} is not allowed (use letters, digits, `.`, `_`, `-`)"
        ));
    }
    if crate::sys::RESERVES_DEVICE_NAMES && is_device_name(name) {
        return bad(
            "Windows keeps it for a device (con, prn, aux, nul, com0-9, lpt0-9, with any extension)",
        );
    }
    Ok(())
}

/// A name Windows opens as a device in any directory: `con`, `NUL.json`, `com1.x`.
fn is_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
    match stem.as_bytes() {
        b"con" | b"prn" | b"aux" | b"nul" => true,
        [b'c', b'o', b'm', d] | [b'l', b'p', b't', d] => d.is_ascii_digit(),
        _ => false,
    }
}

fn shown(name: &str) -> String {
    const MAX_CHARS: usize = 80;
    if name.chars().count() <= MAX_CHARS {
        format!("{name:?}")
    } else {
        let head: String = name.chars().take(MAX_CHARS).collect();
        format!("{head:?}…")
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn hostile_names_are_refused() {
        for n in [
            "",
            "../x",
            "..",
            ".",
            "a/b",
            "/etc/passwd",
            "a\\b",
            ".hidden",
            "-rf",
            "--force",
            "a..b",
            "x\ny",
            "x\0y",
            "a\u{7f}",
            "a b",
            "é",
            "a.",
            "evil\u{202E}gnp.txt",
            "zero\u{200B}width.md",
            "bom\u{FEFF}.md",
            "c1\u{85}.md",
            &"x".repeat(65),
        ] {
            assert!(check("unit name", n).is_err(), "{n:?} accepted");
        }
        for n in ["schema", "api-v2", "a.b_c", "X1", &"x".repeat(64)] {
            assert!(check("unit name", n).is_ok(), "{n:?} refused");
        }
    }

    #[test]
    fn device_names_are_refused_where_the_system_keeps_them() {
        use super::is_device_name;
        for n in [
            "con", "CON", "nul.json", "Aux.lock", "com1", "LPT9.x.y", "prn",
        ] {
            assert!(is_device_name(n), "{n}");
            let refused = check("unit name", n).is_err();
            assert_eq!(refused, crate::sys::RESERVES_DEVICE_NAMES, "{n}");
        }
        for n in [
            "cons", "console", "com", "com10", "lpt", "nul_x", "x.con", "a-nul",
        ] {
            assert!(!is_device_name(n), "{n}");
            assert!(check("unit name", n).is_ok(), "{n}");
        }
    }

    #[test]
    fn errors_are_printable_and_explain() {
        let e = check("attachment name", "evil\u{202E}gnp.txt")
            .unwrap_err()
            .to_string();
        assert!(e.contains("U+202E"), "{e}");
        assert!(!e.contains('\u{202E}'), "raw bidi override in {e:?}");
        let e = check("attachment name", &"y".repeat(5000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("5000 bytes"), "{e}");
        assert!(e.len() < 300, "error not shortened: {} bytes", e.len());
        let e = check("attachment name", "a\nb").unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e:?}");
    }
}
