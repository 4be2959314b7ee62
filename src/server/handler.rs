//! The rmcp `ServerHandler`: `tools/list` from `schema.rs`, `tools/call`
//! checked against the tool's schema and run by `tools.rs`. A request never
//! crashes the server: every failure is a tool error.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::progress::Progress;
use super::tools::Tools;
use super::{Settings, run, schemas};

/// `vf mcp`'s handler (cheap to clone: the state is shared).
#[derive(Clone)]
pub struct Server {
    tools: Arc<Tools>,
}

impl Server {
    pub fn new(settings: Settings) -> Server {
        Server {
            tools: Arc::new(Tools::new(settings)),
        }
    }

    /// The transport on stdio: stdin's EOF starts [`Server::shut_down`]'s
    /// work at once (rmcp itself ends only once the calls in flight have).
    pub fn stdio(&self) -> (super::stdio::EofWatch<tokio::io::Stdin>, tokio::io::Stdout) {
        let tools = self.tools.clone();
        let stdin = super::stdio::EofWatch::new(tokio::io::stdin(), move || tools.closing());
        (stdin, tokio::io::stdout())
    }

    /// stdin's EOF: no more calls; the units of calls that wait are ended
    /// (SIGTERM: interrupted, resumable), the others run on. Returns once
    /// the calls that wait have seen their `vf` end.
    pub async fn shut_down(&self) {
        self.tools.shut_down().await;
    }

    fn tool_list() -> Vec<Tool> {
        schemas::TOOLS
            .iter()
            .filter_map(|t| {
                let s = schemas::input_schema(t)?;
                let obj = s.as_object()?.clone();
                Some(Tool::new(*t, schemas::description(t), obj))
            })
            .collect()
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("vf", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Server::tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let name = request.name.as_ref();
        if let Err(e) = schemas::check(name, &args) {
            return Ok(run::tool_error(&e, "invalid", crate::ground::error::exit::USAGE).into());
        }
        let progress = context
            .meta
            .get_progress_token()
            .map(|t| Progress::new(context.peer.clone(), t));
        let ct = context.ct.clone();
        let call = super::tools::Call {
            progress,
            cancelled: Box::pin(async move { ct.cancelled().await }),
        };
        let tools = self.tools.clone();
        Ok(tools.call(name, &args, call).await.into())
    }
}
