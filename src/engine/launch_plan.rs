//! How a command string (the bridge's; an ACP agent's) becomes the process
//! vf starts: pure functions, the same on every platform, so a Linux user can
//! see what a Windows user will run (`vf dispatch --dry-run --json`).
//!
//! - **POSIX**: `/bin/sh -c "<string>"`: shell syntax is interpreted.
//! - **Windows**: the string is tokenized ([`tokenize`]) and run directly, no
//!   shell: `>` and `&&` reach the program as literal arguments. When the first
//!   token resolves to a `.cmd` or `.bat` file the launch is
//!   `cmd.exe /d /c [call] <argv…>`; `call` comes in when the program token
//!   itself was quoted (cmd.exe would strip its quotes and split a path with
//!   spaces). The string is never handed to cmd.exe as one element.
//!
//! Which plan runs here is the platform layer's answer (`sys::COMMAND_LAUNCH`).

use serde::Serialize;

/// The longest command string vf takes (a Windows command line's limit).
pub const MAX_COMMAND_BYTES: usize = 32 * 1024 - 1;

/// The POSIX shell that interprets a command string.
pub use crate::sys::POSIX_SHELL;

/// The Windows command interpreter a `.cmd`/`.bat` program runs under.
pub const CMD_EXE: &str = "cmd.exe";

/// One Windows argv element and whether any of it was double-quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub quoted: bool,
}

/// Both launches of one command string (`launch` in a dry run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Launches {
    pub posix: Vec<String>,
    /// `null` when the string does not tokenize (`windowsError` says why).
    pub windows: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_error: Option<String>,
}

/// Refuses what no platform can run: empty or blank, a NUL byte, too long;
/// and a leading `-` or `+`, which `/bin/sh -c` would take as an option.
/// `what` names the source for the message (`--bridge`, `VIBEFLOW_AI`).
pub fn check(line: &str, what: &str) -> Result<(), String> {
    if line.trim().is_empty() {
        let blank = if line.is_empty() { "empty" } else { "blank" };
        return Err(format!("{what}: the command is {blank}"));
    }
    if line.contains('\0') {
        return Err(format!(
            "{what}: the command contains a NUL byte, which no command line can carry"
        ));
    }
    if let Some(sign) = line.chars().next().filter(|c| matches!(c, '-' | '+')) {
        // `sh -c -x` takes `-x` as its own option, not as the command.
        return Err(format!(
            "{what}: the command begins with `{sign}`, which the shell would read as its own \
             option: name the program first"
        ));
    }
    if line.len() > MAX_COMMAND_BYTES {
        return Err(format!(
            "{what}: the command is {} bytes; at most {MAX_COMMAND_BYTES} are allowed",
            line.len()
        ));
    }
    Ok(())
}

/// The Windows tokenization: elements are separated by spaces and tabs
/// outside double quotes; a double-quoted part is taken as is (whitespace,
/// `>`, `&&` included) and joins what touches it (`a"b c"` is `ab c`); inside
/// quotes `""` is one literal quote; `""` alone is an empty element.
/// Backslashes are plain characters (Windows paths).
pub fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut cur: Option<Token> = None;
    let mut in_quotes = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if in_quotes && chars.peek() == Some(&'"') => {
                chars.next();
                push_char(&mut cur, '"');
            }
            '"' => {
                in_quotes = !in_quotes;
                cur.get_or_insert_with(empty_token).quoted = true;
            }
            ' ' | '\t' if !in_quotes => tokens.extend(cur.take()),
            '\r' | '\n' if !in_quotes => {
                return Err("a line break outside quotes: give the command on one line".into());
            }
            c => push_char(&mut cur, c),
        }
    }
    if in_quotes {
        return Err("a double quote is not closed".into());
    }
    tokens.extend(cur);
    if tokens.is_empty() {
        return Err("no program to run".into());
    }
    Ok(tokens)
}

fn empty_token() -> Token {
    Token {
        text: String::new(),
        quoted: false,
    }
}

fn push_char(cur: &mut Option<Token>, c: char) {
    cur.get_or_insert_with(empty_token).text.push(c);
}

/// The POSIX launch: `/bin/sh -c <string>`.
pub fn posix(line: &str) -> Vec<String> {
    vec![POSIX_SHELL.to_string(), "-c".to_string(), line.to_string()]
}

/// The Windows launch. `is_batch` answers whether a program token resolves
/// to a `.cmd` or `.bat` file (on Windows: looked up as the spawn would;
/// elsewhere: by its own extension, [`names_batch_file`]).
pub fn windows(line: &str, is_batch: impl Fn(&str) -> bool) -> Result<Vec<String>, String> {
    let tokens = tokenize(line)?;
    let program = &tokens[0];
    if program.text.is_empty() {
        return Err("the program token is empty".into());
    }
    let argv = tokens.iter().map(|t| t.text.clone());
    if !is_batch(&program.text) {
        return Ok(argv.collect());
    }
    let mut out: Vec<String> = [CMD_EXE, "/d", "/c"].map(String::from).to_vec();
    if program.quoted {
        out.push("call".into());
    }
    out.extend(argv);
    Ok(out)
}

/// Whether a name or path ends in `.cmd` or `.bat` (any case).
pub fn names_batch_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".cmd") || lower.ends_with(".bat")
}

/// Both launches of `line`; the Windows one judged by `is_batch`.
pub fn both(line: &str, is_batch: impl Fn(&str) -> bool) -> Launches {
    let (windows, windows_error) = match windows(line, is_batch) {
        Ok(argv) => (Some(argv), None),
        Err(e) => (None, Some(e)),
    };
    Launches {
        posix: posix(line),
        windows,
        windows_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(text: &str, quoted: bool) -> Token {
        Token {
            text: text.into(),
            quoted,
        }
    }

    #[test]
    fn tokenizer_table() {
        let cases: &[(&str, Result<Vec<Token>, &str>)] = &[
            (
                "aider --yes",
                Ok(vec![tok("aider", false), tok("--yes", false)]),
            ),
            ("  a \t b  ", Ok(vec![tok("a", false), tok("b", false)])),
            (
                r#""C:\Program Files\x\agent.cmd" -q"#,
                Ok(vec![
                    tok(r"C:\Program Files\x\agent.cmd", true),
                    tok("-q", false),
                ]),
            ),
            (
                r#"a "" b"#,
                Ok(vec![tok("a", false), tok("", true), tok("b", false)]),
            ),
            (
                r#"say "he said ""hi""""#,
                Ok(vec![tok("say", false), tok(r#"he said "hi""#, true)]),
            ),
            (r#"a"b c"d"#, Ok(vec![tok("ab cd", true)])),
            (
                "x > out && y",
                Ok(vec![
                    tok("x", false),
                    tok(">", false),
                    tok("out", false),
                    tok("&&", false),
                    tok("y", false),
                ]),
            ),
            (
                r"C:\tools\a.exe \\srv\share",
                Ok(vec![
                    tok(r"C:\tools\a.exe", false),
                    tok(r"\\srv\share", false),
                ]),
            ),
            (r#"a "b"#, Err("a double quote is not closed")),
            ("   ", Err("no program to run")),
            ("", Err("no program to run")),
            (
                "a\nb",
                Err("a line break outside quotes: give the command on one line"),
            ),
        ];
        for (line, want) in cases {
            let got = tokenize(line);
            let want = want.clone().map_err(String::from);
            assert_eq!(got, want, "{line:?}");
        }
    }

    #[test]
    fn launch_plans_on_both_platforms() {
        let batch = names_batch_file;
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        type Case<'a> = (&'a str, &'a [&'a str], Result<&'a [&'a str], &'a str>);
        let cases: &[Case] = &[
            // A quoted shim path with spaces gains `call`.
            (
                r#""C:\Program Files\Agent\agent.cmd" --fast"#,
                &[
                    "/bin/sh",
                    "-c",
                    r#""C:\Program Files\Agent\agent.cmd" --fast"#,
                ],
                Ok(&[
                    "cmd.exe",
                    "/d",
                    "/c",
                    "call",
                    r"C:\Program Files\Agent\agent.cmd",
                    "--fast",
                ]),
            ),
            // An unquoted .cmd does not.
            (
                "agent.CMD -q",
                &["/bin/sh", "-c", "agent.CMD -q"],
                Ok(&["cmd.exe", "/d", "/c", "agent.CMD", "-q"]),
            ),
            (
                "run.bat",
                &["/bin/sh", "-c", "run.bat"],
                Ok(&["cmd.exe", "/d", "/c", "run.bat"]),
            ),
            // `>` and `&&` stay literal on Windows; POSIX hands them to the shell.
            (
                "aider > log && echo done",
                &["/bin/sh", "-c", "aider > log && echo done"],
                Ok(&["aider", ">", "log", "&&", "echo", "done"]),
            ),
            // Embedded quotes and empty tokens.
            (
                r#"tool "a ""b"" c" """#,
                &["/bin/sh", "-c", r#"tool "a ""b"" c" """#],
                Ok(&["tool", r#"a "b" c"#, ""]),
            ),
            // A quoted program that is not a batch file is run directly.
            (
                r#""C:\A B\x.exe" 1"#,
                &["/bin/sh", "-c", r#""C:\A B\x.exe" 1"#],
                Ok(&[r"C:\A B\x.exe", "1"]),
            ),
            (
                r#""" x"#,
                &["/bin/sh", "-c", r#""" x"#],
                Err("the program token is empty"),
            ),
            (
                r#"x "y"#,
                &["/bin/sh", "-c", r#"x "y"#],
                Err("a double quote is not closed"),
            ),
        ];
        for (line, posix_want, windows_want) in cases {
            assert_eq!(posix(line), s(posix_want), "{line:?}");
            let got = windows(line, batch);
            let want = windows_want.map(s).map_err(String::from);
            assert_eq!(got, want, "{line:?}");
        }
    }

    #[test]
    fn resolution_decides_batch_not_the_spelling() {
        // `agent` resolved to agent.cmd on PATH: cmd.exe, and no `call` (unquoted).
        let got = windows("agent --x", |t| t == "agent").unwrap();
        assert_eq!(got, ["cmd.exe", "/d", "/c", "agent", "--x"]);
        let got = windows("agent.cmd", |_| false).unwrap();
        assert_eq!(got, ["agent.cmd"]);
    }

    #[test]
    fn hostile_strings_are_refused_in_words() {
        let what = "--bridge";
        assert_eq!(
            check("", what),
            Err("--bridge: the command is empty".into())
        );
        assert_eq!(
            check(" \t\n", what),
            Err("--bridge: the command is blank".into())
        );
        assert_eq!(
            check("a\0b", what),
            Err(
                "--bridge: the command contains a NUL byte, which no command line can carry".into()
            )
        );
        for (line, sign) in [("-c echo hi", '-'), ("+x agent", '+'), ("--help", '-')] {
            assert_eq!(
                check(line, what),
                Err(format!(
                    "--bridge: the command begins with `{sign}`, which the shell would read as \
                     its own option: name the program first"
                )),
                "{line:?}"
            );
        }
        // Not first, it is an argument like any other.
        assert_eq!(check("agent -x +y", what), Ok(()));
        let huge = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert_eq!(
            check(&huge, what),
            Err(format!(
                "--bridge: the command is {} bytes; at most {MAX_COMMAND_BYTES} are allowed",
                huge.len()
            ))
        );
        assert_eq!(check(&huge[1..], what), Ok(()));
        // A huge string that passes the check still tokenizes without trouble.
        let many = "a ".repeat(MAX_COMMAND_BYTES / 2);
        assert_eq!(tokenize(&many).unwrap().len(), MAX_COMMAND_BYTES / 2);
    }

    #[test]
    fn both_reports_a_windows_error_beside_the_posix_plan() {
        let l = both(r#"sh -c 'echo "'"#, names_batch_file);
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            serde_json::json!({
                "posix": ["/bin/sh", "-c", r#"sh -c 'echo "'"#],
                "windows": null,
                "windowsError": "a double quote is not closed"
            })
        );
    }
}
