#!/usr/bin/env bash
# Real-engine contract tests: each pinned CLI, unmodified, run headless against the
# fake model server inside a loopback-only network namespace, for every scenario;
# the output must have the shape of the genuine captures (frame types, session id,
# summary, tool/reasoning frames, error signal, exit code, resume keeps the id).
#
#   tests/real-engines/run.sh [--install] [--baselines] [-j N] [--out DIR] [cli[@version] ...]
#
#   --install   install what is about to run first (scripts/install-engines.sh; CI does)
#   --baselines also run the baseline versions of scripts/engines.env (~3 min more)
#   -j N        run N CLIs at once (default 1: the CLIs are CPU-heavy at start-up,
#               and on 2 cores running them side by side is slower overall)
#   --out DIR   keep every case's stdout/stderr/cmd there (default: a temp dir)
#   cli         default: every CLI at its pinned version
#
# A CLI that is not installed is a FAILURE when VF_REAL_ENGINES=1 (CI), and is
# skipped with a notice otherwise. Prints per-case and total timings.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/engines.env
. "$ROOT/scripts/engines.env"

install=0
baselines=0
jobs=1
out=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --install) install=1; shift ;;
    --baselines) baselines=1; shift ;;
    -j) jobs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ENGINES_CURRENT[@]}")
[ "$baselines" = 0 ] || targets+=("${ENGINES_BASELINE[@]}")

t0=$(date +%s)
if [ "$install" = 1 ]; then
  "$ROOT/scripts/install-engines.sh" "${targets[@]}"
  echo "install: $(( $(date +%s) - t0 ))s"
fi
t1=$(date +%s)

created_out=0
if [ -z "$out" ]; then out="$(mktemp -d /tmp/vf-real-engines.XXXXXX)"; created_out=1; fi
mkdir -p "$out"

engines_dir="${VF_ENGINES_DIR:-$ROOT/.engines}"
status=0
run_one() {
  local spec=$1 cli version
  cli="${spec%%@*}"
  version="${spec#*@}"
  [ "$version" != "$spec" ] || version="$(engine_pinned_version "$cli")"
  if [ ! -x "$engines_dir/$cli-$version/node_modules/.bin/$cli" ]; then
    if [ "${VF_REAL_ENGINES:-0}" = 1 ]; then
      echo "FAIL $cli $version: not installed (scripts/install-engines.sh $cli@$version)"
      return 1
    fi
    echo "skip $cli $version: not installed (set VF_REAL_ENGINES=1 to make this a failure)"
    echo "$cli $version" >>"$out/.skipped"
    return 0
  fi
  local start=$(date +%s) rc=0
  "$ROOT/scripts/engine-sandbox.sh" "$cli" --version "$version" --log "$out/$cli-$version/requests.jsonl" -- \
    python3 "$ROOT/tests/real-engines/cases.py" "$cli" --out "$out/$cli-$version" || rc=$?
  # The fake server must have understood every request the CLI made.
  if [ -f "$out/$cli-$version/requests.jsonl" ] && grep -qE '"served": "(404|bug)' "$out/$cli-$version/requests.jsonl"; then
    echo "FAIL $cli $version: requests the fake server did not understand (unknown endpoint or server bug):"
    grep -E '"served": "(404|bug)' "$out/$cli-$version/requests.jsonl" | python3 -c \
      'import json,sys; [print("     ", d["method"], d["path"]) for d in map(json.loads, sys.stdin)]'
    rc=1
  fi
  # Nothing may try to reach a host: every name lookup lands in the DNS sink's log.
  if [ -f "$out/$cli-$version/requests.jsonl" ] && grep -q '"served": "dns ' "$out/$cli-$version/requests.jsonl"; then
    echo "FAIL $cli $version: name lookups (attempts to leave loopback):"
    grep '"served": "dns ' "$out/$cli-$version/requests.jsonl" | python3 -c \
      'import json,sys,collections; c=collections.Counter(json.loads(l)["path"] for l in sys.stdin); [print("     ", n, k) for k, n in c.items()]'
    rc=1
  fi
  echo "time $cli $version: $(( $(date +%s) - start ))s (rc=$rc)"
  return $rc
}

# The sandbox itself: only loopback inside, and it refuses a namespace that has
# another interface (checked with a tap device, where the kernel offers them).
for spec in "${targets[@]}"; do
  cli="${spec%%@*}" version="${spec#*@}"
  [ "$version" != "$spec" ] || version="$(engine_pinned_version "$cli")"
  if [ -x "$engines_dir/$cli-$version/node_modules/.bin/$cli" ]; then
    "$ROOT/scripts/engine-sandbox.sh" "$cli" --version "$version" -- \
      python3 "$ROOT/tests/real-engines/isolation.py" || status=1
    break
  fi
done
if unshare -n sh -c 'ip tuntap add vflab0 mode tap' 2>/dev/null; then
  if guard="$(unshare -n bash -c 'ip tuntap add vflab0 mode tap && exec bash "$0" --inner true' \
        "$ROOT/scripts/engine-sandbox.sh" 2>&1)"; then
    echo "FAIL isolation: the sandbox ran although a second interface existed"; status=1
  elif [[ "$guard" == *"refusing to run"* ]]; then
    echo "ok   isolation: refuses a namespace with an interface besides lo"
  else
    echo "FAIL isolation: unexpected refusal message: $guard"; status=1
  fi
else
  echo "note isolation: no tap devices on this kernel, refusal not exercised"
fi

if [ "$jobs" -le 1 ]; then
  for spec in "${targets[@]}"; do run_one "$spec" || status=1; done
else
  pids=()
  for spec in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
    run_one "$spec" >"$out/${spec%%@*}.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  cat "$out"/*.log
fi

skipped=0
[ -f "$out/.skipped" ] && skipped=$(wc -l <"$out/.skipped")
verdict=$([ $status = 0 ] && echo PASS || echo FAIL)
[ "$skipped" = 0 ] || verdict="$verdict ($skipped CLI(s) not installed, skipped)"
echo "real-engine tier: run $(( $(date +%s) - t1 ))s, total $(( $(date +%s) - t0 ))s -> $verdict"
if [ "$created_out" = 1 ] && [ "$status" = 0 ]; then rm -rf "$out"; else echo "outputs kept in $out"; fi
exit $status
