//! The bridge's output, unless `--bridge-output` names a known family: plain
//! text, no frame kinds, every line the text path (as agy's).

use crate::engine::EngineId;
use crate::engine::frames::manifest::Manifest;

pub static V0_0: Manifest = super::text_only(EngineId::Bridge);

pub static FAMILIES: &[&Manifest] = &[&V0_0];
