#!/usr/bin/env python3
"""A tiny stdio MCP server for the real-engine tier (tests/it/real_mcp.rs).

Stdlib only. Newline-delimited JSON-RPC 2.0 over stdin/stdout, as the MCP
stdio transport specifies: answers `initialize`, takes
`notifications/initialized`, lists ONE tool, `lab_mcp_probe`, and answers
its `tools/call`. Anything else with an id gets "method not found"; other
notifications are ignored. Nothing is written to stdout but JSON-RPC
messages; an optional first argument names a file that gets every line
read (the test's proof that the CLI started the server and what it asked).
"""
import json
import sys

TOOL = {
    "name": "lab_mcp_probe",
    "description": "Lab probe: returns the word LAB-MCP-PROBE-OK.",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
}


def reply(msg_id, result=None, error=None):
    out = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def answer(method, params):
    if method == "initialize":
        version = (params or {}).get("protocolVersion") or "2024-11-05"
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "lab", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        if (params or {}).get("name") != TOOL["name"]:
            return None
        return {"content": [{"type": "text", "text": "LAB-MCP-PROBE-OK"}], "isError": False}
    if method == "ping":
        return {}
    return None


def main():
    log = sys.argv[1] if len(sys.argv) > 1 else None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        try:
            msg = json.loads(line)
        except ValueError:
            reply(None, error={"code": -32700, "message": "parse error"})
            continue
        if not isinstance(msg, dict) or "method" not in msg:
            continue  # a response or junk: nothing to answer
        if "id" not in msg:
            continue  # a notification (notifications/initialized, cancelled, ...)
        result = answer(msg["method"], msg.get("params"))
        if result is None:
            reply(msg["id"], error={"code": -32601, "message": "method not found: %s" % msg["method"]})
        else:
            reply(msg["id"], result)


if __name__ == "__main__":
    main()
