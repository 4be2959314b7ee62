//! The sandbox a unit asks for (`--sandbox`, plan key `sandbox`;
//! docs/SANDBOX.md), pure: its modes, the paths a user names (checked), the
//! built-in credential paths no sandboxed unit reads, where each engine
//! keeps its own state (its `Spec::state_paths`), and what a run records
//! (`policy.sandbox`). The mechanism is `sys::sandbox`; the rules of one run
//! are built by `dispatch::confine`.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::enforcement::Enforcement;
use crate::ground::error::{Result, VfError};

/// What the engine's process tree may write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox (the default).
    #[default]
    Off,
    /// Writes only in the working directory, the unit's folder, its temp dir
    /// and the engine's own state paths.
    Workspace,
    /// As `workspace`, the working directory read-only too.
    ReadOnly,
}

impl SandboxMode {
    pub const NAMES: [&'static str; 3] = ["off", "workspace", "read-only"];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::Workspace => "workspace",
            SandboxMode::ReadOnly => "read-only",
        }
    }

    /// `what` names the flag or key in the error (exit 2).
    pub fn parse(s: &str, what: &str) -> Result<SandboxMode> {
        match s {
            "off" => Ok(SandboxMode::Off),
            "workspace" => Ok(SandboxMode::Workspace),
            "read-only" => Ok(SandboxMode::ReadOnly),
            _ => Err(VfError::usage(format!(
                "{what}: unknown sandbox mode {}: use off, workspace or read-only",
                crate::ground::text::shown(s, 40)
            ))),
        }
    }

    pub fn is_on(self) -> bool {
        self != SandboxMode::Off
    }
}

/// Credential paths no sandboxed unit reads when the user names none
/// (`deny_read`); an engine's own state paths are never denied.
pub const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.config/hub",
    "~/.docker/config.json",
    "~/.kube",
    "~/.gnupg",
    "~/.password-store",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.vault-token",
];

/// What one run's sandbox was (result and marker: `policy.sandbox`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    pub mode: SandboxMode,
    /// `enforced`, `unenforced` (asked for, not held: the warning says
    /// what is missing) or `off`.
    pub state: Enforcement,
    /// `landlock-abi-N`, `seatbelt`, or null.
    pub mechanism: Option<String>,
    pub writable: Vec<String>,
    pub deny_read: Vec<String>,
}

/// A path a user names for the sandbox (`deny_read`, `writable`): absolute
/// or `~/...` (the home dir), never relative, never `/`, no NUL and no `..`.
/// It need not exist. `what` names the flag or key in the error (exit 2).
pub fn user_path(raw: &str, home: Option<&Path>, what: &str) -> Result<PathBuf> {
    let bad = |why: &str| {
        Err(VfError::usage(format!(
            "{what}: {} {why}",
            crate::ground::text::shown(raw, 80)
        )))
    };
    if raw.contains('\0') {
        return bad("contains a NUL byte");
    }
    let path = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match home {
            Some(h) => h.join(rest.trim_start_matches('/')),
            None => return bad("names the home dir, which is not known here"),
        },
        _ => PathBuf::from(raw),
    };
    if !path.is_absolute() {
        return bad("is relative: give an absolute path or ~/...");
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return bad("contains `..`: give the path itself");
    }
    let normal: PathBuf = path.components().collect();
    if normal.parent().is_none() {
        return bad("is the root of the file system");
    }
    Ok(normal)
}

/// Where an engine keeps its own state, which it must write under the
/// sandbox: under a variable that moves it when that is set, else under a
/// base dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatePath {
    /// `(VARIABLE, path under it)`: the variable (an absolute path) that
    /// moves this state when set (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`).
    pub moved_by: Option<(&'static str, &'static str)>,
    pub base: Base,
    /// Under the base ("" for the base itself).
    pub rel: &'static str,
    /// A file (`~/.claude.json`), not a directory: vf never creates it.
    pub file: bool,
}

/// The dir a state path is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Base {
    Home,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    XdgConfig,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    XdgData,
    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    XdgState,
    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    XdgCache,
}

impl StatePath {
    pub const fn home(rel: &'static str) -> StatePath {
        StatePath::under(Base::Home, rel)
    }

    pub const fn under(base: Base, rel: &'static str) -> StatePath {
        StatePath {
            moved_by: None,
            base,
            rel,
            file: false,
        }
    }

    /// A file in the home dir.
    pub const fn home_file(rel: &'static str) -> StatePath {
        StatePath {
            file: true,
            ..StatePath::home(rel)
        }
    }

    pub const fn moved_by(self, var: &'static str, rel: &'static str) -> StatePath {
        StatePath {
            moved_by: Some((var, rel)),
            ..self
        }
    }

    /// The path in the engine's environment (`var` looks a variable up):
    /// `None` when the home dir is unknown. A relative value is ignored, as
    /// the CLIs themselves would misread it.
    pub fn resolve(&self, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let abs = |name: &str| {
            var(name)
                .filter(|v| Path::new(v).is_absolute())
                .map(PathBuf::from)
        };
        if let Some((name, rel)) = self.moved_by
            && let Some(dir) = abs(name)
        {
            return Some(join(dir, rel));
        }
        let home = abs("HOME");
        let base = match self.base {
            Base::Home => home?,
            Base::XdgConfig => abs("XDG_CONFIG_HOME").or(home.map(|h| h.join(".config")))?,
            Base::XdgData => abs("XDG_DATA_HOME").or(home.map(|h| h.join(".local/share")))?,
            Base::XdgState => abs("XDG_STATE_HOME").or(home.map(|h| h.join(".local/state")))?,
            Base::XdgCache => abs("XDG_CACHE_HOME").or(home.map(|h| h.join(".cache")))?,
        };
        Some(join(base, self.rel))
    }
}

fn join(dir: PathBuf, rel: &str) -> PathBuf {
    if rel.is_empty() { dir } else { dir.join(rel) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_name_themselves() {
        for name in SandboxMode::NAMES {
            assert_eq!(SandboxMode::parse(name, "x").unwrap().as_str(), name);
        }
        let e = SandboxMode::parse("strict", "--sandbox").unwrap_err();
        assert_eq!(e.exit_code(), crate::ground::error::exit::USAGE);
        assert!(
            e.to_string().contains("--sandbox: unknown sandbox mode"),
            "{e}"
        );
    }

    /// An absolute path on this OS (`C:` before it on Windows).
    fn abs(p: &str) -> String {
        if cfg!(windows) {
            format!("C:{p}")
        } else {
            p.to_string()
        }
    }

    #[test]
    fn user_paths_are_absolute_or_home_and_never_the_root() {
        let home = PathBuf::from(abs("/home/u"));
        let ok = |raw: &str| user_path(raw, Some(&home), "deny_read").unwrap();
        assert_eq!(ok("~/.ssh"), home.join(".ssh"));
        assert_eq!(ok("~"), home);
        assert_eq!(ok(&abs("/etc/./shadow")), PathBuf::from(abs("/etc/shadow")));
        let later = abs("/does/not/exist/yet");
        assert_eq!(ok(&later), PathBuf::from(&later));
        let bad = [
            "relative/x".to_string(),
            "./x".into(),
            "~other/x".into(),
            abs("/"),
            abs("/."),
            abs("/a/\0b"),
            abs("/a/../b"),
            String::new(),
        ];
        for bad in bad.iter().map(String::as_str).chain(["/", "//"]) {
            let e = user_path(bad, Some(&home), "deny_read").unwrap_err();
            assert_eq!(e.exit_code(), crate::ground::error::exit::USAGE, "{bad:?}");
            assert!(e.to_string().starts_with("deny_read: "), "{e}");
        }
        assert!(user_path("~/.ssh", None, "x").is_err());
    }

    #[test]
    fn state_paths_follow_their_variables() {
        let env = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        if v.starts_with('/') {
                            abs(v)
                        } else {
                            v.to_string()
                        },
                    )
                })
                .collect();
            move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        let at = |p: &str| PathBuf::from(abs(p));
        let codex = StatePath::home(".codex").moved_by("CODEX_HOME", "");
        assert_eq!(
            codex.resolve(&env(&[("HOME", "/h")])),
            Some(at("/h/.codex"))
        );
        assert_eq!(
            codex.resolve(&env(&[("HOME", "/h"), ("CODEX_HOME", "/c")])),
            Some(at("/c"))
        );
        // A relative variable is not trusted: the default place.
        assert_eq!(
            codex.resolve(&env(&[("HOME", "/h"), ("CODEX_HOME", "rel")])),
            Some(at("/h/.codex"))
        );
        let oc = StatePath::under(Base::XdgData, "opencode");
        assert_eq!(
            oc.resolve(&env(&[("HOME", "/h")])),
            Some(at("/h/.local/share/opencode"))
        );
        assert_eq!(
            oc.resolve(&env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
            Some(at("/x/opencode"))
        );
        assert_eq!(oc.resolve(&env(&[])), None);
    }

    #[test]
    fn the_record_is_camel_case_with_a_null_mechanism() {
        let s = SandboxStatus {
            mode: SandboxMode::ReadOnly,
            state: Enforcement::Unenforced,
            mechanism: None,
            writable: vec!["/w".into()],
            deny_read: vec!["/d".into()],
        };
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"mode": "read-only", "state": "unenforced", "mechanism": null,
                "writable": ["/w"], "denyRead": ["/d"]})
        );
    }
}
