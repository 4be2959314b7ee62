//! Landlock held against a real child: `/bin/sh` scripts spawned through
//! [`apply`], each operation's outcome printed by the script and the disk
//! checked afterwards. They need a kernel with Landlock (this project's
//! machines have ABI 7): without one they fail, naming why.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// Runs each `(label, command)` in a fresh `sh -c` below one confined
/// shell; the outcome of each: `ok`, or its error output.
const TRY: &str =
    r#"try() { if e=$(sh -c "$2" 2>&1); then echo "$1: ok"; else echo "$1: $e"; fi; }"#;

/// The machine's support, which these tests need to be Landlock.
fn landlock() -> Support {
    let support = support(None);
    assert!(
        matches!(support, Support::Landlock { .. }),
        "these tests need Landlock: {support:?}"
    );
    support
}

/// `script` (after [`TRY`]) run confined by `rules` under `support`, with
/// `vars` in its environment: each label's outcome.
fn outcomes(
    rules: &Rules,
    support: &Support,
    vars: &[(&str, &Path)],
    script: &str,
) -> BTreeMap<String, String> {
    let prepared = prepare(rules, support).unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(format!("{TRY}\n{script}"));
    for (name, path) in vars {
        cmd.env(name, path);
    }
    apply(&mut cmd, prepared);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(label, outcome)| (label.to_string(), outcome.to_string()))
        .collect()
}

/// Each label of `refused` was refused with EACCES, each of `allowed` ran.
fn assert_outcomes(got: &BTreeMap<String, String>, allowed: &[&str], refused: &[&str]) {
    for label in allowed {
        assert_eq!(
            got.get(*label).map(String::as_str),
            Some("ok"),
            "{label}: {got:?}"
        );
    }
    for label in refused {
        let outcome = got.get(*label).map(String::as_str).unwrap_or("(not run)");
        assert!(outcome.contains("Permission denied"), "{label}: {outcome}");
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn rules(writable: &[&Path], deny_read: &[&Path]) -> Rules {
    Rules {
        writable: writable.iter().map(|p| p.to_path_buf()).collect(),
        deny_read: deny_read.iter().map(|p| p.to_path_buf()).collect(),
    }
}

/// A write beneath the writable path works; every kind of write elsewhere
/// (a sibling, a read-only directory's file, renames into and out of it,
/// truncate(2), mkdir, a symlink) is refused and leaves the disk as it was.
#[test]
fn writes_land_only_beneath_writable_paths() {
    let t = tempfile::tempdir().unwrap();
    let (w, o, r) = (
        t.path().join("w"),
        t.path().join("out"),
        t.path().join("ro"),
    );
    fs::create_dir(&w).unwrap();
    write(&o.join("f"), "keep");
    write(&r.join("r"), "keep");
    write(&w.join("mine"), "mine");
    let got = outcomes(
        &rules(&[&w], &[]),
        &landlock(),
        &[("W", &w), ("O", &o), ("R", &r)],
        r#"
try write-in 'echo x > "$W/new" && mkdir "$W/d" && ln -s x "$W/l" && rm "$W/mine"'
try write-sibling 'echo x > "$O/new"'
try append-ro 'echo x >> "$R/r"'
try rename-out 'perl -e "rename(\$ARGV[0], \$ARGV[1]) or die qq(\$!\n)" "$R/r" "$W/r"'
try rename-in 'perl -e "rename(\$ARGV[0], \$ARGV[1]) or die qq(\$!\n)" "$W/new" "$R/new"'
try rename-within 'perl -e "rename(\$ARGV[0], \$ARGV[1]) or die qq(\$!\n)" "$R/r" "$R/r2"'
try truncate-outside 'perl -e "truncate(\$ARGV[0], 0) or die qq(\$!\n)" "$O/f"'
try mkdir-outside 'mkdir "$O/d"'
try symlink-outside 'ln -s /etc/passwd "$O/l"'
try remove-outside 'rm "$O/f"'
"#,
    );
    assert_outcomes(
        &got,
        &["write-in"],
        &[
            "write-sibling",
            "append-ro",
            "rename-out",
            "rename-in",
            "rename-within",
            "truncate-outside",
            "mkdir-outside",
            "symlink-outside",
            "remove-outside",
        ],
    );
    assert_eq!(fs::read_to_string(o.join("f")).unwrap(), "keep");
    assert_eq!(fs::read_to_string(r.join("r")).unwrap(), "keep");
    let left: Vec<_> = fs::read_dir(&o)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["f"]);
    assert!(!r.join("new").exists() && !r.join("r2").exists() && !w.join("r").exists());
    assert_eq!(fs::read_to_string(w.join("new")).unwrap(), "x\n");
}

/// The ruleset is inherited: a child's child and a background process are
/// held as the first shell is; vf's lifeline (an earlier hook) still runs.
#[test]
fn descendants_are_held_too() {
    let t = tempfile::tempdir().unwrap();
    let (w, o) = (t.path().join("w"), t.path().join("out"));
    fs::create_dir(&w).unwrap();
    fs::create_dir(&o).unwrap();
    let script = r#"
try grandchild 'sh -c "echo x > \"\$O/grand\""'
try grandchild-in 'sh -c "echo x > \"\$W/grand\""'
try background 'echo x > "$O/bg" & wait $!'
echo x > "$O/child"
"#;
    let prepared = prepare(&rules(&[&w], &[]), &landlock()).unwrap();
    let mut cmd = crate::sys::shell(&format!("{TRY}\n{script}"));
    cmd.env("W", &w).env("O", &o);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let made = crate::sys::contain(&mut cmd).unwrap();
    apply(&mut cmd, prepared);
    let child = cmd.spawn().unwrap();
    let _group = crate::sys::Container::adopt(&child, made).unwrap();
    let out = child.wait_with_output().unwrap();
    let got: BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_outcomes(&got, &["grandchild-in"], &["grandchild", "background"]);
    // The first shell's own write: its error on its stderr.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/child: Permission denied"), "{err}");
    let left: Vec<_> = fs::read_dir(&o).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A denied file cannot be read nor executed, its siblings can, names in
/// the denied folder can be listed; a writable path inside it stays
/// readable and writable; a link from an allowed place does not open it.
#[test]
fn denied_paths_stay_unread() {
    let t = tempfile::tempdir().unwrap();
    let (w, s, p) = (
        t.path().join("w"),
        t.path().join("secret"),
        t.path().join("pub"),
    );
    write(&s.join("s.txt"), "secret");
    let run = write(&s.join("run.sh"), "#!/bin/sh\necho ran\n");
    fs::set_permissions(&run, fs::Permissions::from_mode(0o755)).unwrap();
    write(&s.join("state/pre"), "pre");
    write(&p.join("p.txt"), "public");
    fs::create_dir(&w).unwrap();
    std::os::unix::fs::symlink(s.join("s.txt"), w.join("link")).unwrap();
    let state = s.join("state");
    let got = outcomes(
        &rules(&[&w, &state], &[&s]),
        &landlock(),
        &[("W", &w), ("S", &s), ("P", &p)],
        r#"
try read-denied 'cat "$S/s.txt"'
try exec-denied '"$S/run.sh"'
try read-sibling 'cat "$P/p.txt" && cat /etc/passwd'
try list-denied 'ls "$S"'
try read-through-link 'cat "$W/link"'
try state 'cat "$S/state/pre" && echo y > "$S/state/new" && cat "$S/state/new"'
try write-denied 'echo x >> "$S/s.txt"'
try hardlink-out 'ln "$S/s.txt" "$W/hard"'
"#,
    );
    assert_outcomes(
        &got,
        &["read-sibling", "list-denied", "state"],
        &[
            "read-denied",
            "exec-denied",
            "read-through-link",
            "write-denied",
        ],
    );
    // A hard link would read the denied file through the writable path:
    // Landlock refuses it as a cross-device link (EXDEV).
    assert!(
        got["hardlink-out"].contains("Invalid cross-device link"),
        "{got:?}"
    );
    assert!(!w.join("hard").exists());
    assert_eq!(fs::read_to_string(s.join("s.txt")).unwrap(), "secret");
    assert_eq!(fs::read_to_string(s.join("state/new")).unwrap(), "y\n");
}

/// `/dev/null` is written only when the rules list it.
#[test]
fn the_null_device_is_writable_only_when_listed() {
    let t = tempfile::tempdir().unwrap();
    let script = "try null 'echo x > /dev/null'";
    let support = landlock();
    let unlisted = outcomes(&rules(&[t.path()], &[]), &support, &[], script);
    assert_outcomes(&unlisted, &[], &["null"]);
    let null = Path::new("/dev/null");
    let listed = outcomes(&rules(&[t.path(), null], &[]), &support, &[], script);
    assert_outcomes(&listed, &["null"], &[]);
}

/// A rule for a path that does not exist (yet) is skipped, not an error.
#[test]
fn a_missing_path_is_skipped() {
    let t = tempfile::tempdir().unwrap();
    let (gone, never) = (t.path().join("gone/x"), t.path().join("never"));
    let got = outcomes(
        &rules(&[t.path(), &gone], &[&never]),
        &landlock(),
        &[("T", t.path())],
        r#"try in 'echo x > "$T/f" && cat "$T/f"'"#,
    );
    assert_outcomes(&got, &["in"], &[]);
}

/// The child that cannot restrict itself never runs: the spawn fails.
#[test]
fn a_failed_restriction_fails_the_spawn() {
    let t = tempfile::tempdir().unwrap();
    let marker = t.path().join("ran");
    let not_a_ruleset = fs::File::open("/dev/null").unwrap();
    let prepared = Prepared {
        mechanism: Some("landlock-abi-7".into()),
        missing: Vec::new(),
        profile: None,
        ruleset: Some(not_a_ruleset.into()),
    };
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg("touch \"$1\"").arg("sh").arg(&marker);
    apply(&mut cmd, prepared);
    let err = cmd.spawn().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADFD), "{err}");
    assert!(!marker.exists());
}

/// `VF_TEST_SANDBOX` plays a poorer machine; anything unknown plays none.
#[test]
fn the_simulated_support() {
    let real = landlock();
    assert_eq!(
        support(Some("none")),
        Support::Unavailable {
            why: "simulated: none".into()
        }
    );
    assert_eq!(
        support(Some("landlock")),
        Support::Unavailable {
            why: "simulated: landlock".into()
        }
    );
    assert!(matches!(
        support(Some("landlock-abi-0")),
        Support::Unavailable { .. }
    ));
    assert_eq!(
        support(Some("landlock-abi-2")),
        Support::Landlock { abi: 2 }
    );
    assert_eq!(support(Some("landlock-abi-200")), real);
    let prepared = prepare(&Rules::default(), &real).unwrap();
    assert!(prepared.missing().is_empty(), "{:?}", prepared.missing());
    assert_eq!(prepared.mechanism(), real.mechanism());
}

/// Below ABI 3 truncate(2) cannot be held: `missing` says so, and it is
/// true (the write rights still are held).
#[test]
fn abi_2_cannot_hold_truncate() {
    let t = tempfile::tempdir().unwrap();
    let (w, o) = (t.path().join("w"), t.path().join("out"));
    fs::create_dir(&w).unwrap();
    write(&o.join("f"), "keep");
    let abi2 = support(Some("landlock-abi-2"));
    let prepared = prepare(&rules(&[&w], &[]), &abi2).unwrap();
    assert_eq!(prepared.mechanism().as_deref(), Some("landlock-abi-2"));
    assert_eq!(prepared.missing().len(), 1);
    assert!(prepared.missing()[0].starts_with("truncate(2)"));
    let got = outcomes(
        &rules(&[&w], &[]),
        &abi2,
        &[("O", &o)],
        r#"
try truncate 'perl -e "truncate(\$ARGV[0], 0) or die qq(\$!\n)" "$O/f"'
try write 'echo x >> "$O/f"'
"#,
    );
    assert_outcomes(&got, &["truncate"], &["write"]);
    assert_eq!(fs::read_to_string(o.join("f")).unwrap(), "");
}

/// A path that is not absolute is refused before anything is made.
#[test]
fn a_relative_path_is_refused() {
    let err = prepare(&rules(&[Path::new("w")], &[]), &landlock()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err = prepare(&rules(&[], &[Path::new("a/b")]), &support(Some("none"))).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

/// Every ABI from 1 to the kernel's makes a ruleset that holds writes and
/// denied reads (the rights asked follow the ABI).
#[test]
fn every_abi_holds_writes_and_denied_reads() {
    let Support::Landlock { abi: best } = landlock() else {
        unreachable!()
    };
    let t = tempfile::tempdir().unwrap();
    let (w, s) = (t.path().join("w"), t.path().join("secret"));
    fs::create_dir(&w).unwrap();
    write(&s.join("s.txt"), "secret");
    for abi in 1..=best {
        let got = outcomes(
            &rules(&[&w], &[&s]),
            &Support::Landlock { abi },
            &[("W", &w), ("T", t.path()), ("S", &s)],
            r#"
try in 'echo x > "$W/f"'
try out 'echo x > "$T/f"'
try denied 'cat "$S/s.txt"'
"#,
        );
        assert_outcomes(&got, &["in"], &["out", "denied"]);
    }
    assert!(!t.path().join("f").exists());
}
