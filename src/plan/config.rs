//! The user config file (docs/CONFIG.md): defaults a user would otherwise
//! repeat as flags or plan keys. Read, never written. Pure: it returns values
//! and the origin of each; the commands apply them below the flags.
//!
//! Precedence: flag (and its variable) > plan unit > plan `[defaults]` >
//! this file > built-in. Its `[defaults]` table takes a plan's `[defaults]`
//! keys, checked by the plan's own unit checks (`plan::check_config_key`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::engine::EngineId;
use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
use crate::ground::text::one_line;
use crate::plan::UserDefaults;

/// The variable that names the file instead of the platform's config dir.
pub const ENV: &str = EnvVars::VF_CONFIG;
/// A config file larger than this is refused (it is a short list of keys).
pub const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The keys of `[defaults]` a user config may set: the plan keys that are
/// no one project's (no prompt, paths relative to a plan, dependencies).
pub const DEFAULT_KEYS: &[&str] = &[
    "engine",
    "on_rate_limit",
    "fallback",
    "max_wait",
    "read_only",
    "allow_tools",
    "deny_tools",
    "require_enforced",
    "deny_paths",
    "allow_paths",
    "on_finish",
    "on_fail",
    "bridge",
    "bridge_output",
    "acp",
    "stall_timeout",
    "timeout",
    "retries",
    "push",
    "fix_rounds",
    "review",
    "on_conflict",
    "resolver",
    "pause_at",
    "stagger",
    "rotate",
    "sandbox",
    "deny_read",
    "writable",
    "verify_sandbox",
];

/// Where an effective setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A flag on the command line.
    Flag,
    /// A variable (`VF_STATE_DIR`), which stands just above the config file.
    Env,
    /// The unit's own marker (a re-run or resume keeps what it asked for).
    Marker,
    /// A plan unit's own key.
    Unit,
    /// The plan's `[defaults]`.
    Defaults,
    /// The user config file, at this path.
    Config(PathBuf),
    /// vf's own default.
    Builtin,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag => f.write_str("flag"),
            Origin::Env => f.write_str("env"),
            Origin::Marker => f.write_str("marker"),
            Origin::Unit => f.write_str("unit"),
            Origin::Defaults => f.write_str("defaults"),
            Origin::Config(p) => write!(f, "config:{}", p.display()),
            Origin::Builtin => f.write_str("builtin"),
        }
    }
}

impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A model and effort for one engine (`[engines.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineKeys {
    pub model: Option<String>,
    pub effort: Option<String>,
}

/// The user config, read and checked; empty when the file does not exist.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file's path (absolute), whether or not it exists.
    pub path: PathBuf,
    pub exists: bool,
    pub state_dir: Option<PathBuf>,
    pub jobs: Option<usize>,
    /// `[defaults]`: plan keys, every one checked.
    pub defaults: toml::Table,
    /// `[engines.NAME]`: the model and effort per engine.
    pub engines: BTreeMap<EngineId, EngineKeys>,
    /// `[[accounts]]`: per engine, in file order (checked).
    pub accounts: Vec<crate::quota::Account>,
}

impl Config {
    /// The origin of what this file sets.
    pub fn origin(&self) -> Origin {
        Origin::Config(self.path.clone())
    }

    /// A `[defaults]` key as `T` (its value was checked at load).
    pub fn get<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.defaults
            .get(key)
            .and_then(|v| v.clone().try_into().ok())
    }

    /// What a plan merges below its own `[defaults]`.
    pub fn user_defaults(&self) -> UserDefaults {
        UserDefaults {
            defaults: self.defaults.clone(),
            engines: self
                .engines
                .iter()
                .map(|(e, k)| (*e, (k.model.clone(), k.effort.clone())))
                .collect(),
            accounts: self.accounts.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    state_dir: Option<Spanned<PathBuf>>,
    jobs: Option<Spanned<usize>>,
    #[serde(default)]
    defaults: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    engines: BTreeMap<Spanned<String>, EngineKeys>,
    #[serde(default)]
    accounts: Vec<super::accounts_keys::RawAccount>,
}

/// The config file's path: `VF_CONFIG`, else `vf/config.toml` in the
/// platform's config dir (`$XDG_CONFIG_HOME` or `~/.config` on Linux).
pub fn path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(ENV) {
        if p.is_empty() {
            return Err(VfError::usage(format!("{ENV} is set but empty")));
        }
        return crate::ground::state::absolute(Path::new(&p));
    }
    match directories::BaseDirs::new() {
        Some(d) => Ok(d.config_dir().join("vf").join("config.toml")),
        None => Err(VfError::usage(format!(
            "no home directory to find the config file in; set {ENV}"
        ))),
    }
}

/// Reads the config at [`path`]: a missing file is an empty config; an
/// unreadable, oversized, non-UTF-8 or invalid one is exit 2 naming the
/// file (and the line, for a key or value).
pub fn load() -> Result<Config> {
    load_from(&path()?)
}

/// [`load`] of the file at `path`.
pub fn load_from(path: &Path) -> Result<Config> {
    use crate::ground::fsutil::{CappedReadError, read_regular_capped};
    let shown = one_line(&path.display().to_string(), 200);
    // `VF_CONFIG=/dev/null` says "no config"; any other device or a FIFO is
    // still refused before a byte is read.
    if crate::sys::is_null_device(path) {
        return Ok(Config {
            path: path.to_path_buf(),
            ..Config::default()
        });
    }
    let bytes = match read_regular_capped(path, MAX_CONFIG_BYTES) {
        Ok(b) => b,
        Err(CappedReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Config {
                path: path.to_path_buf(),
                ..Config::default()
            });
        }
        Err(CappedReadError::Io(e)) => {
            return Err(VfError::usage(format!("cannot read config {shown}: {e}")));
        }
        Err(CappedReadError::NotRegular) => {
            return Err(VfError::usage(format!(
                "config {shown} is not a regular file"
            )));
        }
        Err(CappedReadError::TooLarge) => {
            return Err(VfError::usage(format!(
                "config {shown} is over {MAX_CONFIG_BYTES} bytes"
            )));
        }
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| VfError::usage(format!("config {shown}: not UTF-8 ({e})")))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    parse(&text, dir)
        .map(|c| Config {
            path: path.to_path_buf(),
            exists: true,
            ..c
        })
        .map_err(|(line, msg)| VfError::usage(format!("config {shown}:{line}: {msg}")))
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Parses and checks config text; an error is its line and message.
/// `dir` is the file's directory (the plan checks need one that exists).
pub fn parse(text: &str, dir: &Path) -> std::result::Result<Config, (usize, String)> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| line_of(text, s.start));
        (line, one_line(&e.message().trim().replace('\n', " "), 200))
    })?;
    let mut config = Config::default();
    if let Some(s) = raw.state_dir {
        if !s.get_ref().is_absolute() {
            return Err((
                line_of(text, s.span().start),
                format!(
                    "state_dir {} must be an absolute path",
                    s.get_ref().display()
                ),
            ));
        }
        config.state_dir = Some(s.into_inner());
    }
    if let Some(j) = raw.jobs {
        if *j.get_ref() == 0 {
            return Err((
                line_of(text, j.span().start),
                "jobs must be at least 1".into(),
            ));
        }
        config.jobs = Some(j.into_inner());
    }
    for (key, value) in raw.defaults {
        let line = line_of(text, key.span().start);
        let name = key.get_ref().as_str();
        if !DEFAULT_KEYS.contains(&name) {
            return Err((line, unknown_default(name)));
        }
        crate::plan::check_config_key(name, value.get_ref(), dir)
            .map_err(|m| (line_of(text, value.span().start), format!("[defaults] {m}")))?;
        config.defaults.insert(key.into_inner(), value.into_inner());
    }
    for (name, keys) in raw.engines {
        let line = line_of(text, name.span().start);
        let id = EngineId::parse(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = EngineId::every().map(EngineId::as_str).collect();
            let shown = one_line(name.get_ref(), 80);
            (
                line,
                format!(
                    "[engines.{shown}]: unknown engine (known: {})",
                    known.join(", ")
                ),
            )
        })?;
        let options = crate::engine::RunOptions::new(keys.model.clone(), keys.effort.clone(), None);
        crate::engine::options::check(id.engine().spec(), &options)
            .map_err(|e| (line, format!("[engines.{id}]: {e}")))?;
        config.engines.insert(id, keys);
    }
    let home = super::accounts_keys::home();
    config.accounts =
        super::accounts_keys::accounts(raw.accounts, &|at| line_of(text, at), home.as_deref())?;
    Ok(config)
}

/// The message for a `[defaults]` key the config does not take.
fn unknown_default(name: &str) -> String {
    let hint = match name {
        "model" | "effort" => " (a model and effort go in [engines.NAME])".to_string(),
        _ => format!(" (known: {})", DEFAULT_KEYS.join(", ")),
    };
    format!("unknown key `{}` in [defaults]{hint}", one_line(name, 80))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> (usize, String) {
        let t = tempfile::tempdir().unwrap();
        parse(text, t.path()).unwrap_err()
    }

    #[test]
    fn each_bad_key_or_value_names_its_line() {
        assert_eq!(
            err("jobs = 2\n\ncolour = 1\n"),
            (3, "unknown field `colour`, expected one of `state_dir`, `jobs`, `defaults`, `engines`, `accounts`".into())
        );
        assert_eq!(err("jobs = 0").0, 1);
        assert_eq!(err("jobs = \"four\"").0, 1);
        assert_eq!(err("[defaults]\nengine = \"codex\"\nprompt = \"x\"\n").0, 3);
        let (line, msg) = err("[defaults]\n\nread_only = \"yes\"\n");
        assert_eq!(line, 3);
        assert!(msg.starts_with("[defaults] "), "{msg}");
        assert!(msg.contains("invalid type"), "{msg}");
        let (line, msg) = err("[defaults]\nengine = \"gpt\"\n");
        assert_eq!((line, msg.contains("unknown engine")), (2, true), "{msg}");
        let (line, msg) = err("[engines.nope]\nmodel = \"m\"\n");
        assert_eq!(line, 1);
        assert!(msg.contains("[engines.nope]"), "{msg}");
        assert_eq!(err("[engines.codex]\n\ncolour = 1\n").0, 3);
        assert_eq!(err("state_dir = \"rel/dir\"").0, 1);
        assert!(
            err("[defaults]\nmodel = \"x\"")
                .1
                .contains("[engines.NAME]")
        );
    }

    #[test]
    fn a_good_file_is_read_whole() {
        let t = tempfile::tempdir().unwrap();
        // An absolute path on every OS (`/srv/vf` is not one on Windows), as a
        // TOML literal string so a Windows path's backslashes stay as written.
        let state = t.path().join("state");
        let c = parse(
            &format!(
                "state_dir = '{}'\njobs = 3\n[defaults]\nengine = \"codex\"\nread_only = true\n\
                 [engines.claude]\nmodel = \"opus\"\neffort = \"high\"\n",
                state.display()
            ),
            t.path(),
        )
        .unwrap();
        assert_eq!(c.state_dir, Some(state));
        assert_eq!(c.jobs, Some(3));
        assert_eq!(
            c.defaults,
            toml::from_str::<toml::Table>("engine = \"codex\"\nread_only = true").unwrap()
        );
        assert_eq!(
            c.engines,
            BTreeMap::from([(
                EngineId::Claude,
                EngineKeys {
                    model: Some("opus".into()),
                    effort: Some("high".into())
                }
            )])
        );
    }
}
