#!/usr/bin/env python3
"""Figures of `vf mcp` (issue 44, docs/MCP.md): the round-trip of a `dispatch`
tool call against `vf dispatch` on the same fake engine (median of N, side
by side), and the RSS of an idle `vf mcp`.

    scripts/bench-mcp.py [VF_BINARY] [N]      (default: target/release/vf, 50)
"""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VF = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/vf")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 50
CAPTURE = os.path.join(ROOT, "fixtures/codex/0.171.0/b_tool.stdout.jsonl")


def env_for(d):
    e = {k: v for k, v in os.environ.items() if not (k.startswith("VF_") or k.startswith("FAKE_"))}
    e.update(VF_STATE_DIR=os.path.join(d, "state"), VF_CONFIG=os.path.join(d, "none.toml"),
             XDG_CACHE_HOME=os.path.join(d, "cache"), VF_QUOTA_FILE=os.path.join(d, "quota.json"),
             VF_CODEX_BIN=os.path.join(ROOT, "tests/fake/fake-engine"), FAKE_STDOUT=CAPTURE)
    return e


def cli_runs(d):
    times = []
    for i in range(N):
        t = time.perf_counter()
        subprocess.run([VF, "dispatch", "--engine", "codex", "--unit", f"cli{i}", "--output", "json"],
                       input=b"hi", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=d, env=env_for(d), check=True)
        times.append(time.perf_counter() - t)
    return times


class Server:
    def __init__(self, d):
        self.p = subprocess.Popen([VF, "mcp", "--allow-engines", "codex"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=d, env=env_for(d))
        self.id = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, o):
        self.p.stdin.write((json.dumps(o) + "\n").encode())
        self.p.stdin.flush()

    def ask(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.id:
                return m

    def rss_kib(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def mcp_runs(d):
    s = Server(d)
    times = []
    for i in range(N):
        t = time.perf_counter()
        r = s.ask("tools/call", {"name": "dispatch",
                                 "arguments": {"engine": "codex", "prompt": "hi", "unit": f"mcp{i}"}})
        times.append(time.perf_counter() - t)
        assert r["result"]["structuredContent"]["state"] == "done", r
    s.close()
    return times


def main():
    with tempfile.TemporaryDirectory() as d:
        d = os.path.realpath(d)
        cli, mcp = cli_runs(d), mcp_runs(d)
        idle = Server(d)
        time.sleep(0.5)  # settle after the handshake before reading RSS
        rss = idle.rss_kib()
        idle.close()
    mc, mm = statistics.median(cli) * 1000, statistics.median(mcp) * 1000
    print(f"binary: {VF}")
    print(f"dispatch round-trip, median of {N}: vf dispatch {mc:.1f} ms | dispatch tool call {mm:.1f} ms"
          f" | overhead {mm - mc:+.1f} ms")
    print(f"idle vf mcp RSS: {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
