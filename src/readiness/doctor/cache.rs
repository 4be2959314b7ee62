//! What `vf doctor` established about an engine's executable (its version
//! and each help run), remembered per executable identity so a warm `vf
//! doctor` and `--engine auto` spawn nothing; `--engine auto`'s lazy
//! readiness. The store itself (where, the identity, one file per engine
//! replaced atomically) and the version a dispatch reads are
//! `process::version_cache`'s.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::engine::EngineId;
use crate::ground::version::Version;
use crate::process::binary::{Captured, RunError, VersionError};
pub use crate::process::version_cache::Identity;
use crate::process::version_cache::{self as vc, entry_file, load, version_file};
use crate::readiness::doctor::{self, Facts, HelpRun, Options, Verdict};

/// What is stored of [`Facts::Found`]: the help invocations by their argv.
#[derive(Serialize, Deserialize)]
struct Stored {
    version: Result<Version, VersionError>,
    helps: Vec<(Vec<String>, Captured)>,
}

/// The facts gathered earlier about `path` as `id`'s binary, while it is unchanged.
pub fn load_facts(
    id: EngineId,
    path: &Path,
    help_args: &[&'static [&'static str]],
) -> Option<Facts> {
    let exe = Identity::of(path)?;
    let s: Stored = load(&entry_file("doctor", id.as_str())?, &exe)?;
    if s.helps.len() != help_args.len() {
        return None;
    }
    let mut helps = Vec::with_capacity(help_args.len());
    for (&args, (stored, captured)) in help_args.iter().zip(s.helps) {
        if args.iter().ne(stored.iter()) {
            return None;
        }
        helps.push(HelpRun {
            args,
            output: Ok(captured),
        });
    }
    Some(Facts::Found {
        path: path.to_path_buf(),
        version: s.version,
        helps,
    })
}

/// Remembers `facts` about the binary whose identity was `before` when they
/// were gathered. Only answers that would come out the same again are kept:
/// a call that timed out or could not start is asked again next time.
pub fn store_facts(id: EngineId, before: Option<Identity>, facts: &Facts) {
    let (Some(exe), Facts::Found { version, helps, .. }) = (before, facts) else {
        return;
    };
    if matches!(version, Err(VersionError::Run(_))) {
        return;
    }
    let mut stored = Vec::with_capacity(helps.len());
    for h in helps {
        match &h.output {
            Ok(c) => stored.push((h.args.iter().map(|a| a.to_string()).collect(), c.clone())),
            Err(RunError::Spawn(_) | RunError::TimedOut(_)) => return,
        }
    }
    // The version is the same fact a dispatch reads: seed its entry, too.
    if let Ok(v) = version
        && let Some(file) = vc::dir().and_then(|b| version_file(&b, exe.path()))
    {
        vc::store(&file, exe.clone(), v.to_string());
    }
    if let Some(file) = entry_file("doctor", id.as_str()) {
        let value = Stored {
            version: version.clone(),
            helps: stored,
        };
        vc::store(&file, exe, value);
    }
}

/// Engine readiness for `--engine auto`, checked only when asked (only the
/// engines that can take the attached kinds are) and at most once per engine
/// per vf run. Safe to ask from several threads: the choice asks in parallel.
pub struct LazyReadiness {
    opts: Options,
    known: Mutex<HashMap<EngineId, bool>>,
}

impl LazyReadiness {
    pub fn new(opts: Options) -> LazyReadiness {
        LazyReadiness {
            opts,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `id` is `ready` (the doctor's verdict, from the cache when warm).
    pub fn get(&self, id: EngineId) -> bool {
        let lock = || self.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&r) = lock().get(&id) {
            return r;
        }
        // Not held while checking: other engines are checked meanwhile.
        let r =
            doctor::judge(id.engine(), doctor::gather(id, &self.opts)).verdict == Verdict::Ready;
        lock().insert(id, r);
        r
    }
}
