//! A unit's branch on a git remote (plan key `push`): the remote's name
//! checked, the branch pushed once the unit is done, and a dependency's
//! pushed branch fetched before it is merged, so that a unit that ran on
//! another machine is merged too (docs/WORKSPACES.md).

use std::path::Path;

use super::git::{self, GitError};
use super::{SealError, Workspace, branch_of};

/// The longest remote name vf takes.
const MAX_NAME: usize = 100;

/// A plain git remote name, as a plan gives it: not empty, no leading `-`
/// (an option to git), no whitespace or control character, no `..` and no
/// `:` (a path, a URL, a refspec), none of the characters git refuses in a
/// ref (`refs/remotes/<name>/...` must be one). Whether the repository has
/// such a remote is [`require`]'s question.
pub fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "{} is not a plain git remote name: {why}",
            crate::ground::text::shown(name, 80)
        ))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_NAME {
        return bad(&format!("it is over {MAX_NAME} bytes"));
    }
    if name.starts_with('-') {
        return bad("it starts with `-`");
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("it holds whitespace or a control character");
    }
    if name.contains("..") {
        return bad("it holds `..`");
    }
    if let Some(c) = name.chars().find(|c| ":~^?*[\\".contains(*c)) {
        return bad(&format!("it holds `{c}`"));
    }
    let ends = [".", "/", ".lock"];
    if name.starts_with(['.', '/']) || ends.iter().any(|e| name.ends_with(e)) || name.contains("//")
    {
        return bad("git refuses it in a ref name");
    }
    Ok(())
}

/// The repository at `dir` has a remote `name`: git takes a name it does
/// not know as a path or a URL, which vf never pushes to.
pub fn require(dir: &Path, name: &str) -> Result<(), String> {
    match git::run(dir, &["remote", "get-url", "--", name]) {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "the repository {} has no remote named {name:?} (`git remote -v` lists them)",
            dir.display()
        )),
    }
}

/// Pushes the unit's branch to `remote` (never forced: a remote branch that
/// went elsewhere is git's refusal), after proving the worktree is still
/// the one vf made (its git dir `git_dir`, as [`super::open`] proved it).
pub fn push(ws: &Workspace, git_dir: Option<&Path>, remote: &str) -> Result<(), SealError> {
    let fail = |why: String| {
        SealError::Git(GitError {
            message: format!("cannot push {} to the remote {remote:?}: {why}", ws.branch),
        })
    };
    if let Err(why) = super::prove(&ws.path, Some(&ws.branch), git_dir) {
        let message = super::identity::broken(&ws.path, &why, "nothing was pushed");
        return Err(SealError::Broken(message));
    }
    require(&ws.path, remote).map_err(fail)?;
    let refspec = format!("refs/heads/{0}:refs/heads/{0}", ws.branch);
    let args = ["push", "--quiet", "--no-verify", remote, "--", &refspec];
    git::run_remote(&ws.path, &args).map_err(|e| fail(e.message))?;
    Ok(())
}

/// The ref of dependency `dep`'s branch as `remote` has it: fetched (in the
/// worktree at `dir`) into `refs/remotes/<remote>/vf/<dep>`, forced as git
/// updates its own remote-tracking refs, never into a local branch (which
/// may be checked out in the dependency's worktree on this machine).
pub fn fetch(dir: &Path, remote: &str, dep: &str) -> Result<String, String> {
    let branch = branch_of(dep);
    let fail = |why: String| format!("cannot fetch {branch} from the remote {remote:?}: {why}");
    require(dir, remote).map_err(fail)?;
    let tracking = format!("refs/remotes/{remote}/{branch}");
    let refspec = format!("+refs/heads/{branch}:{tracking}");
    let args = ["fetch", "--quiet", "--no-tags", remote, "--", &refspec];
    git::run_remote(dir, &args).map_err(|e| fail(e.message))?;
    Ok(tracking)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_remote_names_pass() {
        for ok in ["origin", "up-stream", "team/fork", "my.remote", "o_1"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        let refused: Vec<(&str, String)> = [
            "",
            "-uorigin",
            "--receive-pack=sh",
            "a b",
            "a\tb",
            "a\u{1b}[2J",
            "../x",
            "a..b",
            "git@host:repo",
            "https://host/x",
            "a~1",
            "a^",
            "a*",
            "a[b",
            "a\\b",
            ".hidden",
            "/abs",
            "x.lock",
            "a//b",
            "end/",
        ]
        .into_iter()
        .map(|n| (n, check_name(n).unwrap_err()))
        .collect();
        let why: Vec<&str> = refused
            .iter()
            .map(|(_, e)| e.rsplit(": ").next().unwrap())
            .collect();
        assert_eq!(
            why,
            [
                "it is empty",
                "it starts with `-`",
                "it starts with `-`",
                "it holds whitespace or a control character",
                "it holds whitespace or a control character",
                "it holds whitespace or a control character",
                "it holds `..`",
                "it holds `..`",
                "it holds `:`",
                "it holds `:`",
                "it holds `~`",
                "it holds `^`",
                "it holds `*`",
                "it holds `[`",
                "it holds `\\`",
                "git refuses it in a ref name",
                "git refuses it in a ref name",
                "git refuses it in a ref name",
                "git refuses it in a ref name",
                "git refuses it in a ref name",
            ]
        );
        // Shown escaped, on one line.
        assert_eq!(
            refused[5].1,
            r#""a\u{1b}[2J" is not a plain git remote name: it holds whitespace or a control character"#
        );
        assert!(
            check_name(&"o".repeat(101))
                .unwrap_err()
                .contains("over 100 bytes")
        );
    }
}
