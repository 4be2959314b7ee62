#!/usr/bin/env python3
"""Runs one real agent CLI through every scenario and checks its output shape.

Meant to run INSIDE scripts/engine-sandbox.sh (loopback-only namespace, fake model
server on $VF_FAKE_PORT, fresh HOME):

    scripts/engine-sandbox.sh codex -- python3 tests/real-engines/cases.py codex --out DIR

For each case it runs the CLI exactly as the genuine captures did
(/work/shared/captures, `<case>.cmd.txt`), writes `<case>.stdout.jsonl`,
`<case>.stderr.txt` and `<case>.cmd.txt` into --out (paths rewritten to /home/dev,
/home/dev/project, /home/dev/tmp, /opt/engines with --sanitize), and checks: the exit
code, that every frame type is one the captures documented, the session id, the
final text's fenced json summary, the tool/reasoning frames, the error signal, and
that a resume keeps the session id and sends turn 1 back to the model (the fake
server's continuity check). Exit 0 only if every case passed (or with
--no-check, which only records).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

# One word per run that only turn 1 (a_json) carries: a resume must send it back to
# the model, which then answers "Resumed", else "NO-CONTINUITY" (fake_model_plan.py).
MEMO_ID = os.urandom(4).hex()
P_JSON = ("LAB-JSON Reply with a fenced json block containing confidence and files_changed."
          " (LAB-MEMO-%s)" % MEMO_ID)
P_TOOL = "LAB-TOOL Run the shell command 'echo hello' and report what it printed."
P_RESUME = "LAB-RESUME Continue the previous task and report again. (LAB-RECALL-%s)" % MEMO_ID
P_THINK = "LAB-THINK Think first, then reply with a fenced json block."
P_ERR = "LAB-ERR{code} trigger a server error"
P_STREAMERR = "LAB-STREAMERR trigger an error inside the stream"
P_MAXTOKENS = "LAB-MAXTOKENS Think until the token limit runs out."

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UUID7 = r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"

# Frame types the captures documented (README of /work/shared/captures). A type
# outside these sets means the CLI changed its output: the test fails on it.
KNOWN = {
    "codex": {"thread.started", "turn.started", "item.started", "item.updated",
              "item.completed", "turn.completed", "turn.failed", "error"},
    "claude": {"system", "assistant", "user", "result", "stream_event"},
    "gemini": {"init", "message", "tool_use", "tool_result", "error", "result"},
    "opencode": {"step_start", "text", "reasoning", "tool_use", "step_finish", "error"},
    "copilot": {
        "session.skills_loaded", "session.mcp_servers_loaded", "session.mcp_server_status_changed",
        "session.mcp_server_tools_loaded", "session.tools_updated",
        "session.background_tasks_changed", "session.info", "session.warning", "session.error",
        "user.message", "assistant.turn_start", "assistant.turn_end", "assistant.turn_retry",
        "assistant.message_start", "assistant.message_delta", "assistant.message",
        "assistant.reasoning_delta", "assistant.reasoning", "assistant.tool_call_delta",
        "assistant.idle", "model.call_start", "model.call_finished", "model.call_failure",
        "model.call_final_result", "tool.execution_start", "tool.shell_output",
        "tool.execution_partial_result", "tool.execution_complete", "result"},
}
KNOWN_SUBTYPES = {
    "codex": {"agent_message", "reasoning", "command_execution", "error"},
    "claude": {"init", "api_retry", "thinking_tokens", "permission_denied", "status"},
}

# The CLI-specific variables shown in <case>.cmd.txt.
ENV_SHOWN = {
    "codex": ("LAB_API_KEY",),
    "claude": ("ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_"),
    "gemini": ("GOOGLE_GEMINI_", "GEMINI_"),
    "opencode": ("XDG_", "OPENCODE_"),
    "copilot": ("COPILOT_",),
}



def copilot_flags():
    """copilot's headless flags; --disable-client-telemetry only exists in newer versions
    (1.0.83 rejects it: `error: unknown option`), so it is used when --help lists it."""
    try:
        helptext = subprocess.run(["copilot", "--help"], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=60).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        helptext = ""
    flags = ["--no-auto-update"]
    if "--disable-client-telemetry" in helptext:
        flags.append("--disable-client-telemetry")
    return flags


def case(name, argv, expect_rc=0, stdin=None, kind="ok", fmt="jsonl", **extra):
    d = {"name": name, "argv": argv, "rc": expect_rc, "stdin": stdin, "kind": kind, "fmt": fmt}
    d.update(extra)
    return d


def cases_for(cli):
    """The scenario list per CLI; `{session}` is the session id of a_json."""
    e = {c: P_ERR.format(code=c) for c in (500, 429, 400)}
    if cli == "codex":
        x = ["codex", "exec", "--json", "--skip-git-repo-check", "-"]
        return [
            case("a_json", x, stdin=P_JSON),
            case("b_tool", x, stdin=P_TOOL, kind="tool"),
            case("c_resume", ["codex", "exec", "resume", "{session}", "--json",
                              "--skip-git-repo-check", "-"], stdin=P_RESUME, kind="resume"),
            case("d_error500", x, 1, stdin=e[500], kind="error"),
            case("d_error429", x, 1, stdin=e[429], kind="error"),
            case("d_error400", x, 1, stdin=e[400], kind="error"),
            case("d_stream_error", x, 1, stdin=P_STREAMERR, kind="error"),
            case("e_reasoning", x, stdin=P_THINK, kind="think"),
        ]
    if cli == "claude":
        j = ["claude", "-p", "--output-format", "json"]
        s = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
        return [
            case("a_json", j + [P_JSON], fmt="json"),
            case("a_json_stream", s + [P_JSON]),
            case("a_json_partial", s + ["--include-partial-messages", P_JSON]),
            # The prompt goes before --allowedTools, which is variadic and eats it otherwise.
            case("b_tool", s + [P_TOOL, "--allowedTools", "Bash"], kind="tool"),
            case("b_tool_json", j + [P_TOOL, "--allowedTools", "Bash"], kind="tool", fmt="json"),
            case("c_resume", j + ["-r", "{session}", P_RESUME], kind="resume", fmt="json"),
            case("c_resume_stream", s + ["-r", "{session}", P_RESUME], kind="resume"),
            case("d_error500", s + [e[500]], 1, kind="error"),
            case("d_error500_json", j + [e[500]], 1, kind="error", fmt="json"),
            case("d_error429", s + [e[429]], 1, kind="error"),
            case("d_error400", s + [e[400]], 1, kind="error"),
            case("d_stream_error", s + [P_STREAMERR], 1, kind="error"),
            case("e_thinking", s + [P_THINK], kind="think"),
        ]
    if cli == "gemini":
        # A persistent 429 exits 1 before 0.60 (0.47.0 and 0.51.0 seen), 429 & 255 since.
        v = tuple(int(x) for x in re.findall(r"\d+", os.environ.get("VF_ENGINE_VERSION_gemini", "0.61.0"))[:3])
        rc429 = 1 if v < (0, 60, 0) else 173
        j = ["gemini", "--output-format", "json"]
        s = ["gemini", "--output-format", "stream-json"]
        return [
            case("a_json", j + ["-p", P_JSON], fmt="json"),
            case("a_json_stream", s + ["-p", P_JSON]),
            case("b_tool", s + ["--yolo", "-p", P_TOOL], kind="tool"),
            case("b_tool_json", j + ["--yolo", "-p", P_TOOL], kind="tool", fmt="json"),
            case("c_resume", j + ["-r", "{session}", "-p", P_RESUME], kind="resume", fmt="json"),
            case("c_resume_stream", s + ["-r", "{session}", "-p", P_RESUME], kind="resume"),
            # Exit code = HTTP status & 255.
            case("d_error500", s + ["-p", e[500]], 244, kind="error"),
            case("d_error500_json", j + ["-p", e[500]], 244, kind="error", fmt="json"),
            case("d_error429", s + ["-p", e[429]], rc429, kind="error"),
            case("d_error400", s + ["-p", e[400]], 144, kind="error"),
            # A stream that ends without a finish reason: an error, but exit 0.
            case("d_stream_error", s + ["-p", P_STREAMERR], 0, kind="error"),
            case("e_thinking", s + ["-p", P_THINK], kind="think"),
        ] + ([
            # The token limit ran out before any answer text: the runner says
            # "Model response was truncated", and exits 0 (seen with 0.61.0).
            case("d_max_tokens", s + ["-p", P_MAXTOKENS], 0, kind="truncated"),
            case("d_max_tokens_json", j + ["-p", P_MAXTOKENS], 0, kind="truncated", fmt="json"),
        ] if v >= (0, 61, 0) else [])
    if cli == "opencode":
        r = ["opencode", "run", "--format", "json"]
        return [
            case("a_json", r + [P_JSON]),
            case("b_tool", r + [P_TOOL], kind="tool"),
            case("c_resume", r + ["--session", "{session}", P_RESUME], kind="resume"),
            case("d_error500", r + [e[500]], 1, kind="error"),
            case("d_error429", r + [e[429]], 1, kind="error"),
            case("d_error400", r + [e[400]], 1, kind="error"),
            case("d_stream_error", r + [P_STREAMERR], 1, kind="error"),
            case("e_reasoning", r + ["--thinking", P_THINK], kind="think"),
        ]
    if cli == "copilot":
        flags = copilot_flags()
        c = ["copilot", "--output-format", "json"] + flags + ["--allow-all"]
        return [
            case("a_json", c + ["-p", P_JSON]),
            case("b_tool", c + ["-p", P_TOOL], kind="tool"),
            case("c_resume", c + ["--resume={session}", "-p", P_RESUME], kind="resume"),
            case("d_error500", c + ["-p", e[500]], 1, kind="error"),
            case("d_error429", c + ["-p", e[429]], 1, kind="error"),
            case("d_error400", c + ["-p", e[400]], 1, kind="error"),
            case("d_stream_error", c + ["-p", P_STREAMERR], 1, kind="error"),
            case("e_reasoning", c + ["-p", P_THINK], kind="think"),
            case("g_text_mode", ["copilot"] + flags + ["--allow-all", "-p", P_JSON], fmt="text"),
        ]
    raise SystemExit("unknown cli %s" % cli)


# ---------------------------------------------------------------- parsing

def parse_frames(stdout, fmt):
    """Returns (frames, problems). json mode may be one pretty-printed document."""
    if fmt == "text":
        return [], []
    text = stdout.strip()
    if not text:
        return [], []
    if fmt == "json":
        try:
            return [json.loads(text)], []
        except ValueError:
            pass
    frames, problems = [], []
    for i, line in enumerate(stdout.splitlines()):
        if not line.strip():
            continue
        try:
            frames.append(json.loads(line))
        except ValueError:
            problems.append("stdout line %d is not JSON: %.120s" % (i + 1, line))
    return frames, problems


def fenced_json(text):
    m = re.search(r"```json\s*\n(.*?)\n```", text or "", re.S)
    if not m:
        return None
    try:
        return json.loads(m.group(1))
    except ValueError:
        return None


class Check:
    def __init__(self):
        self.failures = []

    def expect(self, cond, msg):
        if not cond:
            self.failures.append(msg)
        return cond


def summarise(cli, c, frames, stdout, stderr):
    """Per-CLI projection: (types, subtypes, session_id, final_text, facts dict)."""
    types = [f.get("type") for f in frames if isinstance(f, dict)]
    sub, facts, session, final = [], {}, None, None
    if cli == "codex":
        for f in frames:
            t = f.get("type")
            if t == "thread.started":
                session = f.get("thread_id")
            item = f.get("item") or {}
            if item:
                sub.append(item.get("type"))
            if t == "item.completed" and item.get("type") == "agent_message":
                final = item.get("text")
            if t == "item.completed" and item.get("type") == "command_execution":
                facts["tool_output"] = item.get("aggregated_output")
                facts["tool_ok"] = item.get("exit_code") == 0
            if t == "item.completed" and item.get("type") == "reasoning":
                facts["reasoning"] = item.get("text")
            if t == "turn.failed":
                facts["error"] = (f.get("error") or {}).get("message")
        facts["first_is_session"] = bool(frames) and frames[0].get("type") == "thread.started"
    elif cli == "claude":
        for f in frames:
            if f.get("session_id"):
                session = session or f.get("session_id")
                facts.setdefault("session_ids", set()).add(f["session_id"])
            if f.get("type") == "system":
                sub.append(f.get("subtype"))
            msg = f.get("message") or {}
            for block in msg.get("content") or [] if isinstance(msg.get("content"), list) else []:
                bt = block.get("type")
                if bt == "tool_use":
                    facts["tool_name"] = block.get("name")
                if bt == "tool_result":
                    facts["tool_output"] = str(block.get("content"))
                    facts["tool_ok"] = not block.get("is_error")
                if bt == "thinking":
                    facts["reasoning"] = block.get("thinking")
            if f.get("type") == "result":
                final = f.get("result")
                facts["is_error"] = f.get("is_error")
                facts["api_error_status"] = f.get("api_error_status")
                facts["num_turns"] = f.get("num_turns")
        facts["result_frames"] = types.count("result")
    elif cli == "gemini":
        if c["fmt"] == "json":
            doc = frames[0] if frames else {}
            session = doc.get("session_id")
            final = doc.get("response")
            types = []
            if not frames:
                # Errors in json mode: stdout empty, the error document is on stderr.
                m = re.search(r'^\{\s*"session_id".*?^\}', stderr, re.S | re.M)
                if m:
                    try:
                        err = json.loads(m.group(0))
                        session = err.get("session_id")
                        facts["error"] = (err.get("error") or {}).get("message")
                    except ValueError:
                        pass
            facts["tool_calls"] = (((doc.get("stats") or {}).get("tools") or {}).get("totalCalls"))
            if doc.get("error"):
                facts["error"] = doc["error"].get("message")
        else:
            parts = []
            for f in frames:
                t = f.get("type")
                if t == "init":
                    session = f.get("session_id")
                if t == "message" and f.get("role") == "assistant":
                    parts.append(f.get("content") or "")
                if t == "tool_use":
                    parts.append("\x00")
                    facts["tool_name"] = f.get("tool_name")
                if t == "tool_result":
                    facts["tool_output"] = f.get("output")
                    facts["tool_ok"] = f.get("status") == "success"
                if t == "result":
                    facts["status"] = f.get("status")
                    facts["error"] = (f.get("error") or {}).get("message")
                if t == "error":
                    facts["error_frame"] = f.get("message")
            final = "".join(parts).split("\x00")[-1] if parts else None
    elif cli == "opencode":
        for f in frames:
            if f.get("sessionID"):
                session = session or f["sessionID"]
                facts.setdefault("session_ids", set()).add(f["sessionID"])
            part = f.get("part") or {}
            t = f.get("type")
            if t == "text":
                final = part.get("text")
            if t == "tool_use":
                st = part.get("state") or {}
                facts["tool_name"] = part.get("tool")
                facts["tool_output"] = st.get("output")
                facts["tool_ok"] = st.get("status") == "completed"
            if t == "reasoning":
                facts["reasoning"] = part.get("text")
            if t == "error":
                data = (f.get("error") or {}).get("data") or {}
                facts["error"] = data.get("message")
                facts["error_status"] = data.get("statusCode")
    elif cli == "copilot":
        if c["fmt"] == "text":
            final = stdout
            m = re.search(r"--resume=(%s)" % UUID, stderr)
            session = m.group(1) if m else None
        for f in frames:
            t = f.get("type")
            data = f.get("data") or {}
            if t == "assistant.message":
                final = data.get("content")
                if data.get("reasoningText"):
                    facts["reasoning"] = data.get("reasoningText")
            if t == "assistant.reasoning":
                facts["reasoning"] = data.get("content")
            if t == "tool.execution_complete":
                facts["tool_ok"] = data.get("success")
                facts["tool_output"] = (data.get("result") or {}).get("content")
            if t == "tool.execution_start":
                facts["tool_name"] = data.get("toolName")
            if t == "session.error":
                facts["error"] = data.get("message")
                facts["error_status"] = data.get("statusCode")
            if t == "result":
                session = f.get("sessionId")
                facts["exit_code_field"] = f.get("exitCode")
    return types, sub, session, final, facts


def check_case(cli, c, rc, stdout, stderr, frames, problems, first_session):
    ck = Check()
    types, sub, session, final, facts = summarise(cli, c, frames, stdout, stderr)
    ck.expect(rc == c["rc"], "exit code %s, expected %s" % (rc, c["rc"]))
    ck.expect(not problems, "; ".join(problems[:3]))
    unknown = sorted({t for t in types if t not in KNOWN[cli]})
    ck.expect(not unknown, "frame types not in the captures: %s" % unknown)
    if cli in KNOWN_SUBTYPES:
        unknown = sorted({s for s in sub if s not in KNOWN_SUBTYPES[cli]})
        ck.expect(not unknown, "frame subtypes not in the captures: %s" % unknown)
    pattern = {"codex": UUID7, "opencode": r"ses_[0-9A-Za-z]{26}"}.get(cli, UUID)
    ck.expect(session is not None and re.fullmatch(pattern, session or ""),
              "session id missing or malformed: %r" % (session,))
    if cli == "codex":
        ck.expect(facts.get("first_is_session"), "thread.started is not the first line")
    if cli in ("claude", "opencode"):
        ck.expect(len(facts.get("session_ids", {session})) <= 1, "several session ids in one run")
    if c["kind"] == "resume":
        ck.expect(first_session is not None and session == first_session,
                  "resume changed the session id: %r -> %r" % (first_session, session))
        # The same id is not enough: the model must have been sent turn 1 again.
        ck.expect("NO-CONTINUITY" not in (final or "") and "Resumed." in (final or ""),
                  "resume lost the earlier turn (the model saw no LAB-MEMO-%s): %.120r"
                  % (MEMO_ID, final))
    kind = c["kind"]
    if kind == "truncated":
        ck.expect("truncated" in str(facts.get("error_frame") or facts.get("error")),
                  "no truncation message: %r" % (facts,))
        ck.expect(c["fmt"] == "json" or facts.get("status") == "error",
                  "result.status is %r" % facts.get("status"))
        return ck.failures, session
    if kind == "error":
        if cli == "codex":
            ck.expect("turn.failed" in types and facts.get("error"), "no turn.failed with a message")
        elif cli == "claude":
            ck.expect(facts.get("is_error") is True, "result.is_error is not true")
            ck.expect(final and final.startswith("API Error"), "result text is %r" % (final,))
            ck.expect(facts.get("result_frames") == 1 or c["fmt"] == "json", "expected one result frame")
        elif cli == "gemini":
            if c["fmt"] == "json":
                ck.expect(not stdout.strip(), "json-mode error should leave stdout empty")
                ck.expect(facts.get("error"), "no error document on stderr")
            else:
                ck.expect(facts.get("status") == "error", "result.status is %r" % facts.get("status"))
                if c["name"] == "d_stream_error":
                    ck.expect(facts.get("error_frame"), "no error frame for the broken stream")
        elif cli == "opencode":
            ck.expect("error" in types and facts.get("error"), "no error frame with a message")
        elif cli == "copilot":
            ck.expect(facts.get("error"), "no session.error frame")
            ck.expect(facts.get("exit_code_field") == 1, "result.exitCode is %r" % facts.get("exit_code_field"))
        return ck.failures, session
    # Success cases: a final answer ending in a fenced json summary.
    summary = fenced_json(final)
    ck.expect(isinstance(summary, dict) and "confidence" in summary,
              "final text has no fenced json summary: %.200r" % (final,))
    if kind == "tool":
        if cli == "claude" and c["fmt"] == "json":
            # json mode prints only the result: two turns means the tool ran in between.
            ck.expect(facts.get("num_turns") == 2, "num_turns is %r" % facts.get("num_turns"))
        elif not (cli == "gemini" and c["fmt"] == "json"):
            ck.expect(facts.get("tool_ok") is True, "tool call did not succeed: %r" % (facts,))
            ck.expect("hello" in str(facts.get("tool_output")), "tool output lacks 'hello': %r"
                      % (facts.get("tool_output"),))
        else:
            ck.expect(facts.get("tool_calls") == 1, "stats.tools.totalCalls is %r" % facts.get("tool_calls"))
        ck.expect(summary is None or "hello" in (final or ""), "final answer does not quote the tool output")
    if kind == "think" and cli != "gemini":
        # gemini never shows thought parts (documented).
        ck.expect(facts.get("reasoning"), "no reasoning/thinking frame")
    if cli == "copilot" and c["fmt"] != "text":
        ck.expect(facts.get("exit_code_field") == 0, "result.exitCode is %r" % facts.get("exit_code_field"))
    return ck.failures, session


# ---------------------------------------------------------------- recording

class Sanitizer:
    def __init__(self, enabled):
        pairs = []
        home = os.environ.get("HOME", "")
        if enabled and home:
            cwd = os.getcwd()
            tmp = os.environ.get("TMPDIR", "")
            for cli in KNOWN:
                b = os.environ.get("VF_ENGINE_BIN_%s" % cli)
                if b:
                    # .../.engines/<cli>-<v>/node_modules/.bin/<cli> -> /opt/engines
                    pairs.append((os.path.dirname(os.path.dirname(os.path.dirname(b))), "/opt/engines"))
            pairs += [(cwd, "/home/dev/project"), (tmp, "/home/dev/tmp"), (home, "/home/dev")]
        # claude's project folder names the path with a dash for every other
        # character (/tmp/x/project -> -tmp-x-project): rewritten the same way.
        pairs += [(re.sub(r"[^A-Za-z0-9]", "-", a), re.sub(r"[^A-Za-z0-9]", "-", b)) for a, b in pairs if a]
        self.pairs = [(a, b) for a, b in pairs if a and a not in ("/", "-")]
        # Longest first, so that /x/home/project wins over /x/home.
        self.pairs.sort(key=lambda p: -len(p[0]))

    def __call__(self, text):
        for a, b in self.pairs:
            text = text.replace(a, b)
        # An engine dir reached by another path (a symlink, a checkout under
        # /tmp the CLI resolved itself, as in a stack trace): /opt/engines too.
        return ENGINE_DIR.sub("/opt/engines", text) if self.pairs else text


# Any absolute path to `.engines/<cli>-<version>` (scripts/install-engines.sh).
ENGINE_DIR = re.compile(r"(?:/[^/\s\"'()]+)*/\.engines/[A-Za-z0-9_-]+-[0-9][0-9A-Za-z.+-]*")


def shell_quote(arg):
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", arg):
        return arg
    return re.sub(r"([^A-Za-z0-9_@%+=:,./-])", r"\\\1", arg)


def write_cmd(path, cli, version, c, argv, rc, duration, sanitize):
    env_lines = ["HOME=/home/dev" if sanitize.pairs else "HOME=" + os.environ.get("HOME", ""),
                 "TMPDIR=" + sanitize(os.environ.get("TMPDIR", ""))]
    for k in sorted(os.environ):
        if k.startswith(ENV_SHOWN[cli]):
            env_lines.append("%s=%s" % (k, sanitize(os.environ[k])))
    bin_dir = os.path.dirname(os.environ.get("VF_ENGINE_BIN_%s" % cli, ""))
    env_lines.append("PATH=%s:..." % sanitize(bin_dir))
    with open(path, "w", encoding="utf-8") as f:
        f.write("# case: %s   cli: %s %s   (run inside: unshare -n, loopback only)\n"
                % (c["name"], cli, version))
        f.write("# cwd: %s\n" % sanitize(os.getcwd()))
        f.write("# env:\n%s\n" % "\n".join(env_lines))
        f.write("# stdin: %s\n" % (c["stdin"] if c["stdin"] is not None else "/dev/null"))
        f.write("# command:\n%s \n" % " ".join(shell_quote(a) for a in argv))
        f.write("# exit_code: %d\n# duration_s: %.1f\n" % (rc, duration))


def mark(name):
    port = os.environ.get("VF_FAKE_PORT")
    if not port:
        return
    try:
        urllib.request.urlopen("http://127.0.0.1:%s/__lab/mark?case=%s" % (port, name), timeout=5).read()
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser(description="run one CLI through the scenarios (inside the sandbox)")
    ap.add_argument("cli", choices=sorted(KNOWN))
    ap.add_argument("--out", required=True, help="folder for <case>.stdout.jsonl/.stderr.txt/.cmd.txt")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--sanitize", action="store_true", help="rewrite HOME/work/tmp/engine paths")
    ap.add_argument("--no-check", action="store_true", help="record only, do not judge")
    ap.add_argument("--timeout", type=float, default=180, help="per-case timeout in seconds")
    args = ap.parse_args()

    if os.environ.get("VF_SANDBOX") != "1":
        print("cases.py: run me inside scripts/engine-sandbox.sh", file=sys.stderr)
        return 2
    cli = args.cli
    version = os.environ.get("VF_ENGINE_VERSION_%s" % cli, "?")
    all_cases = cases_for(cli)
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [w for w in wanted if w not in {c["name"] for c in all_cases}]
        if unknown:
            print("cases.py: unknown case(s) %s" % unknown, file=sys.stderr)
            return 2
        all_cases = [c for c in all_cases if c["name"] in wanted]
    os.makedirs(args.out, exist_ok=True)
    sanitize = Sanitizer(args.sanitize)
    first_session = None
    failed = 0
    for c in all_cases:
        if "{session}" in " ".join(c["argv"]) and first_session is None:
            print("FAIL %s %s: no session from a_json to resume" % (cli, c["name"]))
            failed += 1
            continue
        argv = [a.replace("{session}", first_session or "") for a in c["argv"]]
        mark(c["name"])
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, input=(c["stdin"] + "\n").encode() if c["stdin"] is not None else None,
                                  stdin=None if c["stdin"] is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=args.timeout)
            rc, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = -9, exc.stdout or b"", (exc.stderr or b"") + b"\n[cases.py: timed out]\n"
        except OSError as exc:
            rc, out, err = -1, b"", ("[cases.py: cannot start %s: %s]\n" % (argv[0], exc)).encode()
        duration = time.monotonic() - start
        stdout = sanitize(out.decode("utf-8", "replace"))
        stderr = sanitize(err.decode("utf-8", "replace"))
        base = os.path.join(args.out, c["name"])
        with open(base + ".stdout.jsonl", "w", encoding="utf-8") as f:
            f.write(stdout)
        with open(base + ".stderr.txt", "w", encoding="utf-8") as f:
            f.write(stderr)
        write_cmd(base + ".cmd.txt", cli, version, c, argv, rc, duration, sanitize)
        frames, problems = parse_frames(out.decode("utf-8", "replace"), c["fmt"])
        failures, session = check_case(cli, c, rc, out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"), frames, problems, first_session)
        if c["name"] == "a_json" and session:
            first_session = session
        if args.no_check:
            print("rec  %-8s %-8s %-18s rc=%-4s %5.1fs" % (cli, version, c["name"], rc, duration))
            continue
        status = "ok  " if not failures else "FAIL"
        print("%s %-8s %-8s %-18s rc=%-4s %5.1fs %s" % (status, cli, version, c["name"], rc, duration,
                                                      "; ".join(failures)))
        sys.stdout.flush()
        failed += bool(failures)
    mark("end")
    return 1 if failed and not args.no_check else 0


if __name__ == "__main__":
    sys.exit(main())
