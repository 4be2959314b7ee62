//! `<state>/conversations/<name>/`: `conversation.json` (atomic writes) and
//! `handoffs/<sha256>.txt` (each document stored once). One writer at a time:
//! the unit lock of `conv-<name>` (the same flock as units, so a crashed vf
//! leaves no stale lock).

use std::path::{Path, PathBuf};

use super::model::{Conversation, HandoffRef};
use crate::ground::error::{Result, VfError};
use crate::ground::fsutil::write_atomic;
use crate::ground::names;
use crate::ground::text::sha256_hex;
use crate::unit::lock::UnitLock;

const FILE: &str = "conversation.json";

pub struct ConvStore {
    root: PathBuf,
    state_dir: PathBuf,
}

impl ConvStore {
    pub fn new(state_dir: &Path) -> ConvStore {
        ConvStore {
            root: state_dir.join("conversations"),
            state_dir: state_dir.to_path_buf(),
        }
    }

    pub fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The conversation's write lock (refused while another vf holds it).
    pub fn lock(&self, name: &str) -> Result<UnitLock> {
        names::check("conversation name", name)?;
        UnitLock::acquire(&self.state_dir, &format!("conv-{name}"))
    }

    pub fn exists(&self, name: &str) -> bool {
        self.dir(name).join(FILE).exists()
    }

    pub fn load(&self, name: &str) -> Result<Conversation> {
        names::check("conversation name", name)?;
        let path = self.dir(name).join(FILE);
        let bytes = match crate::ground::fsutil::read_no_follow(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(VfError::usage(format!(
                    "no conversation {name:?} (create it with `vf conv new {name} --with ENGINE`)"
                )));
            }
            Err(e) => return Err(VfError::state(format!("{}: {e}", path.display()))),
        };
        let conv: Conversation = serde_json::from_slice(&bytes)
            .map_err(|e| VfError::state(format!("{}: unreadable: {e}", path.display())))?;
        if conv.name != name || conv.format != super::model::FORMAT {
            return Err(VfError::state(format!(
                "{}: not conversation {name:?} in format {}",
                path.display(),
                super::model::FORMAT
            )));
        }
        Ok(conv)
    }

    pub fn save(&self, conv: &Conversation) -> Result<()> {
        let dir = self.dir(&conv.name);
        self.refuse_links(&dir)?;
        let mut bytes = serde_json::to_vec_pretty(conv).map_err(anyhow::Error::from)?;
        bytes.push(b'\n');
        write_atomic(&dir.join(FILE), &bytes)
            .map_err(|e| VfError::state(format!("{}: {e}", dir.display())))
    }

    /// A cloned state dir can bring links pointing anywhere: vf writes nothing
    /// outside its state dir.
    fn refuse_links(&self, dir: &Path) -> Result<()> {
        for p in [self.root.as_path(), dir] {
            if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(VfError::state(format!(
                    "{} is a symbolic link; vf writes nothing outside its state dir: move it aside",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    /// Names of the stored conversations, sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(VfError::state(format!("{}: {e}", self.root.display()))),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| names::check("conversation name", n).is_ok() && self.exists(n))
            .collect();
        names.sort();
        Ok(names)
    }

    pub fn remove(&self, name: &str) -> Result<()> {
        let dir = self.dir(name);
        self.refuse_links(&dir)?;
        std::fs::remove_dir_all(&dir).map_err(|e| VfError::state(format!("{}: {e}", dir.display())))
    }

    /// Stores `text` under its sha256 (once) and returns the reference.
    pub fn put_handoff(&self, name: &str, text: &str) -> Result<HandoffRef> {
        let digest = sha256_hex(text.as_bytes());
        let dir = self.dir(name).join("handoffs");
        self.refuse_links(&self.dir(name))?;
        self.refuse_links(&dir)?;
        let path = dir.join(format!("{digest}.txt"));
        if !path.exists() {
            write_atomic(&path, text.as_bytes())
                .map_err(|e| VfError::state(format!("{}: {e}", path.display())))?;
        }
        Ok(HandoffRef {
            digest,
            bytes: text.len(),
        })
    }

    /// The stored text of the handoff, checked against its digest.
    pub fn handoff_text(&self, name: &str, h: &HandoffRef) -> Result<String> {
        let path = self
            .dir(name)
            .join("handoffs")
            .join(format!("{}.txt", h.digest));
        let bytes = crate::ground::fsutil::read_no_follow(&path)
            .map_err(|e| VfError::state(format!("{}: {e}", path.display())))?;
        if sha256_hex(&bytes) != h.digest {
            return Err(VfError::state(format!(
                "{}: content does not match its digest",
                path.display()
            )));
        }
        String::from_utf8(bytes)
            .map_err(|_| VfError::state(format!("{}: not UTF-8", path.display())))
    }
}
