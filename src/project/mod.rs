//! Files vf writes into a user's project, never its state dir.
//!
//! - `scaffold`: every check first (plain relative paths, no link below the
//!   directory, a file vf wrote and nobody edited since, recorded by sha256 in
//!   `.vf-generated.json`; a shared file's vf section between markers), then the
//!   atomic writes;
//! - `skill`: the vf skill (`vf skill install`), rendered from the clap tree and
//!   the engines' `Spec`s;
//! - `agy_files`: agy's workspace files (`vf workspace init`: `AGENTS.md`,
//!   `.agents/…`), written through `scaffold`;
//! - `mcp_install`: the entry that starts `vf mcp` in an engine's own MCP
//!   configuration (`vf mcp install`), spliced into the file by `mcp_install_text`;
//! - `tool_hook`: one `vf hook` call (an engine's tool hook) judged against a
//!   deny list and logged.

pub mod agy_files;
pub mod mcp_install;
mod mcp_install_text;
pub mod scaffold;
pub mod skill;
pub mod tool_hook;
