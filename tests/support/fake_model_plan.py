"""How the fake model server decides what to answer (imported by fake_model_server.py).

The answer is chosen from a marker word in the latest user-written message
(system/developer text and tool results are ignored); see the server's docstring
for the scenarios. Continuity (LAB-RESUME): a resumed session must send the
earlier turn back to the model. The turn-1 prompt carries a unique word
`LAB-MEMO-<id>`; the turn-2 prompt says `LAB-RESUME LAB-RECALL-<id>` and never
the memo word itself, so the word can only be in the request if the CLI sent
turn 1 again. Found: the resume answer. Missing: an answer saying NO-CONTINUITY
(with the same kind of fenced summary), which the tests assert is absent. A
LAB-RESUME without LAB-RECALL needs some LAB-MEMO word in the earlier messages.
"""

import json
import re

from fake_model_loops import SCENARIOS as LOOP_SCENARIOS, loop_plan

# Scenario markers; the memo and recall words are data, never a scenario.
MARKER = re.compile(r"\bLAB-(?!MEMO-|RECALL-)([A-Z]+)([0-9]*)\b")
MEMO = re.compile(r"\bLAB-MEMO-([A-Za-z0-9]+)\b")
RECALL = re.compile(r"\bLAB-RECALL-([A-Za-z0-9]+)\b")

JSON_TEXT = 'Done. Here is the result:\n\n```json\n{"confidence":1.0,"files_changed":[]}\n```\n'
TOOL_FINAL = 'The command printed: {out}\n\n```json\n{{"confidence":0.9,"files_changed":[]}}\n```\n'
WRITE_FINAL = ('Finished (the shell tool may have been refused).\n\n'
               '```json\n{"confidence":0.5,"files_changed":["lab-written.txt"]}\n```\n')
# LAB-ESCAPE / LAB-INSIDE: shell writes that a sandbox must refuse (outside the
# cwd) or allow (inside it). Each write reports itself on its own line, so one
# refused write never hides the other.
ESCAPE_COMMAND = ("(echo lab-escape > ../outside.txt && echo outside:written || echo outside:refused); "
                  "(echo lab-escape > \"$HOME/escape.txt\" && echo home:written || echo home:refused)")
INSIDE_COMMAND = "(echo lab-inside > inside.txt && echo inside:written || echo inside:refused)"
# A report line alone on its line (a CLI that echoes the command back must not count).
WRITE_REPORT = re.compile(r"(?m)^\s*(?:[Oo]utput:\s*)?((?:outside|home|inside):(?:written|refused))\s*$")
REPORT_FINAL = ('Writes: {report}\n\n'
                '```json\n{{"confidence":0.5,"files_changed":{files}}}\n```\n')
RESUME_TEXT = ('Resumed. I still remember the previous answer.\n\n'
               '```json\n{"confidence":0.8,"files_changed":["a.txt"]}\n```\n')
THINK_TEXT = 'Thought it through.\n\n```json\n{"confidence":0.7,"files_changed":[]}\n```\n'
REASONING = "The user wants a fenced json summary. I will think briefly, then answer."
TITLE_TEXT = "Lab task"
NO_CONTINUITY_TEXT = ('NO-CONTINUITY: this request does not carry the earlier turn ({memo}).\n\n'
                      '```json\n{{"confidence":0.0,"files_changed":[],"continuity":false}}\n```\n')

# Names of shell tools, in order of preference, as the CLIs offer them.
SHELL_TOOLS = ("exec_command", "run_shell_command", "Bash", "bash", "shell", "shell_command",
               "local_shell")


# ---------------------------------------------------------------- request analysis

def text_of(content):
    """Text of a message content that may be a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") in (
                    None, "text", "input_text") and isinstance(part.get("text"), str):
                out.append(part["text"])
    return "\n".join(out)


def flatten(api, body):
    """Turns a request into a list of (role, kind, text) with kind in text|tool_call|tool_result."""
    items = []
    if api == "responses":
        inp = body.get("input")
        if isinstance(inp, str):
            return [("user", "text", inp)]
        for it in inp or []:
            if not isinstance(it, dict):
                continue
            t = it.get("type", "message")
            if t == "message":
                items.append((it.get("role", ""), "text", text_of(it.get("content"))))
            elif t.endswith("_call_output"):
                items.append(("tool", "tool_result", str(it.get("output", ""))))
            elif t.endswith("_call"):
                items.append(("assistant", "tool_call", ""))
    elif api in ("anthropic", "chat"):
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            role = m.get("role", "")
            if role == "tool":
                items.append(("tool", "tool_result", text_of(m.get("content"))))
                continue
            content = m.get("content")
            if isinstance(content, list):
                for part in content:
                    if not isinstance(part, dict):
                        continue
                    pt = part.get("type")
                    if pt == "tool_result":
                        items.append(("tool", "tool_result", text_of(part.get("content"))))
                    elif pt == "tool_use":
                        items.append((role, "tool_call", ""))
                    elif pt in ("text", "input_text") and isinstance(part.get("text"), str):
                        items.append((role, "text", part["text"]))
            else:
                items.append((role, "text", text_of(content)))
            for _ in m.get("tool_calls") or []:
                items.append((role, "tool_call", ""))
    elif api == "gemini":
        for c in body.get("contents") or []:
            role = c.get("role", "user")
            for part in c.get("parts") or []:
                if "functionResponse" in part:
                    resp = part["functionResponse"].get("response")
                    if isinstance(resp, dict) and isinstance(resp.get("output"), str):
                        resp = resp["output"]
                    items.append(("tool", "tool_result",
                                  resp if isinstance(resp, str) else json.dumps(resp)))
                elif "functionCall" in part:
                    items.append((role, "tool_call", ""))
                elif isinstance(part.get("text"), str) and not part.get("thought"):
                    items.append((role, "text", part["text"]))
    return items


def analyse(api, body, default):
    """Returns (scenario, code, step, prompt, last_tool_output, items, index of the
    latest user-written message in items or -1)."""
    items = flatten(api, body)
    idx, found = None, None
    for i in range(len(items) - 1, -1, -1):
        role, kind, text = items[i]
        if role == "user" and kind == "text":
            m = MARKER.search(text)
            if m:
                idx, found = i, m
                break
    if found is None:
        # No marker: the last user text decides nothing, use the default scenario.
        idx = max((i for i, it in enumerate(items) if it[0] == "user" and it[1] == "text"),
                  default=-1)
        name, code, prompt = default, 0, items[idx][2] if idx >= 0 else ""
    else:
        word, digits = found.group(1), found.group(2)
        prompt = items[idx][2][found.start():]
        if word == "ERR":
            name, code = "error", int(digits or 500)
        else:
            name, code = word.lower(), int(digits or 0)
    after = items[idx + 1:] if idx >= 0 else items
    results = [t for (_, k, t) in after if k == "tool_result"]
    return name, code, len(results), prompt, (results[-1] if results else ""), items, idx


def continuity(items, idx):
    """Whether a resumed request carries the earlier turn: (proven, memo word).

    With LAB-RECALL-<id> in the latest message, LAB-MEMO-<id> must be somewhere in
    the request (the latest message never holds it); without, some LAB-MEMO word
    must be in the messages before the latest one."""
    latest = items[idx][2] if idx >= 0 else ""
    recall = RECALL.search(latest)
    texts = [t for (_, kind, t) in items if kind in ("text", "tool_result")]
    if recall:
        memo = "LAB-MEMO-" + recall.group(1)
        return any(re.search(r"\b%s\b" % re.escape(memo), t) for t in texts), memo
    earlier = [t for (_, kind, t) in items[:max(idx, 0)] if kind in ("text", "tool_result")]
    seen = [m.group(0) for t in earlier for m in MEMO.finditer(t)]
    return bool(seen), (seen[0] if seen else "no LAB-MEMO word")


def tool_specs(api, body):
    """Maps tool name -> JSON schema of its parameters, for the tools the request offers."""
    specs = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if api == "gemini":
            for f in t.get("functionDeclarations") or []:
                specs[f.get("name")] = f.get("parametersJsonSchema") or f.get("parameters") or {}
        elif api == "chat":
            f = t.get("function") or {}
            if f.get("name"):
                specs[f["name"]] = f.get("parameters") or {}
        else:
            name = t.get("name") or t.get("type")
            if name:
                specs[name] = t.get("parameters") or t.get("input_schema") or {}
    return specs


def shell_call(api, body, command):
    """Picks the shell tool offered and builds its arguments: (name, args dict)."""
    specs = tool_specs(api, body)
    for name in SHELL_TOOLS:
        if name in specs:
            break
    else:
        # Nothing offered (e.g. gemini without --yolo): call `bash` anyway, the CLI
        # then reports an unknown tool, which is itself worth seeing.
        return "bash", {"command": command}
    props = (specs[name] or {}).get("properties") or {}
    args = {}
    for key in ("cmd", "command"):
        if key in props:
            args[key] = ["bash", "-lc", command] if props[key].get("type") == "array" else command
            break
    else:
        args["command"] = command
    if "description" in props:
        args["description"] = "Run a shell command"
    return name, args


def plan(api, body, default):
    """Decides the answer: a dict with kind (answer|error|stream_error|max_tokens) and content."""
    name, code, step, prompt, tool_out, items, idx = analyse(api, body, default)
    quota = quota_of(name, prompt)
    if name == "error":
        served = "err%d" % code + ("-reset%d" % quota["reset"] if quota else "")
        return {"kind": "error", "code": code, "served": served, "quota": quota}
    if name == "quota":
        if quota["status"] == "rejected":
            return {"kind": "error", "code": 429, "served": "quota-rejected", "quota": quota}
        return {"kind": "answer", "text": JSON_TEXT, "served": "quota-%s" % quota["status"],
                "quota": quota}
    if name == "streamerr":
        return {"kind": "stream_error", "served": "streamerr"}
    if name == "maxtokens":
        # Only the model's thinking before the token limit: no answer text.
        return {"kind": "max_tokens", "reasoning": REASONING, "served": "maxtokens"}
    if name in LOOP_SCENARIOS:
        return loop_answer(api, body, name, code, step, items, idx)
    if name in ("tool", "write"):
        if step == 0:
            if name == "tool":
                m = re.search(r"'([^']+)'", prompt)
                command = m.group(1) if m else "echo hello"
                text = "I will run the command."
            else:
                command = "touch lab-written.txt && echo written"
                text = "I will create a file."
            tool, args = shell_call(api, body, command)
            return {"kind": "answer", "text": text, "tool": (tool, args),
                    "served": "%s#0" % name}
        if name == "tool":
            out = first_line(tool_out) or "hello"
            return {"kind": "answer", "text": TOOL_FINAL.format(out=out), "served": "tool#%d" % step}
        return {"kind": "answer", "text": WRITE_FINAL, "served": "write#%d" % step}
    if name in ("escape", "inside"):
        return write_answer(api, body, name, step, tool_out)
    if name == "delegate":
        return delegate_answer(api, body, step, prompt, tool_out)
    if name in ("think", "reason", "reasoning", "thinking"):
        return {"kind": "answer", "text": THINK_TEXT, "reasoning": REASONING, "served": "think#0"}
    if name == "resume":
        proven, memo = continuity(items, idx)
        if not proven:
            return {"kind": "answer", "text": NO_CONTINUITY_TEXT.format(memo=memo),
                    "served": "nocontinuity#0", "continuity": {"proven": False, "memo": memo}}
        return {"kind": "answer", "text": RESUME_TEXT, "served": "resume#0",
                "continuity": {"proven": True, "memo": memo}}
    return {"kind": "answer", "text": JSON_TEXT, "served": "json#0"}


# LAB-QUOTA=<status>:<utilization 0..1>:<reset in s> (utilization and reset may be
# empty) and LAB-ERR429-RESET=<s>: the quota headers each provider sends.
QUOTA = re.compile(r"LAB-QUOTA=(allowed_warning|allowed|rejected)\b(?::([0-9.]*))?(?::([0-9]*))?")
ERR_RESET = re.compile(r"LAB-ERR[0-9]+-RESET=([0-9]+)")


def quota_of(name, prompt):
    """The quota a marker asks the answer's headers to report: {status,
    utilization (0..1 or None), reset (seconds from now or None)}, or None."""
    if name == "error":
        m = ERR_RESET.match(prompt)
        return m and {"status": "rejected", "utilization": 1.0, "reset": int(m.group(1))}
    if name != "quota":
        return None
    m = QUOTA.match(prompt)
    if not m:
        return {"status": "allowed", "utilization": None, "reset": None}
    util = float(m.group(2)) if m.group(2) else None
    return {"status": m.group(1), "utilization": util,
            "reset": int(m.group(3)) if m.group(3) else None}


def loop_answer(api, body, name, code, step, items, idx):
    """A closed-loop scenario (fake_model_loops.py): its shell command becomes the
    tool the request offers; a resumed author's answer records its continuity."""
    p = loop_plan(name, code, step, items[idx][2])
    if "command" in p:
        p["tool"] = shell_call(api, body, p.pop("command"))
    if p["served"].startswith(("revise#", "fixup#")):
        proven, memo = continuity(items, idx)
        p["continuity"] = {"proven": proven, "memo": memo}
    return p


def write_answer(api, body, name, step, tool_out):
    """LAB-ESCAPE (writes ../outside.txt and $HOME/escape.txt) or LAB-INSIDE (writes
    inside.txt in the cwd): one shell call, then an answer quoting every
    `<place>:written|refused` line the command printed."""
    if step == 0:
        command = ESCAPE_COMMAND if name == "escape" else INSIDE_COMMAND
        return {"kind": "answer", "text": "I will write the file(s).",
                "tool": shell_call(api, body, command), "served": "%s#0" % name}
    report = " ".join(WRITE_REPORT.findall(str(tool_out))) or "no report"
    files = '["inside.txt"]' if name == "inside" else "[]"
    return {"kind": "answer", "text": REPORT_FINAL.format(report=report, files=files),
            "served": "%s#%d" % (name, step)}


# LAB-DELEGATE: vf's `dispatch` tool as each CLI names it (claude
# `mcp__vf__dispatch`, opencode `vf_dispatch`, copilot `vf-dispatch`).
VF_DISPATCH = re.compile(r"^[A-Za-z0-9_\-]*vf[A-Za-z0-9_\-]*dispatch$")
DELEGATE_WORD = re.compile(r"[A-Za-z0-9_\-]*vf[A-Za-z0-9_\-]*dispatch\b")
DELEGATE_FINAL = ('Delegated. The child said: {state}.\n\n'
                  '```json\n{summary}\n```\n')


def vf_dispatch_tool(api, body):
    """The name of vf's dispatch tool among the tools offered, else a name
    the request's text lists (claude defers MCP tools and only names them)."""
    for name in tool_specs(api, body):
        if name and VF_DISPATCH.match(name):
            return name
    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for x in v.values():
                yield from strings(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings(x)
    for text in strings(body):
        m = DELEGATE_WORD.search(text)
        if m:
            return m.group(0)
    return "vf_dispatch"


def delegate_answer(api, body, step, prompt, tool_out):
    """LAB-DELEGATE[:<engine>]: one call of vf's dispatch tool asking <engine>
    (default codex) for a LAB-JSON unit, then an answer whose fenced summary
    quotes the child's unit and state from the tool result (or its error)."""
    if step == 0:
        m = re.match(r"LAB-DELEGATE:([a-z]+)", prompt)
        args = {"engine": m.group(1) if m else "codex",
                "prompt": "LAB-JSON A sub-task handed over through vf."}
        return {"kind": "answer", "text": "I will hand this to another agent.",
                "tool": (vf_dispatch_tool(api, body), args), "served": "delegate#0"}
    out = str(tool_out)
    unit = re.search(r'"unit"\s*:\s*"([^"]+)"', out)
    state = re.search(r'"state"\s*:\s*"([^"]+)"', out)
    summary = {"child_unit": unit.group(1) if unit else None,
               "child_state": state.group(1) if state else None,
               "child_said": out[:300] if not (unit and state) else None,
               "confidence": 1.0, "files_changed": []}
    return {"kind": "answer", "served": "delegate#%d" % step,
            "text": DELEGATE_FINAL.format(state=summary["child_state"] or "no state",
                                          summary=json.dumps(summary))}


def first_line(tool_out):
    """The first meaningful line of a tool result (CLIs wrap it in their own text)."""
    for line in str(tool_out).splitlines():
        line = line.strip()
        for prefix in ("Output:", "output:"):
            if line.startswith(prefix):
                line = line[len(prefix):].strip()
        # Skip the wrappers the CLIs put around a command's output.
        if line and not line.startswith(("Chunk ID", "Wall time", "Process ", "Original token",
                                         "<")):
            return line[:200]
    return ""


