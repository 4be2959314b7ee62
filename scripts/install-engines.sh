#!/usr/bin/env bash
# Installs the pinned agent CLIs from the npm registry, one folder per CLI version:
#   .engines/<cli>-<version>/node_modules/.bin/<cli>
# Idempotent: a folder whose binary already answers --version with the pinned
# version is skipped. Fails loudly (exit 1) if the registry cannot be reached or
# a binary does not run.
#
# Usage: scripts/install-engines.sh [--current|--baseline|--all] [cli[@version] ...]
#   default: --all (current pins and baselines)
#   ENGINES_DIR overrides the target folder (default: <repo>/.engines)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/engines.env
. "$ROOT/scripts/engines.env"
ENGINES_DIR="${ENGINES_DIR:-$ROOT/.engines}"

die() { echo "install-engines: $*" >&2; exit 1; }

set_mode=all
wanted=()
for arg in "$@"; do
  case "$arg" in
    --current) set_mode=current ;;
    --baseline) set_mode=baseline ;;
    --all) set_mode=all ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) die "unknown option $arg" ;;
    *) wanted+=("$arg") ;;
  esac
done

if [ ${#wanted[@]} -eq 0 ]; then
  case "$set_mode" in
    current) wanted=("${ENGINES_CURRENT[@]}") ;;
    baseline) wanted=("${ENGINES_BASELINE[@]}") ;;
    all) wanted=("${ENGINES_CURRENT[@]}" "${ENGINES_BASELINE[@]}") ;;
  esac
fi

command -v npm >/dev/null || die "npm not found on PATH"
command -v node >/dev/null || die "node not found on PATH"
mkdir -p "$ENGINES_DIR"

# Runs the installed binary with a throwaway HOME so it never touches the
# caller's config, and checks the version it prints.
check_version() {
  local cli=$1 version=$2 dir=$3 out home
  home="$(mktemp -d)"
  out="$(cd "$home" && HOME="$home" TMPDIR="$home" timeout 60 "$dir/node_modules/.bin/$cli" --version 2>&1 </dev/null)" || {
    rm -rf "$home"; echo "$out"; return 1; }
  rm -rf "$home"
  case "$out" in
    *"$version"*) return 0 ;;
    *) echo "$out"; return 1 ;;
  esac
}

registry_checked=0
check_registry() {
  [ "$registry_checked" = 1 ] && return 0
  local reg
  reg="$(npm config get registry)"
  # npm ping talks to the configured registry; a failure here means no install can work.
  if ! timeout 45 npm ping --fetch-retries=1 --fetch-timeout=15000 >/dev/null 2>&1; then
    die "cannot reach the npm registry ($reg); the real-engine tier cannot run without it"
  fi
  registry_checked=1
}

status=0
for spec in "${wanted[@]}"; do
  cli="${spec%%@*}"
  if [ "$spec" = "$cli" ]; then
    version="$(engine_pinned_version "$cli")" || die "no pinned version for '$cli'"
  else
    version="${spec#*@}"
  fi
  pkg="$(engine_package "$cli")" || die "unknown cli '$cli'"
  dir="$ENGINES_DIR/$cli-$version"

  if [ -x "$dir/node_modules/.bin/$cli" ] && check_version "$cli" "$version" "$dir" >/dev/null; then
    echo "ok    $cli $version (already installed in ${dir#"$ROOT"/})"
    continue
  fi

  check_registry
  echo "get   $cli $version ($pkg@$version)"
  start=$(date +%s)
  # A half-finished folder from an earlier run is simply redone.
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '{"name":"engine-%s-%s","private":true}\n' "$cli" "$version" >"$dir/package.json"
  # Install scripts are skipped on purpose (npm 11 blocks them unless allow-listed,
  # and we want the same result everywhere); the two packages that need one get it
  # run explicitly below.
  if ! (cd "$dir" && npm install --no-audit --no-fund --no-save --ignore-scripts \
        --loglevel=error "$pkg@$version" >install.log 2>&1); then
    cat "$dir/install.log" >&2
    die "npm install $pkg@$version failed"
  fi
  case "$cli" in
    # The wrapper's bin is a placeholder until its postinstall copies the native
    # binary of this platform over it.
    claude) (cd "$dir/node_modules/@anthropic-ai/claude-code" && node install.cjs) >>"$dir/install.log" 2>&1 \
              || { cat "$dir/install.log" >&2; die "claude postinstall failed"; } ;;
    opencode) (cd "$dir/node_modules/opencode-ai" && node ./postinstall.mjs) >>"$dir/install.log" 2>&1 \
              || { cat "$dir/install.log" >&2; die "opencode postinstall failed"; } ;;
  esac
  if ! out="$(check_version "$cli" "$version" "$dir")"; then
    echo "$out" >&2
    die "$cli $version installed but '$cli --version' does not report $version"
  fi
  echo "done  $cli $version in $(( $(date +%s) - start ))s"
done
exit $status
