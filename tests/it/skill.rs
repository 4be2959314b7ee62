//! `vf skill install`: the drift test (every documented flag exists in the
//! clap tree), idempotent writes, and never over a user-edited file.

use std::path::Path;

use crate::common::{files_under, read_text, stderr, tempdir, vf_cli};

fn install(dir: &Path, extra: &[&str]) -> std::process::Output {
    vf_cli()
        .args(["skill", "install", "--dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn every_documented_flag_exists_and_a_missing_one_fails_the_render() {
    let body = vf::project::skill::render(&vf::cli::full_command()).unwrap();
    for (sub, flags) in vf::project::skill::DOCUMENTED {
        assert!(body.contains(&format!("## `vf {sub}`")), "{sub}");
        for f in *flags {
            assert!(
                body.contains(&format!("--{f}")) || body.contains(&f.to_uppercase()),
                "{sub} {f}"
            );
        }
    }
    assert!(
        body.contains("- `--engine ENGINE`: The engine to run, or `auto`"),
        "{body}"
    );
    // A tree where `vf dispatch` lost --prompt: the render names it.
    let old = clap::Command::new("vf")
        .subcommand(clap::Command::new("dispatch").arg(clap::Arg::new("engine").long("engine")));
    let e = vf::project::skill::render(&old).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the vf skill documents `vf dispatch` prompt, which no longer exists"
    );
}

#[test]
fn install_is_idempotent_and_never_overwrites_an_edited_file() {
    let t = tempdir();
    let dir = t.path();
    let first = install(dir, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let claude = dir.join(".claude/skills/vf/SKILL.md");
    let text = read_text(&claude);
    assert!(
        text.starts_with("---\nname: vf\ndescription: Dispatch a sub-task"),
        "{text}"
    );
    assert_eq!(read_text(&dir.join(".agents/skills/vf/SKILL.md")), text);
    let agents = read_text(&dir.join("AGENTS.md"));
    assert!(
        agents.starts_with("<!-- vf:skill begin -->\n# Using vf\n"),
        "{agents}"
    );
    assert!(agents.ends_with("<!-- vf:skill end -->\n"));
    let before: Vec<(std::path::PathBuf, String)> = files_under(dir)
        .into_iter()
        .map(|p| {
            let s = read_text(&p);
            (p, s)
        })
        .collect();

    let second = install(dir, &[]);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&second.stdout),
        "nothing to do: every file is as vf wrote it\n"
    );
    let after: Vec<_> = files_under(dir)
        .into_iter()
        .map(|p| {
            let s = read_text(&p);
            (p, s)
        })
        .collect();
    assert_eq!(before, after);

    std::fs::write(&claude, "my own skill\n").unwrap();
    let refused = install(dir, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        stderr(&refused),
        "vf: refusing to overwrite .claude/skills/vf/SKILL.md (edited since vf wrote it) \
         (--force replaces it); nothing was written\n"
    );
    assert_eq!(read_text(&claude), "my own skill\n");

    let forced = install(dir, &["--force", "--engine", "claude", "--json"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_eq!(
        String::from_utf8_lossy(&forced.stdout),
        "{\"files\":[{\"path\":\".claude/skills/vf/SKILL.md\",\"action\":\"forced\"}]}\n"
    );
    assert_eq!(read_text(&claude), text);
}

#[test]
fn the_agents_md_section_keeps_the_users_text_and_refuses_an_edited_section() {
    let t = tempdir();
    let dir = t.path();
    let agents = dir.join("AGENTS.md");
    std::fs::write(&agents, "# House rules\nBe nice.\n").unwrap();
    let out = install(dir, &["--engine", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = read_text(&agents);
    assert!(
        text.starts_with("# House rules\nBe nice.\n\n<!-- vf:skill begin -->\n"),
        "{text}"
    );
    // The user's text around the section is theirs: a re-run keeps it.
    let extended = format!("{text}\nMore rules.\n");
    std::fs::write(&agents, &extended).unwrap();
    let again = install(dir, &["--engine", "opencode"]);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "nothing to do: every file is as vf wrote it\n"
    );
    assert_eq!(read_text(&agents), extended);
    // An edit inside vf's section is refused, the file untouched.
    let edited = extended.replace("# Using vf", "# Using vf (mine)");
    std::fs::write(&agents, &edited).unwrap();
    let refused = install(dir, &["--engine", "codex"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("AGENTS.md (its vf section was edited)"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(read_text(&agents), edited);
}

#[test]
fn unverified_engines_and_planted_links_are_refused_writing_nothing() {
    let t = tempdir();
    let dir = t.path().join("p");
    std::fs::create_dir(&dir).unwrap();
    for e in ["copilot", "gemini"] {
        let out = install(&dir, &["--engine", e]);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(stderr(&out).contains(&format!("no verified instructions file for {e}")));
    }
    let outside = t.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, dir.join(".claude")).unwrap();
        let out = install(&dir, &[]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("is a symbolic link"),
            "{}",
            stderr(&out)
        );
        assert!(files_under(&outside).is_empty());
        assert!(!dir.join("AGENTS.md").exists() && !dir.join(".agents").exists());
        let forced = install(&dir, &["--force"]);
        assert_eq!(forced.status.code(), Some(2));
        assert!(files_under(&outside).is_empty());
    }
    assert!(!dir.join(".vf-generated.json").exists());
}
