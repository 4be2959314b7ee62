//! Which parts of a frame a manifest can read, and a parse that builds only
//! those: the rest of the frame is checked as JSON but never allocated.
//!
//! Every read of a frame goes through a manifest [`Path`] (or a template's
//! `{a.b}`), and whatever a path ends at may be used whole (summaries,
//! `usage`, "N items"), so a path's end is kept whole and only the objects on
//! the way are pruned. Arrays are kept with every element (their length
//! shows), each element pruned like the array itself: nested rules and tool
//! lists read their paths relative to each element.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::manifest::{Cond, Entry, Manifest, Path, Rule, Src, StatusSrc, Tpl};

/// What is kept of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Keep {
    Whole,
    /// Only these keys of an object (each element's, for an array).
    Fields(Vec<(&'static str, Keep)>),
}

impl Keep {
    /// What `manifest` reads of a frame through `table` (its kind and session
    /// paths, too).
    pub(super) fn for_manifest(manifest: &Manifest, table: Option<&[Entry]>) -> Keep {
        let mut k = Keep::Fields(Vec::new());
        k.add_at(manifest.kind);
        k.add(manifest.session);
        for (_, sub) in manifest.subkinds {
            k.add_at(sub);
        }
        for e in table.unwrap_or_default() {
            k.rule(&e.rule);
        }
        for f in manifest.rate_limits.frames {
            k.cond(&Some(f.when));
            k.add(f.retry_at);
        }
        // The quota reading: without these, a window's figure was cut
        // before the governor saw it.
        for q in manifest.rate_limits.quota {
            for p in [q.status, q.utilization, q.window, q.resets_at, q.windows] {
                k.add(p);
            }
        }
        k
    }

    /// A path read with `fields::field`: an empty one reads nothing.
    fn add(&mut self, path: Path) {
        if !path.is_empty() {
            self.add_keys(path.iter().copied());
        }
    }

    /// A path read with `fields::at`: an empty one is the value itself.
    fn add_at(&mut self, path: Path) {
        self.add_keys(path.iter().copied());
    }

    fn add_keys(&mut self, mut path: impl Iterator<Item = &'static str>) {
        let Keep::Fields(fields) = self else {
            return;
        };
        let Some(key) = path.next() else {
            *self = Keep::Whole;
            return;
        };
        let i = match fields.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                fields.push((key, Keep::Fields(Vec::new())));
                fields.len() - 1
            }
        };
        fields[i].1.add_keys(path);
    }

    /// The node at `path`, created (pruned) if absent; `None` when inside a whole value.
    fn at(&mut self, path: Path) -> Option<&mut Keep> {
        let mut cur = self;
        for &key in path {
            let Keep::Fields(fields) = cur else {
                return None;
            };
            let i = match fields.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    fields.push((key, Keep::Fields(Vec::new())));
                    fields.len() - 1
                }
            };
            cur = &mut fields[i].1;
        }
        matches!(cur, Keep::Fields(_)).then_some(cur)
    }

    fn tpl(&mut self, tpl: Tpl) {
        let mut rest = tpl;
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            self.add_keys(rest[open + 1..open + close].split('.'));
            rest = &rest[open + close + 1..];
        }
    }

    fn cond(&mut self, c: &Option<Cond>) {
        match c {
            Some(Cond::True(p) | Cond::StrEq(p, _) | Cond::StrNe(p, _)) => self.add(p),
            Some(Cond::NonZero(p) | Cond::Exists(p)) => self.add(p),
            Some(Cond::NumEq(p, _) | Cond::Contains(p, _)) => self.add(p),
            None => {}
        }
    }

    fn src(&mut self, s: &Src) {
        if let Src::Path(p) = s {
            self.add(p);
        }
    }

    fn rule(&mut self, rule: &Rule) {
        match rule {
            Rule::Quiet => {}
            Rule::AgentText { text } | Rule::AgentDelta { text } | Rule::UserText { text } => {
                self.add_at(text)
            }
            Rule::ToolCall(c) => {
                self.add(c.id);
                self.src(&c.name);
                self.add(c.input);
            }
            Rule::ToolCallList { list, call } => {
                if let Some(items) = self.at(list) {
                    items.rule(&Rule::ToolCall(*call));
                }
            }
            Rule::ToolResult(r) => {
                for p in [r.id, r.input, r.output, r.error, r.exit] {
                    self.add(p);
                }
                self.src(&r.name);
                match r.status {
                    StatusSrc::Path(p) | StatusSrc::ErrorFlag(p) => self.add(p),
                    StatusSrc::SuccessFlag { flag, code } => {
                        self.add(flag);
                        self.add(code);
                    }
                }
            }
            Rule::Status(s) => self.tpl(s.detail),
            Rule::Truncated { detail, .. } => self.tpl(detail),
            Rule::When {
                cond,
                then,
                otherwise,
            } => {
                self.cond(&Some(*cond));
                self.rule(then);
                self.rule(otherwise);
            }
            Rule::Lifecycle(l) => {
                self.cond(&l.failed_if);
                self.cond(&l.cut_short_if);
                self.tpl(l.failed_detail);
                for p in l.error.iter().chain([&l.usage, &l.answer, &l.session]) {
                    self.add(p);
                }
                if let Some(u) = l.usage_figures {
                    // `each` is kept whole: its values' figures are read below it.
                    for p in [u.input, u.cached, u.output, u.reasoning, u.total] {
                        if u.each.is_empty() {
                            self.add(p);
                        }
                    }
                    self.add(u.cost);
                    self.add(u.each);
                }
            }
            Rule::Nested(n) => {
                if let Some(inner) = self.at(n.root) {
                    inner.add_at(n.key);
                    if let Some(r) = n.string_rule {
                        inner.rule(r);
                    }
                    for e in n.entries {
                        inner.rule(&e.rule);
                    }
                }
            }
            Rule::All(rules) => rules.iter().for_each(|r| self.rule(r)),
        }
    }
}

/// Parses one frame, building only what `keep` names.
pub(super) fn parse(s: &str, keep: &Keep) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(s);
    let v = keep.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

impl<'de> DeserializeSeed<'de> for &Keep {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        match self {
            Keep::Whole => serde::Deserialize::deserialize(d),
            Keep::Fields(_) => d.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for &Keep {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Keep::Fields(fields) = self else {
            return Err(de::Error::custom("whole values are not pruned"));
        };
        let mut out = Map::new();
        while let Some(found) = map.next_key_seed(KeyIn(fields))? {
            match found {
                Some(i) => {
                    let (key, child) = &fields[i];
                    let v = map.next_value_seed(child)?;
                    out.insert(key.to_string(), v);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// An object key, as its index among the kept keys: unkept keys cost no allocation.
struct KeyIn<'k>(&'k [(&'static str, Keep)]);

impl<'de> DeserializeSeed<'de> for KeyIn<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIn<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, s: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|(k, _)| *k == s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Vec<(&'static str, Keep)>) -> Keep {
        Keep::Fields(v)
    }

    #[test]
    fn paths_end_whole_and_prune_on_the_way() {
        let mut k = fields(vec![]);
        k.add(&["type"]);
        k.add(&["message", "content"]);
        k.add(&["message", "content", "text"]);
        k.tpl("{error.message} at {where}");
        assert_eq!(
            k,
            fields(vec![
                ("type", Keep::Whole),
                ("message", fields(vec![("content", Keep::Whole)])),
                ("error", fields(vec![("message", Keep::Whole)])),
                ("where", Keep::Whole),
            ])
        );
        let line = r#"{"type":"a","big":[1,2,{"x":"y"}],"message":{"id":7,"content":[{"t":1}]},
            "error":{"message":"m","code":3},"where":null}"#;
        assert_eq!(
            parse(line, &k).unwrap(),
            json!({"type":"a","message":{"content":[{"t":1}]},"error":{"message":"m"},"where":null})
        );
    }

    #[test]
    fn arrays_keep_every_element_pruned() {
        let k = fields(vec![("c", fields(vec![("type", Keep::Whole)]))]);
        let v = parse(
            r#"{"c":[{"type":"t","x":1},"s",2.5,[{"type":1,"y":2}]]}"#,
            &k,
        )
        .unwrap();
        assert_eq!(v, json!({"c":[{"type":"t"},"s",2.5,[{"type":1}]]}));
    }

    #[test]
    fn pruned_parts_are_still_checked_as_json() {
        let k = fields(vec![("a", Keep::Whole)]);
        for bad in [
            r#"{"a":1,"b":[1,}"#,
            r#"{"a":1,"b":"x"#,
            r#"{"a":1} x"#,
            r#"{"b":01}"#,
        ] {
            let want = serde_json::from_str::<Value>(bad).unwrap_err();
            let got = parse(bad, &k).unwrap_err();
            assert_eq!(
                (got.to_string(), got.is_eof()),
                (want.to_string(), want.is_eof())
            );
        }
        // Escaped keys are compared decoded.
        assert_eq!(parse(r#"{"\u0061":true}"#, &k).unwrap(), json!({"a":true}));
    }
}

/// Pruning must never change what the projector makes of a frame: every
/// genuine capture, through every transport table of its CLI's manifest.
#[cfg(test)]
mod equivalence {
    use super::Keep;
    use crate::engine::frames::Projector;
    use crate::engine::{EngineId, OutputTransport};
    use crate::ground::version::Version;

    fn project(p: &mut Projector, text: &str) -> String {
        let mut events = Vec::new();
        for line in text.split('\n') {
            events.extend(p.push_line(line.as_bytes()));
        }
        events.extend(p.finish());
        format!("{events:?}\n{:?}", p.tracker().finish(Some(0)))
    }

    #[test]
    fn pruned_and_whole_frames_project_alike() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut compared = 0;
        for id in EngineId::ALL {
            let Ok(versions) = std::fs::read_dir(root.join(id.as_str())) else {
                continue;
            };
            for dir in versions.flatten() {
                let v = Version::parse(&dir.file_name().to_string_lossy());
                for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
                    let name = f.file_name().to_string_lossy().into_owned();
                    if !name.ends_with(".stdout.jsonl") && !name.ends_with(".stdout.json") {
                        continue;
                    }
                    let text = std::fs::read_to_string(f.path()).unwrap();
                    for t in [OutputTransport::Jsonl, OutputTransport::Json] {
                        let mut pruned = Projector::new(id, v.as_ref(), t);
                        let mut whole = Projector::new(id, v.as_ref(), t);
                        assert_ne!(pruned.keep, Keep::Whole);
                        whole.keep = Keep::Whole;
                        let (a, b) = (project(&mut pruned, &text), project(&mut whole, &text));
                        assert_eq!(a, b, "{}", f.path().display());
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 50, "only {compared} captures compared");
    }
}
