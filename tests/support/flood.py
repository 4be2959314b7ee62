#!/usr/bin/env python3
"""An engine whose answer is far longer than vf keeps in memory (issue 39).

    flood.py <text|gemini> <MiB>

Writes about <MiB> MiB of answer, then a fenced json summary `{"flood": <MiB>}`:
`text` as plain lines of 1 KiB (the bridge's text transport), `gemini` as
gemini stream-json: `init`, assistant `delta` messages of 64 KiB each (one
message, as gemini streams it), the summary delta, `result`.
"""

import json
import sys

MODE, MIB = sys.argv[1], int(sys.argv[2])
OUT = sys.stdout.buffer
SUMMARY = '\n```json\n{"flood": %d}\n```\n' % MIB


def frame(obj):
    OUT.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


if MODE == "text":
    line = (b"filler " * 147)[:1023] + b"\n"
    for _ in range(MIB * 1024):
        OUT.write(line)
    OUT.write(SUMMARY.encode())
elif MODE == "gemini":
    frame({"type": "init", "session_id": "d3f6ac9f-7916-4e67-bc5e-ec6210584553",
           "model": "auto"})
    piece = ("filler " * 9363)[:65536]
    for _ in range(MIB * 16):
        frame({"type": "message", "role": "assistant", "content": piece, "delta": True})
    frame({"type": "message", "role": "assistant", "content": SUMMARY, "delta": True})
    frame({"type": "result", "status": "success",
           "stats": {"total_tokens": 3, "input_tokens": 2, "output_tokens": 1}})
sys.stdout.flush()
