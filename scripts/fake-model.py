"""A tiny fake model server for re-verifying engine CLIs offline.

Usage: python3 scripts/fake-model.py <port> <request-log.jsonl>
Answers every POST with one fixed fenced-json answer as SSE: Anthropic Messages
(/v1/messages), OpenAI Responses (/v1/responses), otherwise Chat Completions.
Each request is appended to the log so tests of argv effects (attachments,
stdin prompts, resumed history) can be checked by hand. Run it inside
`unshare -n` next to the CLI: it never needs the network.
"""
import json, sys, http.server
LOG = open(sys.argv[2], "a")
ANSWER = "Done.\n\n```json\n{\"confidence\": 0.9, \"files_changed\": []}\n```"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        LOG.write(json.dumps({"method": "GET", "path": self.path}) + "\n"); LOG.flush()
        body = b'{"data":[{"id":"lab-model","object":"model"}]}'
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("content-length", 0)); raw = self.rfile.read(n)
        try: body = json.loads(raw)
        except Exception: body = raw.decode("utf-8", "replace")
        LOG.write(json.dumps({"method": "POST", "path": self.path, "body": body}) + "\n"); LOG.flush()
        self.send_response(200); self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache"); self.send_header("connection", "close"); self.end_headers()
        def ev(name, data):
            if name: self.wfile.write(f"event: {name}\n".encode())
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        if self.path.startswith("/v1/responses"):
            ev("response.created", {"type":"response.created","response":{"id":"resp_1","status":"in_progress"}})
            item = {"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":ANSWER,"annotations":[]}]}
            ev("response.output_item.added", {"type":"response.output_item.added","output_index":0,"item":dict(item, content=[], status="in_progress")})
            ev("response.output_text.delta", {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":ANSWER})
            ev("response.output_item.done", {"type":"response.output_item.done","output_index":0,"item":item})
            ev("response.completed", {"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[item],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":30}}})
        elif self.path.startswith("/v1/messages"):
            ev("message_start", {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":None,"stop_sequence":None,"usage":{"input_tokens":10,"output_tokens":1}}})
            ev("content_block_start", {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})
            ev("content_block_delta", {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":ANSWER}})
            ev("content_block_stop", {"type":"content_block_stop","index":0})
            ev("message_delta", {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":None},"usage":{"output_tokens":20}})
            ev("message_stop", {"type":"message_stop"})
        else:
            base = {"id":"c1","object":"chat.completion.chunk","created":1,"model":"lab-model"}
            ev(None, dict(base, choices=[{"index":0,"delta":{"role":"assistant","content":ANSWER},"finish_reason":None}]))
            ev(None, dict(base, choices=[{"index":0,"delta":{},"finish_reason":"stop"}], usage={"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}))
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
