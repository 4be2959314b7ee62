//! Files vf generates in a user's project (`vf skill install`, `vf workspace
//! init`): idempotent, and never over a file the user edited.
//!
//! What vf wrote is recorded in `<dir>/.vf-generated.json` (relative path →
//! sha256 of what vf wrote; a section of a shared file such as `AGENTS.md`
//! is keyed `path#id` and hashed on its body between the begin and end
//! markers). A file vf wrote and nobody touched since may be regenerated; a
//! user-edited or foreign one is refused (exit 2, naming it) unless
//! `force`. Everything is checked before anything is written, so a refusal
//! writes nothing. A symbolic link anywhere below `dir` on a path vf would
//! write is refused even with `force`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::read_no_follow;
use crate::ground::fsutil::user_file::{self, Streams};
use crate::ground::text::sha256_hex;

pub const LEDGER: &str = ".vf-generated.json";

/// One thing to generate.
#[derive(Debug, Clone)]
pub enum Item {
    /// A whole file of vf's.
    File { rel: String, content: String },
    /// vf's section of a shared file, between `<!-- vf:ID begin -->` and
    /// `<!-- vf:ID end -->`: the rest of the file is the user's.
    Section {
        rel: String,
        id: String,
        content: String,
    },
}

impl Item {
    fn rel(&self) -> &str {
        match self {
            Item::File { rel, .. } | Item::Section { rel, .. } => rel,
        }
    }
    fn key(&self) -> String {
        match self {
            Item::File { rel, .. } => rel.clone(),
            Item::Section { rel, id, .. } => format!("{rel}#{id}"),
        }
    }
    fn body(&self) -> &str {
        match self {
            Item::File { content, .. } | Item::Section { content, .. } => content,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Created,
    Updated,
    Unchanged,
    /// A user-edited or foreign file replaced under `force`.
    Forced,
}

#[derive(Debug, Clone, Serialize)]
pub struct Written {
    pub path: String,
    pub action: Action,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Ledger {
    format: u32,
    files: BTreeMap<String, String>,
}

/// Generates `items` under `dir`. Returns what happened to each.
pub fn apply(dir: &Path, items: &[Item], force: bool) -> Result<Vec<Written>> {
    let meta = std::fs::metadata(dir)
        .map_err(|e| VfError::usage(format!("cannot use --dir {}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(VfError::usage(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let ledger_path = safe_path(dir, LEDGER)?;
    let mut ledger = load_ledger(&ledger_path)?;
    let mut planned = Vec::new();
    let mut refused = Vec::new();
    for item in items {
        let path = safe_path(dir, item.rel())?;
        let current = read_current(&path)?;
        let (bytes, action, why) =
            plan_one(item, current.as_deref(), ledger.files.get(&item.key()))?;
        if let Some(why) = why
            && !force
        {
            refused.push(format!("{} ({why})", item.rel()));
            continue;
        }
        planned.push((item, path, bytes, action));
    }
    if !refused.is_empty() {
        return Err(VfError::usage(format!(
            "refusing to overwrite {} (--force replaces it); nothing was written",
            refused.join(", ")
        )));
    }
    let mut out = Vec::new();
    for (item, path, bytes, action) in planned {
        if action != Action::Unchanged {
            write_generated(&path, bytes.as_bytes())?;
        }
        ledger
            .files
            .insert(item.key(), sha256_hex(item.body().as_bytes()));
        out.push(Written {
            path: item.rel().to_string(),
            action,
        });
    }
    ledger.format = 1;
    let text = serde_json::to_string_pretty(&ledger).map_err(anyhow::Error::from)? + "\n";
    if read_current(&ledger_path)?.as_deref() != Some(text.as_str()) {
        write_generated(&ledger_path, text.as_bytes())?;
    }
    Ok(out)
}

/// A generated file is vf's own: a new or regular file only, never a link,
/// a FIFO or a device put where it goes (checked again as it is written).
fn write_generated(path: &Path, bytes: &[u8]) -> Result<()> {
    user_file::write(path, bytes, Streams::Refused)
        .map(drop)
        .map_err(|e| VfError::usage(format!("cannot write {}: {e}", path.display())))
}

/// `rel` under `dir`: relative, plain components only, and no existing
/// component below `dir` a symbolic link (or anything but a directory).
pub fn safe_path(dir: &Path, rel: &str) -> Result<PathBuf> {
    let bad = |why: &str| VfError::usage(format!("refusing to write {rel:?}: {why}"));
    let rel_path = Path::new(rel);
    if rel.is_empty()
        || !rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(bad("not a plain relative path"));
    }
    let mut at = dir.to_path_buf();
    let parts: Vec<_> = rel_path.components().collect();
    for (i, c) in parts.iter().enumerate() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(bad(&format!("{} is a symbolic link", at.display())));
            }
            Ok(m) if i + 1 < parts.len() && !m.is_dir() => {
                return Err(bad(&format!("{} is not a directory", at.display())));
            }
            Ok(m) if i + 1 == parts.len() && !m.is_file() => {
                return Err(bad(&format!("{} is not a regular file", at.display())));
            }
            _ => {}
        }
    }
    Ok(at)
}

fn read_current(path: &Path) -> Result<Option<String>> {
    match read_no_follow(path) {
        Ok(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| VfError::usage(format!("{} is not UTF-8 text", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(VfError::usage(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

fn load_ledger(path: &Path) -> Result<Ledger> {
    match read_current(path)? {
        None => Ok(Ledger::default()),
        Some(text) => serde_json::from_str(&text).map_err(|e| {
            VfError::usage(format!(
                "{} is not vf's record of generated files: {e}",
                path.display()
            ))
        }),
    }
}

/// The new content of the file, what it means, and why it would be refused.
fn plan_one(
    item: &Item,
    current: Option<&str>,
    recorded: Option<&String>,
) -> Result<(String, Action, Option<&'static str>)> {
    let untouched = |body: &str| recorded.is_some_and(|h| *h == sha256_hex(body.as_bytes()));
    match item {
        Item::File { content, .. } => Ok(match current {
            None => (content.clone(), Action::Created, None),
            Some(c) if c == content => (content.clone(), Action::Unchanged, None),
            Some(c) if untouched(c) => (content.clone(), Action::Updated, None),
            Some(_) if recorded.is_some() => (
                content.clone(),
                Action::Forced,
                Some("edited since vf wrote it"),
            ),
            Some(_) => (content.clone(), Action::Forced, Some("not written by vf")),
        }),
        Item::Section { rel, id, content } => {
            let (begin, end) = (
                format!("<!-- vf:{id} begin -->\n"),
                format!("<!-- vf:{id} end -->\n"),
            );
            let block = format!("{begin}{content}{end}");
            let Some(cur) = current else {
                return Ok((block, Action::Created, None));
            };
            let (Some(b), Some(e)) = (cur.find(&begin), cur.find(&end)) else {
                if cur.contains(begin.trim_end()) || cur.contains(end.trim_end()) {
                    return Err(VfError::usage(format!(
                        "{rel}: vf's {id} section markers are damaged; fix or remove them"
                    )));
                }
                let sep = if cur.is_empty() || cur.ends_with("\n\n") {
                    ""
                } else if cur.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                };
                return Ok((format!("{cur}{sep}{block}"), Action::Created, None));
            };
            if e < b || cur.matches(&begin).count() > 1 {
                return Err(VfError::usage(format!(
                    "{rel}: vf's {id} section markers are damaged; fix or remove them"
                )));
            }
            let old = &cur[b + begin.len()..e];
            let new = format!("{}{block}{}", &cur[..b], &cur[e + end.len()..]);
            Ok(if old == content {
                (new, Action::Unchanged, None)
            } else if untouched(old) {
                (new, Action::Updated, None)
            } else {
                (new, Action::Forced, Some("its vf section was edited"))
            })
        }
    }
}
