//! The paths of a Landlock ruleset. Landlock only allows: to deny reading a
//! path while its neighbours stay readable, vf walks from `/` to each
//! denied path and lets every directory on the way ("walked") keep its
//! other children readable beneath. So `deny_read = ["~/.ssh"]` makes `/`,
//! `/home` and `/home/me` walked, and every child of theirs readable but
//! `.ssh` (and the walked ones, which get their own walk). Listing stays
//! allowed everywhere (read-dir is never handled).
//!
//! Consequences, said in docs/SANDBOX.md: an entry that appears directly in
//! a walked directory after the start is not readable; a link among the
//! children gets no rule (a read through it is checked where it leads).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use super::Rules;

/// The most entries a walked directory may have: past it the walk would
/// make a ruleset too large to be a sandbox's start.
pub(super) const MAX_ENTRIES: usize = 10_000;

/// What the ruleset is made of. Paths are canonical (no link on the way).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Plan {
    /// Written and read beneath (writable paths that exist).
    pub writable: Vec<PathBuf>,
    /// Read and executed beneath: the walked directories' other children.
    pub readable: Vec<PathBuf>,
    /// The denied paths that exist, outside every writable one.
    pub denied: BTreeSet<PathBuf>,
    /// What Landlock cannot hold here, in words.
    pub missing: Vec<String>,
}

/// The plan for `rules`: paths resolved, missing ones skipped, the walk done.
pub(super) fn plan(rules: &Rules) -> io::Result<Plan> {
    let mut plan = Plan::default();
    for path in &rules.writable {
        if let Some(real) = resolve(path)? {
            plan.writable.push(real);
        }
    }
    for path in &rules.deny_read {
        let Some(real) = resolve(path)? else { continue };
        if real.parent().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "deny_read cannot be / (nothing could run)",
            ));
        }
        // Landlock's rights add up: a writable path grants reading beneath
        // it, whatever is denied there.
        if let Some(outer) = plan.writable.iter().find(|w| real.starts_with(w)) {
            plan.missing.push(format!(
                "deny_read {} lies inside the writable {}: Landlock cannot deny it",
                real.display(),
                outer.display()
            ));
            continue;
        }
        plan.denied.insert(real);
    }
    // A denied path inside another denied one adds nothing.
    let all = plan.denied.clone();
    plan.denied
        .retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    let walked: BTreeSet<PathBuf> = plan
        .denied
        .iter()
        .flat_map(|d| d.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    for dir in &walked {
        plan.readable.extend(children(dir, |c| {
            !walked.contains(c) && !plan.denied.contains(c)
        })?);
    }
    Ok(plan)
}

/// The children of the walked `dir` that `keep` keeps, links left out.
fn children(dir: &Path, keep: impl Fn(&Path) -> bool) -> io::Result<Vec<PathBuf>> {
    let mut kept = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // Unlisted, its children get no rule: unreadable, the safe side.
        Err(e) if out_of_reach(&e) => return Ok(kept),
        Err(e) => return Err(naming(dir, e)),
    };
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(io::Error::other(format!(
                "{}: more than {MAX_ENTRIES} entries, too many to walk for deny_read",
                dir.display()
            )));
        }
        let entry = entry.map_err(|e| naming(dir, e))?;
        let child = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_symlink() => continue,
            Ok(_) => {}
            Err(e) if out_of_reach(&e) => continue,
            Err(e) => return Err(naming(&child, e)),
        }
        if keep(&child) {
            kept.push(child);
        }
    }
    Ok(kept)
}

/// `path` with every link resolved; `None` when it is out of reach.
fn resolve(path: &Path) -> io::Result<Option<PathBuf>> {
    match std::fs::canonicalize(path) {
        Ok(real) => Ok(Some(real)),
        Err(e) if out_of_reach(&e) => Ok(None),
        Err(e) => Err(naming(path, e)),
    }
}

/// The path does not exist (a component of it may not be a directory), or
/// vf may not search a directory on its way: the engine, the same user
/// with no new privileges, cannot reach it either, so it needs no rule.
pub(super) fn out_of_reach(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory | io::ErrorKind::PermissionDenied
    )
}

/// `e`, with the path it is about.
pub(super) fn naming(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(writable: &[&Path], deny_read: &[&Path]) -> Rules {
        Rules {
            writable: writable.iter().map(|p| p.to_path_buf()).collect(),
            deny_read: deny_read.iter().map(|p| p.to_path_buf()).collect(),
        }
    }

    /// From `/` to the denied path: the other children of each directory
    /// on the way are readable, links among them and the denied path not.
    #[test]
    fn the_walk_lists_the_neighbours_of_each_step() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let (a, secret) = (base.join("a"), base.join("a/secret"));
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::create_dir(base.join("b")).unwrap();
        std::fs::write(a.join("f"), "").unwrap();
        std::os::unix::fs::symlink(&secret, a.join("link")).unwrap();
        let plan = plan(&rules(&[], &[&a.join("link")])).unwrap();
        assert_eq!(plan.denied, BTreeSet::from([secret.clone()]));
        let mine: BTreeSet<&PathBuf> = plan
            .readable
            .iter()
            .filter(|p| p.starts_with(&base))
            .collect();
        assert_eq!(mine, BTreeSet::from([&a.join("f"), &base.join("b")]));
        assert!(plan.readable.contains(&PathBuf::from("/usr")));
        for walked in ["/", "/tmp"] {
            assert!(!plan.readable.contains(&PathBuf::from(walked)), "{walked}");
        }
    }

    /// A denied path inside a writable one cannot be held (Landlock's rights
    /// add up); a denied path inside another adds nothing; `/` is refused.
    #[test]
    fn what_landlock_cannot_deny() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let (w, d) = (base.join("w"), base.join("d"));
        std::fs::create_dir_all(w.join("x")).unwrap();
        std::fs::create_dir_all(d.join("y")).unwrap();
        let plan = plan(&rules(&[&w], &[&w.join("x"), &d, &d.join("y")])).unwrap();
        assert_eq!(plan.denied, BTreeSet::from([d.clone()]));
        assert_eq!(plan.missing.len(), 1);
        assert!(
            plan.missing[0].contains("/w/x lies inside the writable"),
            "{:?}",
            plan.missing
        );
        let root = super::plan(&rules(&[], &[Path::new("/")])).unwrap_err();
        assert_eq!(root.kind(), io::ErrorKind::InvalidInput);
    }

    /// What vf cannot reach, the engine cannot either: no rule, no error.
    #[test]
    fn out_of_reach_is_absent_or_refused() {
        for errno in [libc::ENOENT, libc::ENOTDIR, libc::EACCES] {
            assert!(
                out_of_reach(&io::Error::from_raw_os_error(errno)),
                "{errno}"
            );
        }
        assert!(!out_of_reach(&io::Error::from_raw_os_error(libc::EIO)));
    }

    /// A walked directory past the cap is an error that names it.
    #[test]
    fn a_huge_walked_directory_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        let big = std::fs::canonicalize(t.path()).unwrap();
        for n in 0..MAX_ENTRIES {
            std::fs::File::create(big.join(n.to_string())).unwrap();
        }
        std::fs::create_dir(big.join("secret")).unwrap();
        let err = plan(&rules(&[], &[&big.join("secret")])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}: more than", big.display())),
            "{err}"
        );
    }

    /// The figure for docs/SANDBOX.md: the time `prepare` takes for a
    /// default-like deny list on this machine's `$HOME`. Run with
    /// `cargo test --lib sys::sandbox::walk -- --ignored --nocapture`.
    #[test]
    #[ignore = "a figure, not a check"]
    fn prepare_time_for_a_default_deny_list() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let deny: Vec<PathBuf> = [
            ".ssh",
            ".aws",
            ".config/gh",
            ".gnupg",
            ".netrc",
            ".docker/config.json",
            ".kube",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
            ".config/gcloud",
            ".azure",
        ]
        .iter()
        .map(|p| home.join(p))
        .collect();
        let rules = Rules {
            writable: vec![PathBuf::from("/dev/null"), PathBuf::from("/dev/pts")],
            deny_read: deny,
        };
        let support = super::super::support(None);
        let mut times = Vec::new();
        for _ in 0..21 {
            let start = std::time::Instant::now();
            let prepared = super::super::prepare(&rules, &support).unwrap();
            times.push(start.elapsed());
            drop(prepared);
        }
        times.sort();
        let rules_made = plan(&rules).unwrap().readable.len();
        eprintln!(
            "prepare, {} denied paths under {}: median {:?} (min {:?}, max {:?}), {rules_made} read rules",
            rules.deny_read.len(),
            home.display(),
            times[10],
            times[0],
            times[20]
        );
    }
}
