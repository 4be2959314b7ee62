//! Per-CLI manifests, one file per CLI, one `Manifest` per version family.
//! Each file's `FAMILIES` lists the families oldest first.

pub mod agy;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;

use super::Level;
use super::manifest::{LifecycleSpec, Rule, StatusSpec, Tpl};

pub(crate) const fn status(level: Level, label: &'static str, detail: Tpl) -> Rule {
    Rule::Status(StatusSpec {
        level,
        label,
        detail,
    })
}

pub(crate) const fn info(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Info, label, detail)
}

pub(crate) const fn warn(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Warning, label, detail)
}

pub(crate) const fn error(label: &'static str, detail: Tpl) -> Rule {
    status(Level::Error, label, detail)
}

pub(crate) const fn lifecycle(spec: LifecycleSpec) -> Rule {
    Rule::Lifecycle(spec)
}
