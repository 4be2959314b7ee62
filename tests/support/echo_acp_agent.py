"""A minimal ACP agent that answers every prompt with "You said: <the prompt>"
(a test of redaction: an agent that echoes the private text it was given).
With an argument N, the echo comes in two agent_message_chunk frames, split
after its first N characters."""
import json, sys
split = int(sys.argv[1]) if len(sys.argv) > 1 else None
def send(m): sys.stdout.write(json.dumps(m)+"\n"); sys.stdout.flush()
def chunk(text): send({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}}})
for line in sys.stdin:
    m = json.loads(line); meth = m.get("method"); i = m.get("id")
    if meth == "initialize": send({"jsonrpc":"2.0","id":i,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}})
    elif meth == "session/new": send({"jsonrpc":"2.0","id":i,"result":{"sessionId":"s-1"}})
    elif meth == "session/prompt":
        text = "You said: " + "".join(b.get("text","") for b in m["params"]["prompt"])
        if split is None: chunk(text)
        else: chunk(text[:split]); chunk(text[split:])
        send({"jsonrpc":"2.0","id":i,"result":{"stopReason":"end_turn"}})
