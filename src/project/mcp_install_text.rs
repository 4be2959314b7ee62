//! Splicing one MCP server entry into a user's JSON or TOML file while
//! keeping every other byte (`vf mcp install --write`): the entry goes in
//! as text, then the result is parsed and must equal the old file plus
//! exactly that entry, or nothing is written.

use serde_json::Value;

/// What a merge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
    Replaced,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
            Outcome::Replaced => "replaced (--force)",
        }
    }
}

/// Why a merge is refused (the caller names the file).
pub type Refusal = String;

fn different(name: &str, existing: &str) -> Refusal {
    format!(
        "it already has a different `{name}` server ({}); --force replaces it",
        crate::ground::text::cut(existing, 200)
    )
}

// ------------------------------------------------------------------ JSON

/// A member of a JSON object in the text: where its key starts and its
/// value's span.
struct Member {
    key: String,
    key_start: usize,
    value: (usize, usize),
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Past the string that starts at `i` (a `"`).
fn skip_string(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Past the value that starts at `i` (the text is valid JSON: it parsed).
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// The members of the object whose `{` is at `start`, and where its `}` is.
fn members(text: &str, start: usize) -> (Vec<Member>, usize) {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        i = skip_ws(b, i);
        if i >= b.len() || b[i] == b'}' {
            return (out, i);
        }
        let key_start = i;
        let key_end = skip_string(b, i);
        let key = serde_json::from_str::<String>(&text[key_start..key_end]).unwrap_or_default();
        i = skip_ws(b, key_end) + 1; // the ':'
        let vs = skip_ws(b, i);
        let ve = skip_value(b, vs);
        out.push(Member {
            key,
            key_start,
            value: (vs, ve),
        });
        i = skip_ws(b, ve);
        if b.get(i) == Some(&b',') {
            i += 1;
        }
    }
}

/// The indentation of the line `at` is on, when only whitespace precedes
/// it there (`None`: the object is written on one line).
fn indent_at(text: &str, at: usize) -> Option<&str> {
    let line = text[..at].rfind('\n').map(|n| n + 1)?;
    let ws = &text[line..at];
    ws.chars().all(char::is_whitespace).then_some(ws)
}

/// `v` as text placed at a column with `indent` (`None`: on one line).
fn value_text(v: &Value, indent: Option<&str>) -> String {
    match indent {
        None => serde_json::to_string(v).unwrap_or_default(),
        Some(ind) => {
            let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
            pretty.replace('\n', &format!("\n{ind}"))
        }
    }
}

/// `key: v` spliced in as the first member of the object at `start`.
fn insert_member(text: &str, start: usize, key: &str, v: &Value) -> String {
    let (ms, close) = members(text, start);
    let k = Value::String(key.to_string()).to_string();
    match ms.first() {
        Some(first) => {
            let ind = indent_at(text, first.key_start);
            let sep = match ind {
                Some(i) => format!(",\n{i}"),
                None => ", ".to_string(),
            };
            let at = first.key_start;
            format!(
                "{}{k}: {}{sep}{}",
                &text[..at],
                value_text(v, ind),
                &text[at..]
            )
        }
        None => {
            let outer = indent_at(text, start).unwrap_or("").to_string();
            let ind = format!("{outer}  ");
            let body = value_text(v, Some(&ind));
            format!(
                "{}{{\n{ind}{k}: {body}\n{outer}}}{}",
                &text[..start],
                &text[close + 1..]
            )
        }
    }
}

fn without(v: &Value, container: &str, name: &str) -> Value {
    let mut v = v.clone();
    if let Some(c) = v.get_mut(container).and_then(Value::as_object_mut) {
        c.remove(name);
        if c.is_empty() {
            v.as_object_mut().map(|o| o.remove(container));
        }
    }
    v
}

/// Merges `container.name = entry` into the JSON text `old`.
pub fn merge_json(
    old: Option<&str>,
    container: &str,
    name: &str,
    entry: &Value,
    force: bool,
) -> Result<(String, Outcome), Refusal> {
    let fresh = || {
        let v = serde_json::json!({ container: { name: entry } });
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    };
    let text = match old {
        None => return Ok((fresh(), Outcome::Created)),
        Some(t) if t.trim().is_empty() => return Ok((fresh(), Outcome::Updated)),
        Some(t) => t,
    };
    let parsed: Value = serde_json::from_str(text)
        .map_err(|e| format!("it does not parse as JSON ({e}): vf leaves it alone"))?;
    if !parsed.is_object() {
        return Err("it is not a JSON object".into());
    }
    let top = skip_ws(text.as_bytes(), 0);
    let (top_members, _) = members(text, top);
    let slot = top_members.iter().rev().find(|m| m.key == container);
    let (new, outcome) = match (slot, parsed.get(container)) {
        (None, _) => {
            let wrapped = serde_json::json!({ name: entry });
            (
                insert_member(text, top, container, &wrapped),
                Outcome::Updated,
            )
        }
        (Some(_), Some(c)) if !c.is_object() => {
            return Err(format!("its `{container}` is not an object"));
        }
        (Some(m), Some(c)) => match c.get(name) {
            Some(existing) if existing == entry => {
                return Ok((text.to_string(), Outcome::Unchanged));
            }
            Some(existing) if !force => return Err(different(name, &existing.to_string())),
            Some(_) => {
                let (ms, _) = members(text, m.value.0);
                let Some(own) = ms.iter().rev().find(|x| x.key == name) else {
                    return Err(format!(
                        "its `{container}.{name}` could not be found in the text"
                    ));
                };
                let ind = indent_at(text, own.key_start);
                let (vs, ve) = own.value;
                let new = format!("{}{}{}", &text[..vs], value_text(entry, ind), &text[ve..]);
                (new, Outcome::Replaced)
            }
            None => (
                insert_member(text, m.value.0, name, entry),
                Outcome::Updated,
            ),
        },
        (Some(_), None) => return Err(format!("its `{container}` could not be read")),
    };
    let check: Value =
        serde_json::from_str(&new).map_err(|e| format!("the merge broke it ({e})"))?;
    let holds = check.get(container).and_then(|c| c.get(name)) == Some(entry);
    if !holds || without(&check, container, name) != without(&parsed, container, name) {
        return Err("vf could not add its entry without changing the rest: add it by hand".into());
    }
    Ok((new, outcome))
}

// ------------------------------------------------------------------ TOML

fn server_of<'a>(t: &'a toml::Table, name: &str) -> Result<Option<&'a toml::Value>, Refusal> {
    match t.get("mcp_servers") {
        None => Ok(None),
        Some(toml::Value::Table(s)) => Ok(s.get(name)),
        Some(_) => Err("its `mcp_servers` is not a table".into()),
    }
}

fn without_server(mut t: toml::Table, name: &str) -> toml::Table {
    if let Some(toml::Value::Table(s)) = t.get_mut("mcp_servers") {
        s.remove(name);
        if s.is_empty() {
            t.remove("mcp_servers");
        }
    }
    t
}

/// The text without the `[mcp_servers.<name>]` table and its sub-tables.
fn drop_table(text: &str, name: &str) -> String {
    let own = |h: &str| {
        let h: String = h.chars().filter(|c| !c.is_whitespace()).collect();
        h == format!("[mcp_servers.{name}]") || h.starts_with(&format!("[mcp_servers.{name}."))
    };
    let mut out = String::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with('[') {
            skipping = own(t.split('#').next().unwrap_or(t));
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// Merges `table` (the text of `[mcp_servers.<name>]`) into codex's
/// `config.toml` text `old`.
pub fn merge_toml(
    old: Option<&str>,
    name: &str,
    table: &str,
    force: bool,
) -> Result<(String, Outcome), Refusal> {
    let table = table.to_string();
    let text = match old {
        None => return Ok((table, Outcome::Created)),
        Some(t) => t,
    };
    let parse = |s: &str| s.parse::<toml::Table>();
    let parsed =
        parse(text).map_err(|e| format!("it does not parse as TOML ({e}): vf leaves it alone"))?;
    let want = parse(&table).map_err(|e| e.to_string())?;
    let want = server_of(&want, name)?.cloned();
    let (base, outcome) = match server_of(&parsed, name)? {
        Some(v) if Some(v) == want.as_ref() => return Ok((text.to_string(), Outcome::Unchanged)),
        Some(v) if !force => return Err(different(name, &v.to_string().replace('\n', " "))),
        Some(_) => (drop_table(text, name), Outcome::Replaced),
        None => (text.to_string(), Outcome::Updated),
    };
    let sep = match base.as_str() {
        "" => "",
        b if b.ends_with("\n\n") => "",
        b if b.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    let new = format!("{base}{sep}{table}");
    let by_hand = || {
        format!("vf could not add its entry without rewriting the file: add it by hand:\n{table}")
    };
    let check = parse(&new).map_err(|_| by_hand())?;
    if server_of(&check, name)?.cloned() != want
        || without_server(check, name) != without_server(parsed, name)
    {
        return Err(by_hand());
    }
    Ok((new, outcome))
}
