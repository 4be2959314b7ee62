#!/usr/bin/env python3
"""A small ACP agent with canned behaviour, for the ACP driver tests (tests/it/acp.rs).

    fake_acp_agent.py <mode> [--no-load] [--no-image] [--write] [--mcp-http] [--mcp-sse]

It speaks JSON-RPC 2.0 over stdio, one message per line. `initialize` names it
`fake-acp 1.0.0`, protocol 1, loadSession (unless --no-load), promptCapabilities
image + embeddedContext (image off with --no-image). With --write, an allowed
tool call of mode `tool` really creates x.txt in the session's cwd. --mcp-http and
--mcp-sse advertise mcpCapabilities http and sse. `session/new` answers
`sess-1`; `session/load` replays one user and one agent chunk and answers. What
`session/prompt` does depends on <mode>:

  json       two agent_message_chunks (a fenced json summary), then end_turn with
             usage {inputTokens: 11, outputTokens: 7, totalTokens: 18}
  tool       a tool_call (kind execute), session/request_permission (reject_once /
             allow_once), a tool_call_update completed or failed by the answer,
             a plan, a thought chunk, an unknown sessionUpdate kind, an fs/read_text_file
             request (expects an error back), then the answer and end_turn
  cancel     one chunk, then waits for session/cancel and answers stopReason cancelled
  refusal    stopReason refusal
  hang       answers initialize, then nothing ever
  garbage    writes a non-JSON line and a line of invalid UTF-8 instead of answering
  exit       session/prompt: one chunk, then exits with status 3
  slam       session/new: closes its stdin, answers, then 0.3 s later writes a
             non-JSON goodbye and exits 0 (vf's next write meets a broken pipe)
  deaf       session/new: closes its stdin, answers, then sleeps 60 s
  error      session/prompt answered with JSON-RPC error -32603
  badid      session/new answers a session id vf must refuse
  blocks     session/prompt: answers with what each prompt block held
  huge       session/prompt: a 9 MiB line (over vf's 8 MiB cap), then as json
  flood      session/prompt: $FAKE_ACP_FLOOD_MIB (default 40) MiB of agent_message_chunks
             of 64 KiB, then a fenced json summary {"flood": MiB}
  usage      session/prompt: usage in each shape of $FAKE_ACP_USAGE (comma-separated:
             result, quota, meta, meta-quota, update), see usage_turn
  noisy      initialize: writes 320 KB to stderr first, then answers
  stderr-exit initialize: two lines on stderr, then exits with status 2
  mcp        session/prompt: answers with the mcpServers that session/new or session/load
             got: each one's name, type, and its env/header names with the length of
             each value (never a value), then a fenced json summary
  silent     never answers initialize (nor anything else)
  mute-new   answers initialize, never session/new (`hang`, named for the step)
  mute-load  answers initialize and session/new, never session/load
  malformed  the response to the request named by --step=METHOD (default
             session/prompt) is not JSON-RPC 2.0, as --shape= says: both (result and
             error), neither, nojsonrpc (no "jsonrpc"), v1 ("jsonrpc": "1.0")
  foreign    session/prompt: chunks of another session (sess-other) first, then as json
  badstop    session/prompt answered {"stopReason": 5}; with --shape=none, {}
  numid      session/new answers a session id that is a number (42)

Replayed history (a resume): --replay=WHERE makes session/load replay one old turn (a
user chunk "earlier prompt", one agent chunk with a fenced {"old":1} summary) at WHERE:
before (before load's answer, as the spec says), after (0.1 s after load's answer, as
gemini does), prompt (when session/prompt arrives, before the new answer), split (the
user chunk of a session-context preamble before load's answer, the old turn when the
prompt arrives: gemini 0.61's c_resume capture). --acu=WHERE puts an
available_commands_update before the replayed turn, between its user and agent chunks,
after it, or nowhere (none, the default). --history=tool makes the old turn a tool turn
(text, a tool call, then the old answer). The new answer is always
"New answer." with a fenced {"new":1} summary, in two chunks.
"""

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "json"
FLAGS = set(sys.argv[2:])
OUT = sys.stdout.buffer
NEXT_ID = [100]
CWD = ["."]
MCP = [[]]


def send(msg):
    OUT.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
    OUT.flush()


def update(sid, upd):
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": sid, "update": upd}})


def chunk(sid, kind, text):
    update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def opt(name, default):
    """The value of a --name=VALUE flag."""
    for f in FLAGS:
        if f.startswith("--%s=" % name):
            return f.split("=", 1)[1]
    return default


def commands_update(sid):
    update(sid, {"sessionUpdate": "available_commands_update",
                 "availableCommands": [{"name": "memory", "description": "Manage memory."}]})


def replay_turn(sid):
    """One old turn as an agent replays it, bookkeeping where --acu says."""
    acu = opt("acu", "none")
    if acu == "before":
        commands_update(sid)
    chunk(sid, "user_message_chunk", "earlier prompt")
    if acu == "between":
        commands_update(sid)
    if opt("history", "") == "tool":
        chunk(sid, "agent_message_chunk", "Let me look.")
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t0", "title": "ls",
                     "kind": "execute", "status": "completed"})
    chunk(sid, "agent_message_chunk", "Old answer.\n\n```json\n{\"old\":1}\n```\n")
    if acu == "after":
        commands_update(sid)


def load(msg, rid):
    sid = msg["params"]["sessionId"]
    where = opt("replay", None)
    if where is None:
        chunk(sid, "user_message_chunk", "earlier prompt")
        chunk(sid, "agent_message_chunk", "earlier answer")
    elif where == "before":
        replay_turn(sid)
    elif where == "split":
        chunk(sid, "user_message_chunk", "<session_context>preamble</session_context>")
    send({"jsonrpc": "2.0", "id": rid, "result": {}})
    if where == "after":
        time.sleep(0.1)
        replay_turn(sid)


def malformed(rid, result):
    shape = opt("shape", "both")
    msg = {"jsonrpc": "2.0", "id": rid}
    if shape == "both":
        msg.update(result=result, error={"code": -1, "message": "and an error"})
    elif shape == "nojsonrpc":
        del msg["jsonrpc"]
        msg["result"] = result
    elif shape == "v1":
        msg.update(jsonrpc="1.0", result=result)
    send(msg)


def read():
    line = sys.stdin.buffer.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def ask(method, params):
    """A request to the client; returns its response (other lines are ignored)."""
    NEXT_ID[0] += 1
    rid = NEXT_ID[0]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == rid and "method" not in msg:
            return msg


def tool_turn(sid):
    update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "touch x.txt",
                 "kind": "execute", "status": "pending", "rawInput": {"command": "touch x.txt"}})
    r = ask("session/request_permission", {
        "sessionId": sid,
        "toolCall": {"toolCallId": "t1", "title": "touch x.txt", "kind": "execute"},
        "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
    chosen = r.get("result", {}).get("outcome", {}).get("optionId")
    status = "completed" if chosen == "yes" else "failed"
    if chosen == "yes" and "--write" in FLAGS:
        open(CWD[0] + "/x.txt", "w").close()
    update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": status,
                 "content": [{"type": "content",
                              "content": {"type": "text", "text": "chosen: %s" % chosen}}]})
    update(sid, {"sessionUpdate": "plan", "entries": [
        {"content": "look", "priority": "high", "status": "completed"},
        {"content": "answer", "priority": "low", "status": "pending"}]})
    chunk(sid, "agent_thought_chunk", "thinking")
    update(sid, {"sessionUpdate": "future_kind", "secret": "payload-must-not-show"})
    ask("fs/read_text_file", {"sessionId": sid, "path": "/etc/hostname"})
    chunk(sid, "agent_message_chunk", "Tool %s.\n\n```json\n{\"ok\":%s}\n```\n"
          % (status, "true" if chosen == "yes" else "false"))
    return {"stopReason": "end_turn"}


def usage_turn(sid):
    """Usage where $FAKE_ACP_USAGE says: `meta` repeats `_meta.usage` on each of
    three chunks (10/4/14), `meta-quota` puts `_meta.quota.token_count` (30/6) on
    the notification, `update` sends two usage_updates (cost 0.01 then 0.045
    USD), `result` answers with usage 100/20/120, `quota` with gemini's
    `_meta.quota.token_count` 200/40."""
    shapes = set(os.environ.get("FAKE_ACP_USAGE", "").split(","))
    meta = {"usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}}
    for text in ["Counted", ".\n\n```json\n", "{}\n```\n"]:
        upd = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        if "meta" in shapes:
            upd["_meta"] = meta
        update(sid, upd)
    if "meta-quota" in shapes:
        send({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": sid, "update": {"sessionUpdate": "plan", "entries": []},
            "_meta": {"quota": {"token_count": {"input_tokens": 30, "output_tokens": 6}}}}})
    if "update" in shapes:
        for amount in (0.01, 0.045):
            update(sid, {"sessionUpdate": "usage_update", "used": 53000, "size": 200000,
                         "cost": {"amount": amount, "currency": "USD"}})
    result = {"stopReason": "end_turn"}
    if "result" in shapes:
        result["usage"] = {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120}
    if "quota" in shapes:
        result["_meta"] = {"quota": {"token_count": {"input_tokens": 200, "output_tokens": 40}}}
    return result


def prompt(msg, sid):
    if opt("replay", None) in ("prompt", "split"):
        replay_turn(sid)
    if opt("replay", None) is not None:
        chunk(sid, "agent_message_chunk", "New answer.\n\n```js")
        chunk(sid, "agent_message_chunk", "on\n{\"new\":1}\n```\n")
        return {"stopReason": "end_turn"}
    if MODE == "foreign":
        chunk("sess-other", "agent_message_chunk", "FOREIGN text\n\n```json\n{\"foreign\":1}\n```\n")
        update("sess-other", {"sessionUpdate": "tool_call", "toolCallId": "f1",
                              "title": "secret-foreign-payload", "kind": "execute"})
    if MODE == "badstop":
        return {} if opt("shape", "") == "none" else {"stopReason": 5}
    if MODE == "huge":
        OUT.write(b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"'
                  + b"x" * (9 << 20) + b'"}}\n')
        OUT.flush()
    if MODE in ("json", "huge", "foreign", "malformed"):
        chunk(sid, "agent_message_chunk", "Done.\n\n```json\n{\"conf")
        chunk(sid, "agent_message_chunk", "idence\":1}\n```\n")
        return {"stopReason": "end_turn",
                "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}}
    if MODE == "tool":
        return tool_turn(sid)
    if MODE == "flood":
        # $FAKE_ACP_FLOOD_MIB MiB of answer in 64 KiB chunks, then the summary.
        mib = int(os.environ.get("FAKE_ACP_FLOOD_MIB", "40"))
        piece = ("filler " * 9363)[:65536]
        for _ in range(mib * 16):
            chunk(sid, "agent_message_chunk", piece)
        chunk(sid, "agent_message_chunk", '\n```json\n{"flood": %d}\n```\n' % mib)
        return {"stopReason": "end_turn"}
    if MODE == "usage":
        return usage_turn(sid)
    if MODE == "blocks":
        # Says what the prompt held: each block's type and what it carried.
        seen = []
        for b in msg["params"]["prompt"]:
            if b["type"] == "image":
                seen.append("image %s %s" % (b["mimeType"], b["data"]))
            elif b["type"] == "resource":
                r = b["resource"]
                seen.append("resource %s %s" % (r["uri"].rsplit("/", 1)[-1], r["text"]))
            else:
                seen.append(b["type"])
        chunk(sid, "agent_message_chunk", "; ".join(seen) + "\n\n```json\n{}\n```\n")
        return {"stopReason": "end_turn"}
    if MODE == "mcp":
        seen = []
        for srv in MCP[0]:
            pairs = srv.get("env", []) + srv.get("headers", [])
            seen.append("%s %s %s" % (srv["name"], srv.get("type", "stdio"), ",".join(
                "%s=%d" % (p["name"], len(p["value"])) for p in pairs)))
        chunk(sid, "agent_message_chunk", "; ".join(seen) + "\n\n```json\n{}\n```\n")
        return {"stopReason": "end_turn"}
    if MODE == "slow":
        # One message in chunks 0.4 s apart: they merge into one row, so no
        # event shows until the end, though the agent writes all along.
        import time
        for word in ["Slow", " but", " steady", " and", " on", ".\n\n```json\n", "{\"ok\":1}", "\n```\n"]:
            chunk(sid, "agent_message_chunk", word)
            time.sleep(0.4)
        return {"stopReason": "end_turn"}
    if MODE == "cancel":
        chunk(sid, "agent_message_chunk", "working")
        while True:
            m = read()
            if m.get("method") == "session/cancel":
                return {"stopReason": "cancelled"}
    if MODE == "refusal":
        return {"stopReason": "refusal"}
    if MODE == "exit":
        chunk(sid, "agent_message_chunk", "bye")
        sys.exit(3)
    if MODE == "error":
        send({"jsonrpc": "2.0", "id": msg["id"],
              "error": {"code": -32603, "message": "model exploded"}})
        return None
    return {"stopReason": "end_turn"}


def main():
    while True:
        msg = read()
        method, rid = msg.get("method"), msg.get("id")
        if MODE == "silent" or (MODE == "mute-new" and method == "session/new") \
                or (MODE == "mute-load" and method == "session/load"):
            continue
        if MODE == "malformed" and method == opt("step", "session/prompt") \
                and method != "session/prompt":
            malformed(rid, {"sessionId": "sess-1"} if method == "session/new" else {})
            continue
        if method == "initialize":
            if MODE == "noisy":
                # More than a pipe holds, before the answer: a client that does
                # not read stderr blocks the agent here.
                sys.stderr.write(("debug: loading\n" * 20000))
                sys.stderr.flush()
            if MODE == "stderr-exit":
                sys.stderr.write("starting\nfatal: no API key\n")
                sys.exit(2)
            if MODE == "garbage":
                OUT.write(b"Welcome to the agent!\n\xff\xfe not utf-8\n")
                OUT.flush()
                continue
            caps = {"loadSession": "--no-load" not in FLAGS,
                    "promptCapabilities": {"image": "--no-image" not in FLAGS,
                                           "embeddedContext": True}}
            if FLAGS & {"--mcp-http", "--mcp-sse"}:
                caps["mcpCapabilities"] = {"http": "--mcp-http" in FLAGS,
                                           "sse": "--mcp-sse" in FLAGS}
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": 1, "agentCapabilities": caps,
                "agentInfo": {"name": os.environ.get("FAKE_ACP_NAME", "fake-acp"),
                              "version": "1.0.0"}}})
        elif MODE == "hang":
            continue
        elif method == "session/new":
            CWD[0] = msg["params"].get("cwd", ".")
            MCP[0] = msg["params"].get("mcpServers", [])
            sid = {"badid": "bad id/../x", "numid": 42}.get(MODE, "sess-1")
            if MODE in ("slam", "deaf"):
                os.close(0)
                send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
                time.sleep(0.3 if MODE == "slam" else 60)
                OUT.write(b"goodbye: out of credits\n")
                OUT.flush()
                sys.exit(0)
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
        elif method == "session/load":
            MCP[0] = msg["params"].get("mcpServers", [])
            load(msg, rid)
        elif method == "session/prompt":
            result = prompt(msg, msg["params"]["sessionId"])
            if MODE == "malformed" and opt("step", "session/prompt") == "session/prompt":
                malformed(rid, result)
            elif result is not None:
                send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
