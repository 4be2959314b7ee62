//! agy prints plain text only: no frame kinds, every line is the text path.

use crate::engine::EngineId;
use crate::engine::frames::manifest::Manifest;

pub static V0_0: Manifest = super::text_only(EngineId::Agy);

pub static FAMILIES: &[&Manifest] = &[&V0_0];
