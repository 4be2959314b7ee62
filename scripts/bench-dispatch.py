#!/usr/bin/env python3
"""Dispatch runtime benchmark (issue 4): prints figures, asserts nothing.

1. Wall overhead of `vf dispatch --output json` over running the same fake
   engine directly (median of N runs).
2. Latency from a line written by the child to its event on vf's stdout.

Usage: scripts/bench-dispatch.py [--runs N]   (builds vf in release first)
"""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 200

subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
VF = os.path.join(ROOT, "target", "release", "vf")
CAPTURE = os.path.join(ROOT, "fixtures", "codex", "0.171.0", "b_tool.stdout.jsonl")

tmp = tempfile.mkdtemp(prefix="vf-bench-")
# A minimal fake engine: answers --version, drains stdin, prints a capture.
fake = os.path.join(tmp, "codex")
with open(fake, "w") as f:
    f.write('#!/bin/sh\n[ "$1" = "--version" ] && { echo 0.171.0; exit 0; }\ncat >/dev/null\ncat "$FAKE_STDOUT"\n')
os.chmod(fake, 0o755)
env = dict(os.environ, FAKE_STDOUT=CAPTURE, VF_STATE_DIR=os.path.join(tmp, "state"))

def timed(cmd, stdin=b"prompt"):
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t

direct, via = [], []
for i in range(RUNS):
    direct.append(timed([fake, "exec", "--json", "-"]))
    via.append(timed([VF, "dispatch", "--engine", "codex", "--engine-bin", fake, "--unit", f"b{i}",
                      "--prompt", "prompt", "--output", "json"], stdin=b""))
md, mv = statistics.median(direct) * 1e3, statistics.median(via) * 1e3
print(f"runs: {RUNS}")
print(f"fake engine directly   median {md:7.2f} ms")
print(f"vf dispatch --output json median {mv:7.2f} ms")
print(f"overhead (median)      {mv - md:7.2f} ms   (target <= 5 ms)")

# Latency: the child stamps each line with its monotonic write time; we stamp arrival.
lat_fake = os.path.join(tmp, "stamp")
with open(lat_fake, "w") as f:
    f.write("""#!/usr/bin/env python3
import sys, time, json
if sys.argv[1:] == ["--version"]:
    print("0.171.0"); sys.exit(0)
sys.stdin.read()
print(json.dumps({"type": "thread.started", "thread_id": "01a229fa-c37b-7e73-b0a3-717af64fe884"}), flush=True)
for i in range(200):
    time.sleep(0.01)
    msg = {"type": "item.completed", "item": {"id": f"item_{i}", "type": "agent_message", "text": str(time.monotonic_ns())}}
    print(json.dumps(msg), flush=True)
print(json.dumps({"type": "turn.completed", "usage": {}}), flush=True)
""")
os.chmod(lat_fake, 0o755)
p = subprocess.Popen([VF, "dispatch", "--engine", "codex", "--engine-bin", lat_fake, "--unit", "latency",
                      "--prompt", "p", "--output", "jsonl"], stdout=subprocess.PIPE, env=env, bufsize=0)
lats = []
for raw in p.stdout:
    now = time.monotonic_ns()
    ev = json.loads(raw)
    text = ev.get("text", "")
    if ev.get("kind") == "message.taskAgent" and text.isdigit():
        lats.append((now - int(text)) / 1e6)
p.wait()
if lats:
    lats.sort()
    print(f"line->event latency over {len(lats)} lines: median {statistics.median(lats):.3f} ms, "
          f"p95 {lats[int(len(lats) * 0.95)]:.3f} ms, max {lats[-1]:.3f} ms   (target <= 1 ms)")
else:
    print("line->event latency: no message.taskAgent events seen (projector not emitting agent messages?)")
