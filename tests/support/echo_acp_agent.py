"""A minimal ACP agent that answers every prompt with "You said: <the prompt>"
(a test of redaction: an agent that echoes the private text it was given)."""
import json, sys
def send(m): sys.stdout.write(json.dumps(m)+"\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line); meth = m.get("method"); i = m.get("id")
    if meth == "initialize": send({"jsonrpc":"2.0","id":i,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}})
    elif meth == "session/new": send({"jsonrpc":"2.0","id":i,"result":{"sessionId":"s-1"}})
    elif meth == "session/prompt":
        text = "".join(b.get("text","") for b in m["params"]["prompt"])
        send({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"You said: "+text}}}})
        send({"jsonrpc":"2.0","id":i,"result":{"stopReason":"end_turn"}})
