"""The scenarios of vf's closed loops (issue 41), imported by fake_model_plan.py.

vf writes the prompts of a loop's rounds itself (src/dispatch/rounds/prompts.rs),
so these scenarios are keyed on what those prompts must carry, never on their
wording:
  LAB-LOOP      an author with a reviewer. The reviewer's prompt carries the
                author's task (so this marker) and the json verdict format (the
                key `"verdict"`): the reviewer asks for changes (one comment,
                REVIEW_COMMENT) until the diff it is shown adds the revised line,
                then approves. Without `"verdict"`: the author writes the draft.
  LAB-REVISE    the author's resumed prompt after `changes`: it carries the
                comment's text, so this marker. The author writes the revised
                line. Logged with `continuity` (the earlier turn's LAB-MEMO word).
  LAB-FIXME     a unit whose `verify` fails after its first attempt: it writes
                the broken line.
  LAB-FIXUP     the fix round's prompt: it carries the failed `verify` command and
                its output (the tests put this marker in both), the author writes
                the fixed line. Logged with `continuity`.
  LAB-SIDE<n>   one side of a merge conflict: writes `side <n>` into MERGE_FILE.
  LAB-MERGE     the resolver's prompt: it names the conflicted path, MERGE_FILE,
                whose name is this marker. The resolver writes both sides' lines,
                no conflict marker left.
Each writing step is one shell tool call, then a final answer with a fenced json
summary once the tool result comes back.
"""

import json

LOOP_FILE = "lab-loop.txt"
LOOP_DRAFT = "lab-loop: draft"
LOOP_REVISED = "lab-loop: revised"
REVIEW_COMMENT = ("LAB-REVISE lab-loop.txt holds the draft line; replace it with the line '"
                  + LOOP_REVISED + "'.")
FIX_FILE = "lab-fix.txt"
FIX_BROKEN = "lab-fix: broken"
FIX_FIXED = "lab-fix: fixed"
MERGE_FILE = "LAB-MERGE.txt"
MERGED = "side 1\nside 2"

SCENARIOS = ("loop", "revise", "fixme", "fixup", "side", "merge")

FINAL = 'Wrote {file}.\n\n```json\n{{"confidence":0.9,"files_changed":["{file}"]}}\n```\n'
VERDICT = 'Reviewed the diff.\n\n```json\n{verdict}\n```\n'


def write_command(path, text):
    """A shell command that replaces `path` with `text` (no quote in either)."""
    return "printf '%s\\n' > %s && echo wrote %s" % (text.replace("\n", "\\n"), path, path)


def verdict_text(text):
    """The reviewer's answer and its verdict word: approve once the diff adds the
    revised line."""
    if ("+" + LOOP_REVISED) in text:
        v = {"verdict": "approve", "comments": []}
    else:
        v = {"verdict": "changes",
             "comments": [{"path": LOOP_FILE, "line": 1, "text": REVIEW_COMMENT}]}
    return VERDICT.format(verdict=json.dumps(v)), v["verdict"]


def step_plan(name, step, path, text):
    """A write in one tool call at step 0, then the final answer."""
    if step == 0:
        return {"kind": "answer", "text": "I will write %s." % path,
                "command": write_command(path, text), "served": "%s#0" % name}
    return {"kind": "answer", "text": FINAL.format(file=path), "served": "%s#%d" % (name, step)}


def phase(name, message):
    """The round a message belongs to, whatever order vf's prompt puts its parts
    in: a review prompt may also quote earlier comments, a fix or revision prompt
    the unit's task."""
    if "LAB-LOOP" in message and '"verdict"' in message:
        return "review"
    for later in ("revise", "fixup"):
        if "LAB-%s" % later.upper() in message:
            return later
    return name


def loop_plan(name, code, step, message):
    """The answer of a loop scenario, given the whole latest marked message; the
    caller turns `command` into the shell tool the request offers."""
    name = phase(name, message)
    if name == "review":
        text, word = verdict_text(message)
        return {"kind": "answer", "text": text, "served": "review-%s#%d" % (word, step)}
    if name == "loop":
        return step_plan("loop", step, LOOP_FILE, LOOP_DRAFT)
    if name == "revise":
        return step_plan("revise", step, LOOP_FILE, LOOP_REVISED)
    if name == "fixme":
        return step_plan("fixme", step, FIX_FILE, FIX_BROKEN)
    if name == "fixup":
        return step_plan("fixup", step, FIX_FILE, FIX_FIXED)
    if name == "side":
        return step_plan("side%d" % code, step, MERGE_FILE, "side %d" % code)
    return step_plan("merge", step, MERGE_FILE, MERGED)
