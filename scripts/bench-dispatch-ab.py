#!/usr/bin/env python3
"""Dispatch overhead of several vf binaries, A/B in one interleaved run.

    scripts/bench-dispatch-ab.py [--worktree] STATE_ROOT RUNS VF_BIN [VF_BIN ...]

Each round runs the fake engine alone, then one `vf dispatch` per binary, so a
load drift hits all of them alike. Prints each binary's median and what it
adds over the engine alone. `--worktree`: each dispatch runs in a git
worktree of its own (`--worktree`, a repository made under STATE_ROOT), so
what is measured includes every git call vf makes around the engine. STATE_ROOT decides the file system measured
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
    args = sys.argv[1:]
    worktree = bool(args) and args[0] == "--worktree"
    args = args[1:] if worktree else args
    if len(args) < 3:
        sys.exit(__doc__)
    root, runs, bins = args[0], int(args[1]), args[2:]
    os.makedirs(root, exist_ok=True)
    repo = os.path.join(root, "repo")
    if worktree and not os.path.isdir(repo):
        os.makedirs(repo)
        git = ["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@b"]
        subprocess.run(git[:3] + ["init", "-q"], check=True)
        with open(os.path.join(repo, "a.txt"), "w") as f:
            f.write("a\n")
        subprocess.run(git + ["add", "a.txt"], check=True)
        subprocess.run(git + ["commit", "-qm", "a"], check=True)
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
        extra = ["--cwd", repo, "--worktree"] if worktree else []
        return ms([bins[j], "dispatch", "--engine", "codex", "--unit", unit,
                   "--prompt", "p", "--output", "json", "--state-dir", state] + extra)

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
