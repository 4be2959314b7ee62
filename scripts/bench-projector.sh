#!/usr/bin/env bash
# Projector throughput and memory, side by side with jq and a Node.js
# JSON.parse loop, on a >= 200 MB claude stream-json file built from the
# real fixtures. Prints figures; asserts nothing (noisy shared machines).
#
#   scripts/bench-projector.sh [SIZE_MB]     (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${1:-200}
WORK=${VF_BENCH_DIR:-/tmp/vf-bench}
mkdir -p "$WORK"
IN="$WORK/claude-stream-${SIZE_MB}mb.jsonl"

command -v jq >/dev/null || { echo "jq missing: apt-get install -y jq" >&2; exit 2; }
command -v node >/dev/null || { echo "node missing" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install -y time" >&2; exit 2; }

cargo build --release --quiet
VF=target/release/vf

if [ ! -s "$IN" ]; then
  SEED="$WORK/seed.jsonl"
  : >"$SEED"
  for c in a_json_stream a_json_partial b_tool b_tool_denied b_tool_readonly_noallow c_resume_stream d_error500; do
    cat "fixtures/claude/2.1.332/$c.stdout.jsonl" >>"$SEED"
  done
  # Double until large enough (cheap, and still only real frames).
  cp "$SEED" "$IN.tmp"
  while [ "$(stat -c %s "$IN.tmp")" -lt $((SIZE_MB * 1000 * 1000)) ]; do
    cat "$IN.tmp" "$IN.tmp" >"$IN.tmp2" && mv "$IN.tmp2" "$IN.tmp"
  done
  mv "$IN.tmp" "$IN"
fi
BYTES=$(stat -c %s "$IN")
LINES=$(wc -l <"$IN")

NODE_LOOP="$WORK/parse-loop.js"
cat >"$NODE_LOOP" <<'JS'
const fs = require('fs'); const readline = require('readline');
const rl = readline.createInterface({ input: fs.createReadStream(process.argv[2]), crlfDelay: Infinity });
let n = 0;
rl.on('line', (l) => { if (l.length) { JSON.parse(l); n++; } });
rl.on('close', () => { process.stderr.write(`node parsed ${n} lines\n`); });
JS

# Warm the page cache so every tool reads from memory.
cat "$IN" >/dev/null

# run NAME CMD... : prints "seconds peak_rss_kib"
run() {
  local log="$WORK/time.log"
  /usr/bin/time -f '%e %M' -o "$log" "$@" >/dev/null 2>"$WORK/stderr.log" || {
    echo "failed: $*" >&2; cat "$WORK/stderr.log" >&2; exit 1; }
  tail -n1 "$log"
}

mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { if (s <= 0) s = 0.01; printf "%.1f", b / 1e6 / s }'; }

read -r VF_S VF_RSS < <(run "$VF" replay "$IN" --cli claude --cli-version 2.1.332 --output jsonl)
read -r JQ_S JQ_RSS < <(run jq -c . "$IN")
read -r NODE_S NODE_RSS < <(run node "$NODE_LOOP" "$IN")

VF_MB=$(mbps "$VF_S"); JQ_MB=$(mbps "$JQ_S"); NODE_MB=$(mbps "$NODE_S")
printf 'input: %s (%d bytes, %d lines)\n\n' "$IN" "$BYTES" "$LINES"
printf '%-34s %10s %10s %14s\n' tool seconds MB/s 'peak RSS MiB'
printf '%-34s %10s %10s %14.1f\n' 'vf replay --output jsonl' "$VF_S" "$VF_MB" "$(echo "$VF_RSS/1024" | bc -l)"
printf '%-34s %10s %10s %14.1f\n' 'jq -c .' "$JQ_S" "$JQ_MB" "$(echo "$JQ_RSS/1024" | bc -l)"
printf '%-34s %10s %10s %14.1f\n' 'node readline + JSON.parse' "$NODE_S" "$NODE_MB" "$(echo "$NODE_RSS/1024" | bc -l)"
echo
awk -v v="$VF_MB" -v j="$JQ_MB" -v n="$NODE_MB" -v r="$VF_RSS" 'BEGIN {
  printf "vf / jq   = %.1fx (target >= 10x)\n", v / j;
  printf "vf / node = %.1fx (target >= 2x)\n", v / n;
  printf "vf peak RSS = %.1f MiB (target <= 16 MiB)\n", r / 1024 }'
