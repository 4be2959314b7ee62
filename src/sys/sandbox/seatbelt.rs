//! macOS: Seatbelt. The profile allows everything by default, then denies
//! every write outside the writable paths, and reading, writing or
//! executing beneath a denied path, with writable paths inside a denied one
//! allowed again. In a profile the last rule that matches wins, so the
//! denied and re-allowed paths come shallowest first: the nearest wins.
//!
//! Pure text (golden-tested on every platform). Each path is written as
//! given and, under `/tmp`, `/var` and `/etc` (links on macOS), also in its
//! `/private` form: Seatbelt matches the resolved path.

use std::path::{Path, PathBuf};

use super::Rules;

/// macOS's own, by absolute path: a `sandbox-exec` found on `PATH` could be
/// anything.
pub(super) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The top-level links of macOS whose targets are under `/private`.
const PRIVATE_LINKS: [&str; 3] = ["/tmp", "/var", "/etc"];

/// The Seatbelt profile for `rules` (pure: golden-tested on every platform).
/// [`super::prepare`] refuses first the paths a profile cannot spell.
pub fn seatbelt_profile(rules: &Rules) -> String {
    let mut out = String::from("(version 1)\n(allow default)\n");
    let writable = with_private_forms(&rules.writable);
    if writable.is_empty() {
        out.push_str("(deny file-write*)\n");
    } else {
        out.push_str("(deny file-write* (require-not (require-any");
        for path in &writable {
            out.push_str(&format!("\n    (subpath {})", quoted(path)));
        }
        out.push_str(")))\n");
    }
    let denied = with_private_forms(&rules.deny_read);
    // (depth, allowed again, path): shallowest first, a re-allow after a
    // deny of the same path.
    let mut nearest: Vec<(usize, bool, &PathBuf)> = denied
        .iter()
        .map(|d| (d.components().count(), false, d))
        .collect();
    nearest.extend(
        writable
            .iter()
            .filter(|w| denied.iter().any(|d| w.starts_with(d)))
            .map(|w| (w.components().count(), true, w)),
    );
    nearest.sort();
    for (_, allow, path) in nearest {
        let verb = if allow { "allow" } else { "deny" };
        out.push_str(&format!(
            "({verb} file-read* file-write* process-exec (subpath {}))\n",
            quoted(path)
        ));
    }
    out
}

/// `paths`, each followed by its `/private` form where it has one, once each.
fn with_private_forms(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        // Spelt as macOS spells paths (`/`), whatever OS writes the text:
        // the profile is golden-tested on every platform.
        let text = path.to_string_lossy();
        let private = PRIVATE_LINKS
            .iter()
            .find(|link| {
                text.strip_prefix(*link)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .map(|_| PathBuf::from(format!("/private{text}")));
        for p in std::iter::once(path.clone()).chain(private) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// `path` as a profile's string: `"` and `\` escaped.
fn quoted(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Refuses a path the profile cannot spell exactly: not UTF-8, or with a
/// control character (a denied path spelt otherwise would deny nothing).
pub(super) fn check(rules: &Rules) -> std::io::Result<()> {
    for path in rules.writable.iter().chain(&rules.deny_read) {
        let spelt = path
            .to_str()
            .is_some_and(|s| !s.chars().any(char::is_control));
        if !spelt {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a Seatbelt profile cannot name {} (not UTF-8, or a control character)",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// `rules` with each path that resolves elsewhere (a link on its way)
/// followed by its resolved form: Seatbelt matches the resolved path, so a
/// denied link alone would deny nothing.
pub(super) fn with_real_paths(rules: &Rules) -> Rules {
    let real = |paths: &[PathBuf]| -> Vec<PathBuf> {
        let mut out = Vec::new();
        for path in paths {
            out.push(path.clone());
            match std::fs::canonicalize(path) {
                Ok(resolved) if !paths.contains(&resolved) && !out.contains(&resolved) => {
                    out.push(resolved);
                }
                _ => {}
            }
        }
        out
    };
    Rules {
        writable: real(&rules.writable),
        deny_read: real(&rules.deny_read),
    }
}

/// `sandbox-exec -f profile_file -- program args...`.
pub(super) fn wrap(program: &Path, args: &[String], profile_file: &Path) -> (PathBuf, Vec<String>) {
    let mut wrapped = vec![
        "-f".to_string(),
        profile_file.to_string_lossy().into_owned(),
        "--".to_string(),
        program.to_string_lossy().into_owned(),
    ];
    wrapped.extend(args.iter().cloned());
    (PathBuf::from(SANDBOX_EXEC), wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(writable: &[&str], deny_read: &[&str]) -> Rules {
        Rules {
            writable: writable.iter().map(PathBuf::from).collect(),
            deny_read: deny_read.iter().map(PathBuf::from).collect(),
        }
    }

    /// Writes only beneath the writable paths (their /private forms too),
    /// denied paths shut, a writable path inside a denied one open again.
    #[test]
    fn the_profile_denies_writes_outside_and_reads_of_denied_paths() {
        let profile = seatbelt_profile(&rules(
            &[
                "/Users/me/wt",
                "/tmp/vf-unit",
                "/dev/null",
                "/Users/me/.ssh/agent",
            ],
            &["/Users/me/.ssh", "/var/secrets"],
        ));
        let golden = r#"(version 1)
(allow default)
(deny file-write* (require-not (require-any
    (subpath "/Users/me/wt")
    (subpath "/tmp/vf-unit")
    (subpath "/private/tmp/vf-unit")
    (subpath "/dev/null")
    (subpath "/Users/me/.ssh/agent"))))
(deny file-read* file-write* process-exec (subpath "/var/secrets"))
(deny file-read* file-write* process-exec (subpath "/Users/me/.ssh"))
(deny file-read* file-write* process-exec (subpath "/private/var/secrets"))
(allow file-read* file-write* process-exec (subpath "/Users/me/.ssh/agent"))
"#;
        assert_eq!(profile, golden);
    }

    /// `"` and `\` in a path cannot end the string early.
    #[test]
    fn quotes_and_backslashes_are_escaped() {
        let profile = seatbelt_profile(&rules(&[r#"/w/a"b\c"#], &[]));
        assert_eq!(
            profile,
            "(version 1)\n(allow default)\n(deny file-write* (require-not (require-any\n    \
             (subpath \"/w/a\\\"b\\\\c\"))))\n"
        );
    }

    /// No writable path: no write at all.
    #[test]
    fn nothing_writable_denies_every_write() {
        assert_eq!(
            seatbelt_profile(&Rules::default()),
            "(version 1)\n(allow default)\n(deny file-write*)\n"
        );
    }

    /// `/etc` and `/var` have their `/private` forms; `/tmpx` is not `/tmp`.
    #[test]
    fn only_the_private_links_get_a_second_form() {
        let forms = with_private_forms(&[
            PathBuf::from("/etc/x"),
            PathBuf::from("/var"),
            PathBuf::from("/tmpx/y"),
            PathBuf::from("/private/tmp/z"),
        ]);
        let forms: Vec<&str> = forms.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            forms,
            [
                "/etc/x",
                "/private/etc/x",
                "/var",
                "/private/var",
                "/tmpx/y",
                "/private/tmp/z"
            ]
        );
    }

    /// A control character cannot reach a profile.
    #[test]
    fn a_path_with_a_control_character_is_refused() {
        let err = check(&rules(&["/w/a\nb"], &[])).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(check(&rules(&["/w/a b"], &["/d"])).is_ok());
    }

    /// A denied link is denied where it leads too (and a writable one).
    #[cfg(unix)]
    #[test]
    fn a_link_is_followed_to_its_real_path() {
        let t = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(real.join("aws")).unwrap();
        std::os::unix::fs::symlink(real.join("aws"), real.join("link")).unwrap();
        let given = rules(&[], &[real.join("link").to_str().unwrap(), "/gone"]);
        let prepared = super::super::prepare(&given, &super::super::Support::Seatbelt).unwrap();
        let profile = prepared.profile().unwrap();
        for path in [real.join("link"), real.join("aws")] {
            let line = format!(
                "(deny file-read* file-write* process-exec (subpath {}))",
                quoted(&path)
            );
            assert!(profile.contains(&line), "{profile}");
        }
        assert_eq!(prepared.mechanism().as_deref(), Some("seatbelt"));
        assert!(prepared.missing().is_empty());
    }

    /// sandbox-exec by absolute path, the profile file, `--`, the engine.
    #[test]
    fn the_engine_runs_through_sandbox_exec() {
        let (program, args) = wrap(
            Path::new("/opt/bin/claude"),
            &["-p".into(), "hi".into()],
            Path::new("/state/u/sandbox.sb"),
        );
        assert_eq!(program, PathBuf::from("/usr/bin/sandbox-exec"));
        assert_eq!(
            args,
            [
                "-f",
                "/state/u/sandbox.sb",
                "--",
                "/opt/bin/claude",
                "-p",
                "hi"
            ]
        );
    }
}
