//! A plan unit's worktree keys (`worktree`, `base`, `commit`, `push`) and
//! `retries`: checked when the unit is read, so that a bad value is refused
//! naming the unit and its line.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, de::Error as _};

use super::{PlanUnit, RawUnit, show_path};

/// The most `retries` a unit may ask for.
pub const MAX_RETRIES: u32 = 10;

/// A worktree unit's keys, resolved into its steps below the plan.
pub use crate::dispatch::resolve::PlanWorktree;

impl PlanUnit {
    /// The unit's step keys, for [`crate::dispatch::resolve::plan_steps`].
    pub fn step_keys(&self) -> crate::dispatch::resolve::PlanSteps<'_> {
        crate::dispatch::resolve::PlanSteps {
            unit: &self.name,
            cwd: &self.cwd,
            worktree: self.worktree.as_ref(),
            setup: self.setup.as_ref(),
            verify: self.verify.as_ref(),
            deny_paths: &self.deny_paths,
            allow_paths: &self.allow_paths,
        }
    }
}

/// `retries`: a whole number from 0 to [`MAX_RETRIES`].
pub(super) fn retries<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = i64::deserialize(d)?;
    match u32::try_from(n) {
        Ok(n) if n <= MAX_RETRIES => Ok(Some(n)),
        _ => Err(D::Error::custom(format!(
            "`retries` must be a whole number from 0 to {MAX_RETRIES}, not {n}"
        ))),
    }
}

/// `push`: a plain git remote name (`crate::workspace::remote::check_name`).
pub(super) fn remote<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    crate::workspace::remote::check_name(&name)
        .map_err(|e| D::Error::custom(format!("`push`: {e}")))?;
    Ok(Some(name))
}

/// `worktree`, `base`, `commit`, `push`: the others only with the first; a
/// worktree `cwd` is relative to the worktree's root and stays inside it.
pub(super) fn worktree_of(u: &RawUnit) -> Result<Option<PlanWorktree>, String> {
    if !u.worktree {
        if u.base.is_some() || u.commit.is_some() {
            return Err("`base` and `commit` need `worktree = true`".into());
        }
        if u.push.is_some() {
            return Err("`push` needs `worktree = true`".into());
        }
        return Ok(None);
    }
    let rel_cwd = u.cwd.clone().unwrap_or_default();
    let inside = rel_cwd.components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    if !inside {
        return Err(format!(
            "cwd {} must be relative to the worktree's root, without `..`",
            show_path(&rel_cwd)
        ));
    }
    Ok(Some(PlanWorktree {
        base: u.base.clone(),
        commit: u.commit.unwrap_or(true),
        rel_cwd,
        push: u.push.clone(),
        fetch_from: BTreeMap::new(),
    }))
}

/// Fills each worktree unit's `fetch_from`: the remote of each dependency
/// that is a worktree unit with `push`.
pub(super) fn link_pushes(units: &mut [PlanUnit]) {
    let pushed: HashMap<String, String> = units
        .iter()
        .filter_map(|u| {
            let remote = u.worktree.as_ref()?.push.clone()?;
            Some((u.name.clone(), remote))
        })
        .collect();
    if pushed.is_empty() {
        return;
    }
    for u in units {
        let Some(w) = u.worktree.as_mut() else {
            continue;
        };
        w.fetch_from = u
            .depends_on
            .iter()
            .filter_map(|d| Some((d.clone(), pushed.get(d)?.clone())))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn unit(name: &str, extra: &str) -> String {
        format!("[[unit]]\nname = \"{name}\"\nengine = \"codex\"\nprompt = \"x\"\n{extra}\n")
    }

    fn parsed(text: &str) -> Result<Vec<PlanUnit>, String> {
        let t = tempfile::tempdir().unwrap();
        parse(text, t.path())
    }

    #[test]
    fn retries_is_a_whole_number_up_to_ten_and_zero_by_default() {
        let plan = [
            unit("a", ""),
            unit("b", "retries = 0"),
            unit("c", "retries = 10"),
        ]
        .concat();
        let got: Vec<(String, u32)> = parsed(&plan)
            .unwrap()
            .into_iter()
            .map(|u| (u.name, u.retries))
            .collect();
        let want = [("a", 0), ("b", 0), ("c", 10)].map(|(n, r)| (n.to_string(), r));
        assert_eq!(got, want);
        // The unit's line (its `[[unit]]` header) and name, as for any bad key.
        let first = unit("ok", "");
        for (value, why) in [
            (
                "11",
                "`retries` must be a whole number from 0 to 10, not 11",
            ),
            (
                "-1",
                "`retries` must be a whole number from 0 to 10, not -1",
            ),
            ("1.5", "invalid type: floating point `1.5`, expected i64"),
            ("\"2\"", "invalid type: string \"2\", expected i64"),
        ] {
            let e = parsed(&format!(
                "{first}{}",
                unit("r", &format!("retries = {value}"))
            ));
            assert_eq!(
                e.unwrap_err(),
                format!("line 6: unit \"r\": {why}"),
                "{value}"
            );
        }
        // In [defaults], it reaches every unit.
        let d = parsed(&format!("[defaults]\nretries = 3\n{}", unit("a", ""))).unwrap();
        assert_eq!(d[0].retries, 3);
    }

    #[test]
    fn push_needs_a_worktree_and_a_plain_remote_name() {
        let wt = |name: &str, extra: &str| unit(name, &format!("worktree = true\n{extra}"));
        let plan = [
            wt("a", "push = \"origin\""),
            wt("b", "depends_on = [\"a\", \"c\"]"),
            unit("c", ""),
            wt("d", "push = \"team/fork\"\ndepends_on = [\"a\"]"),
            wt("e", "depends_on = [\"d\", \"b\"]"),
        ]
        .concat();
        // Per worktree unit: its name, `push`, `fetch_from`.
        type Row = (String, Option<String>, Vec<(String, String)>);
        let got: Vec<Row> = parsed(&plan)
            .unwrap()
            .into_iter()
            .filter_map(|u| {
                let w = u.worktree?;
                Some((u.name, w.push, w.fetch_from.into_iter().collect()))
            })
            .collect();
        let s = |x: &str| x.to_string();
        let pair = |d: &str, r: &str| (s(d), s(r));
        assert_eq!(
            got,
            [
                (s("a"), Some(s("origin")), vec![]),
                (s("b"), None, vec![pair("a", "origin")]),
                (s("d"), Some(s("team/fork")), vec![pair("a", "origin")]),
                (s("e"), None, vec![pair("d", "team/fork")]),
            ]
        );
        let e = parsed(&unit("p", "push = \"origin\"")).unwrap_err();
        assert_eq!(e, "unit \"p\": `push` needs `worktree = true`");
        for (value, why) in [
            ("-uorigin", "it starts with `-`"),
            ("a b", "it holds whitespace or a control character"),
            ("../up", "it holds `..`"),
            ("git@evil:x", "it holds `:`"),
            ("", "it is empty"),
        ] {
            let e = parsed(&wt("h", &format!("push = \"{value}\""))).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "line 1: unit \"h\": `push`: {value:?} is not a plain git remote name: {why}"
                )
            );
        }
    }

    #[test]
    fn a_default_push_reaches_worktree_units_only() {
        let plan = format!(
            "[defaults]\npush = \"origin\"\n{}{}{}",
            unit("plain", ""),
            unit("wt", "worktree = true"),
            unit("own", "worktree = true\npush = \"up\""),
        );
        let got: Vec<(String, Option<String>)> = parsed(&plan)
            .unwrap()
            .into_iter()
            .map(|u| (u.name, u.worktree.and_then(|w| w.push)))
            .collect();
        let want = [("plain", None), ("wt", Some("origin")), ("own", Some("up"))]
            .map(|(n, p)| (n.to_string(), p.map(str::to_string)));
        assert_eq!(got, want);
        // `worktree` itself from [defaults] counts.
        let both = format!(
            "[defaults]\nworktree = true\npush = \"o\"\n{}",
            unit("a", "")
        );
        let u = parsed(&both).unwrap().remove(0);
        assert_eq!(u.worktree.and_then(|w| w.push).as_deref(), Some("o"));
    }

    #[test]
    fn the_user_config_checks_retries_and_push_as_unit_keys() {
        let t = tempfile::tempdir().unwrap();
        let check = |key: &str, v: toml::Value| super::super::check_config_key(key, &v, t.path());
        assert_eq!(check("retries", 2.into()), Ok(()));
        assert_eq!(check("push", "origin".into()), Ok(()));
        assert_eq!(
            check("retries", 12.into()).unwrap_err(),
            "`retries`: `retries` must be a whole number from 0 to 10, not 12"
        );
        assert_eq!(
            check("push", "-x".into()).unwrap_err(),
            "`push`: `push`: \"-x\" is not a plain git remote name: it starts with `-`"
        );
    }
}
