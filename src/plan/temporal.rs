//! Plans on Temporal (docs/DISTRIBUTED.md): `vf worker` runs unit attempts
//! as activities and the plan's workflow ([`workflow`]); `vf orchestrate
//! --temporal` submits a plan, follows it, shows or cancels it ([`client`]).
//! Temporal is the queue and the durable state of the plan; each unit's
//! marker, raw logs and session stay in the state dir of the worker that ran
//! it. Connection settings (TLS, API key) come from Temporal's own client
//! configuration (`TEMPORAL_*` environment, config profile). The workflow
//! is the quota governor of its plan ([`holds`]): a limit met on any worker
//! holds that engine's account for all of them.

pub mod activity;
pub mod client;
pub mod holds;
pub mod next_attempt;
pub mod payload;
pub mod runs;
pub mod worker;
pub mod workflow;

use crate::ground::error::{Result, VfError};

/// Where the Temporal service is, and which queue.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `HOST:PORT` (or a URL).
    pub address: String,
    /// `None`: the client configuration's, else `default`.
    pub namespace: Option<String>,
    pub task_queue: String,
}

/// The queue of the host that holds a session: `Q@<host-id>`.
pub fn host_queue(queue: &str, host: &str) -> String {
    format!("{queue}@{host}")
}

/// A connected client: Temporal's client configuration (environment,
/// profile: TLS, API key), the address and namespace vf was given on top.
pub async fn connect(ep: &Endpoint) -> Result<temporalio_client::Client> {
    use temporalio_client::envconfig::LoadClientConfigProfileOptions;
    use temporalio_client::{Client, ClientOptions, Connection};
    let (mut conn, mut opts) =
        ClientOptions::load_from_config(LoadClientConfigProfileOptions::default())
            .map_err(|e| VfError::usage(format!("Temporal client configuration: {e}")))?;
    let tls = conn.tls_options.is_some();
    if tls {
        crate::ground::tls::install_process_provider()
            .map_err(|e| VfError::not_ready(format!("Temporal over TLS: {e}")))?;
    }
    conn.target = target_url(&ep.address, tls)?;
    // An address that drops packets must not hang vf.
    conn.connect_timeout
        .get_or_insert(std::time::Duration::from_secs(15));
    if let Some(ns) = &ep.namespace {
        opts.namespace = ns.clone();
    }
    let connection = Connection::connect(conn)
        .await
        .map_err(|e| VfError::not_ready(format!("cannot reach Temporal at {}: {e}", ep.address)))?;
    Client::new(connection, opts)
        .map_err(|e| VfError::Other(anyhow::anyhow!("Temporal client: {e}")))
}

/// `HOST:PORT` as the URL the SDK takes (`https` when TLS is configured).
fn target_url(address: &str, tls: bool) -> Result<temporalio_client::Url> {
    let bad = |e: String| VfError::usage(format!("--temporal {address:?}: {e}"));
    if address.is_empty() || address.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("expected HOST:PORT".into()));
    }
    let text = match address.contains("://") {
        true => address.to_string(),
        false => format!("{}://{address}", if tls { "https" } else { "http" }),
    };
    let url = temporalio_client::Url::parse(&text).map_err(|e| bad(e.to_string()))?;
    if url.host().is_none() || url.port_or_known_default().is_none() {
        return Err(bad("expected HOST:PORT".into()));
    }
    Ok(url)
}

/// A task queue name as Temporal takes it and vf can show (`@` is vf's: it
/// separates a host's queue).
pub fn check_queue(q: &str) -> Result<()> {
    let ok = !q.is_empty()
        && q.len() <= 200
        && !q.contains('@')
        && !q.chars().any(|c| c.is_whitespace() || c.is_control());
    match ok {
        true => Ok(()),
        false => Err(VfError::usage(format!(
            "task queue {q:?}: 1 to 200 characters, no whitespace, no '@'"
        ))),
    }
}
