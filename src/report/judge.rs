//! The optional judge ("System One", docs/JUDGE.md): a unit's recorded
//! answers and summary posted to an OpenAI-compatible chat-completions
//! endpoint for a verdict, validated strictly (`verdict.rs`).
//!
//! `https://` goes through `tls.rs` (certificates always verified); plain
//! `http://` only to a loopback host, so the API key never crosses the
//! network in clear.
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

use crate::ground::env::EnvVars;
use crate::ground::error::{Result, VfError};
use crate::unit::marker::MarkerStore;

pub use verdict::{Decision, Verdict};

pub const ENDPOINT_VAR: &str = EnvVars::VF_JUDGE_ENDPOINT;
pub const MODEL_VAR: &str = EnvVars::VF_JUDGE_MODEL;
pub const KEY_VAR: &str = EnvVars::VF_JUDGE_API_KEY;
/// Largest response body read, in bytes.
pub const MAX_BODY_BYTES: u64 = 1 << 20;

/// The judge's configuration, read from the environment by the command.
#[derive(Debug, Clone)]
pub struct Config {
    pub endpoint: String,
    pub model: String,
    pub api_key: String,
    /// Roots trusted besides Mozilla's (`VF_JUDGE_CA_FILE`).
    pub ca_certs: Vec<ureq::tls::Certificate<'static>>,
    /// The whole call: connect, send, the response and its body.
    pub timeout: Duration,
}

impl Config {
    /// The configuration from these variables' values, or the usage error
    /// that names what is missing or wrong: an endpoint that is neither
    /// `https://` nor `http://` to a loopback host, an unreadable CA file.
    pub fn from_values(
        endpoint: Option<String>,
        model: Option<String>,
        api_key: Option<String>,
        ca_file: Option<String>,
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
        check_endpoint(&endpoint)?;
        if api_key.chars().any(|c| c.is_control()) {
            return Err(VfError::usage(format!(
                "{KEY_VAR} contains a control character; nothing was sent"
            )));
        }
        let ca_certs = match set(ca_file) {
            Some(path) => crate::ground::tls::load_ca_file(Path::new(&path))?,
            None => Vec::new(),
        };
        Ok(Config {
            endpoint,
            model,
            api_key,
            ca_certs,
            timeout,
        })
    }

    fn is_https(&self) -> bool {
        self.endpoint.starts_with("https://")
    }
}

/// `https://HOST...`, or `http://` to a loopback host (`localhost`,
/// 127.0.0.0/8, `[::1]`): the API key must not cross the network in clear.
fn check_endpoint(endpoint: &str) -> Result<()> {
    let shown = crate::ground::text::cut(endpoint, 200);
    let uri: Option<ureq::http::Uri> = endpoint.parse().ok();
    let host = uri.as_ref().and_then(|u| u.host()).unwrap_or("");
    match uri.as_ref().and_then(|u| u.scheme_str()) {
        Some("https") if !host.is_empty() => Ok(()),
        Some("http") if is_loopback(host) => Ok(()),
        Some("http") if !host.is_empty() => Err(VfError::usage(format!(
            "{ENDPOINT_VAR} {shown:?} is plain http:// to a host that is not loopback: \
             the API key would cross the network in clear; use https://; nothing was sent"
        ))),
        _ => Err(VfError::usage(format!(
            "{ENDPOINT_VAR} {shown:?} is not an https:// (or loopback http://) URL; \
             nothing was sent"
        ))),
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
    crate::ground::names::check("unit name", unit)?;
    let marker = MarkerStore::new(state_dir)
        .load(unit)?
        .ok_or_else(|| VfError::usage(format!("no unit {unit:?} in {}", state_dir.display())))?;
    let answers: Vec<InputAnswer> = crate::unit::history::load(state_dir, unit)
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
    /// No TLS connection: the certificate failed verification, the
    /// handshake failed, or this build or CPU has no TLS crypto.
    Tls(String),
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
            Failure::Tls(e) => write!(
                f,
                "no TLS connection to the judge endpoint: {e} \
                 (a private CA's certificate goes in {})",
                crate::ground::tls::CA_FILE_VAR
            ),
            Failure::Status(s) => write!(f, "the judge endpoint answered HTTP {s}"),
            Failure::Invalid(e) => write!(f, "the judge's response is invalid: {e}"),
        }
    }
}

/// Posts `input` and validates the answer.
pub fn judge(cfg: &Config, input: &Input) -> std::result::Result<Verdict, Failure> {
    let body = serde_json::to_vec(&request_body(cfg, input))
        .map_err(|e| Failure::Invalid(format!("the request could not be built: {e}")))?;
    let mut agent = ureq::Agent::config_builder();
    if cfg.is_https() {
        agent = agent.tls_config(crate::ground::tls::config(&cfg.ca_certs).map_err(Failure::Tls)?);
    }
    let agent: ureq::Agent = agent
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
        ureq::Error::Rustls(e) => Failure::Tls(e.to_string()),
        ureq::Error::Tls(e) => Failure::Tls(e.to_string()),
        ureq::Error::Io(io) => match tls_error(&io) {
            Some(t) => Failure::Tls(t.to_string()),
            None => Failure::Unreachable(ureq::Error::Io(io).to_string()),
        },
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => {
            Failure::Unreachable(e.to_string())
        }
        other => Failure::Invalid(other.to_string()),
    }
}

/// The rustls error inside an I/O error (ureq's TLS stream reports them so).
fn tls_error(io: &std::io::Error) -> Option<&rustls::Error> {
    io.get_ref()?.downcast_ref::<rustls::Error>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_plain_http_only_to_loopback() {
        let verdicts: Vec<(&str, bool)> = [
            "https://api.example.com/v1/chat/completions",
            "https://10.0.0.7:8443/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.8.9.10/v1",
            "http://[::1]:8080/v1",
            "http://LOCALHOST:8080/v1",
            "http://api.example.com/v1",
            "http://10.0.0.7/v1",
            "http://[::2]/v1",
            "http://localhost.example.com/v1",
            "ftp://127.0.0.1/",
            "https://",
            "http://",
            "127.0.0.1:8080",
        ]
        .into_iter()
        .map(|e| (e, check_endpoint(e).is_ok()))
        .collect();
        let ok = |e| (e, true);
        let refused = |e| (e, false);
        assert_eq!(
            verdicts,
            vec![
                ok("https://api.example.com/v1/chat/completions"),
                ok("https://10.0.0.7:8443/v1"),
                ok("http://127.0.0.1:8080/v1"),
                ok("http://127.8.9.10/v1"),
                ok("http://[::1]:8080/v1"),
                ok("http://LOCALHOST:8080/v1"),
                refused("http://api.example.com/v1"),
                refused("http://10.0.0.7/v1"),
                refused("http://[::2]/v1"),
                refused("http://localhost.example.com/v1"),
                refused("ftp://127.0.0.1/"),
                refused("https://"),
                refused("http://"),
                refused("127.0.0.1:8080"),
            ]
        );
    }

    #[test]
    fn a_refused_endpoint_is_a_usage_error() {
        let e = check_endpoint("http://10.0.0.7/v1").unwrap_err();
        assert_eq!(e.exit_code(), crate::ground::error::exit::USAGE);
    }
}
