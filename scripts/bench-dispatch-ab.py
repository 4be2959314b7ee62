#!/usr/bin/env python3
"""Dispatch overhead of several vf binaries, A/B in one interleaved run.

    scripts/bench-dispatch-ab.py STATE_ROOT RUNS VF_BIN [VF_BIN ...]

Each round runs the fake engine alone, then one `vf dispatch` per binary, so a
load drift hits all of them alike. Prints each binary's median and what it
adds over the engine alone. STATE_ROOT decides the file system measured
(e.g. /dev/shm/ab for tmpfs); each binary gets its own state dir under it.
Prints figures, asserts nothing.
"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURE = os.path.join(ROOT, "fixtures", "codex", "0.171.0", "a_json.stdout.jsonl")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    root, runs, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.makedirs(root, exist_ok=True)
    fake = os.path.join(root, "codex")
    with open(fake, "w") as f:
        f.write('#!/bin/sh\n[ "$1" = "--version" ] && { echo "codex-cli 0.171.0"; exit 0; }\n'
                f'cat >/dev/null\ncat "{CAPTURE}"\n')
    os.chmod(fake, 0o755)
    env = dict(os.environ, VF_CODEX_BIN=fake, HOME=root,
               XDG_CACHE_HOME=os.path.join(root, "cache"))

    def ms(cmd, stdin=b""):
        t = time.perf_counter()
        subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
        return (time.perf_counter() - t) * 1e3

    def dispatch(j, unit):
        state = os.path.join(root, f"state-{j}-{os.getpid()}")
        return ms([bins[j], "dispatch", "--engine", "codex", "--unit", unit,
                   "--prompt", "p", "--output", "json", "--state-dir", state])

    for j in range(len(bins)):
        dispatch(j, "warm")  # the version cache
    direct, via = [], [[] for _ in bins]
    for i in range(runs):
        direct.append(ms([fake, "exec", "--json", "-"], b"p"))
        for j in range(len(bins)):
            via[j].append(dispatch(j, f"u{i}"))
    d = statistics.median(direct)
    print(f"engine alone: {d:.2f} ms (median of {runs})")
    for b, v in zip(bins, via):
        m = statistics.median(v)
        print(f"{b}: {m:.2f} ms  +{m - d:.2f} ms")


main()
