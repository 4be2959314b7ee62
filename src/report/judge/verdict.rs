//! The judge's answer, validated strictly (docs/JUDGE.md, "The response").
//!
//! Pure: the HTTP body in, a [`Verdict`] or the first reason it is invalid
//! out. Nothing that fails here is ever reported as a verdict.

use serde::Serialize;
use serde_json::{Map, Value};

/// Longest `reason` or `note` kept, in bytes (a longer one is invalid).
pub const MAX_TEXT_BYTES: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Pass,
    Fail,
    Uncertain,
}

/// One recorded answer as the judge scored it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerScore {
    pub id: String,
    pub score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub verdict: Decision,
    pub score: f64,
    pub reason: String,
    pub answers: Vec<AnswerScore>,
    /// What was dropped (an unknown answer id), one line each.
    pub warnings: Vec<String>,
}

/// Reads the chat-completions envelope and the verdict in its first
/// choice's content. `known` are the answer ids vf sent.
pub fn parse(body: &str, known: &[String]) -> Result<Verdict, String> {
    let envelope: Value =
        serde_json::from_str(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let content = envelope
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("the envelope has no `choices` array")?
        .first()
        .ok_or("`choices` is empty")?
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .ok_or("`choices[0].message.content` is not a string")?;
    let verdict: Value = serde_json::from_str(content)
        .map_err(|e| format!("the message content is not a JSON verdict: {e}"))?;
    let obj = verdict
        .as_object()
        .ok_or("the verdict is not a JSON object")?;
    only_keys(
        obj,
        &["verdict", "score", "reason", "answers"],
        "the verdict",
    )?;
    let decision = match obj.get("verdict").and_then(Value::as_str) {
        Some("pass") => Decision::Pass,
        Some("fail") => Decision::Fail,
        Some("uncertain") => Decision::Uncertain,
        _ => return Err("`verdict` is not one of \"pass\", \"fail\", \"uncertain\"".into()),
    };
    let score = unit_score(obj.get("score"), "`score`")?;
    let reason = text(obj.get("reason"), "`reason`")?
        .ok_or("`reason` is missing")?
        .to_string();
    let (answers, warnings) = answer_scores(obj.get("answers"), known)?;
    Ok(Verdict {
        verdict: decision,
        score,
        reason,
        answers,
        warnings,
    })
}

fn only_keys(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{what} has an unknown key {k:?}")),
        None => Ok(()),
    }
}

/// A number in `0..=1`. JSON has no NaN or infinity, and a literal too large
/// for an f64 (`1e400`) does not parse: both are refused before this.
fn unit_score(v: Option<&Value>, what: &str) -> Result<f64, String> {
    let n = v
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("{what} is not a number"))?;
    if !n.is_finite() || !(0.0..=1.0).contains(&n) {
        return Err(format!("{what} {n} is not within 0..=1"));
    }
    Ok(n)
}

fn text<'a>(v: Option<&'a Value>, what: &str) -> Result<Option<&'a str>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= MAX_TEXT_BYTES => Ok(Some(s)),
        Some(Value::String(s)) => Err(format!(
            "{what} is {} bytes long; at most {MAX_TEXT_BYTES} are allowed",
            s.len()
        )),
        Some(_) => Err(format!("{what} is not a string")),
    }
}

fn answer_scores(
    v: Option<&Value>,
    known: &[String],
) -> Result<(Vec<AnswerScore>, Vec<String>), String> {
    let Some(v) = v else {
        return Ok((Vec::new(), Vec::new()));
    };
    let list = v.as_array().ok_or("`answers` is not an array")?;
    let (mut answers, mut warnings) = (Vec::<AnswerScore>::new(), Vec::new());
    for (i, item) in list.iter().enumerate() {
        let at = format!("`answers[{i}]`");
        let obj = item
            .as_object()
            .ok_or_else(|| format!("{at} is not an object"))?;
        only_keys(obj, &["id", "score", "note"], &at)?;
        let id = text(obj.get("id"), &format!("{at}.id"))?
            .ok_or_else(|| format!("{at}.id is missing"))?;
        let score = unit_score(obj.get("score"), &format!("{at}.score"))?;
        let note = text(obj.get("note"), &format!("{at}.note"))?.map(str::to_string);
        if !known.iter().any(|k| k == id) {
            warnings.push(format!(
                "judge: unknown answer id {:?} dropped",
                crate::ground::text::cut(id, 64)
            ));
            continue;
        }
        if answers.iter().any(|a| a.id == id) {
            return Err(format!("{at}.id {id:?} is scored twice"));
        }
        answers.push(AnswerScore {
            id: id.to_string(),
            score,
            note,
        });
    }
    Ok((answers, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrap(content: &str) -> String {
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]})
            .to_string()
    }

    fn known() -> Vec<String> {
        vec!["r1".into(), "r2".into()]
    }

    #[test]
    fn a_valid_verdict_keeps_known_ids_and_drops_unknown_ones() {
        let body = wrap(
            r#"{"verdict":"pass","score":0.75,"reason":"ok","answers":[{"id":"r2","score":1,"note":"n"},{"id":"r9","score":0.5}]}"#,
        );
        let v = parse(&body, &known()).unwrap();
        assert_eq!(
            v,
            Verdict {
                verdict: Decision::Pass,
                score: 0.75,
                reason: "ok".into(),
                answers: vec![AnswerScore {
                    id: "r2".into(),
                    score: 1.0,
                    note: Some("n".into())
                }],
                warnings: vec!["judge: unknown answer id \"r9\" dropped".into()],
            }
        );
    }

    #[test]
    fn every_malformed_shape_is_an_error_naming_it() {
        let cases: &[(&str, &str)] = &[
            ("not json", "the body is not JSON"),
            ("{}", "no `choices` array"),
            (r#"{"choices":[]}"#, "`choices` is empty"),
            (r#"{"choices":[{"message":{"content":3}}]}"#, "not a string"),
        ];
        for (body, want) in cases {
            let e = parse(body, &known()).unwrap_err();
            assert!(e.contains(want), "{body}: {e}");
        }
        let contents: &[(&str, &str)] = &[
            ("NaN", "not a JSON verdict"),
            (
                r#"{"verdict":"pass","score":NaN,"reason":""}"#,
                "not a JSON verdict",
            ),
            (
                r#"{"verdict":"pass","score":Infinity,"reason":""}"#,
                "not a JSON verdict",
            ),
            (
                r#"{"verdict":"pass","score":1e400,"reason":""}"#,
                "not a JSON verdict",
            ),
            (
                r#"{"verdict":"pass","score":1.5,"reason":""}"#,
                "`score` 1.5 is not within 0..=1",
            ),
            (
                r#"{"verdict":"pass","score":-0.1,"reason":""}"#,
                "not within 0..=1",
            ),
            (
                r#"{"verdict":"pass","score":"1","reason":""}"#,
                "`score` is not a number",
            ),
            (
                r#"{"verdict":"ok","score":1,"reason":""}"#,
                "`verdict` is not one of",
            ),
            (r#"{"verdict":"pass","score":1}"#, "`reason` is missing"),
            (
                r#"{"verdict":"pass","score":1,"reason":"","extra":1}"#,
                "unknown key \"extra\"",
            ),
            (r#"[1]"#, "not a JSON object"),
            (
                r#"{"verdict":"pass","score":1,"reason":"","answers":{}}"#,
                "not an array",
            ),
            (
                r#"{"verdict":"pass","score":1,"reason":"","answers":[{"id":"r1","score":2}]}"#,
                "`answers[0]`.score 2 is not within 0..=1",
            ),
            (
                r#"{"verdict":"pass","score":1,"reason":"","answers":[{"id":"r1","score":1},{"id":"r1","score":0}]}"#,
                "scored twice",
            ),
        ];
        for (content, want) in contents {
            let e = parse(&wrap(content), &known()).unwrap_err();
            assert!(e.contains(want), "{content}: {e}");
        }
        let long = format!(
            r#"{{"verdict":"fail","score":0,"reason":"{}"}}"#,
            "x".repeat(MAX_TEXT_BYTES + 1)
        );
        assert!(
            parse(&wrap(&long), &known())
                .unwrap_err()
                .contains("at most")
        );
    }
}
