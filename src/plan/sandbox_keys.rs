//! A plan unit's sandbox keys (issue 43, docs/SANDBOX.md): `sandbox`,
//! `deny_read`, `writable`, `verify_sandbox`, checked as they are read
//! (a bad mode or path is refused naming the unit) and resolved as a
//! dispatch resolves its flags (`dispatch::confine::Sandbox::of`).

use std::path::Path;

use serde::{Deserialize, Deserializer, de::Error as _};

use crate::dispatch::confine::Sandbox;
use crate::engine::ToolPolicy;
use crate::engine::sandbox_policy::SandboxMode;
use crate::unit::Asked;

/// `sandbox`: `off`, `workspace` or `read-only`.
pub(super) fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SandboxMode>, D::Error> {
    let s = String::deserialize(d)?;
    SandboxMode::parse(&s, "`sandbox`")
        .map(Some)
        .map_err(|e| D::Error::custom(e.to_string()))
}

/// The unit's sandbox keys (`sandbox`, `deny_read`, `writable`,
/// `verify_sandbox`) resolved for a unit in `cwd` with its `read_only` and
/// `require_enforced` (each path checked, the built-in deny list, the
/// refusal where the machine cannot hold it and it is required), and as its
/// marker records them. A read-only unit the sandbox holds is enforced.
pub(super) fn resolve(
    (sandbox, deny_read, writable, verify_sandbox): Keys,
    policy: &mut ToolPolicy,
    cwd: &Path,
) -> Result<(Sandbox, Asked), String> {
    let keys = Asked {
        sandbox,
        deny_read,
        writable,
        steps_unsandboxed: verify_sandbox == Some(false),
        ..Asked::default()
    };
    let whole = Asked {
        read_only: policy.read_only,
        require_enforced: policy.require_enforced,
        ..keys.clone()
    };
    let resolved = Sandbox::of(&whole, cwd).map_err(|e| e.to_string())?;
    resolved.mark(policy);
    Ok((resolved, keys))
}

/// The keys as written.
type Keys = (Option<SandboxMode>, Vec<String>, Vec<String>, Option<bool>);
