//! Process identity on a Unix vf has no reader for (every answer is "cannot be
//! proven", so callers fail closed).

use super::ProcSnapshot;

pub fn can_inspect_processes() -> bool {
    false
}

pub fn boot_id() -> Option<String> {
    None
}

pub fn process(_pid: u32) -> std::io::Result<Option<ProcSnapshot>> {
    Err(std::io::ErrorKind::Unsupported.into())
}

pub fn age_secs(_start_time: u64) -> Option<u64> {
    None
}

pub fn command_line(_pid: u32) -> Option<String> {
    None
}

pub fn group_members(_group: i32) -> Vec<u32> {
    Vec::new()
}
