//! MCP servers for an ACP session (`--mcp FILE` with `--engine acp`): the
//! common `{"mcpServers": {NAME: {...}}}` object as `session/new`'s (and
//! `session/load`'s) `mcpServers`, and the raw log's copy of those lines
//! with every `env` and `headers` value replaced by `***` (the agent gets
//! the real values; no secret reaches disk).
//!
//! A `command` server is stdio, which every agent takes. A url server is
//! `http` unless its `type` says `sse`; it goes only to an agent whose
//! `initialize` advertises `mcpCapabilities.http` (or `.sse`), otherwise the
//! session ends before `session/new` ([`AcpError::Mcp`]).

use agent_client_protocol::v1::schema::{
    EnvVariable, HttpHeader, McpServer, McpServerHttp, McpServerSse, McpServerStdio,
};
use serde_json::{Map, Value};

use super::AcpError;
use super::outcome::AgentFacts;

/// What a redacted value reads as in the raw log.
pub const HIDDEN: &str = "***";

fn pairs(s: &Map<String, Value>, key: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = s
        .get(key)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The servers (the validated `mcpServers` object) as the SDK's types, in
/// name order.
pub fn servers(object: &Value) -> Vec<McpServer> {
    let Some(object) = object.as_object() else {
        return Vec::new();
    };
    let mut names: Vec<&String> = object.keys().collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| Some((name, object.get(name)?.as_object()?)))
        .map(|(name, s)| server(name, s))
        .collect()
}

fn server(name: &str, s: &Map<String, Value>) -> McpServer {
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(command) = text("command") {
        let args = s
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let env = pairs(s, "env")
            .into_iter()
            .map(|(k, v)| EnvVariable::new(k, v))
            .collect();
        return McpServer::Stdio(McpServerStdio::new(name, command).args(args).env(env));
    }
    let url = text("url")
        .or_else(|| text("serverUrl"))
        .unwrap_or_default();
    let headers: Vec<HttpHeader> = pairs(s, "headers")
        .into_iter()
        .map(|(k, v)| HttpHeader::new(k, v))
        .collect();
    match text("type").as_deref() {
        Some("sse") => McpServer::Sse(McpServerSse::new(name, url).headers(headers)),
        _ => McpServer::Http(McpServerHttp::new(name, url).headers(headers)),
    }
}

/// Refuses a url server the agent's `mcpCapabilities` do not take.
pub fn check(servers: &[McpServer], agent: &AgentFacts) -> Result<(), AcpError> {
    let can = |k: &str| {
        agent.capabilities.pointer(&format!("/mcpCapabilities/{k}")) == Some(&Value::Bool(true))
    };
    for s in servers {
        let (name, kind) = match s {
            McpServer::Http(h) => (&h.name, "http"),
            McpServer::Sse(h) => (&h.name, "sse"),
            _ => continue,
        };
        if !can(kind) {
            return Err(AcpError::Mcp(format!(
                "server {name:?} is an {kind} server, and {} does not advertise mcpCapabilities.{kind}",
                agent.name
            )));
        }
    }
    Ok(())
}

/// The message with every `params.mcpServers[].env[].value` and
/// `.headers[].value` replaced by [`HIDDEN`]; `None` when it holds none.
pub fn scrubbed(msg: &Value) -> Option<Value> {
    let servers = msg.pointer("/params/mcpServers")?.as_array()?;
    let secret = |s: &Value| {
        ["env", "headers"].iter().any(|k| {
            s.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        })
    };
    if !servers.iter().any(secret) {
        return None;
    }
    let mut out = msg.clone();
    let list = out.pointer_mut("/params/mcpServers")?.as_array_mut()?;
    for s in list {
        for k in ["env", "headers"] {
            for pair in s
                .get_mut(k)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(v) = pair.get_mut("value") {
                    *v = Value::from(HIDDEN);
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(caps: Value) -> AgentFacts {
        AgentFacts::from_initialize(&json!({"agentInfo": {"name": "a"}, "agentCapabilities": caps}))
    }

    #[test]
    fn servers_map_to_the_sdk_shapes_on_the_wire() {
        let list = servers(&json!({
            "s": {"command": "srv", "args": ["-x"], "env": {"TOKEN": "t0p"}},
            "h": {"url": "http://h", "headers": {"Authorization": "Bearer b"}},
            "e": {"serverUrl": "http://e", "type": "sse"},
        }));
        let wire = serde_json::to_value(&list).unwrap();
        assert_eq!(
            wire,
            json!([
                {"type": "sse", "name": "e", "url": "http://e", "headers": []},
                {"type": "http", "name": "h", "url": "http://h",
                 "headers": [{"name": "Authorization", "value": "Bearer b"}]},
                {"name": "s", "command": "srv", "args": ["-x"],
                 "env": [{"name": "TOKEN", "value": "t0p"}]},
            ])
        );
        let msg = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                         "params": {"cwd": "/w", "mcpServers": wire}});
        let clean = scrubbed(&msg).unwrap();
        assert_eq!(
            clean["params"]["mcpServers"],
            json!([
                {"type": "sse", "name": "e", "url": "http://e", "headers": []},
                {"type": "http", "name": "h", "url": "http://h",
                 "headers": [{"name": "Authorization", "value": "***"}]},
                {"name": "s", "command": "srv", "args": ["-x"],
                 "env": [{"name": "TOKEN", "value": "***"}]},
            ])
        );
        assert_eq!(
            scrubbed(&json!({"params": {"mcpServers": [{"name": "s", "env": []}]}})),
            None
        );
        assert_eq!(scrubbed(&json!({"method": "session/prompt"})), None);
    }

    #[test]
    fn url_servers_need_the_agents_capability() {
        let list = servers(&json!({"h": {"url": "http://h"}, "s": {"command": "x"}}));
        let err = check(&list, &facts(json!({}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "MCP servers: server \"h\" is an http server, and a does not advertise mcpCapabilities.http"
        );
        assert_eq!(
            check(&list, &facts(json!({"mcpCapabilities": {"http": true}}))),
            Ok(())
        );
        let sse = servers(&json!({"e": {"url": "http://e", "type": "sse"}}));
        assert!(check(&sse, &facts(json!({"mcpCapabilities": {"http": true}}))).is_err());
        let stdio = servers(&json!({"s": {"command": "x"}}));
        assert_eq!(check(&stdio, &facts(json!({}))), Ok(()));
    }
}
