#!/usr/bin/env python3
"""What the quota governor saves: a fleet of units on one engine meets a wall.

    scripts/bench-quota.py STATE_ROOT RUNS VF_BIN [BASELINE_VF_BIN]

A plan of 16 claude units, `--jobs 8`, `on_rate_limit = "wait"`, on the
test fake (tests/fake/fake-engine) acting as a provider: its third start
puts up a wall for the reset (60 s, scaled by VF_TEST_RATE_LIMIT_WAIT_SCALE
= 0.01 to 0.6 s, as claude's `rate_limit_event` names it), and every run that
starts while the wall stands is refused (`wall` in its log). Figures per
binary: engine starts, starts that met the wall, the time from the reset
(the wall's end) to the last unit's start, and the plan's wall time.
BASELINE_VF_BIN is a vf without the governor (e.g. built from 090091a).
STATE_ROOT decides the file system measured (/dev/shm/q for tmpfs). Prints
figures, asserts nothing.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE = os.path.join(ROOT, "tests", "fake", "fake-engine")
OK = os.path.join(ROOT, "fixtures", "claude", "2.1.332", "a_json_stream.stdout.jsonl")
LIMITED = os.path.join(ROOT, "fixtures", "claude", "2.1.207", "d_error429.stdout.jsonl")
SID = "6194bcf3-613b-4938-813a-96fd27dc6521"
UNITS, JOBS, RESET_S, SCALE = 16, 8, 60, 0.01


def setup(d):
    shutil.rmtree(d, ignore_errors=True)
    for sub in ("bin", "runs", "wall"):
        os.makedirs(os.path.join(d, sub))
    ok = open(OK).read().replace("5e0e0c89-f301-4ba6-8327-7b41f84dc493", SID)
    ok = ok.replace("a45120f2-ed10-406b-8dbb-c2e6151c6f7f", SID)
    open(os.path.join(d, "ok.jsonl"), "w").write(ok)
    lines = open(LIMITED).read().splitlines()
    event = {"type": "rate_limit_event", "session_id": SID, "rate_limit_info": {
        "status": "rejected", "resetsAt": int(time.time()) + RESET_S, "rateLimitType": "five_hour"}}
    lines.insert(1, json.dumps(event))
    open(os.path.join(d, "limited.jsonl"), "w").write("\n".join(lines) + "\n")
    fake = os.path.join(d, "bin", "claude")
    shutil.copy(FAKE, fake)
    # The fake's wall ends a little before the reset vf learns (both scaled).
    wall_ms = int(RESET_S * SCALE * 1000 * 0.9)
    open(fake + ".env", "w").write(
        f"FAKE_VERSION=2.1.332\nFAKE_STDOUT={d}/ok.jsonl\nFAKE_DELAY=0.05\nFAKE_WALL_AT=3\n"
        f"FAKE_WALL_MS={wall_ms}\nFAKE_WALL_DIR={d}/wall\nFAKE_RATE_LIMIT_STDOUT={d}/limited.jsonl\n")
    plan = ""
    for i in range(UNITS):
        os.makedirs(os.path.join(d, f"u{i:02}"))
        plan += (f'[[unit]]\nname = "u{i:02}"\nengine = "claude"\nprompt = "task {i}"\n'
                 f'cwd = "u{i:02}"\non_rate_limit = "wait"\nmax_wait = 3600\n\n')
    open(os.path.join(d, "plan.toml"), "w").write(plan)
    return fake


def run(vf, d):
    fake = setup(d)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VF_", "FAKE_"))}
    env.update(VF_STATE_DIR=os.path.join(d, "state"), VF_CONFIG="/dev/null",
               VF_CLAUDE_BIN=fake, FAKE_RUN_DIR=os.path.join(d, "runs"),
               VF_QUOTA_FILE=os.path.join(d, "quota.json"),
               VF_TEST_RATE_LIMIT_WAIT_SCALE=str(SCALE), XDG_CACHE_HOME=os.path.join(d, "cache"))
    t0 = time.time()
    out = subprocess.run([vf, "orchestrate", os.path.join(d, "plan.toml"), "--jobs", str(JOBS),
                          "--output", "jsonl"], cwd=d, env=env, capture_output=True, timeout=600)
    took = time.time() - t0
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    log = open(os.path.join(d, "runs", "events.log")).read().splitlines()
    starts = sum(1 for l in log if l.startswith("start "))
    walls = sum(1 for l in log if l.startswith("wall "))
    wall_end = int(open(os.path.join(d, "wall", "until")).read()) / 1000
    runs = [os.path.join(d, "runs", f) for f in os.listdir(os.path.join(d, "runs")) if f.endswith(".args")]
    last = max(os.path.getmtime(p) for p in runs)
    done = sum(1 for u in result["units"] if u["state"] == "done")
    return {"starts": starts, "walls": walls, "after_reset": last - wall_end, "took": took, "done": done}


def main():
    root, n, vf = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    bins = [("governor", vf)] + ([("baseline", sys.argv[4])] if len(sys.argv) > 4 else [])
    print(f"{UNITS} claude units, --jobs {JOBS}, a wall at the 3rd start, reset {RESET_S} s "
          f"(scaled x{SCALE}); {n} runs each on {root}")
    print(f"{'binary':<10} {'done':>5} {'starts':>7} {'met the wall':>13} "
          f"{'reset -> last start':>20} {'plan time':>10}")
    for name, b in bins:
        rs = [run(b, os.path.join(root, name)) for _ in range(n)]
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"{name:<10} {med('done'):>5.0f} {med('starts'):>7.0f} {med('walls'):>13.0f} "
              f"{med('after_reset'):>19.2f}s {med('took'):>9.2f}s   "
              f"(walls per run: {[r['walls'] for r in rs]})")


if __name__ == "__main__":
    main()
