#!/usr/bin/env python3
"""Records genuine ACP sessions of a real agent CLI (both directions of JSON-RPC).

Meant to run INSIDE scripts/engine-sandbox.sh (loopback only, fake model server):

    scripts/engine-sandbox.sh gemini -- python3 tests/real-engines/acp_capture.py \
        --out DIR -- gemini --acp

Each case starts the agent afresh and writes into --out:
  <case>.acp.jsonl   one JSON-RPC message per line, in wire order, tagged with its
                     direction: {"dir":"out","msg":{...}} (vf -> agent) or
                     {"dir":"in","msg":{...}} (agent -> vf); a line from the agent
                     that is not JSON is {"dir":"in","text":"..."}
  <case>.stderr.txt  the agent's stderr
  <case>.cmd.txt     the command, the policy, the exit code
Paths are rewritten (HOME -> /home/dev, work dir -> /home/dev/project, TMPDIR ->
/home/dev/tmp, the engine dir -> /opt/engines). The client (this script) offers no
fs or terminal methods, answers `session/request_permission` by its policy (allow:
the first allow_once option; reject: the first reject_once option) and any other
request with JSON-RPC -32601 (method not found).
"""

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request

MEMO_ID = os.urandom(4).hex()
P_JSON = ("LAB-JSON Reply with a fenced json block containing confidence and files_changed."
          " (LAB-MEMO-%s)" % MEMO_ID)
P_TOOL = "LAB-TOOL Run the shell command 'echo hello' and report what it printed."
P_WRITE = "LAB-WRITE Create the file lab-written.txt with the shell."
P_RESUME = "LAB-RESUME Continue the previous task and report again. (LAB-RECALL-%s)" % MEMO_ID
P_ERR = "LAB-ERR500 trigger a server error"

CLIENT_CAPS = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}


class Agent:
    """One agent process; every line in both directions goes to `log`."""

    def __init__(self, argv, cwd, log, env):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.log = log
        self.next_id = 0
        self.inbox = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.rstrip(b"\n").decode("utf-8", "replace")
            try:
                msg = json.loads(line)
            except ValueError:
                self.log.append({"dir": "in", "text": line})
                continue
            self.log.append({"dir": "in", "msg": msg})
            self.inbox.put(msg)
        self.inbox.put(None)

    def _read_err(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace"))

    def send(self, msg):
        self.log.append({"dir": "out", "msg": msg})
        self.proc.stdin.write((json.dumps(msg, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, policy, deadline):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(method)
            msg = self.inbox.get(timeout=left)
            if msg is None:
                raise EOFError("agent exited during " + method)
            if "method" in msg and "id" in msg:
                self.answer(msg, policy)
            elif msg.get("id") == rid and "method" not in msg:
                return msg

    def answer(self, msg, policy):
        if msg["method"] != "session/request_permission":
            self.send({"jsonrpc": "2.0", "id": msg["id"],
                       "error": {"code": -32601, "message": "method not found"}})
            return
        want = "allow_once" if policy == "allow" else "reject_once"
        options = msg.get("params", {}).get("options", [])
        chosen = next((o for o in options if o.get("kind") == want), None)
        if chosen is None:
            outcome = {"outcome": "cancelled"}
        else:
            outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def mark(case):
    url = os.environ.get("VF_FAKE_URL")
    if url:
        try:
            urllib.request.urlopen(url + "/__lab/mark?case=" + case, timeout=5).read()
        except OSError:
            pass


def run_case(args, name, prompt, policy, load=None, cancel=False):
    """Runs one case; returns the session id (or None)."""
    mark(name)
    log = []
    cwd = os.environ.get("VF_SANDBOX_HOME", os.path.expanduser("~")) + "/project"
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    agent = Agent(args.agent, cwd, log, env)
    deadline = time.time() + args.timeout
    sid, note = None, "ok"
    try:
        init = agent.request("initialize", {
            "protocolVersion": 1, "clientCapabilities": CLIENT_CAPS,
            "clientInfo": {"name": "vf-capture", "version": "0"}}, policy, deadline)
        if "error" in init:
            raise RuntimeError("initialize failed")
        if load:
            sid = load
            agent.request("session/load", {"sessionId": load, "cwd": cwd, "mcpServers": []},
                          policy, deadline)
        else:
            new = agent.request("session/new", {"cwd": cwd, "mcpServers": []}, policy, deadline)
            sid = new.get("result", {}).get("sessionId")
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}
        if cancel:
            def later():
                time.sleep(args.cancel_after)
                agent.send({"jsonrpc": "2.0", "method": "session/cancel",
                            "params": {"sessionId": sid}})
            threading.Thread(target=later, daemon=True).start()
        agent.request("session/prompt", params, policy, deadline)
    except (TimeoutError, EOFError, RuntimeError, queue.Empty) as e:
        note = "%s: %s" % (type(e).__name__, e)
    code = agent.close()
    write_case(args, name, log, agent.stderr, policy, code, note)
    print("case %s: %s (exit %s)" % (name, note, code), file=sys.stderr)
    return sid


def sanitize(text):
    home = os.environ.get("VF_SANDBOX_HOME", "")
    pairs = []
    for var in ("VF_ENGINE_BIN_gemini", "VF_ENGINE_BIN_opencode"):
        b = os.environ.get(var)
        if b:
            pairs.append((os.path.dirname(os.path.dirname(os.path.dirname(b))), "/opt/engines"))
    if home:
        pairs += [(home + "/project", "/home/dev/project"), (home + "/tmp", "/home/dev/tmp"),
                  (home, "/home/dev")]
    for a, b in pairs:
        text = text.replace(a, b)
    # An engine dir reached by another path (a symlink, a checkout under /tmp
    # that the agent resolved itself, as in a stack trace): /opt/engines too.
    return ENGINE_DIR.sub("/opt/engines", text)


# Any absolute path to `.engines/<cli>-<version>` (scripts/install-engines.sh).
ENGINE_DIR = re.compile(r"(?:/[^/\s\"'()]+)*/\.engines/[A-Za-z0-9_-]+-[0-9][0-9A-Za-z.+-]*")


def write_case(args, name, log, stderr, policy, code, note):
    out = args.out
    with open(os.path.join(out, name + ".acp.jsonl"), "w", encoding="utf-8") as f:
        for entry in log:
            f.write(sanitize(json.dumps(entry, separators=(",", ":"), ensure_ascii=False)) + "\n")
    with open(os.path.join(out, name + ".stderr.txt"), "w", encoding="utf-8") as f:
        f.write(sanitize("".join(stderr)))
    with open(os.path.join(out, name + ".cmd.txt"), "w", encoding="utf-8") as f:
        f.write(sanitize("command: %s\nenv: %s\npolicy: %s\nexit: %s\nclient: %s\n"
                         % (" ".join(args.agent), " ".join(args.env), policy, code, note)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--cancel-after", type=float, default=0.0)
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="extra environment of the agent (e.g. opencode's OPENCODE_PERMISSION)")
    ap.add_argument("--cases", default="a_json,b_tool,b_write_rejected,c_resume,d_error500,e_cancel")
    ap.add_argument("--load", default=None, help="c_resume loads this session id")
    ap.add_argument("agent", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = args.cases.split(",")
    sid = None
    if "a_json" in cases:
        sid = run_case(args, "a_json", P_JSON, "reject")
    if "b_tool" in cases:
        run_case(args, "b_tool", P_TOOL, "allow")
    if "b_write_rejected" in cases:
        run_case(args, "b_write_rejected", P_WRITE, "reject")
        written = os.path.exists(os.environ.get("VF_SANDBOX_HOME", "") + "/project/lab-written.txt")
        print("b_write_rejected: file written: %s" % written, file=sys.stderr)
    sid = args.load or sid
    if "c_resume" in cases and sid:
        run_case(args, "c_resume", P_RESUME, "reject", load=sid)
    if "d_error500" in cases:
        run_case(args, "d_error500", P_ERR, "reject")
    if "e_cancel" in cases:
        run_case(args, "e_cancel", P_WRITE, "allow", cancel=True)


if __name__ == "__main__":
    main()
