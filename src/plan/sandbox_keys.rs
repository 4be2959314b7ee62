//! A plan unit's sandbox keys (issue 43, docs/SANDBOX.md): `sandbox`,
//! `deny_read`, `writable`, `verify_sandbox`, checked as they are read
//! (a bad mode or path is refused naming the unit) and resolved as a
//! dispatch resolves its flags (`dispatch::sandbox::Sandbox::of`).

use std::path::Path;

use serde::{Deserialize, Deserializer, de::Error as _};

use crate::dispatch::sandbox::Sandbox;
use crate::engine::sandbox::SandboxMode;
use crate::unit::Asked;

/// `sandbox`: `off`, `workspace` or `read-only`.
pub(super) fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SandboxMode>, D::Error> {
    let s = String::deserialize(d)?;
    SandboxMode::parse(&s, "`sandbox`")
        .map(Some)
        .map_err(|e| D::Error::custom(e.to_string()))
}

/// The unit's sandbox keys as its marker records them.
pub(super) fn asked(
    sandbox: Option<SandboxMode>,
    deny_read: Vec<String>,
    writable: Vec<String>,
    verify_sandbox: Option<bool>,
) -> Asked {
    Asked {
        sandbox,
        deny_read,
        writable,
        steps_unsandboxed: verify_sandbox == Some(false),
        ..Asked::default()
    }
}

/// The keys resolved for a unit in `cwd` with its `read_only` and
/// `require_enforced`: each path checked, the built-in deny list, the
/// refusal where the machine cannot hold it and it is required.
pub(super) fn resolve(
    keys: &Asked,
    policy: &crate::engine::ToolPolicy,
    cwd: &Path,
) -> Result<Sandbox, String> {
    let whole = Asked {
        read_only: policy.read_only,
        require_enforced: policy.require_enforced,
        ..keys.clone()
    };
    Sandbox::of(&whole, cwd).map_err(|e| e.to_string())
}
