//! Canonical JSON (RFC 8785 style) for envelopes that must be byte-stable:
//! object keys sorted by their UTF-16 code units, no insignificant
//! whitespace, strings escaped minimally (`\"`, `\\`, the short control
//! escapes, `\u00xx` for the other controls), numbers as serde_json prints
//! them (integers exactly). One line, whatever the input.

use serde_json::Value;

/// `v` as canonical JSON text.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v);
    out
}

fn write(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here, whatever order the map keeps (serde_json's
            // `preserve_order` feature may be on through another crate).
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write(out, &map[k]);
            }
            out.push('}');
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::to_string;
    use serde_json::json;

    #[test]
    fn byte_exact() {
        let v = json!({
            "b": [1, -2, true, null, 1.5],
            "a": {"z": "x\"y\\\n\t\u{1}é€😀", "\u{e9}": 0, "Z": {}},
            "\u{1d11e}": "astral sorts by UTF-16 before U+FFFD",
            "\u{fffd}": []
        });
        assert_eq!(
            to_string(&v),
            "{\"a\":{\"Z\":{},\"z\":\"x\\\"y\\\\\\n\\t\\u0001é€😀\",\"é\":0},\
             \"b\":[1,-2,true,null,1.5],\
             \"\u{1d11e}\":\"astral sorts by UTF-16 before U+FFFD\",\"\u{fffd}\":[]}"
        );
    }

    #[test]
    fn round_trips_and_is_one_line() {
        let v = json!({"text": "line1\nline2\u{2028}", "n": 18446744073709551615u64});
        let s = to_string(&v);
        assert!(!s.contains('\n'));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert!(s.contains("18446744073709551615"));
    }
}
