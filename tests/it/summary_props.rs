//! Property tests for the fenced-summary scanner (`vf::engine::summary::extract`).

use proptest::prelude::*;
use serde_json::Value;
use vf::engine::summary::{Summary, extract};

/// JSON values that survive a print/parse round trip exactly (no floats:
/// serde_json's default float parsing may differ in the last bit).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Prose lines that never open or close a fence.
fn prose() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9 .,:;!?'\"{}\\[\\]`~#*-]{0,60}", 0..8)
        .prop_map(|lines| lines.join("\n"))
        .prop_filter("no fence markers", |s| !s.contains("```"))
}

/// Lines biased towards fence syntax, to reach every scanner state.
fn fence_soup() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("```".to_string()),
        Just("```json".to_string()),
        Just("```JSON".to_string()),
        Just("   ```json".to_string()),
        Just("    ```json".to_string()),
        Just("````".to_string()),
        Just("````md".to_string()),
        Just("``` json ```".to_string()),
        Just("```python".to_string()),
        Just("{\"a\": 1}".to_string()),
        Just("{".to_string()),
        Just("\r".to_string()),
        Just(String::new()),
        any::<String>(),
    ];
    prop::collection::vec(line, 0..24).prop_map(|l| l.join("\n"))
}

fn block(v: &Value, pretty: bool) -> String {
    let body = if pretty {
        serde_json::to_string_pretty(v).unwrap()
    } else {
        serde_json::to_string(v).unwrap()
    };
    format!("```json\n{body}\n```\n")
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        let a = extract(&s);
        // Deterministic, and no fence marker means no summary.
        prop_assert_eq!(&a, &extract(&s));
        if !s.contains("```") {
            prop_assert_eq!(a, Summary::Absent);
        }
    }

    #[test]
    fn fence_soup_never_panics(s in fence_soup()) {
        let got = extract(&s);
        if let Summary::Invalid { error } = &got {
            prop_assert!(!error.is_empty());
        }
    }

    #[test]
    fn valid_block_after_prose_round_trips(
        before in prose(), after in prose(), v in json_value(), pretty in any::<bool>()
    ) {
        let text = format!("{before}\n{}{after}", block(&v, pretty));
        prop_assert_eq!(extract(&text), Summary::Valid { value: v.clone() });
        // CRLF line endings read the same.
        let crlf = text.replace('\n', "\r\n");
        prop_assert_eq!(extract(&crlf), Summary::Valid { value: v });
    }

    #[test]
    fn last_block_wins(p in prose(), a in json_value(), b in json_value()) {
        let text = format!("{}{p}\n{}", block(&a, true), block(&b, false));
        prop_assert_eq!(extract(&text), Summary::Valid { value: b });
    }

    #[test]
    fn block_nested_in_a_longer_fence_is_content(p in prose(), v in json_value()) {
        let text = format!("{p}\n````md\n{}````\n", block(&v, true));
        prop_assert_eq!(extract(&text), Summary::Absent);
        // ... unless a real block follows the outer fence.
        let text = format!("{text}{}", block(&v, false));
        prop_assert_eq!(extract(&text), Summary::Valid { value: v });
    }

    #[test]
    fn unterminated_last_block_is_invalid(p in prose(), v in json_value(), body in prose()) {
        // Even after a complete block: the last opened block decides.
        let text = format!("{}{p}\n```json\n{body}", block(&v, true));
        let got = extract(&text);
        prop_assert!(
            matches!(&got, Summary::Invalid { error } if error.contains("never closed")),
            "{:?}", got
        );
    }

    #[test]
    fn broken_json_is_reported_not_guessed(p in prose(), v in json_value()) {
        let mut s = serde_json::to_string(&v).unwrap();
        s.push_str(",]");
        let text = format!("{p}\n```json\n{s}\n```\n");
        let got = extract(&text);
        prop_assert!(
            matches!(&got, Summary::Invalid { error } if error.contains("invalid JSON")),
            "{:?}", got
        );
    }
}
