#!/usr/bin/env python3
"""Live latency (issue 24): how long an engine's line takes to reach the reader.

UNITS fake codex engines each print EVENTS agent messages, one every EVERY_MS,
with the time of the write (CLOCK_MONOTONIC, ns) inside the message's text.
The reader stamps each line on receipt. Two runs of the same engines:

- bare: the engines piped straight to this reader (one pipe each, poll);
- vf:   the engines as the units of one plan, through
        `vf orchestrate --jobs UNITS --output jsonl` (one pipe).

The engine's version is cached by a one-unit warm-up plan first, as after
any first run. Prints one line: "vf_p50 vf_p99 vf_max bare_p50 bare_p99
bare_max" (ms), or, with --verbose, a readable summary; LAT_TRACE=1 also
prints each event's unit, index and delay on stderr. Figures only, never an
assertion.

Each engine ends with os._exit: Python's teardown, 16 at once at the end,
would otherwise be the bench's own CPU load on the last events of the others.

With --lead-ms N each engine waits N ms after its first two frames (its
session id, the turn's start) before the messages, as a model takes before its
first words: the figures are then the streaming alone.

With --runs N the bare and vf runs alternate N times (which goes first
alternates too) and each figure printed is its median over the N runs; each
run's vf state dir is STATE_DIR-1 .. STATE_DIR-N, removed after its run.

    scripts/bench-latency.py VF STATE_DIR [--units 16] [--events 200] [--every-ms 5]
                             [--lead-ms 0] [--runs 1] [--verbose]
"""
import argparse, json, os, selectors, shutil, statistics, subprocess, sys, tempfile, time

ENGINE = r'''#!/usr/bin/env python3
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("codex-cli 0.171.0"); sys.exit(0)
sys.stdin.read()
n, every = int(os.environ["LAT_EVENTS"]), int(os.environ["LAT_EVERY_MS"]) / 1e3
lead = int(os.environ.get("LAT_LEAD_MS", "0")) / 1e3
tid = "01a229fa-c269-71a3-a12b-%012x" % os.getpid()
out = sys.stdout
def put(frame):
    out.write(json.dumps(frame, separators=(",", ":")) + "\n")
    out.flush()
put({"type": "thread.started", "thread_id": tid})
put({"type": "turn.started"})
time.sleep(lead)
start = time.monotonic()
for i in range(n):
    delay = start + (i + 1) * every - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    text = "t=%d i=%d" % (time.monotonic_ns(), i)
    put({"type": "item.completed", "item": {"id": "item_%d" % i, "type": "agent_message", "text": text}})
put({"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 0,
     "output_tokens": 20, "reasoning_output_tokens": 0}})
out.flush()
# No interpreter teardown: 32 of them at once on a small machine are CPU the
# bench itself would make, landing on the last events of every other unit.
os._exit(0)
'''


def stamp(text):
    """The write time inside an agent message's text, or None."""
    if not isinstance(text, str) or not text.startswith("t="):
        return None
    return int(text[2:].split(" ", 1)[0])


def bare(engine, env, units):
    """The engines' lines read straight from their pipes: delays in ms."""
    sel = selectors.DefaultSelector()
    procs, bufs, lats = [], {}, []
    for _ in range(units):
        p = subprocess.Popen([engine, "exec", "--json", "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env, bufsize=0)
        p.stdin.write(b"p")
        p.stdin.close()
        procs.append(p)
        bufs[p.stdout.fileno()] = b""
        sel.register(p.stdout, selectors.EVENT_READ)
    open_ = units
    while open_:
        for key, _ in sel.select():
            chunk = os.read(key.fd, 65536)
            now = time.monotonic_ns()
            if not chunk:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            data = bufs[key.fd] + chunk
            *lines, bufs[key.fd] = data.split(b"\n")
            for line in lines:
                frame = json.loads(line)
                t = stamp(frame.get("item", {}).get("text"))
                if t is not None:
                    lats.append((now - t) / 1e6)
                    if os.environ.get("LAT_TRACE"):
                        print(f"bare{key.fd} {frame['item']['text'].split()[1]} {(now - t) / 1e6:.2f}", file=sys.stderr)
    for p in procs:
        p.wait()
    return lats


def through_vf(vf, engine, env, units, state):
    """The same engines as the units of one plan: delays in ms."""
    plan = os.path.join(os.path.dirname(engine), "plan.toml")
    with open(plan, "w") as f:
        for i in range(units):
            f.write(f'[[unit]]\nname = "lat{i:02d}"\nengine = "codex"\nprompt = "p"\n\n')
    env = dict(env, VF_CODEX_BIN=engine)
    # A first run reads the engine's version and caches it: measured warm, as
    # a user runs it (a one-unit plan of no events, in a state dir of its own).
    warm = os.path.join(os.path.dirname(engine), "warm.toml")
    with open(warm, "w") as f:
        f.write('[[unit]]\nname = "warm"\nengine = "codex"\nprompt = "p"\n')
    subprocess.run([vf, "orchestrate", warm, "--output", "json", "--state-dir", state + "-warm"],
                   env=dict(env, LAT_EVENTS="0"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(state + "-warm", ignore_errors=True)
    cmd = [vf, "orchestrate", plan, "--jobs", str(units), "--output", "jsonl", "--state-dir", state]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, bufsize=0)
    lats, buf, fd = [], b"", p.stdout.fileno()
    while True:
        chunk = os.read(fd, 65536)
        now = time.monotonic_ns()
        if not chunk:
            break
        *lines, buf = (buf + chunk).split(b"\n")
        for line in lines:
            ev = json.loads(line)
            t = stamp(ev.get("text")) if ev.get("kind") == "message.taskAgent" else None
            if t is not None:
                lats.append((now - t) / 1e6)
                if os.environ.get("LAT_TRACE"):
                    print(f"{ev.get('unit')} {ev['text'].split()[1]} {(now - t) / 1e6:.2f}", file=sys.stderr)
    if p.wait() != 0:
        sys.exit(f"bench-latency: vf orchestrate exited {p.returncode}")
    return lats


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vf")
    ap.add_argument("state_dir")
    ap.add_argument("--units", type=int, default=16)
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--every-ms", type=int, default=5)
    ap.add_argument("--lead-ms", type=int, default=0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vf-latency-")
    try:
        engine = os.path.join(tmp, "codex")
        with open(engine, "w") as f:
            f.write(ENGINE)
        os.chmod(engine, 0o755)
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "XDG_CACHE_HOME": os.path.join(tmp, "cache"),
               "LAT_EVENTS": str(a.events), "LAT_EVERY_MS": str(a.every_ms),
               "LAT_LEAD_MS": str(a.lead_ms)}
        runs = [one_run(a, engine, env, r) for r in range(a.runs)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # Each figure's median over the runs: one hiccup of a shared machine
    # (a build starting, write-back) moves one run's worst event, not this.
    figs = [statistics.median(run[i] for run in runs) for i in range(6)]
    if a.verbose:
        print(f"{a.units * a.events} events ({a.units} units x {a.events}, every {a.every_ms} ms),"
              f" median of {a.runs} run(s)")
        print("        p50       p99       worst")
        print("vf   " + "".join(f"{x:8.3f}  " for x in figs[:3]) + "ms")
        print("bare " + "".join(f"{x:8.3f}  " for x in figs[3:]) + "ms")
        for r, run in enumerate(runs):
            print(f"run {r + 1}: vf " + " ".join(f"{x:.2f}" for x in run[:3])
                  + " | bare " + " ".join(f"{x:.2f}" for x in run[3:]))
    else:
        print(" ".join(f"{x:.2f}" for x in figs))


def one_run(a, engine, env, r):
    """One bare run and one vf run, in turn: [vf p50, p99, max, bare p50, p99, max]."""
    state = a.state_dir if a.runs == 1 else f"{a.state_dir}-{r + 1}"
    if r % 2:
        v = through_vf(a.vf, engine, env, a.units, state)
        b = bare(engine, env, a.units)
    else:
        b = bare(engine, env, a.units)
        v = through_vf(a.vf, engine, env, a.units, state)
    if a.runs > 1:
        shutil.rmtree(state, ignore_errors=True)
    want = a.units * a.events
    if len(b) != want or len(v) != want:
        sys.exit(f"bench-latency: expected {want} events, bare saw {len(b)}, vf {len(v)}")
    return [pct(v, 0.5), pct(v, 0.99), max(v), pct(b, 0.5), pct(b, 0.99), max(b)]


if __name__ == "__main__":
    main()
