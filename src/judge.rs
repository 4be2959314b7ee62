//! The optional judge ("System One", docs/JUDGE.md): a unit's recorded
//! answers and summary posted to an OpenAI-compatible chat-completions
//! endpoint for a verdict, validated strictly (`verdict.rs`).
//!
//! Off unless `VF_JUDGE_ENDPOINT`, `VF_JUDGE_MODEL` and `VF_JUDGE_API_KEY`
//! are all set: without them nothing is read or sent. What is sent comes
//! from the state dir only (the marker's summary, the recorded answers),
//! where private ranges and redacted text are already absent.

pub mod verdict;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Result, VfError};
use crate::marker::MarkerStore;

pub use verdict::{Decision, Verdict};

pub const ENDPOINT_VAR: &str = "VF_JUDGE_ENDPOINT";
pub const MODEL_VAR: &str = "VF_JUDGE_MODEL";
pub const KEY_VAR: &str = "VF_JUDGE_API_KEY";
/// Largest response body read, in bytes.
pub const MAX_BODY_BYTES: u64 = 1 << 20;

/// The judge's configuration, read from the environment by the command.
#[derive(Debug, Clone)]
pub struct Config {
    pub endpoint: String,
    pub model: String,
    pub api_key: String,
    /// The whole call: connect, send, the response and its body.
    pub timeout: Duration,
}

impl Config {
    /// The configuration from these variables' values, or the usage error
    /// that names what is missing or wrong. Only `http://` is spoken: vf has
    /// no TLS stack (a local proxy can front an `https://` service).
    pub fn from_values(
        endpoint: Option<String>,
        model: Option<String>,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Config> {
        let set = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let (endpoint, model, api_key) = (set(endpoint), set(model), set(api_key));
        let missing: Vec<&str> = [
            (ENDPOINT_VAR, endpoint.is_none()),
            (MODEL_VAR, model.is_none()),
            (KEY_VAR, api_key.is_none()),
        ]
        .into_iter()
        .filter_map(|(name, gone)| gone.then_some(name))
        .collect();
        let (Some(endpoint), Some(model), Some(api_key)) = (endpoint, model, api_key) else {
            return Err(VfError::usage(format!(
                "the judge is not configured: set {} (docs/JUDGE.md); nothing was sent",
                missing.join(", ")
            )));
        };
        if !endpoint.starts_with("http://") || endpoint.len() == "http://".len() {
            return Err(VfError::usage(format!(
                "{ENDPOINT_VAR} {:?} is not an http:// URL (vf speaks plain HTTP only; \
                 front an https:// service with a local proxy); nothing was sent",
                crate::text::cut(&endpoint, 200)
            )));
        }
        if api_key.chars().any(|c| c.is_control()) {
            return Err(VfError::usage(format!(
                "{KEY_VAR} contains a control character; nothing was sent"
            )));
        }
        Ok(Config {
            endpoint,
            model,
            api_key,
            timeout,
        })
    }
}

/// What goes to the judge: the unit's state and summary, and its recorded
/// answers with the ids the verdict may score.
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    pub unit: String,
    pub engine: String,
    pub state: String,
    pub summary: Option<Value>,
    pub answers: Vec<InputAnswer>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputAnswer {
    pub id: String,
    pub attempt: u32,
    pub state: String,
    pub text: String,
    pub truncated: bool,
}

impl Input {
    pub fn ids(&self) -> Vec<String> {
        self.answers.iter().map(|a| a.id.clone()).collect()
    }
}

/// The unit's input from the state dir: exit 2 for an unknown unit or one
/// with nothing to judge, 5 for a marker vf cannot use.
pub fn load_input(state_dir: &Path, unit: &str) -> Result<Input> {
    crate::names::check("unit name", unit)?;
    let marker = MarkerStore::new(state_dir)
        .load(unit)?
        .ok_or_else(|| VfError::usage(format!("no unit {unit:?} in {}", state_dir.display())))?;
    let answers: Vec<InputAnswer> = crate::history::load(state_dir, unit)
        .into_iter()
        .enumerate()
        .map(|(i, r)| InputAnswer {
            id: format!("r{}", i + 1),
            attempt: r.attempt,
            state: r.state.as_str().to_string(),
            text: r.text,
            truncated: r.truncated,
        })
        .collect();
    if answers.is_empty() && marker.summary.is_none() {
        return Err(VfError::usage(format!(
            "unit {unit:?} has no recorded answer and no summary: nothing to judge"
        )));
    }
    Ok(Input {
        unit: unit.to_string(),
        engine: marker.engine.as_str().to_string(),
        state: marker.state.as_str().to_string(),
        summary: marker.summary,
        answers,
    })
}

/// The instructions the judge model gets (docs/JUDGE.md quotes them).
pub const INSTRUCTIONS: &str = "You judge the work of a coding agent. The user message is a JSON \
object: the unit, its state, its summary and its recorded answers, each with an id. Reply with \
one JSON object only: {\"verdict\": \"pass\"|\"fail\"|\"uncertain\", \"score\": a number from 0 \
to 1, \"reason\": a short string, \"answers\": [{\"id\": an id from the input, \"score\": 0 to 1, \
\"note\": a short string}]}.";

/// The chat-completions request body.
pub fn request_body(cfg: &Config, input: &Input) -> Value {
    json!({
        "model": cfg.model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": serde_json::to_string(input).unwrap_or_default()},
        ],
    })
}

/// Why no verdict came back.
#[derive(Debug)]
pub enum Failure {
    /// The endpoint could not be reached (connection refused, no such host).
    Unreachable(String),
    /// The call did not end within the timeout.
    Timeout(Duration),
    /// A status other than 2xx.
    Status(u16),
    /// The body failed validation: never a pass.
    Invalid(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(e) => write!(f, "the judge endpoint could not be reached: {e}"),
            Failure::Timeout(d) => {
                write!(f, "the judge did not answer within {}s", d.as_secs_f64())
            }
            Failure::Status(s) => write!(f, "the judge endpoint answered HTTP {s}"),
            Failure::Invalid(e) => write!(f, "the judge's response is invalid: {e}"),
        }
    }
}

/// Posts `input` and validates the answer.
pub fn judge(cfg: &Config, input: &Input) -> std::result::Result<Verdict, Failure> {
    let body = serde_json::to_vec(&request_body(cfg, input))
        .map_err(|e| Failure::Invalid(format!("the request could not be built: {e}")))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(cfg.timeout))
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .into();
    let sent = agent
        .post(&cfg.endpoint)
        .header("Authorization", &format!("Bearer {}", cfg.api_key))
        .content_type("application/json")
        .send(&body[..]);
    let mut resp = sent.map_err(|e| transport_failure(e, cfg.timeout))?;
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(Failure::Status(status));
    }
    let text = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(|e| transport_failure(e, cfg.timeout))?;
    verdict::parse(&text, &input.ids()).map_err(Failure::Invalid)
}

fn transport_failure(e: ureq::Error, timeout: Duration) -> Failure {
    match e {
        ureq::Error::Timeout(_) => Failure::Timeout(timeout),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            Failure::Timeout(timeout)
        }
        ureq::Error::BodyExceedsLimit(n) => Failure::Invalid(format!(
            "the body is over {n} bytes (at most {MAX_BODY_BYTES})"
        )),
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed | ureq::Error::Io(_) => {
            Failure::Unreachable(e.to_string())
        }
        other => Failure::Invalid(other.to_string()),
    }
}
