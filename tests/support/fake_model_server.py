#!/usr/bin/env python3
"""Fake model server for the real-engine tests (Python 3 standard library only).

Speaks, on 127.0.0.1, what the agent CLIs call:
  * Anthropic Messages     POST /v1/messages            (SSE, or JSON when stream:false)
  * OpenAI Responses       POST /v1/responses           (SSE, or JSON when stream:false)
  * OpenAI Chat Completions POST /v1/chat/completions   (SSE, or JSON when stream:false)
  * Gemini                 POST /v1beta/models/<m>:streamGenerateContent?alt=sse
                           POST /v1beta/models/<m>:generateContent
Paths are matched by suffix, so a base URL with or without /v1 both work.

The answer is chosen from a marker word in the latest user-written message
(system/developer text and tool results are ignored):
  LAB-JSON        plain text ending in a fenced ```json summary (also the default)
  LAB-TOOL        one shell tool call (the shell tool the request offers), then the
                  final answer once the tool result comes back; the command is the
                  first '...' quoted string after the marker, else `echo hello`
  LAB-WRITE       same, with `touch lab-written.txt && echo written`
  LAB-ESCAPE      one shell call that writes `lab-escape` into ../outside.txt and
                  into $HOME/escape.txt (each write independent), printing a line
                  `outside:written|refused` and `home:written|refused`; the final
                  answer starts `Writes: <those lines' words>` (a sandbox probe)
  LAB-INSIDE      the same inside the cwd: `lab-inside` into inside.txt, printing
                  `inside:written|refused`
  LAB-THINK       a reasoning/thinking block, then the json answer (LAB-REASON too)
  LAB-RESUME      a json answer saying it resumed, only if the request carries the
                  earlier turn: `LAB-RECALL-<id>` in the resume prompt needs the word
                  `LAB-MEMO-<id>` (from the turn-1 prompt) in the request, else some
                  LAB-MEMO word in the earlier messages; otherwise an answer starting
                  `NO-CONTINUITY` (fake_model_plan.py `continuity`)
  LAB-ERR<code>   HTTP error <code> (500, 429, 400, 529, ...) on every try
  LAB-ERR429-RESET=<s>
                  the same 429 with the provider's quota headers: a reset <s>
                  seconds away (`retry-after`, Anthropic's unified headers, codex's
                  x-codex-primary-*; Gemini: RESOURCE_EXHAUSTED with RetryInfo)
  LAB-QUOTA=<status>:<utilization 0..1>:<reset s>
                  the json answer with the quota headers of a window (status
                  allowed|allowed_warning); `rejected` answers 429 with them (the
                  OpenAI APIs: a usage_limit_reached body with resets_at)
  LAB-STREAMERR   an error inside an HTTP 200 stream
  LAB-MAXTOKENS   (Gemini) only a thought part, then finishReason MAX_TOKENS: the
                  token limit ran out before any answer text (other APIs: the
                  thinking alone, ended normally)
  LAB-DELEGATE[:<engine>]
                  one call of vf's `dispatch` MCP tool (the offered tool whose name
                  holds `vf` and ends in `dispatch`, else such a name in the request's
                  text: claude's deferred tools) with {"engine": <engine> (codex),
                  "prompt": "LAB-JSON ..."}; given its result, an answer whose fenced
                  summary has child_unit and child_state as the result says
  LAB-LOOP, LAB-REVISE, LAB-FIXME, LAB-FIXUP, LAB-SIDE<n>, LAB-MERGE
                  the rounds of vf's closed loops: a reviewer's verdict, a
                  resumed author's revision or fix, a resolver's edit
                  (fake_model_loops.py)
Side requests are answered normally whatever the marker: requests without tools
on Chat Completions (opencode's title agent) get a short title, and Gemini's
routing classifier (a generateContent with a complexity_score schema) gets
complexity_score 1 (0 breaks gemini).

Control endpoints: GET /__lab/health, GET /__lab/mark?case=NAME (logged, to split
the log per case), GET|POST /__lab/shutdown.

With --dns-port, DNS queries on that UDP port are answered NXDOMAIN and logged as
`dns <name>` (the sandbox points /etc/resolv.conf at it): any attempt to reach a
name shows up.

Every request is appended to the JSONL log as {ts, port, method, path, headers,
body, served}, keys redacted, plus `continuity: {proven, memo}` for a LAB-RESUME. SIGTERM/SIGINT/shutdown stop it cleanly (exit 0).

Usage: fake_model_server.py --port 18081 [--port 18082 ...] [--log FILE]
                            [--ready-file FILE] [--default-scenario json]
"""

import argparse
import gzip
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# The scenario logic lives next to this file (the script's folder is on sys.path).
from fake_model_plan import TITLE_TEXT, plan  # noqa: E402

USAGE_IN, USAGE_OUT = 100, 20

ERROR_TEXT = {
    400: "lab: bad request",
    429: "lab: rate limited",
    500: "lab: internal server error",
    503: "lab: service unavailable",
    529: "lab: overloaded",
}
STREAM_ERROR_TEXT = "lab: the stream broke off"


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = 0

    def next_id(self, prefix):
        with self.lock:
            self.n += 1
            n = self.n
        return "%s_lab%04d%s" % (prefix, n, os.urandom(6).hex())


IDS = Counter()


def chunks(text, n=3):
    """Splits text into up to n pieces so that clients see several deltas."""
    if len(text) < n * 4:
        return [text]
    size = -(-len(text) // n)
    return [text[i:i + size] for i in range(0, len(text), size)]


# ---------------------------------------------------------------- quota headers

# A window's length when the marker names no reset: claude's five-hour window.
DEFAULT_RESET = 5 * 3600


def quota_headers(api, quota, now=None):
    """The headers a provider sends about its quota (LAB-QUOTA, LAB-ERR429-RESET):
    Anthropic's unified limiter (the names the pinned claude reads), the
    `x-codex-primary-*` window codex reads plus OpenAI's `x-ratelimit-*`, and
    `retry-after` on a refusal. Gemini sends no such header (a refusal says its
    delay in the body: gemini_quota_error)."""
    if not quota:
        return {}
    now = int(time.time() if now is None else now)
    reset = quota["reset"] if quota["reset"] is not None else DEFAULT_RESET
    util = quota["utilization"]
    h = {}
    if api == "anthropic":
        h["anthropic-ratelimit-unified-status"] = quota["status"]
        h["anthropic-ratelimit-unified-reset"] = str(now + reset)
        h["anthropic-ratelimit-unified-representative-claim"] = "five_hour"
        h["anthropic-ratelimit-unified-5h-status"] = quota["status"]
        h["anthropic-ratelimit-unified-5h-reset"] = str(now + reset)
        if util is not None:
            h["anthropic-ratelimit-unified-5h-utilization"] = "%g" % util
    elif api == "openai":
        if util is not None:
            h["x-codex-primary-used-percent"] = "%g" % (util * 100)
            h["x-ratelimit-limit-requests"] = "100"
            h["x-ratelimit-remaining-requests"] = str(max(0, round(100 * (1 - util))))
        h["x-codex-primary-window-minutes"] = "300"
        h["x-codex-primary-reset-at"] = str(now + reset)
        h["x-codex-primary-reset-after-seconds"] = str(reset)
        h["x-ratelimit-reset-requests"] = "%ds" % reset
    if quota["status"] == "rejected" and api != "gemini":
        h["retry-after"] = str(reset)
        h["retry-after-ms"] = str(reset * 1000)
    return h


def gemini_quota_error(text, reset):
    """Gemini's 429 for a per-minute quota: RESOURCE_EXHAUSTED with a QuotaFailure and
    google.rpc.RetryInfo's `retryDelay` (what gemini's retry logic reads)."""
    return {"error": {"code": 429, "message": "%s Please retry in %ds." % (text, reset),
                      "status": "RESOURCE_EXHAUSTED", "details": [
                          {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                           "violations": [{
                               "quotaMetric": "generativelanguage.googleapis.com/"
                                              "generate_content_free_tier_requests",
                               "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                               "quotaDimensions": {"location": "global", "model": "lab-model"},
                               "quotaValue": "10"}]},
                          {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                           "retryDelay": "%ds" % reset}]}}


# ---------------------------------------------------------------- handler

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "labmodel/1.0"

    def log_message(self, fmt, *args):  # quiet: everything goes to the JSONL log
        pass

    # -- plumbing

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        enc = (self.headers.get("Content-Encoding") or "").lower()
        try:
            if enc == "gzip":
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                raw = zlib.decompress(raw)
        except (OSError, zlib.error):
            pass
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_unparsed": raw[:2000].decode("utf-8", "replace")}

    def read_chunked(self):
        data = b""
        while True:
            line = self.rfile.readline().strip()
            size = int(line.split(b";")[0] or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def record(self, body, served):
        entry = {"ts": time.time(), "port": self.server.server_port, "method": self.command,
                 "path": self.path, "headers": self.redacted_headers(), "body": body,
                 "served": served}
        continuity = (getattr(self, "current_plan", None) or {}).get("continuity")
        if continuity is not None:
            entry["continuity"] = continuity
        self.server.app.log(entry)

    def redacted_headers(self):
        headers = {}
        for k, v in self.headers.items():
            if k.lower() in ("authorization", "x-api-key", "x-goog-api-key", "api-key"):
                v = v[:12] + "...(redacted)"
            headers[k] = v
        return headers

    def send_json(self, status, obj, extra=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in dict(extra or {}, **self.quota_headers()).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        # No length is known up front: close the connection to end the stream.
        self.send_header("Connection", "close")
        for k, v in self.quota_headers().items():
            self.send_header(k, v)
        self.end_headers()
        self.close_connection = True

    def quota_headers(self):
        """The quota headers the current answer carries (none on a side request)."""
        p = getattr(self, "current_plan", None) or {}
        return quota_headers(getattr(self, "current_api", None), p.get("quota"))

    def sse(self, data, event=None):
        msg = ""
        if event:
            msg += "event: %s\n" % event
        msg += "data: %s\n\n" % (data if isinstance(data, str) else json.dumps(data))
        self.wfile.write(msg.encode())
        self.wfile.flush()

    # -- routing

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/__lab/health":
            self.record(None, "health")
            return self.send_json(200, {"ok": True})
        if url.path == "/__lab/mark":
            case = (parse_qs(url.query).get("case") or [""])[0]
            self.record(None, "mark %s" % case)
            return self.send_json(200, {"ok": True, "case": case})
        if url.path == "/__lab/shutdown":
            return self.shutdown_request()
        if url.path.endswith("/models"):
            self.record(None, "models")
            return self.send_json(200, {"object": "list", "data": [
                {"id": "lab-model", "object": "model", "created": 0, "owned_by": "lab"}]})
        self.record(None, "404")
        self.send_json(404, {"error": {"message": "lab: no such endpoint %s" % url.path}})

    def shutdown_request(self):
        self.record(None, "shutdown")
        self.send_json(200, {"ok": True})
        threading.Thread(target=self.server.app.stop, daemon=True).start()

    def do_POST(self):
        self.current_plan = None
        self.current_api = None
        url = urlsplit(self.path)
        body = self.read_body()
        path = url.path
        if path == "/__lab/shutdown":
            return self.shutdown_request()
        if not isinstance(body, dict) or "_unparsed" in body:
            self.record(body, "400 not json")
            return self.send_json(400, {"error": {"message": "lab: body is not a JSON object"}})
        default = self.server.app.default_scenario
        try:
            if path.endswith("/messages"):
                return self.api_anthropic(body, default)
            if path.endswith("/responses"):
                return self.api_responses(body, default)
            if path.endswith("/chat/completions"):
                return self.api_chat(body, default)
            m = re.search(r"/models/([^/:]+):(streamGenerateContent|generateContent)$", path)
            if m:
                return self.api_gemini(body, default, m.group(1), m.group(2) == "streamGenerateContent")
            if path.endswith(":countTokens"):
                self.record(body, "gemini countTokens")
                return self.send_json(200, {"totalTokens": USAGE_IN})
        except (BrokenPipeError, ConnectionResetError):
            return None
        except Exception as exc:  # a bug here must show in the log, not as a hang
            self.record(body, "bug: %r" % exc)
            try:
                self.send_json(500, {"error": {"message": "lab: fake server bug: %r" % exc}})
            except OSError:
                pass
            raise
        self.record(body, "404")
        self.send_json(404, {"error": {"message": "lab: no such endpoint %s" % path}})

    # -- errors

    def error_reply(self, api, code, served):
        text = ERROR_TEXT.get(code, "lab: error %d" % code)
        extra = {"retry-after": "0", "retry-after-ms": "0"}
        quota = (getattr(self, "current_plan", None) or {}).get("quota")
        if api == "anthropic":
            kind = {400: "invalid_request_error", 401: "authentication_error",
                    429: "rate_limit_error", 529: "overloaded_error"}.get(code, "api_error")
            extra["request-id"] = IDS.next_id("req")
            obj = {"type": "error", "error": {"type": kind, "message": text}}
        elif api == "gemini" and quota and code == 429:
            reset = quota["reset"] if quota["reset"] is not None else 60
            obj = gemini_quota_error(text, reset)
        elif api == "gemini":
            status = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED",
                      503: "UNAVAILABLE"}.get(code, "INTERNAL")
            obj = {"error": {"code": code, "message": text, "status": status}}
        elif quota and quota["reset"] is not None and self.current_plan.get("served") == "quota-rejected":
            # The ChatGPT backend's refusal of a plan's window (what codex shows as
            # "You've hit your usage limit"): the window's reset in the body too.
            now = int(time.time())
            obj = {"error": {"type": "usage_limit_reached", "message": text,
                             "plan_type": "plus", "resets_at": now + quota["reset"],
                             "resets_in_seconds": quota["reset"]}}
        else:
            kind = {400: "invalid_request_error", 429: "rate_limit_exceeded"}.get(code, "server_error")
            obj = {"error": {"message": text, "type": kind, "param": None, "code": kind}}
        self.record(self.current_body, "%s error %d" % (served, code))
        self.send_json(code, obj, extra)

    # -- Anthropic Messages

    def api_anthropic(self, body, default):
        self.current_body = body
        p = self.current_plan = plan("anthropic", body, default)
        self.current_api = "anthropic"
        stream = body.get("stream", False)
        if p["kind"] == "error":
            return self.error_reply("anthropic", p["code"], p["served"])
        if p["kind"] == "stream_error" and not stream:
            # The non-streaming fallback after stream errors fails too.
            return self.error_reply("anthropic", 529, "streamerr(non-stream)")
        model = body.get("model", "lab-model")
        msg_id = IDS.next_id("msg")
        blocks = []
        if p.get("reasoning"):
            blocks.append({"type": "thinking", "thinking": p["reasoning"],
                           "signature": "bGFiLXNpZ25hdHVyZQ=="})
        if p.get("text"):
            blocks.append({"type": "text", "text": p["text"]})
        if p.get("tool"):
            name, args = p["tool"]
            blocks.append({"type": "tool_use", "id": IDS.next_id("toolu"), "name": name,
                           "input": args})
        stop = "tool_use" if p.get("tool") else "end_turn"
        usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not stream:
            self.record(body, "%s anthropic json" % p["served"])
            return self.send_json(200, {"id": msg_id, "type": "message", "role": "assistant",
                                        "model": model, "content": blocks, "stop_reason": stop,
                                        "stop_sequence": None, "usage": usage})
        self.record(body, "%s anthropic %s" % (p["served"], "stream_error" if p["kind"] == "stream_error" else "sse"))
        self.start_sse()
        start_usage = dict(usage, output_tokens=1)
        self.sse({"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}}, "message_start")
        if p["kind"] == "stream_error":
            self.sse({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start")
            self.sse({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": "Partial "}}, "content_block_delta")
            self.sse({"type": "error", "error": {"type": "overloaded_error",
                                                 "message": STREAM_ERROR_TEXT}}, "error")
            return None
        for i, b in enumerate(blocks):
            if b["type"] == "thinking":
                self.sse({"type": "content_block_start", "index": i,
                          "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
                         "content_block_start")
                for piece in chunks(b["thinking"]):
                    self.sse({"type": "content_block_delta", "index": i,
                              "delta": {"type": "thinking_delta", "thinking": piece}},
                             "content_block_delta")
                self.sse({"type": "content_block_delta", "index": i,
                          "delta": {"type": "signature_delta", "signature": b["signature"]}},
                         "content_block_delta")
            elif b["type"] == "text":
                self.sse({"type": "content_block_start", "index": i,
                          "content_block": {"type": "text", "text": ""}}, "content_block_start")
                for piece in chunks(b["text"], 4):
                    self.sse({"type": "content_block_delta", "index": i,
                              "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
            else:
                self.sse({"type": "content_block_start", "index": i,
                          "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"],
                                            "input": {}}}, "content_block_start")
                self.sse({"type": "content_block_delta", "index": i,
                          "delta": {"type": "input_json_delta",
                                    "partial_json": json.dumps(b["input"])}}, "content_block_delta")
            self.sse({"type": "content_block_stop", "index": i}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": USAGE_OUT}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")
        return None

    # -- OpenAI Responses

    def api_responses(self, body, default):
        self.current_body = body
        p = self.current_plan = plan("responses", body, default)
        self.current_api = "openai"
        if p["kind"] == "error":
            return self.error_reply("openai", p["code"], p["served"])
        model = body.get("model", "lab-model")
        resp_id = IDS.next_id("resp")
        created = int(time.time())
        output = []
        if p.get("reasoning"):
            output.append({"type": "reasoning", "id": IDS.next_id("rs"),
                           "summary": [{"type": "summary_text", "text": p["reasoning"]}],
                           "encrypted_content": "bGFiLXJlYXNvbmluZw=="})
        if p.get("text"):
            output.append({"type": "message", "id": IDS.next_id("msg"), "status": "completed",
                           "role": "assistant",
                           "content": [{"type": "output_text", "text": p["text"], "annotations": []}]})
        if p.get("tool"):
            name, args = p["tool"]
            output.append({"type": "function_call", "id": IDS.next_id("fc"), "status": "completed",
                           "call_id": IDS.next_id("call"), "name": name,
                           "arguments": json.dumps(args)})
        usage = {"input_tokens": USAGE_IN, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": USAGE_OUT,
                 "output_tokens_details": {"reasoning_tokens": 10 if p.get("reasoning") else 0},
                 "total_tokens": USAGE_IN + USAGE_OUT}
        base = {"id": resp_id, "object": "response", "created_at": created, "model": model,
                "status": "in_progress", "output": [], "usage": None, "error": None}
        if not body.get("stream", False):
            if p["kind"] == "stream_error":
                return self.error_reply("openai", 500, p["served"])
            self.record(body, "%s responses json" % p["served"])
            return self.send_json(200, dict(base, status="completed", output=output, usage=usage))
        self.record(body, "%s responses %s" % (p["served"], "stream_error" if p["kind"] == "stream_error" else "sse"))
        self.start_sse()
        seq = [0]

        def ev(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self.sse(obj, obj["type"])

        ev({"type": "response.created", "response": base})
        ev({"type": "response.in_progress", "response": base})
        if p["kind"] == "stream_error":
            ev({"type": "response.failed", "response": dict(
                base, status="failed",
                error={"code": "server_error", "message": STREAM_ERROR_TEXT})})
            return None
        for oi, item in enumerate(output):
            if item["type"] == "reasoning":
                ev({"type": "response.output_item.added", "output_index": oi,
                    "item": dict(item, summary=[])})
                text = item["summary"][0]["text"]
                part = {"type": "summary_text", "text": ""}
                ev({"type": "response.reasoning_summary_part.added", "item_id": item["id"],
                    "output_index": oi, "summary_index": 0, "part": part})
                for piece in chunks(text):
                    ev({"type": "response.reasoning_summary_text.delta", "item_id": item["id"],
                        "output_index": oi, "summary_index": 0, "delta": piece})
                ev({"type": "response.reasoning_summary_text.done", "item_id": item["id"],
                    "output_index": oi, "summary_index": 0, "text": text})
                ev({"type": "response.reasoning_summary_part.done", "item_id": item["id"],
                    "output_index": oi, "summary_index": 0,
                    "part": {"type": "summary_text", "text": text}})
            elif item["type"] == "message":
                text = item["content"][0]["text"]
                ev({"type": "response.output_item.added", "output_index": oi,
                    "item": dict(item, status="in_progress", content=[])})
                ev({"type": "response.content_part.added", "item_id": item["id"],
                    "output_index": oi, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}})
                for piece in chunks(text, 4):
                    ev({"type": "response.output_text.delta", "item_id": item["id"],
                        "output_index": oi, "content_index": 0, "delta": piece})
                ev({"type": "response.output_text.done", "item_id": item["id"],
                    "output_index": oi, "content_index": 0, "text": text})
                ev({"type": "response.content_part.done", "item_id": item["id"],
                    "output_index": oi, "content_index": 0, "part": item["content"][0]})
            else:
                ev({"type": "response.output_item.added", "output_index": oi,
                    "item": dict(item, status="in_progress", arguments="")})
                ev({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                    "output_index": oi, "delta": item["arguments"]})
                ev({"type": "response.function_call_arguments.done", "item_id": item["id"],
                    "output_index": oi, "arguments": item["arguments"]})
            ev({"type": "response.output_item.done", "output_index": oi, "item": item})
        ev({"type": "response.completed",
            "response": dict(base, status="completed", output=output, usage=usage)})
        return None

    # -- OpenAI Chat Completions

    def api_chat(self, body, default):
        self.current_body = body
        if not body.get("tools"):
            # A side request without tools (opencode's title agent): never an error.
            p = {"kind": "answer", "text": TITLE_TEXT, "served": "aux"}
        else:
            p = self.current_plan = plan("chat", body, default)
            self.current_api = "openai"
        if p["kind"] == "error":
            return self.error_reply("openai", p["code"], p["served"])
        model = body.get("model", "lab-model")
        cid = IDS.next_id("chatcmpl")
        created = int(time.time())
        calls = []
        if p.get("tool"):
            name, args = p["tool"]
            calls.append({"id": IDS.next_id("call"), "type": "function",
                          "function": {"name": name, "arguments": json.dumps(args)}})
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT,
                 "total_tokens": USAGE_IN + USAGE_OUT}
        if not body.get("stream", False):
            if p["kind"] == "stream_error":
                return self.error_reply("openai", 500, p["served"])
            self.record(body, "%s chat json" % p["served"])
            msg = {"role": "assistant", "content": p.get("text")}
            if p.get("reasoning"):
                msg["reasoning_content"] = p["reasoning"]
            if calls:
                msg["tool_calls"] = calls
            return self.send_json(200, {"id": cid, "object": "chat.completion", "created": created,
                                        "model": model, "usage": usage, "choices": [
                                            {"index": 0, "message": msg, "finish_reason": finish}]})
        self.record(body, "%s chat %s" % (p["served"], "stream_error" if p["kind"] == "stream_error" else "sse"))
        self.start_sse()

        def chunk(delta, finish_reason=None):
            self.sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                      "model": model, "choices": [{"index": 0, "delta": delta,
                                                   "finish_reason": finish_reason}]})

        chunk({"role": "assistant", "content": ""})
        if p["kind"] == "stream_error":
            chunk({"content": "Partial "})
            # Worded so that no client classes it as transient: opencode retries any
            # in-stream error whose text looks like a server error, with backoff
            # up to 30 s (about 70 s in all).
            self.sse({"error": {"message": STREAM_ERROR_TEXT, "type": "lab_stream_error",
                                "param": None, "code": "lab_stream_error"}})
            return None
        if p.get("reasoning"):
            for piece in chunks(p["reasoning"]):
                chunk({"reasoning_content": piece})
        for piece in chunks(p.get("text") or "", 4):
            chunk({"content": piece})
        for i, c in enumerate(calls):
            chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                   "function": {"name": c["function"]["name"], "arguments": ""}}]})
            chunk({"tool_calls": [{"index": i, "function": {"arguments": c["function"]["arguments"]}}]})
        chunk({}, finish)
        self.sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                  "choices": [], "usage": usage})
        self.sse("[DONE]")
        return None

    # -- Gemini

    def api_gemini(self, body, default, model, stream):
        self.current_body = body
        schema = json.dumps((body.get("generationConfig") or {}).get("responseJsonSchema")
                            or (body.get("generationConfig") or {}).get("responseSchema") or {})
        usage = {"promptTokenCount": USAGE_IN, "candidatesTokenCount": USAGE_OUT,
                 "totalTokenCount": USAGE_IN + USAGE_OUT}
        if "complexity_score" in schema:
            # The routing classifier: must answer >= 1, whatever the scenario.
            answer = json.dumps({"complexity_reasoning": "lab: simple task", "complexity_score": 1})
            self.record(body, "aux-json gemini json")
            reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
                                     "finishReason": "STOP", "index": 0}],
                     "usageMetadata": usage, "modelVersion": model}
            if stream:
                self.start_sse()
                self.sse(reply)
                return None
            return self.send_json(200, reply)
        p = self.current_plan = plan("gemini", body, default)
        self.current_api = "gemini"
        if p["kind"] == "error":
            return self.error_reply("gemini", p["code"], p["served"])
        finish = "MAX_TOKENS" if p["kind"] == "max_tokens" else "STOP"
        parts = []
        if p.get("reasoning"):
            parts.append({"text": p["reasoning"], "thought": True})
        if p.get("text"):
            parts.append({"text": p["text"]})
        if p.get("tool"):
            name, args = p["tool"]
            parts.append({"functionCall": {"name": name, "args": args}})
        if not stream:
            if p["kind"] == "stream_error":
                return self.error_reply("gemini", 500, p["served"])
            self.record(body, "%s gemini json" % p["served"])
            return self.send_json(200, {"candidates": [{"content": {"role": "model", "parts": parts},
                                                        "finishReason": finish, "index": 0}],
                                        "usageMetadata": usage, "modelVersion": model})
        self.record(body, "%s gemini %s" % (p["served"], "stream_error" if p["kind"] == "stream_error" else "sse"))
        self.start_sse()

        def send(part_list, finish=None):
            cand = {"content": {"role": "model", "parts": part_list}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            obj = {"candidates": [cand], "modelVersion": model}
            if finish:
                obj["usageMetadata"] = usage
            self.sse(obj)

        if p["kind"] == "stream_error":
            # A stream that ends without a finish reason is what gemini treats as broken.
            send([{"text": "Partial "}])
            return None
        pieces = []
        for part in parts:
            if "text" in part and not part.get("thought"):
                pieces.extend({"text": t} for t in chunks(part["text"], 2))
            else:
                pieces.append(part)
        for i, part in enumerate(pieces):
            send([part], finish if i == len(pieces) - 1 else None)
        return None


def dns_name(packet):
    """The first question's name of a DNS query, or None."""
    labels, i = [], 12
    while i < len(packet):
        n = packet[i]
        if n == 0:
            return ".".join(labels) or "."
        if n & 0xC0:
            return None
        labels.append(packet[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return None


def dns_sink(app, sock):
    """Answers every DNS query NXDOMAIN and logs the name: a CLI that tries to reach
    anything but loopback shows up in the log as a `dns <name>` entry."""
    while not app.stopped.is_set():
        try:
            packet, peer = sock.recvfrom(4096)
        except OSError:
            return
        if len(packet) < 12:
            continue
        name = dns_name(packet)
        app.log({"ts": time.time(), "port": sock.getsockname()[1], "method": "DNS",
                 "path": name, "headers": {}, "body": None, "served": "dns %s" % name})
        # Same id and question, QR=1, RD/RA kept, RCODE=3 (NXDOMAIN), no answers.
        flags = 0x8000 | (int.from_bytes(packet[2:4], "big") & 0x0100) | 0x0080 | 3
        reply = packet[:2] + flags.to_bytes(2, "big") + packet[4:6] + b"\0\0\0\0\0\0" + packet[12:]
        try:
            sock.sendto(reply, peer)
        except OSError:
            pass


class App:
    def __init__(self, ports, log_path, default_scenario, dns_port=None):
        self.log_path = log_path
        self.log_lock = threading.Lock()
        self.default_scenario = default_scenario
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.servers = []
        for port in ports:
            srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
            srv.daemon_threads = True
            srv.app = self
            self.servers.append(srv)
        self.stopped = threading.Event()
        self.dns = None
        if dns_port is not None:
            self.dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.dns.bind(("127.0.0.1", dns_port))

    def log(self, entry):
        if not self.log_file:
            return
        line = json.dumps(entry, ensure_ascii=False)
        with self.log_lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def run(self):
        threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2},
                                    daemon=True) for s in self.servers]
        if self.dns:
            threads.append(threading.Thread(target=dns_sink, args=(self, self.dns), daemon=True))
        for t in threads:
            t.start()
        self.stopped.wait()
        if self.dns:
            self.dns.close()
        for s in self.servers:
            s.shutdown()
            s.server_close()
        if self.log_file:
            self.log_file.close()

    def stop(self):
        self.stopped.set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, action="append", required=True,
                    help="port to listen on (127.0.0.1; 0 = any free one, see --ready-file);"
                         " repeat for several")
    ap.add_argument("--log", help="append every request to this JSONL file")
    ap.add_argument("--ready-file",
                    help='write {"pid", "ports"} as JSON to this file once all ports listen')
    ap.add_argument("--default-scenario", default="json",
                    help="scenario when the prompt has no LAB- marker (default: json)")
    ap.add_argument("--dns-port", type=int,
                    help="also answer DNS on this UDP port (NXDOMAIN, each name logged)")
    args = ap.parse_args()
    try:
        app = App(args.port, args.log, args.default_scenario, args.dns_port)
    except OSError as exc:
        print("fake_model_server: cannot listen: %s" % exc, file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: app.stop())
    signal.signal(signal.SIGINT, lambda *_: app.stop())
    if args.ready_file:
        # Written last and atomically: its presence means every port accepts.
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"pid": os.getpid(), "ports": [s.server_port for s in app.servers]}, f)
        os.replace(tmp, args.ready_file)
    app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
