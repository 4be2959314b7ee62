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

#[cfg(test)]
mod tests {
    use super::*;

    const GEMINI: [Offered<'static>; 3] = [
        Offered {
            id: "proceed_always",
            kind: "allow_always",
        },
        Offered {
            id: "proceed_once",
            kind: "allow_once",
        },
        Offered {
            id: "cancel",
            kind: "reject_once",
        },
    ];

    fn answer(
        policy: Policy,
        kind: Option<&str>,
        options: &[Offered<'_>],
    ) -> (bool, Option<&'static str>) {
        let d = decide(policy, kind, options);
        let id = d.option_id.map(|id| &*String::leak(id));
        (d.allow, id)
    }

    /// Every tool kind of ACP v1 (and none, and a future one) under each policy.
    #[test]
    fn the_policy_table() {
        let kinds = [
            "read",
            "search",
            "think",
            "fetch",
            "edit",
            "delete",
            "move",
            "execute",
            "switch_mode",
            "other",
            "future",
        ];
        let allowed = |p| -> Vec<&str> {
            kinds
                .iter()
                .copied()
                .filter(|k| allows(p, Some(k)))
                .collect()
        };
        assert_eq!(
            allowed(Policy::Default),
            ["read", "search", "think", "fetch"]
        );
        assert_eq!(allowed(Policy::ReadOnly), ["read", "search", "think"]);
        assert_eq!(allowed(Policy::SkipPermissions), kinds);
        assert!(!allows(Policy::Default, None) && !allows(Policy::ReadOnly, None));
        assert!(allows(Policy::SkipPermissions, None));
    }

    #[test]
    fn the_once_option_of_the_wanted_kind_is_chosen() {
        assert_eq!(
            answer(Policy::Default, Some("execute"), &GEMINI),
            (false, Some("cancel"))
        );
        assert_eq!(
            answer(Policy::Default, Some("read"), &GEMINI),
            (true, Some("proceed_once"))
        );
        assert_eq!(
            answer(Policy::SkipPermissions, Some("execute"), &GEMINI),
            (true, Some("proceed_once"))
        );
        assert_eq!(
            answer(Policy::ReadOnly, Some("edit"), &GEMINI),
            (false, Some("cancel"))
        );
        // Only an `always` option of the wanted kind: that one.
        let always = [
            Offered {
                id: "a",
                kind: "allow_always",
            },
            Offered {
                id: "r",
                kind: "reject_always",
            },
        ];
        assert_eq!(
            answer(Policy::Default, Some("edit"), &always),
            (false, Some("r"))
        );
        assert_eq!(
            answer(Policy::SkipPermissions, Some("edit"), &always),
            (true, Some("a"))
        );
        // No option of the wanted kind: cancelled, never allowed.
        let allow_only = [Offered {
            id: "y",
            kind: "allow_once",
        }];
        assert_eq!(
            answer(Policy::Default, Some("delete"), &allow_only),
            (false, None)
        );
        let reject_only = [Offered {
            id: "n",
            kind: "reject_once",
        }];
        assert_eq!(
            answer(Policy::SkipPermissions, Some("read"), &reject_only),
            (false, None)
        );
        assert_eq!(answer(Policy::Default, None, &[]), (false, None));
    }
}
