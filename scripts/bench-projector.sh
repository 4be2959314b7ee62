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

# run CMD... : prints "wall_seconds cpu_seconds peak_rss_kib"
run() {
  local log="$WORK/time.log"
  /usr/bin/time -f '%e %U %S %M' -o "$log" "$@" >/dev/null 2>"$WORK/stderr.log" || {
    echo "failed: $*" >&2; cat "$WORK/stderr.log" >&2; exit 1; }
  tail -n1 "$log" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }'
}

mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { if (s <= 0) s = 0.01; printf "%.1f", b / 1e6 / s }'; }

read -r VF_S VF_CPU VF_RSS < <(run "$VF" replay "$IN" --cli claude --cli-version 2.1.332 --output jsonl)
read -r JQ_S JQ_CPU JQ_RSS < <(run jq -c . "$IN")
read -r NODE_S NODE_CPU NODE_RSS < <(run node "$NODE_LOOP" "$IN")

VF_MB=$(mbps "$VF_S"); JQ_MB=$(mbps "$JQ_S"); NODE_MB=$(mbps "$NODE_S")
printf 'input: %s (%d bytes, %d lines)\n' "$IN" "$BYTES" "$LINES"
printf 'load average: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-30s %8s %8s %9s %9s %13s\n' tool wall-s MB/s cpu-s MB/cpu-s 'peak RSS MiB'
row() { printf '%-30s %8s %8s %9s %9s %13.1f\n' "$1" "$2" "$(mbps "$2")" "$3" "$(mbps "$3")" "$(echo "$4/1024" | bc -l)"; }
row 'vf replay --output jsonl' "$VF_S" "$VF_CPU" "$VF_RSS"
row 'jq -c .' "$JQ_S" "$JQ_CPU" "$JQ_RSS"
row 'node readline + JSON.parse' "$NODE_S" "$NODE_CPU" "$NODE_RSS"
echo
echo "(wall MB/s is what the targets name; on a shared, loaded machine cpu-s is steadier)"
awk -v v="$VF_MB" -v j="$JQ_MB" -v n="$NODE_MB" -v r="$VF_RSS" \
    -v vc="$VF_CPU" -v jc="$JQ_CPU" -v nc="$NODE_CPU" 'BEGIN {
  printf "vf / jq   = %.1fx wall, %.1fx cpu (target >= 10x)\n", v / j, jc / vc;
  printf "vf / node = %.1fx wall, %.1fx cpu (target >= 2x)\n", v / n, nc / vc;
  printf "vf peak RSS = %.1f MiB (target <= 16 MiB)\n", r / 1024 }'
