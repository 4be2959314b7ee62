#!/bin/sh
# Saves an engine CLI's help texts under fixtures/<cli>/<version>/help/, with
# machine paths rewritten (throwaway HOME -> /home/dev, install dir -> /opt/engines).
# Usage: scripts/dump-help.sh <cli> <bin-dir> [repo-root]
# `--help`/`--version` work offline; copilot is told so with COPILOT_OFFLINE.
set -eu
cli=$1; bindir=$2; root=${3:-$(pwd)}
home=$(mktemp -d); mkdir -p "$home/tmp"
export HOME="$home" TMPDIR="$home/tmp" COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false NO_COLOR=1
bin="$bindir/$cli"
run() { timeout 120 "$bin" "$@" 2>&1 </dev/null || true; }
ver=$(run --version | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
out="$root/fixtures/$cli/$ver/help"; mkdir -p "$out"
clean() { sed -e "s#$home#/home/dev#g" -e "s#$bindir#/opt/engines/bin#g"; }
save() { name=$1; shift; run "$@" | clean > "$out/$name.txt"; }
save version --version
case $cli in
  claude|gemini|copilot) save help --help ;;
  codex) save help --help; save exec exec --help; save exec-resume exec resume --help ;;
  opencode) save help --help; save run run --help ;;
esac
rm -rf "$home"
echo "$out"
