#!/usr/bin/env python3
"""Writes a state dir as a plan of N codex units leaves it, for `vf report`'s
figure in scripts/bench.sh: each unit's marker (done; every 10th failed, the
unit after it blocked; each unit after the first 8 depending on the one 8
before, as `--jobs 8` lanes would run them), and a raw log of LOG_KB KiB made
of the genuine codex capture's lines (fresh session id per unit). Also the
plan (for the arrows). Prints the total bytes of raw log written.

usage: bench-report.py FIXTURE STATE_DIR PLAN N LOG_KB
"""
import json, os, sys, time

fixture, state, plan, n, log_kb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
lines = open(fixture).read().splitlines()
body = [l for l in lines if '"thread.started"' not in l and '"turn.completed"' not in l]
done = [l for l in lines if '"turn.completed"' in l]


def stamp(ms):
    s, ms = divmod(ms, 1000)

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{ms:03d}Z"


t0 = 1_780_000_000_000
total = 0
with open(plan, "w") as p:
    for i in range(n):
        unit = f"u{i:05d}"
        deps = [f"u{i - 8:05d}"] if i >= 8 else []
        p.write(f'[[unit]]\nname = "{unit}"\nengine = "codex"\nprompt = "p"\ndepends_on = {json.dumps(deps)}\n\n')
        failed = i % 10 == 9
        blocked = i % 10 == 0 and i > 0
        start = t0 + (i // 8) * 60_000 + (i % 8) * 500
        d = os.path.join(state, "units", unit)
        os.makedirs(d, exist_ok=True)
        sid = f"01a229fa-c37b-7e73-b0a3-{i:012x}"
        attempts = 0 if blocked else 1
        if attempts:
            log = [json.dumps({"type": "thread.started", "thread_id": sid})]
            size = len(log[0])
            k = 0
            while size < log_kb * 1024:
                line = body[k % len(body)]
                log.append(line)
                size += len(line) + 1
                k += 1
            log += done
            text = "\n".join(log) + "\n"
            total += len(text)
            with open(os.path.join(d, "attempt-1.stdout.log"), "w") as f:
                f.write(text)
            open(os.path.join(d, "attempt-1.stderr.log"), "w").close()
        marker = {
            "format": 1, "unit": unit, "engine": "codex",
            "engineVersion": "0.171.0" if attempts else None,
            "state": "blocked" if blocked else ("failed" if failed else "done"),
            "engineSessionId": sid if attempts else None, "attempts": attempts,
            "cwd": state, "owner": None,
            "createdAt": stamp(start), "updatedAt": stamp(start + 45_000),
            "startedAt": stamp(start) if attempts else None,
            "finishedAt": stamp(start + 45_000),
            "exitCode": (1 if failed else 0) if attempts else None,
            "summary": {"confidence": 0.9} if attempts and not failed else None,
            "summaryError": None,
            "error": "engine failed" if failed else ("dependency failed" if blocked else None),
            "reason": "engine" if failed else ("dependency" if blocked else None),
            "usage": {"inputTokens": 200, "outputTokens": 40, "totalTokens": 240, "source": "turn.completed.usage"} if attempts else None,
            "stdoutLog": f"units/{unit}/attempt-1.stdout.log" if attempts else None,
            "stderrLog": f"units/{unit}/attempt-1.stderr.log" if attempts else None,
        }
        with open(os.path.join(d, "marker.json"), "w") as f:
            json.dump(marker, f, indent=2)
print(total)
