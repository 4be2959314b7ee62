//! The reviewer's verdict: the last fenced ```` ```json ```` block of its
//! answer, checked against a built-in JSON Schema before vf acts on it. A
//! reviewer is an engine like any other, so its answer is hostile input:
//! nothing of it is trusted, and an error quotes at most a bounded,
//! escaped piece of it.

use std::sync::OnceLock;

use serde_json::Value;

use crate::engine::summary::{Summary, extract};
use crate::ground::text::one_line;
use crate::unit::marker::rounds::Verdict;

/// The verdict's schema (draft 2020-12), shown to the reviewer and in the
/// docs: `comments` may be left out (none), each comment needs a non-empty
/// `text`, `line` is 1-based, and no other key is accepted anywhere.
pub const VERDICT_SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["verdict"],
  "additionalProperties": false,
  "properties": {
    "verdict": {"enum": ["approve", "changes"]},
    "comments": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["text"],
        "additionalProperties": false,
        "properties": {
          "path": {"type": "string"},
          "line": {"type": "integer", "minimum": 1},
          "text": {"type": "string", "minLength": 1}
        }
      }
    }
  }
}"#;

/// Characters of hostile text an error quotes at most.
const QUOTE_CHARS: usize = 200;

/// The compiled schema, built once: the text is vf's own, so a failure to
/// compile it is a bug the unit tests catch, never a user's error.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(VERDICT_SCHEMA).expect("VERDICT_SCHEMA is JSON");
        jsonschema::draft202012::new(&schema).expect("VERDICT_SCHEMA is a valid schema")
    })
}

/// The reviewer's verdict, from the run's extracted summary or, when the run
/// has none, from its answer text (the last ```` ```json ```` block, or the
/// whole answer when it is one JSON document, as native schema flags make
/// engines answer). `Err` is one line saying what was wrong.
pub fn parse(summary: Option<&Value>, answer: Option<&str>) -> Result<Verdict, String> {
    let from_answer;
    let value = match (summary, answer) {
        (Some(value), _) => value,
        (None, None) => return Err("no verdict: the reviewer gave no answer".into()),
        (None, Some(answer)) => {
            from_answer = of_answer(answer)?;
            &from_answer
        }
    };
    check(value)?;
    // A document the schema accepts that serde still refuses: a `line` too
    // large for u64, or written as a float (`12.0` is an integer to JSON
    // Schema).
    serde_json::from_value(value.clone()).map_err(|e| {
        format!(
            "the verdict does not match the schema: {}",
            one_line(&e.to_string(), QUOTE_CHARS)
        )
    })
}

/// The JSON document of an answer, by the summary's own rule.
fn of_answer(answer: &str) -> Result<Value, String> {
    match extract(answer) {
        Summary::Valid { value } => Ok(value),
        Summary::Invalid { error } => Err(format!("no verdict: {}", one_line(&error, QUOTE_CHARS))),
        Summary::Absent => serde_json::from_str(answer.trim())
            .map_err(|_| "no verdict: the answer has no ```json block".to_string()),
    }
}

/// `Err`: the schema's first violation, at its JSON pointer, and how many
/// more there are.
fn check(value: &Value) -> Result<(), String> {
    let mut errors = validator().iter_errors(value);
    let Some(first) = errors.next() else {
        return Ok(());
    };
    let at = first.instance_path().to_string();
    let at = if at.is_empty() { "/".to_string() } else { at };
    let mut text = format!(
        "the verdict does not match the schema: {}: {}",
        one_line(&at, QUOTE_CHARS),
        one_line(&first.to_string(), QUOTE_CHARS)
    );
    let more = errors.count();
    if more > 0 {
        text.push_str(&format!(" (and {more} more)"));
    }
    Err(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::marker::rounds::{Comment, VerdictKind};
    use serde_json::json;

    fn fenced(v: &Value) -> String {
        format!("I read the diff.\n\n```json\n{v}\n```\n")
    }

    fn of(v: Value) -> Result<Verdict, String> {
        parse(None, Some(&fenced(&v)))
    }

    #[test]
    fn the_schema_compiles_and_is_shown_as_it_is_checked() {
        let schema: Value = serde_json::from_str(VERDICT_SCHEMA).unwrap();
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(
            schema["properties"]["comments"]["items"]["additionalProperties"],
            json!(false)
        );
        // Building it panics on a bad schema: this is the place it would.
        assert!(validator().is_valid(&json!({"verdict": "approve"})));
    }

    #[test]
    fn approve_without_comments() {
        assert_eq!(
            of(json!({"verdict": "approve"})),
            Ok(Verdict {
                verdict: VerdictKind::Approve,
                comments: vec![],
            })
        );
    }

    #[test]
    fn changes_with_comments_with_and_without_a_place() {
        let v = json!({"verdict": "changes", "comments": [
            {"path": "src/lib.rs", "line": 12, "text": "This panics on empty input."},
            {"path": "README.md", "text": "Document the flag."},
            {"text": "Add a test."},
        ]});
        let want = Verdict {
            verdict: VerdictKind::Changes,
            comments: vec![
                Comment {
                    path: Some("src/lib.rs".into()),
                    line: Some(12),
                    text: "This panics on empty input.".into(),
                },
                Comment {
                    path: Some("README.md".into()),
                    line: None,
                    text: "Document the flag.".into(),
                },
                Comment {
                    path: None,
                    line: None,
                    text: "Add a test.".into(),
                },
            ],
        };
        assert_eq!(of(v.clone()), Ok(want.clone()));
        // The run's extracted summary is used as it is, before the answer.
        assert_eq!(parse(Some(&v), Some("no block here")), Ok(want.clone()));
        // An answer that is, whole, the JSON document.
        assert_eq!(parse(None, Some(&format!("  {v}\n"))), Ok(want));
    }

    #[test]
    fn extra_keys_are_refused_at_every_level() {
        assert_eq!(
            of(json!({"verdict": "approve", "score": 9})),
            Err(
                "the verdict does not match the schema: /: Additional properties are not \
                 allowed ('score' was unexpected)"
                    .into()
            )
        );
        let e = of(json!({"verdict": "changes", "comments": [{"text": "x", "severity": "high"}]}))
            .unwrap_err();
        assert!(
            e.starts_with("the verdict does not match the schema: /comments/0: "),
            "{e}"
        );
        assert!(e.contains("'severity' was unexpected"), "{e}");
    }

    #[test]
    fn only_the_two_verdict_words() {
        for word in [json!("Approve"), json!("reject"), json!(""), json!(true)] {
            let e = of(json!({"verdict": word})).unwrap_err();
            assert!(
                e.starts_with("the verdict does not match the schema: /verdict: "),
                "{e}"
            );
        }
        let e = of(json!({"comments": []})).unwrap_err();
        assert_eq!(
            e,
            "the verdict does not match the schema: /: \"verdict\" is a required property"
        );
    }

    #[test]
    fn a_line_is_a_positive_integer() {
        for (line, why) in [
            (json!(0), "less than the minimum of 1"),
            (json!(-3), "less than the minimum of 1"),
            (json!("12"), "is not of type \"integer\""),
            (json!(1.5), "is not of type \"integer\""),
        ] {
            let v = json!({"verdict": "changes", "comments": [{"line": line, "text": "t"}]});
            let e = of(v).unwrap_err();
            assert!(
                e.starts_with("the verdict does not match the schema: /comments/0/line: "),
                "{e}"
            );
            assert!(e.contains(why), "{e}");
        }
        // Integers to JSON Schema, but not a u64: refused by the second check.
        for line in ["12.0", "18446744073709551616"] {
            let text = format!(
                "```json\n{{\"verdict\": \"changes\", \"comments\": [{{\"line\": {line}, \"text\": \"t\"}}]}}\n```"
            );
            let e = parse(None, Some(&text)).unwrap_err();
            assert!(
                e.starts_with("the verdict does not match the schema: "),
                "{e}"
            );
        }
    }

    #[test]
    fn a_comment_needs_a_non_empty_text() {
        let e = of(json!({"verdict": "changes", "comments": [{"path": "a.rs", "text": ""}]}))
            .unwrap_err();
        assert!(
            e.starts_with("the verdict does not match the schema: /comments/0/text: "),
            "{e}"
        );
        let e = of(json!({"verdict": "changes", "comments": [{"path": "a.rs"}]})).unwrap_err();
        assert_eq!(
            e,
            "the verdict does not match the schema: /comments/0: \"text\" is a required property"
        );
    }

    #[test]
    fn several_violations_name_the_first_and_count_the_rest() {
        let e = of(json!({"verdict": "maybe", "comments": [{"line": 0}], "x": 1})).unwrap_err();
        assert!(e.ends_with(" more)"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn garbage_answers_say_what_was_missing() {
        assert_eq!(
            parse(None, None),
            Err("no verdict: the reviewer gave no answer".into())
        );
        assert_eq!(
            parse(None, Some("Looks good to me!")),
            Err("no verdict: the answer has no ```json block".into())
        );
        let e = parse(None, Some("```json\n{\"verdict\": \"approve\",\n```\n")).unwrap_err();
        assert!(
            e.starts_with("no verdict: invalid JSON in the ```json block: "),
            "{e}"
        );
        let e = parse(None, Some("```json\n{\"verdict\": \"approve\"}\n")).unwrap_err();
        assert_eq!(e, "no verdict: the last ```json block is never closed");
        // JSON, but not an object.
        let e = parse(None, Some("```json\n[\"approve\"]\n```")).unwrap_err();
        assert!(
            e.starts_with("the verdict does not match the schema: /: "),
            "{e}"
        );
    }

    #[test]
    fn a_huge_hostile_answer_is_quoted_short_on_one_line() {
        // A verdict word of 1 MB with terminal escapes and newlines in it.
        let word = "\u{1b}[2J\nowned ".repeat(100_000) + "é";
        let answer = format!(
            "{}\n```json\n{}\n```\n",
            "noise ".repeat(500_000),
            json!({ "verdict": word })
        );
        let e = parse(None, Some(&answer)).unwrap_err();
        assert!(e.len() < 1_000, "{} bytes", e.len());
        assert_eq!(e.lines().count(), 1);
        assert!(!e.contains('\u{1b}'), "{e}");
        assert!(
            e.starts_with("the verdict does not match the schema: /verdict: "),
            "{e}"
        );
        // 4 MB of text without a block.
        let e = parse(None, Some(&"`{\"verdict\"".repeat(400_000))).unwrap_err();
        assert_eq!(e, "no verdict: the answer has no ```json block");
    }

    #[test]
    fn odd_unicode_in_comments_is_kept_verbatim() {
        let odd = "Zero\u{200b}width, RTL \u{202e}txet, emoji 👩‍💻, NUL-free \u{7f}, 𝔘𝔫𝔦";
        let path = "src/ünï\u{301}code/файл.rs";
        let v = of(json!({"verdict": "changes",
            "comments": [{"path": path, "line": 1, "text": odd}]}))
        .unwrap();
        assert_eq!(v.comments[0].text, odd);
        assert_eq!(v.comments[0].path.as_deref(), Some(path));
    }
}
