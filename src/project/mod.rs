//! project

pub mod agy_files;
pub mod scaffold;
pub mod skill;
pub mod tool_hook;
