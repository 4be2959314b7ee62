//! Shared by the cargo-fuzz targets: how an input picks its projector set-up,
//! and the invariants of the bounded tests (the same file, not a copy).

#[path = "../../tests/it/fuzz_support/invariants.rs"]
pub mod invariants;

use vf::engine::{EngineId, OutputTransport};
use vf::frames::manifest::families;
use vf::version::Version;

/// Line caps of the reader: tiny ones turn ordinary frames into oversized lines.
const CAPS: [usize; 4] = [16, 300, 4096, 8 << 20];

/// A projector set-up read from the input's first line, `<cli> <version|-> <transport>`
/// (the corpus seeds, see `fuzz/seed-corpus.sh`). Any other first line still picks
/// one of every engine × family × transport, from its bytes.
pub struct Setup {
    pub cli: EngineId,
    pub version: Option<Version>,
    pub transport: OutputTransport,
    pub cap: usize,
}

const TRANSPORTS: [OutputTransport; 3] = [
    OutputTransport::Jsonl,
    OutputTransport::Json,
    OutputTransport::Text,
];

fn transport(s: &str) -> Option<OutputTransport> {
    TRANSPORTS.into_iter().find(|t| t.as_str() == s)
}

/// Splits an input into its set-up and the stream that follows the first line.
pub fn setup(data: &[u8]) -> (Setup, &[u8]) {
    let (head, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let cap = CAPS[head.len() % CAPS.len()];
    let text = std::str::from_utf8(head).unwrap_or("");
    let words: Vec<&str> = text.split(' ').collect();
    if let [cli, version, t] = words[..]
        && let (Some(cli), Some(transport)) = (EngineId::parse(cli), transport(t))
    {
        let version = Version::parse(version);
        return (
            Setup {
                cli,
                version,
                transport,
                cap: 8 << 20,
            },
            rest,
        );
    }
    (from_bytes(head, cap), rest)
}

/// Every engine × (each family, no version, a version without a family) × transport.
fn from_bytes(head: &[u8], cap: usize) -> Setup {
    let mut all = Vec::new();
    for cli in EngineId::ALL {
        let mut versions: Vec<Option<Version>> = families(cli)
            .iter()
            .map(|m| Some(Version::new(m.major, m.minor, 0)))
            .collect();
        versions.extend([None, Some(Version::new(999, 0, 0))]);
        for version in versions {
            for transport in TRANSPORTS {
                all.push((cli, version.clone(), transport));
            }
        }
    }
    let pick = head
        .iter()
        .fold(0usize, |a, b| a.wrapping_mul(31).wrapping_add(*b as usize));
    let (cli, version, transport) = all.swap_remove(pick % all.len());
    Setup {
        cli,
        version,
        transport,
        cap,
    }
}
