#!/usr/bin/env python3
"""What closed loops cost: a plan of 10 units with and without fix rounds and review.

    scripts/bench-loops.py STATE_ROOT RUNS VF_BIN

Two plans on scripted fakes (codex the author, claude the reviewer, both on
PATH under STATE_ROOT): `plain` (each unit once, `verify` passes) and `loops`
(`fix_rounds = 2`, `review = { engine = "claude", rounds = 2 }`: each unit's
`verify` fails once, its reviewer asks for changes once, then approves; four
rounds per unit). Each run goes twice, at `--jobs 4` (the wall time a user
sees) and `--jobs 1` (sequential: vf's own time per round). The fakes and the
verify command log their start and end, so the engines' and the checks' own
time is taken out: what is left per round is vf's (markers, the nested
unit's lock and marker, the diff for the reviewer, the resume's spawn).
STATE_ROOT decides the file system measured (e.g. /dev/shm/loops for tmpfs).
Prints figures, asserts nothing.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODEX = os.path.join(ROOT, "fixtures", "codex", "0.171.0", "a_json.stdout.jsonl")
CLAUDE = os.path.join(ROOT, "fixtures", "claude", "2.1.332", "a_json.stdout.jsonl")
UNITS = 10

# Each fake logs `<start ns> <end ns>` per run; the reviewer asks for changes
# the first time it sees a unit's task, then approves.
AUTHOR = r"""#!/bin/sh
[ "$1" = "--version" ] && { echo 0.171.0; exit 0; }
s=$(date +%s%N); cat >/dev/null; cat "@CODEX@"; echo "$s $(date +%s%N)" >> "@LOG@/engine.log"
"""
REVIEWER = r"""#!/bin/sh
[ "$1" = "--version" ] && { echo "2.1.332 (Claude Code)"; exit 0; }
s=$(date +%s%N); p=$(cat); u=$(printf '%s' "$p" | grep -o 'task of u[0-9]*' | head -n 1 | cut -d' ' -f3)
if [ -e "@LOG@/reviewed-$u" ]; then cat "@APPROVE@"; else : > "@LOG@/reviewed-$u"; cat "@CHANGES@"; fi
echo "$s $(date +%s%N)" >> "@LOG@/engine.log"
"""
# Fails the first time it checks a unit, passes after.
VERIFY = r"""#!/bin/sh
s=$(date +%s%N); f="@LOG@/verified-$VF_UNIT"; rc=0
[ -e "$f" ] || { : > "$f"; echo "not yet"; rc=1; }
echo "$s $(date +%s%N)" >> "@LOG@/verify.log"; exit $rc
"""


def claude_answer(path, verdict):
    line = json.loads(open(CLAUDE).read().splitlines()[-1])
    line["result"] = "Review:\n\n```json\n" + json.dumps(verdict) + "\n```\n"
    with open(path, "w") as f:
        f.write(json.dumps(line) + "\n")


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def setup(root):
    bin_dir, log = os.path.join(root, "bin"), os.path.join(root, "log")
    os.makedirs(bin_dir, exist_ok=True)
    changes, approve = os.path.join(root, "changes.jsonl"), os.path.join(root, "approve.jsonl")
    claude_answer(changes, {"verdict": "changes", "comments": [{"text": "rename x"}]})
    claude_answer(approve, {"verdict": "approve"})
    subs = {"@CODEX@": CODEX, "@LOG@": log, "@CHANGES@": changes, "@APPROVE@": approve}
    for name, text in [("codex", AUTHOR), ("claude", REVIEWER), ("verify", VERIFY)]:
        for k, v in subs.items():
            text = text.replace(k, v)
        write_exe(os.path.join(bin_dir, name), text)
    for kind, extra in [("plain", ""), ("loops", LOOPS)]:
        with open(os.path.join(root, f"{kind}.toml"), "w") as f:
            for i in range(UNITS):
                f.write(f'[[unit]]\nname = "u{i}"\nengine = "codex"\nprompt = "task of u{i}"\n')
                f.write(f'verify = "{os.path.join(bin_dir, "verify") if extra else "true"}"\n{extra}\n')
    return bin_dir, log


LOOPS = 'fix_rounds = 2\nreview = { engine = "claude", rounds = 2 }\n'


def spent(path):
    """The summed seconds of a log of `<start ns> <end ns>` lines, and their count."""
    if not os.path.exists(path):
        return 0.0, 0
    spans = [tuple(map(int, l.split())) for l in open(path) if l.strip()]
    return sum(e - s for s, e in spans) / 1e9, len(spans)


def run(vf, root, bin_dir, log, kind, jobs):
    work = os.path.join(root, "work")
    for d in (work, log):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"],
               VF_STATE_DIR=os.path.join(work, ".vf"), VF_CONFIG=os.devnull,
               XDG_CACHE_HOME=os.path.join(root, "cache"))
    plan = os.path.join(root, f"{kind}.toml")
    t = time.monotonic()
    out = subprocess.run([vf, "orchestrate", plan, "--jobs", str(jobs), "--output", "json"],
                         cwd=work, env=env, capture_output=True)
    wall = time.monotonic() - t
    if out.returncode != 0:
        sys.exit(f"{kind}: vf exited {out.returncode}: {out.stderr.decode()[-2000:]}")
    rounds = sum(len(u.get("rounds", [])) for u in json.loads(out.stdout)["units"])
    eng, n_eng = spent(os.path.join(log, "engine.log"))
    ver, _ = spent(os.path.join(log, "verify.log"))
    return wall, eng + ver, rounds, n_eng


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    root, runs, vf = os.path.abspath(sys.argv[1]), int(sys.argv[2]), os.path.abspath(sys.argv[3])
    os.makedirs(root, exist_ok=True)
    bin_dir, log = setup(root)
    rows = {}
    for _ in range(runs):
        for jobs in (4, 1):
            for kind in ("plain", "loops"):
                rows.setdefault((kind, jobs), []).append(run(vf, root, bin_dir, log, kind, jobs))
    print(f"{UNITS} units, {runs} runs each, medians; state under {root}")
    print(f"{'plan':<8}{'jobs':>5}{'wall s':>9}{'engines+verify s':>18}{'rounds':>8}{'engine runs':>13}")
    med = {}
    for (kind, jobs), rs in sorted(rows.items()):
        m = [statistics.median(x) for x in zip(*rs)]
        med[(kind, jobs)] = m
        print(f"{kind:<8}{jobs:>5}{m[0]:>9.2f}{m[1]:>18.2f}{m[2]:>8.0f}{m[3]:>13.0f}")
    (pw, pe, _, _), (lw, le, lr, _) = med[("plain", 1)], med[("loops", 1)]
    per = ((lw - le) - (pw - pe)) / lr if lr else float("nan")
    print(f"vf's own time per round (sequential, engines and checks taken out): {per * 1000:.1f} ms")


if __name__ == "__main__":
    main()
