//! vf's answer to `session/request_permission`: a pure function of the
//! request's tool kind, the options the agent offers, and the unit's policy
//! (docs/ACP.md, "Permissions").

use serde::Serialize;

/// The unit's permission policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Policy {
    /// Headless default: reads are allowed; whatever edits, deletes, moves,
    /// executes, switches mode or is not named is rejected.
    Default,
    /// `--skip-permissions`: everything is allowed.
    SkipPermissions,
    /// `--read-only`: every write is rejected, and so is `fetch` (a request
    /// to the network may change things elsewhere).
    ReadOnly,
}

/// One option the agent offers: its id and its ACP kind (`allow_once`,
/// `allow_always`, `reject_once`, `reject_always`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered<'a> {
    pub id: &'a str,
    pub kind: &'a str,
}

/// What vf answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Whether the tool may run.
    pub allow: bool,
    /// The option selected; `None` answers `cancelled` (the agent offered no
    /// option of the wanted kind).
    pub option_id: Option<String>,
}

/// Whether `policy` lets a tool of ACP kind `kind` run (`None`: not named).
pub fn allows(policy: Policy, kind: Option<&str>) -> bool {
    match policy {
        Policy::SkipPermissions => true,
        Policy::Default => matches!(kind, Some("read" | "search" | "think" | "fetch")),
        Policy::ReadOnly => matches!(kind, Some("read" | "search" | "think")),
    }
}

/// The option to answer with: the `*_once` kind first (vf decides each
/// request on its own), the `*_always` kind only when no `*_once` is offered.
pub fn decide(policy: Policy, kind: Option<&str>, options: &[Offered<'_>]) -> Decision {
    let allow = allows(policy, kind);
    let wanted: [&str; 2] = if allow {
        ["allow_once", "allow_always"]
    } else {
        ["reject_once", "reject_always"]
    };
    let option_id = wanted
        .iter()
        .find_map(|w| options.iter().find(|o| o.kind == *w))
        .map(|o| o.id.to_string());
    Decision {
        allow: allow && option_id.is_some(),
        option_id,
    }
}
