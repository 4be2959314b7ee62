//! How a part of a unit's policy is held (`enforced | unenforced | off`):
//! the read-only and tool policy's parts (`tool_policy`) and the sandbox's
//! (`sandbox_policy`) say it the same way.

use serde::{Deserialize, Serialize};

/// How one part of the policy is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Enforcement {
    /// The engine's verified mechanism is used.
    Enforced,
    /// Asked for, but the engine has no verified mechanism: nothing sent.
    Unenforced,
    /// Not asked for.
    Off,
}

impl Enforcement {
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Enforced => "enforced",
            Enforcement::Unenforced => "unenforced",
            Enforcement::Off => "off",
        }
    }
}
