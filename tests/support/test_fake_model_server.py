#!/usr/bin/env python3
"""Unit tests of the fake model server (no agent CLI needed, runs in a second):

    python3 tests/support/test_fake_model_server.py
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "fake_model_server.py")

P_JSON = "LAB-JSON Reply with a fenced json block."
P_TOOL = "LAB-TOOL Run the shell command 'echo hi there' and report."


def sse_events(raw):
    """Parses an SSE body into a list of (event, data) with data JSON-decoded when possible."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        text = "\n".join(data)
        try:
            out.append((event, json.loads(text)))
        except ValueError:
            out.append((event, text))
    return out


class FakeServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.log = os.path.join(cls.dir, "log.jsonl")
        ready = os.path.join(cls.dir, "ready")
        cls.proc = subprocess.Popen([sys.executable, SERVER, "--port", "0", "--log", cls.log,
                                     "--ready-file", ready])
        for _ in range(200):
            if os.path.exists(ready):
                break
            time.sleep(0.02)
        with open(ready, encoding="utf-8") as f:
            cls.port = json.load(f)["ports"][0]

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=10)

    def post(self, path, body):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    # -- Anthropic

    def anthropic(self, messages, stream=True, tools=None):
        body = {"model": "m", "stream": stream, "messages": messages,
                "tools": tools if tools is not None else [
                    {"name": "Bash", "input_schema": {"properties": {"command": {"type": "string"},
                                                                     "description": {}}}}]}
        return self.post("/v1/messages?beta=true", body)

    def test_anthropic_json_answer_streams_text_with_fenced_summary(self):
        status, headers, raw = self.anthropic([{"role": "user", "content": [{"type": "text", "text": P_JSON}]}])
        self.assertEqual(status, 200)
        self.assertIn("text/event-stream", headers["Content-Type"])
        events = sse_events(raw)
        names = [e for e, _ in events]
        self.assertEqual(names[0], "message_start")
        self.assertEqual(names[-2:], ["message_delta", "message_stop"])
        text = "".join(d["delta"]["text"] for e, d in events
                       if e == "content_block_delta" and d["delta"]["type"] == "text_delta")
        self.assertIn("```json\n{\"confidence\":1.0", text)
        self.assertEqual(events[-2][1]["delta"]["stop_reason"], "end_turn")

    def test_anthropic_tool_then_final_answer_quotes_tool_output(self):
        first = [{"role": "user", "content": P_TOOL}]
        _, _, raw = self.anthropic(first)
        starts = [d["content_block"] for e, d in sse_events(raw) if e == "content_block_start"]
        tool = [b for b in starts if b["type"] == "tool_use"]
        self.assertEqual(len(tool), 1)
        self.assertEqual(tool[0]["name"], "Bash")
        args = json.loads("".join(d["delta"]["partial_json"] for e, d in sse_events(raw)
                                  if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta"))
        self.assertEqual(args["command"], "echo hi there")
        self.assertIn("description", args)
        second = first + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool[0]["id"], "name": "Bash", "input": args}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool[0]["id"], "content": "hi there"}]}]
        _, _, raw = self.anthropic(second)
        text = "".join(d["delta"].get("text", "") for e, d in sse_events(raw) if e == "content_block_delta")
        self.assertIn("The command printed: hi there", text)
        self.assertNotIn("tool_use", [d["content_block"]["type"] for e, d in sse_events(raw)
                                      if e == "content_block_start"])

    def test_anthropic_errors_and_non_streaming_fallback(self):
        status, headers, raw = self.anthropic([{"role": "user", "content": "LAB-ERR429 x"}])
        self.assertEqual(status, 429)
        self.assertEqual(json.loads(raw)["error"]["type"], "rate_limit_error")
        self.assertEqual(headers.get("retry-after"), "0")
        status, _, raw = self.anthropic([{"role": "user", "content": "LAB-STREAMERR x"}])
        self.assertEqual(status, 200)
        self.assertEqual(sse_events(raw)[-1][0], "error")
        status, _, raw = self.anthropic([{"role": "user", "content": "LAB-STREAMERR x"}], stream=False)
        self.assertEqual(status, 529)
        status, _, raw = self.anthropic([{"role": "user", "content": P_JSON}], stream=False)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(raw)["content"][0]["type"], "text")

    def test_marker_is_taken_from_the_latest_user_message(self):
        # A resume carries the earlier prompt in its history.
        msgs = [{"role": "user", "content": "LAB-ERR500 old LAB-MEMO-m0"},
                {"role": "assistant", "content": "x"},
                {"role": "user", "content": "LAB-RESUME go on"}]
        status, _, raw = self.anthropic(msgs)
        self.assertEqual(status, 200)
        self.assertIn("Resumed.", raw.decode())

    # -- continuity of a resumed session (the same checks through every API)

    def resumed(self, api, history, latest):
        """Posts a request whose messages are `history` (user texts, each answered by
        the assistant) then `latest`; returns (answer text, the log entry)."""
        turns = []
        for h in history:
            turns += [("user", h), ("assistant", "ok")]
        turns.append(("user", latest))
        if api == "anthropic":
            _, _, raw = self.anthropic([{"role": r, "content": t} for r, t in turns])
            text = "".join(d["delta"].get("text", "") for e, d in sse_events(raw)
                           if e == "content_block_delta")
        elif api == "responses":
            body = {"model": "m", "stream": True, "tools": [], "input": [
                {"type": "message", "role": r, "content": [{"type": "input_text", "text": t}]}
                for r, t in turns]}
            _, _, raw = self.post("/v1/responses", body)
            text = "".join(d.get("delta", "") for _, d in sse_events(raw)
                           if d["type"] == "response.output_text.delta")
        elif api == "chat":
            _, _, raw = self.chat([{"role": r, "content": t} for r, t in turns])
            text = "".join(c["delta"].get("content") or "" for _, d in sse_events(raw)
                           if isinstance(d, dict) for c in d.get("choices", []))
        else:
            body = {"contents": [{"role": "model" if r == "assistant" else r, "parts": [{"text": t}]}
                                 for r, t in turns]}
            _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
            text = "".join(p.get("text", "") for _, d in sse_events(raw)
                           for p in d["candidates"][0]["content"]["parts"])
        time.sleep(0.05)
        with open(self.log, encoding="utf-8") as f:
            last = [json.loads(line) for line in f][-1]
        return text, last

    APIS = ("anthropic", "responses", "chat", "gemini")

    def test_resume_that_carries_the_earlier_turn_is_continuity(self):
        for api in self.APIS:
            text, entry = self.resumed(api, ["LAB-JSON first turn LAB-MEMO-k1"],
                                       "LAB-RESUME go on LAB-RECALL-k1")
            self.assertIn("Resumed.", text, api)
            self.assertNotIn("NO-CONTINUITY", text, api)
            self.assertEqual(entry["served"].split()[0], "resume#0", api)
            self.assertEqual(entry["continuity"], {"proven": True, "memo": "LAB-MEMO-k1"}, api)

    def test_resume_without_the_earlier_turn_says_no_continuity(self):
        # A CLI that silently opened a fresh session sends only the new prompt.
        for api in self.APIS:
            text, entry = self.resumed(api, [], "LAB-RESUME go on LAB-RECALL-k2")
            self.assertTrue(text.startswith("NO-CONTINUITY"), "%s: %r" % (api, text))
            self.assertIn("LAB-MEMO-k2", text, api)
            self.assertEqual(entry["served"].split()[0], "nocontinuity#0", api)
            self.assertEqual(entry["continuity"], {"proven": False, "memo": "LAB-MEMO-k2"}, api)

    def test_resume_of_another_session_says_no_continuity(self):
        for api in self.APIS:
            text, _ = self.resumed(api, ["LAB-JSON other LAB-MEMO-k3x"], "LAB-RESUME LAB-RECALL-k3")
            self.assertTrue(text.startswith("NO-CONTINUITY"), "%s: %r" % (api, text))
        # Without LAB-RECALL, any memo word in the earlier messages will do; none will not.
        text, _ = self.resumed("anthropic", [], "LAB-RESUME go on LAB-MEMO-k4")
        self.assertTrue(text.startswith("NO-CONTINUITY"), text)

    def test_memo_and_recall_words_are_no_scenario(self):
        text, entry = self.resumed("anthropic", [], "LAB-MEMO-k5 LAB-RECALL-k5 hello")
        self.assertIn("Done. Here is the result", text)
        self.assertNotIn("continuity", entry)

    # -- OpenAI Responses

    def test_responses_tool_call_uses_exec_command_cmd(self):
        tools = [{"type": "function", "name": "exec_command",
                  "parameters": {"properties": {"cmd": {"type": "string"}}}}]
        body = {"model": "m", "stream": True, "tools": tools, "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "LAB-ERR500 sys"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": P_TOOL}]}]}
        status, _, raw = self.post("/v1/responses", body)
        self.assertEqual(status, 200)
        events = sse_events(raw)
        self.assertEqual(events[0][1]["type"], "response.created")
        self.assertEqual(events[-1][1]["type"], "response.completed")
        calls = [d["item"] for _, d in events
                 if d["type"] == "response.output_item.done" and d["item"]["type"] == "function_call"]
        self.assertEqual(len(calls), 1)
        self.assertEqual(json.loads(calls[0]["arguments"]), {"cmd": "echo hi there"})
        body["input"] += [{"type": "function_call", "call_id": calls[0]["call_id"], "name": "exec_command",
                           "arguments": calls[0]["arguments"]},
                          {"type": "function_call_output", "call_id": calls[0]["call_id"],
                           "output": "Chunk ID: 1\nWall time: 0\nProcess exited with code 0\nOutput:\nhi there\n"}]
        _, _, raw = self.post("/v1/responses", body)
        done = [d["item"] for _, d in sse_events(raw) if d["type"] == "response.output_item.done"]
        self.assertEqual([i["type"] for i in done], ["message"])
        self.assertIn("The command printed: hi there", done[0]["content"][0]["text"])

    def test_responses_reasoning_and_stream_failure(self):
        body = {"model": "m", "stream": True, "input": "LAB-THINK now", "tools": []}
        _, _, raw = self.post("/v1/responses", body)
        kinds = [d["item"]["type"] for _, d in sse_events(raw) if d["type"] == "response.output_item.done"]
        self.assertEqual(kinds, ["reasoning", "message"])
        body["input"] = "LAB-STREAMERR now"
        status, _, raw = self.post("/v1/responses", body)
        self.assertEqual(status, 200)
        self.assertEqual(sse_events(raw)[-1][1]["type"], "response.failed")

    # -- Chat Completions

    def chat(self, messages, tools=True):
        body = {"model": "m", "stream": True, "messages": messages}
        if tools:
            body["tools"] = [{"type": "function", "function": {
                "name": "bash", "parameters": {"properties": {"command": {"type": "string"},
                                                              "description": {"type": "string"}}}}}]
        return self.post("/v1/chat/completions", body)

    def test_chat_tool_call_then_done(self):
        status, _, raw = self.chat([{"role": "system", "content": "x"}, {"role": "user", "content": P_TOOL}])
        self.assertEqual(status, 200)
        events = [d for _, d in sse_events(raw)]
        self.assertEqual(events[-1], "[DONE]")
        finish = [c["finish_reason"] for d in events[:-1] for c in d.get("choices", []) if c["finish_reason"]]
        self.assertEqual(finish, ["tool_calls"])
        self.assertEqual(events[-2]["usage"]["total_tokens"], 120)
        args = "".join(tc["function"].get("arguments", "") for d in events[:-1] for c in d.get("choices", [])
                       for tc in c["delta"].get("tool_calls", []))
        self.assertEqual(json.loads(args), {"command": "echo hi there", "description": "Run a shell command"})

    def test_delegate_calls_vfs_dispatch_tool_then_quotes_the_child(self):
        """LAB-DELEGATE: the tool whose name holds `vf` and ends in `dispatch`,
        asked for a codex unit; the answer quotes the child's unit and state."""
        prompt = "LAB-DELEGATE Ask another agent."
        tools = [{"type": "function", "function": {"name": n, "parameters": {}}}
                 for n in ("bash", "vf-status", "vf-dispatch", "lab-dispatcher")]
        first = [{"role": "user", "content": prompt}]
        body = {"model": "m", "stream": False, "messages": first, "tools": tools}
        _, _, raw = self.post("/v1/chat/completions", body)
        call = json.loads(raw)["choices"][0]["message"]["tool_calls"][0]
        self.assertEqual(call["function"]["name"], "vf-dispatch")
        args = json.loads(call["function"]["arguments"])
        self.assertEqual(args["engine"], "codex")
        self.assertTrue(args["prompt"].startswith("LAB-JSON"))
        child = json.dumps({"unit": "parent.1", "state": "done", "engine": "codex"})
        body["messages"] = first + [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": child}]
        _, _, raw = self.post("/v1/chat/completions", body)
        text = json.loads(raw)["choices"][0]["message"]["content"]
        summary = json.loads(text.split("```json\n")[1].split("```")[0])
        self.assertEqual((summary["child_unit"], summary["child_state"]), ("parent.1", "done"))

    def test_delegate_finds_claudes_deferred_tool_by_name_and_takes_an_engine(self):
        """claude lists deferred MCP tools by name only: the name is found in the text."""
        msg = {"role": "user", "content": [
            {"type": "text", "text": "<available-deferred-tools>\nmcp__vf__dispatch\nmcp__vf__status\n"},
            {"type": "text", "text": "LAB-DELEGATE:opencode go"}]}
        _, _, raw = self.anthropic([msg], stream=False)
        block = [b for b in json.loads(raw)["content"] if b["type"] == "tool_use"][0]
        self.assertEqual(block["name"], "mcp__vf__dispatch")
        self.assertEqual(block["input"]["engine"], "opencode")

    def test_chat_title_request_without_tools_is_never_an_error(self):
        status, _, raw = self.chat([{"role": "user", "content": "LAB-ERR500 title me"}], tools=False)
        self.assertEqual(status, 200)
        text = "".join(c["delta"].get("content") or "" for _, d in sse_events(raw)
                       if isinstance(d, dict) for c in d.get("choices", []))
        self.assertEqual(text, "Lab task")

    def test_chat_errors_carry_openai_error_body(self):
        for code in (500, 429, 400):
            status, headers, raw = self.chat([{"role": "user", "content": "LAB-ERR%d x" % code}])
            self.assertEqual(status, code)
            self.assertEqual(json.loads(raw)["error"]["message"].split(":")[0], "lab")
            self.assertEqual(headers.get("retry-after-ms"), "0")

    # -- quota headers (LAB-QUOTA, LAB-ERR429-RESET)

    def test_quota_marker_answers_with_anthropic_unified_headers(self):
        before = int(time.time())
        status, headers, raw = self.anthropic(
            [{"role": "user", "content": "LAB-QUOTA=allowed_warning:0.92:600 x"}])
        self.assertEqual(status, 200)
        self.assertEqual(sse_events(raw)[-1][0], "message_stop")
        self.assertEqual(headers.get("anthropic-ratelimit-unified-status"), "allowed_warning")
        self.assertEqual(headers.get("anthropic-ratelimit-unified-representative-claim"), "five_hour")
        self.assertEqual(headers.get("anthropic-ratelimit-unified-5h-utilization"), "0.92")
        reset = int(headers.get("anthropic-ratelimit-unified-5h-reset"))
        self.assertTrue(before + 600 <= reset <= int(time.time()) + 600)
        self.assertIsNone(headers.get("retry-after"))
        # No figure: the status alone.
        _, headers, _ = self.anthropic([{"role": "user", "content": "LAB-QUOTA=allowed_warning::60 x"}])
        self.assertEqual(headers.get("anthropic-ratelimit-unified-status"), "allowed_warning")
        self.assertIsNone(headers.get("anthropic-ratelimit-unified-5h-utilization"))
        # Without a marker, no quota header at all.
        _, headers, _ = self.anthropic([{"role": "user", "content": P_JSON}])
        self.assertIsNone(headers.get("anthropic-ratelimit-unified-status"))

    def test_rejected_quota_and_err429_reset_refuse_with_the_reset(self):
        for prompt, reset in (("LAB-QUOTA=rejected:1:40 x", 40), ("LAB-ERR429-RESET=30 x", 30)):
            status, headers, raw = self.anthropic([{"role": "user", "content": prompt}])
            self.assertEqual(status, 429, prompt)
            self.assertEqual(json.loads(raw)["error"]["type"], "rate_limit_error")
            self.assertEqual(headers.get("retry-after"), str(reset))
            self.assertEqual(headers.get("anthropic-ratelimit-unified-status"), "rejected")
            status, headers, raw = self.chat([{"role": "user", "content": prompt}])
            self.assertEqual(status, 429, prompt)
            self.assertEqual(headers.get("retry-after"), str(reset))
            self.assertEqual(headers.get("x-codex-primary-used-percent"), "100")
            self.assertEqual(headers.get("x-codex-primary-reset-after-seconds"), str(reset))
        # A plan's window refused on the Responses API: codex's usage_limit_reached body.
        body = {"model": "m", "stream": False, "input": "LAB-QUOTA=rejected:1:40 x"}
        status, _, raw = self.post("/v1/responses", body)
        err = json.loads(raw)["error"]
        self.assertEqual((status, err["type"], err["resets_in_seconds"]), (429, "usage_limit_reached", 40))

    def test_openai_window_headers_on_an_answer(self):
        status, headers, _ = self.chat([{"role": "user", "content": "LAB-QUOTA=allowed:0.4:600 x"}])
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("x-codex-primary-used-percent"), "40")
        self.assertEqual(headers.get("x-codex-primary-window-minutes"), "300")
        self.assertEqual(headers.get("x-ratelimit-remaining-requests"), "60")

    def test_gemini_429_reset_carries_retry_info(self):
        body = {"contents": [{"role": "user", "parts": [{"text": "LAB-ERR429-RESET=30 x"}]}]}
        status, headers, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        err = json.loads(raw)["error"]
        self.assertEqual((status, err["status"]), (429, "RESOURCE_EXHAUSTED"))
        delay = [d["retryDelay"] for d in err["details"] if d["@type"].endswith("RetryInfo")]
        self.assertEqual(delay, ["30s"])
        self.assertEqual(headers.get("retry-after"), "0")

    # -- Gemini

    def test_gemini_classifier_answers_score_of_at_least_one(self):
        body = {"contents": [{"role": "user", "parts": [{"text": "LAB-ERR500 x"}]}],
                "generationConfig": {"responseJsonSchema": {"properties": {"complexity_score": {}}}}}
        status, _, raw = self.post("/v1beta/models/flash-lite:generateContent", body)
        self.assertEqual(status, 200)
        answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
        self.assertGreaterEqual(answer["complexity_score"], 1)

    def test_gemini_stream_tool_call_and_broken_stream(self):
        tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}}}}]}]
        body = {"contents": [{"role": "user", "parts": [{"text": "ctx"}, {"text": P_TOOL}]}], "tools": tools}
        status, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        self.assertEqual(status, 200)
        chunks = [d for _, d in sse_events(raw)]
        parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
        call = [p["functionCall"] for p in parts if "functionCall" in p]
        self.assertEqual(call[0]["name"], "run_shell_command")
        self.assertEqual(chunks[-1]["candidates"][0]["finishReason"], "STOP")
        body["contents"] += [{"role": "model", "parts": [{"functionCall": call[0]}]},
                             {"role": "user", "parts": [{"functionResponse": {
                                 "name": "run_shell_command",
                                 "response": {"output": "<untrusted_context>\nOutput: hi there\n"}}}]}]
        _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        text = "".join(p.get("text", "") for _, d in sse_events(raw) for p in d["candidates"][0]["content"]["parts"])
        self.assertIn("The command printed: hi there", text)
        body = {"contents": [{"role": "user", "parts": [{"text": "LAB-STREAMERR"}]}]}
        _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        self.assertTrue(all("finishReason" not in d["candidates"][0] for _, d in sse_events(raw)))
        status, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse",
                                   {"contents": [{"role": "user", "parts": [{"text": "LAB-ERR429"}]}]})
        self.assertEqual((status, json.loads(raw)["error"]["status"]), (429, "RESOURCE_EXHAUSTED"))
        # The token limit ran out while thinking: thought parts only, MAX_TOKENS.
        body = {"contents": [{"role": "user", "parts": [{"text": "LAB-MAXTOKENS"}]}]}
        _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        chunks = [d["candidates"][0] for _, d in sse_events(raw)]
        self.assertEqual(chunks[-1]["finishReason"], "MAX_TOKENS")
        self.assertTrue(all(p.get("thought") for c in chunks for p in c["content"]["parts"]))
        _, _, raw = self.post("/v1beta/models/flash:generateContent", body)
        self.assertEqual(json.loads(raw)["candidates"][0]["finishReason"], "MAX_TOKENS")

    def test_shell_tool_falls_back_to_bash_when_none_offered(self):
        body = {"contents": [{"role": "user", "parts": [{"text": P_TOOL}]}],
                "tools": [{"functionDeclarations": [{"name": "read_file"}]}]}
        _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        calls = [p["functionCall"] for _, d in sse_events(raw)
                 for p in d["candidates"][0]["content"]["parts"] if "functionCall" in p]
        self.assertEqual(calls, [{"name": "bash", "args": {"command": "echo hi there"}}])

    # -- closed loops (fake_model_loops.py)

    def anthropic_text(self, messages):
        """(answer text, tool_use blocks' inputs) of an Anthropic request."""
        _, _, raw = self.anthropic(messages)
        events = sse_events(raw)
        text = "".join(d["delta"].get("text", "") for e, d in events if e == "content_block_delta")
        args = "".join(d["delta"].get("partial_json", "") for e, d in events
                       if e == "content_block_delta")
        return text, (json.loads(args) if args else None)

    def test_loop_author_reviewer_and_revision(self):
        task = "LAB-LOOP Write the file. LAB-MEMO-l1"
        _, args = self.anthropic_text([{"role": "user", "content": task}])
        self.assertEqual(args["command"],
                         "printf 'lab-loop: draft\\n' > lab-loop.txt && echo wrote lab-loop.txt")
        review = 'Task:\n%s\nDiff:\n+lab-loop: draft\nAnswer {"verdict": ...}' % task
        text, args = self.anthropic_text([{"role": "user", "content": review}])
        self.assertIsNone(args)
        verdict = json.loads(text.split("```json\n")[1].split("```")[0])
        self.assertEqual(verdict["verdict"], "changes")
        comment = verdict["comments"][0]["text"]
        self.assertTrue(comment.startswith("LAB-REVISE "), comment)
        # The revision: the resumed session carries turn 1 and the comment.
        revise = [{"role": "user", "content": task}, {"role": "assistant", "content": "ok"},
                  {"role": "user", "content": "Address these: %s (and the task: %s)" % (comment, task)}]
        _, args = self.anthropic_text(revise)
        self.assertIn("'lab-loop: revised\\n' > lab-loop.txt", args["command"])
        time.sleep(0.05)
        with open(self.log, encoding="utf-8") as f:
            last = [json.loads(line) for line in f][-1]
        self.assertEqual(last["served"].split()[0], "revise#0")
        self.assertEqual(last["continuity"], {"proven": True, "memo": "LAB-MEMO-l1"})
        # A later review, its diff adding the revised line (earlier comment quoted): approve.
        again = review.replace("+lab-loop: draft", "+lab-loop: revised") + "\nEarlier: " + comment
        text, _ = self.anthropic_text([{"role": "user", "content": again}])
        self.assertIn('{"verdict": "approve", "comments": []}', text)

    def test_fix_and_merge_scenarios_write_their_files(self):
        cases = [("LAB-FIXME go", "printf 'lab-fix: broken\\n' > lab-fix.txt"),
                 ("verify `grep x || echo LAB-FIXUP` failed; task: LAB-FIXME go",
                  "printf 'lab-fix: fixed\\n' > lab-fix.txt"),
                 ("LAB-SIDE2 go", "printf 'side 2\\n' > LAB-MERGE.txt"),
                 ("Conflicted paths: LAB-MERGE.txt", "printf 'side 1\\nside 2\\n' > LAB-MERGE.txt")]
        for prompt, command in cases:
            first = [{"role": "user", "content": prompt}]
            _, args = self.anthropic_text(first)
            self.assertTrue(args["command"].startswith(command), (prompt, args))
            done = first + [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                   "input": args}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                              "content": "wrote"}]}]
            text, args = self.anthropic_text(done)
            self.assertIsNone(args, prompt)
            self.assertIn('"files_changed":["', text)

    # -- sandbox probes: LAB-ESCAPE (writes outside the cwd) and LAB-INSIDE

    def shell_command_of(self, api, prompt):
        """The command of the shell call each API's request gets for `prompt`,
        with the tool name and argument key that API's CLI offers."""
        if api == "anthropic":
            _, args = self.anthropic_text([{"role": "user", "content": prompt}])
            return args["command"]
        if api == "responses":
            body = {"model": "m", "stream": True, "input": prompt, "tools": [
                {"type": "function", "name": "exec_command",
                 "parameters": {"properties": {"cmd": {"type": "string"}}}}]}
            _, _, raw = self.post("/v1/responses", body)
            calls = [d["item"] for _, d in sse_events(raw) if d["type"] == "response.output_item.done"
                     and d["item"]["type"] == "function_call"]
            self.assertEqual(calls[0]["name"], "exec_command")
            return json.loads(calls[0]["arguments"])["cmd"]
        if api == "chat":
            _, _, raw = self.chat([{"role": "user", "content": prompt}])
            calls = [tc for _, d in sse_events(raw) if isinstance(d, dict)
                     for c in d.get("choices", []) for tc in c["delta"].get("tool_calls", [])]
            self.assertEqual(calls[0]["function"]["name"], "bash")
            return json.loads("".join(tc["function"].get("arguments", "") for tc in calls))["command"]
        tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {
            "properties": {"command": {"type": "string"}}}}]}]
        body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}], "tools": tools}
        _, _, raw = self.post("/v1beta/models/flash:streamGenerateContent?alt=sse", body)
        calls = [p["functionCall"] for _, d in sse_events(raw)
                 for p in d["candidates"][0]["content"]["parts"] if "functionCall" in p]
        self.assertEqual(calls[0]["name"], "run_shell_command")
        return calls[0]["args"]["command"]

    def run_in_project(self, command, block=()):
        """Runs `command` with bash in HOME/project of a fresh HOME; the names in
        `block` (relative to HOME) are made directories first, so writing them fails.
        Returns (HOME, stdout)."""
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        home = tmp.name
        os.mkdir(os.path.join(home, "project"))
        for name in block:
            os.mkdir(os.path.join(home, name))
        env = dict(os.environ, HOME=home)
        out = subprocess.run(["bash", "-c", command], cwd=os.path.join(home, "project"), env=env,
                             capture_output=True, text=True, timeout=30)
        return home, out.stdout

    def test_escape_writes_outside_the_cwd_through_every_apis_shell_tool(self):
        for api in ("anthropic", "responses", "chat", "gemini"):
            command = self.shell_command_of(api, "LAB-ESCAPE Write the files.")
            home, out = self.run_in_project(command)
            self.assertEqual(out.split(), ["outside:written", "home:written"], api)
            for name in ("outside.txt", "escape.txt"):
                with open(os.path.join(home, name), encoding="utf-8") as f:
                    self.assertEqual(f.read(), "lab-escape\n", (api, name))
            self.assertEqual(os.listdir(os.path.join(home, "project")), [], api)

    def test_escape_reports_each_refused_write_and_the_answer_quotes_them(self):
        command = self.shell_command_of("anthropic", "LAB-ESCAPE Write the files.")
        _, out = self.run_in_project(command, block=("outside.txt",))
        self.assertEqual(out.split(), ["outside:refused", "home:written"])
        first = [{"role": "user", "content": "LAB-ESCAPE Write the files."}]
        # The result as a CLI wraps it, the command echoed back: only whole lines count.
        result = "$ %s\nOutput: %s" % (command, out)
        done = first + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                               "input": {"command": command}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": result}]}]
        text, args = self.anthropic_text(done)
        self.assertIsNone(args)
        self.assertTrue(text.startswith("Writes: outside:refused home:written\n"), text)

    def test_inside_writes_in_the_cwd_only(self):
        for api in ("anthropic", "responses", "chat", "gemini"):
            command = self.shell_command_of(api, "LAB-INSIDE Write the file.")
            home, out = self.run_in_project(command)
            self.assertEqual(out.split(), ["inside:written"], api)
            self.assertEqual(sorted(os.listdir(home)), ["project"], api)
            with open(os.path.join(home, "project", "inside.txt"), encoding="utf-8") as f:
                self.assertEqual(f.read(), "lab-inside\n", api)
        first = [{"role": "user", "content": "LAB-INSIDE Write the file."}]
        done = first + [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                               "input": {"command": command}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "inside:refused\n"}]}]
        text, _ = self.anthropic_text(done)
        self.assertIn("Writes: inside:refused", text)
        self.assertIn('"files_changed":["inside.txt"]', text)

    # -- plumbing

    def test_log_marks_unknown_endpoints_and_redacts_keys(self):
        req = urllib.request.Request("http://127.0.0.1:%d/__lab/mark?case=zz" % self.port)
        urllib.request.urlopen(req, timeout=5).read()
        req = urllib.request.Request("http://127.0.0.1:%d/v9/nothing" % self.port, data=b"{}",
                                     headers={"Authorization": "Bearer secret-value-123456"})
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(req, timeout=5)
        self.assertEqual(ctx.exception.code, 404)
        time.sleep(0.1)
        with open(self.log, encoding="utf-8") as f:
            entries = [json.loads(line) for line in f]
        self.assertIn("mark zz", [e["served"] for e in entries])
        last = entries[-1]
        self.assertEqual(last["served"], "404")
        self.assertNotIn("secret-value-123456", json.dumps(last))

    def test_bad_body_is_a_400_not_a_crash(self):
        req = urllib.request.Request("http://127.0.0.1:%d/v1/messages" % self.port, data=b"not json")
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(req, timeout=5)
        self.assertEqual(ctx.exception.code, 400)
        status, _, _ = self.anthropic([{"role": "user", "content": P_JSON}])
        self.assertEqual(status, 200)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_and_shutdown_endpoint_exit_cleanly(self):
        for how in ("term", "endpoint"):
            with tempfile.TemporaryDirectory() as d:
                ready = os.path.join(d, "ready")
                proc = subprocess.Popen([sys.executable, SERVER, "--port", "0", "--ready-file", ready])
                for _ in range(200):
                    if os.path.exists(ready):
                        break
                    time.sleep(0.02)
                with open(ready, encoding="utf-8") as f:
                    port = json.load(f)["ports"][0]
                if how == "term":
                    proc.terminate()
                else:
                    urllib.request.urlopen("http://127.0.0.1:%d/__lab/shutdown" % port, timeout=5).read()
                self.assertEqual(proc.wait(timeout=10), 0)


if __name__ == "__main__":
    unittest.main()
