#!/usr/bin/env bash
# Records genuine ACP (Agent Client Protocol) sessions of a real CLI into
# fixtures/acp/<cli>/<version>/: <case>.acp.jsonl (every JSON-RPC message of both
# directions in wire order, one a line, {"dir":"out"|"in","msg":{...}}),
# <case>.stderr.txt and <case>.cmd.txt. Same sandbox and path rewriting as
# scripts/capture.sh (loopback only, fake model server, fresh HOME); the client is
# tests/real-engines/acp_capture.py (docs/ACP.md, "Captures").
#
#   scripts/capture-acp.sh <gemini|opencode> <version> [--cases a,b] [--out DIR] [--force]
#
# Cases: a_json (plain answer with a fenced json summary), b_tool (a shell tool,
# permission allowed), b_write_rejected (a shell tool that would write a file,
# permission rejected), c_resume (session/load of a_json's session, a second
# prompt), d_error500 (the model API fails), e_cancel (session/cancel right after
# the prompt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "capture-acp: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: capture-acp.sh <gemini|opencode> <version> [--cases a,b] [--out DIR] [--force]"
cli=$1 version=$2
shift 2
cases=() out="" force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cases) cases=(--cases "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --force) force=1; shift ;;
    *) die "unknown option $1" ;;
  esac
done
[[ "$version" =~ ^[0-9A-Za-z.+-]+$ ]] || die "bad version '$version'"
[ -n "$out" ] || out="$ROOT/fixtures/acp/$cli/$version"
if [ "$force" = 0 ] && compgen -G "$out/*.acp.jsonl" >/dev/null; then
  die "$out already holds captures; pass --force to overwrite them, or --out DIR"
fi

case "$cli" in
  gemini) agent=(gemini --acp) extra=() ;;
  # The sandbox's opencode config allows bash and edit outright; an agent that
  # allows never asks, so the captures make opencode ask (the ACP client decides).
  opencode) agent=(opencode acp) extra=(--env 'OPENCODE_PERMISSION={"bash":"ask","edit":"ask","webfetch":"deny"}') ;;
  *) die "no ACP command known for '$cli' (gemini, opencode)" ;;
esac

"$ROOT/scripts/install-engines.sh" "$cli@$version"
mkdir -p "$out"
"$ROOT/scripts/engine-sandbox.sh" "$cli" --version "$version" --timeout 900 -- \
  python3 "$ROOT/tests/real-engines/acp_capture.py" --out "$out" "${extra[@]}" "${cases[@]}" -- "${agent[@]}"
# The capturing machine's own paths never stay in a capture: what the
# rewriting above missed (a path outside HOME, TMPDIR and the engine dir,
# e.g. under /tmp) fails the capture. /home/dev/tmp is TMPDIR's neutral name.
if leftover=$(grep -rlP '(?<![A-Za-z0-9_.-])/tmp/' "$out"); then
  echo "capture-acp: paths of this machine's /tmp left in: $leftover (rewrite them, see tests/real-engines/cases.py)" >&2
  exit 1
fi
echo "capture-acp: $cli $version recorded in ${out#"$ROOT"/}"
