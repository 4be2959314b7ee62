//! One ACP session over an agent's stdio, through the official SDK
//! (`agent-client-protocol`): `initialize`, `session/new` or `session/load`,
//! `session/prompt`, `session/cancel` when asked; permission requests
//! answered by the policy; everything else the agent asks refused with
//! JSON-RPC method-not-found (the SDK's answer to an unhandled request).

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, Implementation, InitializeRequest,
    LoadSessionRequest, McpServer, NewSessionRequest, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
};
use agent_client_protocol::{Agent, Client, Lines};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use super::AcpError;
use super::outcome::{AgentFacts, Outcome, valid_session_id};
use super::permissions::{self, Offered, Policy};
use super::transport::{self, SessionSink, SharedTee, Tee};

/// One block of the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptPart {
    Text(String),
    /// An image, base64 data (needs `promptCapabilities.image`).
    Image {
        mime_type: String,
        data: String,
    },
    /// A file's text as an embedded resource (needs `embeddedContext`).
    Resource {
        uri: String,
        mime_type: Option<String>,
        text: String,
    },
}

/// What one session does.
#[derive(Debug, Clone)]
pub struct SessionRequest {
    /// The unit's cwd (its worktree with `--worktree`).
    pub cwd: PathBuf,
    pub prompt: Vec<PromptPart>,
    /// Resume this session with `session/load` (refused with
    /// [`AcpError::NoLoad`] when the agent does not advertise `loadSession`).
    pub resume: Option<String>,
    pub policy: Policy,
    /// MCP servers for `session/new` or `session/load` ([`super::mcp_servers`]).
    pub mcp: Vec<McpServer>,
    /// A bound on the whole session; dispatch leaves it `None` (its own
    /// stall and wall timeouts end the group).
    pub deadline: Option<Duration>,
    /// A bound on each handshake step: `initialize`, `session/new`,
    /// `session/load` ([`super::handshake_timeout_from_env`]).
    pub handshake: Duration,
}

/// After `session/load` answers, the agent may still be replaying history
/// (gemini streams it after its own response): vf sends the prompt once it
/// has been quiet this long, so the replay lands before the prompt.
pub const REPLAY_QUIET: Duration = Duration::from_millis(500);
/// The longest the replay drain waits, however chatty the agent.
pub const REPLAY_CAP: Duration = Duration::from_secs(5);

/// The client capabilities vf offers: none. vf implements no `fs/*` and no
/// `terminal/*` method, so the agent uses its own tools, and asks.
fn client_capabilities() -> ClientCapabilities {
    ClientCapabilities::default()
}

pub(crate) fn initialize_request() -> InitializeRequest {
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(client_capabilities())
        .client_info(Implementation::new("vf", env!("CARGO_PKG_VERSION")))
}

/// Runs one session on the agent's `stdout`/`stdin`. Lines and events go to
/// `sink` as they cross; `cancel` turning true sends `session/cancel` (the
/// runtime then waits its grace and ends the group). `Ok` once the prompt
/// got an answer, a result or an error ([`Outcome::failure`] says which);
/// `Err` when the session never got that far.
pub async fn run_session<R, W>(
    stdout: R,
    stdin: W,
    req: SessionRequest,
    sink: Box<dyn SessionSink>,
    cancel: watch::Receiver<bool>,
) -> Result<Outcome, AcpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let tee = Tee::new(sink);
    let deadline = req.deadline;
    let fault = transport::fault(&tee);
    // A malformed response ends the session at once ([`classify`] says why).
    let run = async {
        tokio::select! {
            r = connect(stdout, stdin, tee.clone(), req, cancel) => r,
            () = fault.notified() => Ok(Ok(())),
        }
    };
    let result = match deadline {
        Some(d) => tokio::time::timeout(d, run).await.ok(),
        None => Some(run.await),
    };
    let outcome = transport::finish(&tee);
    classify(result, outcome, &tee, deadline)
}

type Driven = Result<Result<(), AcpError>, agent_client_protocol::Error>;

async fn connect<R, W>(
    stdout: R,
    stdin: W,
    tee: SharedTee,
    req: SessionRequest,
    cancel: watch::Receiver<bool>,
) -> Driven
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let lines = Lines::new(
        transport::outgoing(stdin, tee.clone()),
        transport::incoming(stdout, tee.clone()),
    );
    let policy = req.policy;
    Client
        .v1()
        .name("vf")
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                responder.respond(answer_permission(policy, &r))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(lines, async move |cx: ConnectionTo<Agent>| {
            drive(&cx, &req, &tee, cancel).await
        })
        .await
}

/// The policy's answer to one permission request.
fn answer_permission(policy: Policy, r: &RequestPermissionRequest) -> RequestPermissionResponse {
    let kind = r.tool_call.fields.kind.as_ref().and_then(wire_name);
    let options: Vec<(String, String)> = r
        .options
        .iter()
        .map(|o| {
            (
                o.option_id.0.to_string(),
                wire_name(&o.kind).unwrap_or_default(),
            )
        })
        .collect();
    let offered: Vec<Offered<'_>> = options
        .iter()
        .map(|(id, kind)| Offered { id, kind })
        .collect();
    let outcome = match permissions::decide(policy, kind.as_deref(), &offered).option_id {
        Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
        None => RequestPermissionOutcome::Cancelled,
    };
    RequestPermissionResponse::new(outcome)
}

/// The wire name of a protocol enum (`execute`, `reject_once`).
fn wire_name<T: serde::Serialize>(v: &T) -> Option<String> {
    match serde_json::to_value(v).ok()? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

async fn drive(
    cx: &ConnectionTo<Agent>,
    req: &SessionRequest,
    tee: &SharedTee,
    mut cancel: watch::Receiver<bool>,
) -> Driven {
    let limit = req.handshake;
    let Some(init) = step(limit, cx.send_request(initialize_request()).block_task()).await? else {
        return Ok(Err(AcpError::Handshake("initialize", limit)));
    };
    let agent = AgentFacts::from_initialize(&serde_json::to_value(&init).unwrap_or_default());
    let blocks = match prompt_blocks(&req.prompt, &agent) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    if let Err(e) = super::mcp::check(&req.mcp, &agent) {
        return Ok(Err(e));
    }
    let session = match &req.resume {
        Some(_) if !agent.load_session => return Ok(Err(AcpError::NoLoad(agent.name))),
        Some(id) => {
            let load =
                LoadSessionRequest::new(id.clone(), req.cwd.clone()).mcp_servers(req.mcp.clone());
            if step(limit, cx.send_request(load).block_task())
                .await?
                .is_none()
            {
                return Ok(Err(AcpError::Handshake("session/load", limit)));
            }
            drain_replay(tee).await;
            id.clone()
        }
        None => {
            let new = NewSessionRequest::new(req.cwd.clone()).mcp_servers(req.mcp.clone());
            match step(limit, cx.send_request(new).block_task()).await? {
                Some(r) => r.session_id.0.to_string(),
                None => return Ok(Err(AcpError::Handshake("session/new", limit))),
            }
        }
    };
    if !valid_session_id(&session) {
        return Ok(Err(AcpError::BadSessionId(crate::ground::text::one_line(
            &session, 80,
        ))));
    }
    if *cancel.borrow() {
        return Ok(Err(AcpError::Cancelled));
    }
    let prompt = cx
        .send_request(PromptRequest::new(session.clone(), blocks))
        .block_task();
    tokio::pin!(prompt);
    let mut watching = true;
    loop {
        tokio::select! {
            r = &mut prompt => return r.map(|_| Ok(())),
            changed = cancel.changed(), if watching => {
                watching = changed.is_ok();
                if watching && *cancel.borrow() {
                    cx.send_notification(CancelNotification::new(session.clone()))?;
                    watching = false;
                }
            }
        }
    }
}

/// One handshake request, bounded: `None` when `limit` passed first.
async fn step<T>(
    limit: Duration,
    answer: impl std::future::Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<Option<T>, agent_client_protocol::Error> {
    match tokio::time::timeout(limit, answer).await {
        Ok(r) => r.map(Some),
        Err(_) => Ok(None),
    }
}

/// Waits until the agent has written nothing for [`REPLAY_QUIET`] (at most
/// [`REPLAY_CAP`]), so that history replayed after `session/load`'s answer
/// is logged before the prompt and projected as history, live and replayed.
async fn drain_replay(tee: &SharedTee) {
    let start = tokio::time::Instant::now();
    loop {
        let before = transport::heard(tee);
        tokio::time::sleep(REPLAY_QUIET).await;
        if transport::heard(tee) == before || start.elapsed() >= REPLAY_CAP {
            return;
        }
    }
}

/// The prompt as ACP content blocks, refused when the agent's
/// `promptCapabilities` do not take a block's kind.
fn prompt_blocks(parts: &[PromptPart], agent: &AgentFacts) -> Result<Vec<ContentBlock>, AcpError> {
    let can = |k: &str| agent.prompt.iter().any(|p| p == k);
    parts
        .iter()
        .map(|p| {
            let v = match p {
                PromptPart::Text(t) => json!({"type": "text", "text": t}),
                PromptPart::Image { .. } if !can("image") => {
                    return Err(AcpError::Unsupported("image", agent.name.clone()));
                }
                PromptPart::Image { mime_type, data } => {
                    json!({"type": "image", "mimeType": mime_type, "data": data})
                }
                PromptPart::Resource { .. } if !can("embeddedContext") => {
                    return Err(AcpError::Unsupported("resource", agent.name.clone()));
                }
                PromptPart::Resource {
                    uri,
                    mime_type,
                    text,
                } => json!({"type": "resource", "resource": {
                    "uri": uri, "mimeType": mime_type, "text": text}}),
            };
            serde_json::from_value(v).map_err(|e| AcpError::Protocol(e.to_string()))
        })
        .collect()
}

/// The session's result from how it ended: the prompt answered (a result or
/// an error) is `Ok`; anything short of that is the error that explains it.
fn classify(
    result: Option<Driven>,
    outcome: Outcome,
    tee: &SharedTee,
    deadline: Option<Duration>,
) -> Result<Outcome, AcpError> {
    if let Some(f) = transport::failure(tee) {
        return Err(AcpError::Log(f));
    }
    if let Some(f) = &outcome.fault {
        return Err(AcpError::Malformed(f.clone()));
    }
    let answered =
        outcome.stop_reason.is_some() || outcome.failed_method.as_deref() == Some("session/prompt");
    if answered {
        return Ok(outcome);
    }
    if let Some(why) = outcome.bad_session_detail.clone() {
        return Err(AcpError::BadSessionId(why));
    }
    let hint = outcome.garbage.clone();
    match result {
        None => Err(AcpError::Timeout(deadline.unwrap_or_default(), hint)),
        Some(Ok(Err(refused))) => Err(refused),
        _ if outcome.error.is_some() => Err(AcpError::Rejected(outcome.error.unwrap_or_default())),
        _ if transport::ended(tee) => Err(AcpError::Closed(hint)),
        Some(Err(e)) => Err(AcpError::Protocol(e.to_string())),
        Some(Ok(Ok(()))) => Err(AcpError::Protocol("the prompt got no answer".to_string())),
    }
}
