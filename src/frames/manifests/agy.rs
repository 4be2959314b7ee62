//! agy prints plain text only: no frame kinds, every line is the text path.

use crate::engine::{EngineId, OutputTransport};
use crate::frames::manifest::*;

pub static V0_0: Manifest = Manifest {
    cli: EngineId::Agy,
    major: 0,
    minor: 0,
    verified: &[],
    kind: &["type"],
    session: &[],
    closing: "",
    subkinds: &[],
    rate_limits: RateLimits::NONE,
    budget_stops: &[],
    transports: &[TransportTable {
        transport: OutputTransport::Text,
        entries: &[],
    }],
};

pub static FAMILIES: &[&Manifest] = &[&V0_0];
