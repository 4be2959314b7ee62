//! Linux: Landlock, the kernel's unprivileged LSM. The ruleset is built in
//! the parent with the `landlock` crate (each path opened `O_PATH`), and the
//! child restricts itself with it between fork and exec, calling only
//! `prctl` and `landlock_restrict_self` (async-signal-safe, no allocation).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

use ::landlock::{
    ABI, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};

use super::{Rules, Support, walk};

/// `landlock_create_ruleset`'s flag that asks for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The ABI the kernel offers, as far as the crate knows it (0: none), or
/// the errno that says why there is none.
fn kernel_abi() -> Result<u8, i32> {
    // SAFETY: the documented probe: no attribute, size 0, the VERSION flag.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // A kernel newer than the crate is used at the crate's best ABI.
    Ok(ABI::from(i32::try_from(v).unwrap_or(i32::MAX)) as u8)
}

/// The kernel's Landlock ABI, capped at `cap` (`VF_TEST_SANDBOX`).
pub(super) fn support(cap: Option<u8>) -> Support {
    match kernel_abi() {
        Ok(abi) if abi >= 1 => Support::Landlock {
            abi: cap.map_or(abi, |c| c.min(abi)),
        },
        Err(libc::EOPNOTSUPP) => Support::Unavailable {
            why: "Landlock is not enabled in this kernel (boot parameter lsm=)".into(),
        },
        _ => Support::Unavailable {
            why: "this kernel has no Landlock".into(),
        },
    }
}

/// The write rights the ruleset handles at `abi`: all of them but device
/// ioctls (terminals need them) and connecting to Unix sockets (not a
/// write; the network stays open).
fn write_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_write(abi) & !(AccessFs::IoctlDev | AccessFs::ResolveUnix)
}

/// Read and execute: handled only when something is denied.
fn read_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::Execute
}

/// The rights a non-directory can carry (a file gets only these).
fn file_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Execute | AccessFs::Truncate
}

/// The ruleset for `rules` at `abi`, and what that ABI cannot hold.
pub(super) fn prepare(rules: &Rules, abi: u8) -> io::Result<(OwnedFd, Vec<String>)> {
    let level = ABI::from(i32::from(abi));
    let plan = walk::plan(rules)?;
    let write = write_rights(level);
    let read = if plan.denied.is_empty() {
        BitFlags::EMPTY
    } else {
        read_rights()
    };
    // A hard requirement: what is asked is what the kernel holds, or an error.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write | read)
        .and_then(Ruleset::create)
        .map_err(io::Error::other)?;
    for path in &plan.writable {
        // Followed: a writable path that is a link names its target.
        if let Some(fd) = open(path, false)? {
            ruleset = add(ruleset, fd, write | read, path)?;
        }
    }
    for path in &plan.readable {
        // Not followed: a link is checked where it leads, when it is used.
        if let Some(fd) = open(path, true)? {
            ruleset = add(ruleset, fd, read, path)?;
        }
    }
    let fd: Option<OwnedFd> = ruleset.into();
    let fd = fd.ok_or_else(|| io::Error::other("Landlock made no ruleset"))?;
    let mut missing = Vec::new();
    if abi < 3 {
        missing.push(format!(
            "truncate(2) on any path (Landlock ABI {abi}: truncation is held from ABI 3 on)"
        ));
    }
    missing.extend(plan.missing);
    Ok((fd, missing))
}

/// `path` opened `O_PATH` (a link itself when `nofollow`: then `None`, as
/// for a path gone since the walk or out of reach).
fn open(path: &Path, nofollow: bool) -> io::Result<Option<File>> {
    let mut flags = libc::O_PATH | libc::O_CLOEXEC;
    if nofollow {
        flags |= libc::O_NOFOLLOW;
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(file) if file.metadata()?.file_type().is_symlink() => Ok(None),
        Ok(file) => Ok(Some(file)),
        Err(e) if walk::out_of_reach(&e) => Ok(None),
        Err(e) => Err(walk::naming(path, e)),
    }
}

/// `ruleset` with a rule granting `rights` beneath `fd` (a file: only the
/// rights a file can carry).
fn add(
    ruleset: ::landlock::RulesetCreated,
    fd: File,
    rights: BitFlags<AccessFs>,
    path: &Path,
) -> io::Result<::landlock::RulesetCreated> {
    let rights = if fd.metadata()?.is_dir() {
        rights
    } else {
        rights & file_rights()
    };
    if rights.is_empty() {
        return Ok(ruleset);
    }
    ruleset
        .add_rule(PathBeneath::new(fd, rights))
        .map_err(|e| walk::naming(path, io::Error::other(e)))
}

/// Has the child restrict itself with `ruleset` before it execs.
pub(super) fn apply(cmd: &mut std::process::Command, ruleset: OwnedFd) {
    // SAFETY: the hook runs in the forked child before exec and calls only
    // async-signal-safe functions on a descriptor made here (no allocation).
    unsafe {
        cmd.pre_exec(move || restrict(ruleset.as_raw_fd()));
    }
}

/// In the child: no new privileges (Landlock requires it of an unprivileged
/// process; a setuid program then gains nothing), then the ruleset. An
/// error fails the spawn.
fn restrict(ruleset: libc::c_int) -> io::Result<()> {
    // SAFETY: plain system calls on integers; nothing is allocated.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0 as libc::c_uint) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
