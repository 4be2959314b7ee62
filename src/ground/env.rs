//! Every environment variable vf reads, or sets for the commands it runs, in one
//! list (as uv's `EnvVars`). docs/CLI.md's table "Environment variables" is
//! checked against it, and no other file of `src/` spells a `VF_` name
//! (tests/it/architecture.rs).

/// The names. Each constant's doc says who reads it and what it holds.
pub struct EnvVars;

impl EnvVars {
    /// Read: the state dir (as `--state-dir`; before the user config's `state_dir`).
    pub const VF_STATE_DIR: &'static str = "VF_STATE_DIR";
    /// Read: the user config file (`/dev/null`: no config); else the platform's config dir.
    pub const VF_CONFIG: &'static str = "VF_CONFIG";
    /// Read: vf's own log filter (tracing's syntax), on stderr.
    pub const VF_LOG: &'static str = "VF_LOG";
    /// Read: the grace between the polite signal and the kill, in milliseconds.
    pub const VF_KILL_GRACE_MS: &'static str = "VF_KILL_GRACE_MS";
    /// Read: how long a notification hook may run, in milliseconds.
    pub const VF_HOOK_TIMEOUT_MS: &'static str = "VF_HOOK_TIMEOUT_MS";
    /// Read: the ACP engine's agent command (as `--acp`, the plan key `acp`).
    pub const VF_ACP_CMD: &'static str = "VF_ACP_CMD";
    /// Read: how long each ACP handshake step may take, in milliseconds.
    pub const VF_ACP_HANDSHAKE_TIMEOUT_MS: &'static str = "VF_ACP_HANDSHAKE_TIMEOUT_MS";
    /// Read: the judge's chat-completions endpoint.
    pub const VF_JUDGE_ENDPOINT: &'static str = "VF_JUDGE_ENDPOINT";
    /// Read: the judge's model.
    pub const VF_JUDGE_MODEL: &'static str = "VF_JUDGE_MODEL";
    /// Read: the judge's API key (never logged nor shown).
    pub const VF_JUDGE_API_KEY: &'static str = "VF_JUDGE_API_KEY";
    /// Read: extra PEM roots the judge's HTTPS trusts.
    pub const VF_JUDGE_CA_FILE: &'static str = "VF_JUDGE_CA_FILE";
    /// Read: how long a Temporal retry waits for the worker that holds the session.
    pub const VF_TEMPORAL_AFFINITY_MS: &'static str = "VF_TEMPORAL_AFFINITY_MS";
    /// Read: the history length at which the plan's workflow continues as new.
    pub const VF_TEMPORAL_HISTORY_EVENTS: &'static str = "VF_TEMPORAL_HISTORY_EVENTS";
    /// Read: the quota ledger every vf process on this machine shares
    /// (else `vf/quota.json` in the user's data dir; docs/QUOTA.md).
    pub const VF_QUOTA_FILE: &'static str = "VF_QUOTA_FILE";
    /// Read, by tests: scales every rate-limit wait (a fraction: `0.001`).
    pub const VF_TEST_RATE_LIMIT_WAIT_SCALE: &'static str = "VF_TEST_RATE_LIMIT_WAIT_SCALE";
    /// Read, by tests: plays a machine's sandbox support (`none`, or
    /// `landlock-abi-N`: Linux's ABI capped at N; docs/SANDBOX.md).
    pub const VF_TEST_SANDBOX: &'static str = "VF_TEST_SANDBOX";
    /// Set for every engine vf runs: the unit it runs (a vf that engine starts,
    /// `vf mcp` or `vf dispatch`, makes its units that unit's children).
    pub const VF_PARENT_UNIT: &'static str = "VF_PARENT_UNIT";
    /// Set for every engine vf runs: its unit's depth (1 for a unit vf started
    /// directly); read back beside `VF_PARENT_UNIT` (docs/MCP.md, "Depth").
    pub const VF_DEPTH: &'static str = "VF_DEPTH";
    /// Set for hooks, `setup`, `verify`: the unit's name.
    pub const VF_UNIT: &'static str = "VF_UNIT";
    /// Set for hooks, `setup`, `verify`: the unit's engine.
    pub const VF_ENGINE: &'static str = "VF_ENGINE";
    /// Set for notification hooks: which hook runs (`on-finish`, `on-fail`, `on-plan-finish`).
    pub const VF_HOOK: &'static str = "VF_HOOK";
    /// Set for `setup` and `verify`: the unit's session id, if any.
    pub const VF_SESSION_ID: &'static str = "VF_SESSION_ID";
    /// Set for `setup` and `verify`: the unit's worktree, if any.
    pub const VF_WORKTREE: &'static str = "VF_WORKTREE";

    /// Whether `name` is one of vf's own (every name above starts so): no
    /// account's `env` may set one.
    pub fn is_vfs(name: &str) -> bool {
        name.starts_with("VF_")
    }

    /// Read: `VF_<ENGINE>_BIN`, where an engine's binary is (`VF_CODEX_BIN`).
    pub fn engine_bin(engine: &str) -> String {
        format!("VF_{}_BIN", engine.to_ascii_uppercase())
    }
}

#[cfg(test)]
mod tests {
    use super::EnvVars;

    #[test]
    fn an_engines_binary_variable_is_its_name_in_capitals() {
        assert_eq!(EnvVars::engine_bin("codex"), "VF_CODEX_BIN");
        assert_eq!(EnvVars::engine_bin("opencode"), "VF_OPENCODE_BIN");
    }
}
