#!/usr/bin/env bash
# vf on the targets other than glibc Linux (issue 24), as CI (.ci/run) checks
# it: on a fresh Debian machine, as root. Idempotent: targets, packages and
# the wine prefix are only added when missing.
#
#   scripts/ci-cross.sh [clippy|musl|wine|all]     (default: all)
#
# clippy  cargo clippy --all-targets -D warnings for aarch64-apple-darwin,
#         x86_64-apple-darwin and x86_64-pc-windows-gnu
# musl    a static build for x86_64-unknown-linux-musl (the dev profile, or
#         MUSL_PROFILE=release: fat LTO takes 6-14 min on 2 cores); file and ldd
#         must call it static; then it runs: vf --version, a --dry-run
#         dispatch, a dispatch of the fake engine, vf status, vf replay
# wine    the Windows unit tests (cargo test --lib), cross-built with mingw-w64
#         and run under wine; CI_CROSS_WINE_TESTS="a b" adds the integration
#         tests a and b (cargo test --test a --test b)
#
# Every check runs even when an earlier one failed (a failed build skips what
# needs its output); the end lists the failed checks, and the exit status is 1
# when there is one. Set-up failures (rustup, apt, the wine prefix) stop at once.
#
# Environment: WINEPREFIX (default $HOME/.wine). wine runs headless
# (WINEDEBUG=-all, no DISPLAY). Nothing is written to .cargo/config.toml: the
# Windows linker and runner are CARGO_TARGET_X86_64_PC_WINDOWS_GNU_{LINKER,RUNNER}.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR=never DEBIAN_FRONTEND=noninteractive

APPLE_TARGETS=(aarch64-apple-darwin x86_64-apple-darwin)
WINDOWS=x86_64-pc-windows-gnu
MUSL=x86_64-unknown-linux-musl
MUSL_PROFILE=${MUSL_PROFILE:-dev}
MUSL_DIR=$([ "$MUSL_PROFILE" = dev ] && echo debug || echo "$MUSL_PROFILE")
OUT="$ROOT/target/ci-cross"

usage() { echo "usage: scripts/ci-cross.sh [clippy|musl|wine|all]" >&2; exit 2; }
[ $# -le 1 ] || usage
SECTION=${1:-all}
case $SECTION in clippy | musl | wine | all) ;; *) usage ;; esac

CI_NAME=ci-cross
# shellcheck source=scripts/ci-check.sh
. "$ROOT/scripts/ci-check.sh"

# --- set-up ------------------------------------------------------------------

need_targets() {
  local installed missing=() t
  installed=$(rustup target list --installed)
  for t in "$@"; do
    grep -qx "$t" <<<"$installed" || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    header "rustup target add ${missing[*]}"
    rustup target add "${missing[@]}"
  fi
}

# (Output captured first: `cmd | grep -q` fails under pipefail when grep
# stops reading early and cmd gets SIGPIPE.)
installed() {
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [ "$status" = "install ok installed" ]
}
known_to_apt() {
  local policy
  policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
  grep -Eq 'Candidate: [^(]' <<<"$policy"
}

# need_packages PKG...: apt-get installs the missing ones. The package lists are
# fetched first only when apt does not know one of them, or when the install
# fails on stale lists.
need_packages() {
  local missing=() p update=0
  for p in "$@"; do
    installed "$p" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  header "apt-get install ${missing[*]}"
  for p in "${missing[@]}"; do
    known_to_apt "$p" || update=1
  done
  [ "$update" = 0 ] || apt-get update
  apt-get install -y "${missing[@]}" || { apt-get update && apt-get install -y "${missing[@]}"; }
}

# --- clippy --------------------------------------------------------------------

clippy_target() {
  cargo clippy --all-targets --locked --target "$1" -- -D warnings
}

section_clippy() {
  # mingw-w64 compiles the C of dependencies (build scripts) for Windows.
  need_packages gcc-mingw-w64-x86-64
  need_targets "${APPLE_TARGETS[@]}" "$WINDOWS"
  local t
  for t in "${APPLE_TARGETS[@]}" "$WINDOWS"; do
    check "clippy --target $t" clippy_target "$t"
  done
}

# --- musl ----------------------------------------------------------------------

musl_build() {
  cargo build --profile "$MUSL_PROFILE" --locked --target "$MUSL"
}

# The static binary runs: its version, a dry run, a dispatch of the fake
# engine (bash, replaying a codex capture), status and replay of that unit.
musl_run() {
  local vf="$ROOT/target/$MUSL/$MUSL_DIR/vf" want got
  # Not local: the EXIT trap (this check's subshell ends) still needs it.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "+ file $vf"
  file "$vf" | tee "$tmp/file.txt"
  grep -Eq 'statically linked|static-pie linked' "$tmp/file.txt"
  echo "+ ldd $vf"
  # ldd fails on a static binary; what it says is the check.
  ldd "$vf" >"$tmp/ldd.txt" 2>&1 || true
  cat "$tmp/ldd.txt"
  grep -Eq 'not a dynamic executable|statically linked' "$tmp/ldd.txt"

  want="vf $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
  got=$("$vf" --version)
  echo "+ vf --version: $got"
  [ "$got" = "$want" ] || { echo "expected: $want" >&2; return 1; }

  mkdir "$tmp/work"
  cd "$tmp/work"
  # None of the caller's VF_* or FAKE_* settings.
  unset "${!VF_@}" "${!FAKE_@}"
  export VF_STATE_DIR="$tmp/work/state" XDG_CACHE_HOME="$tmp/cache"
  echo "+ vf dispatch --engine claude --prompt ... --dry-run --json"
  "$vf" dispatch --engine claude --prompt "ci-cross dry run" --dry-run --json | tee "$tmp/dry.json"
  python3 - "$tmp/dry.json" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
assert v["engine"] == "claude", v
assert v["program"] == "claude", v
assert v["stdin"] == "ci-cross dry run", v
assert "-p" in v["args"] and "stream-json" in v["args"], v
EOF
  [ ! -e "$VF_STATE_DIR" ] || { echo "the dry run wrote $VF_STATE_DIR" >&2; return 1; }

  local capture="$ROOT/fixtures/codex/0.171.0/b_tool.stdout.jsonl"
  echo "+ vf dispatch --engine codex (the fake engine) --unit ci --json"
  FAKE_STDOUT="$capture" "$vf" dispatch --engine codex --engine-bin "$ROOT/tests/fake/fake-engine" \
    --unit ci --prompt "ci-cross dispatch" --json >"$tmp/result.json"
  echo "+ vf status --json"
  "$vf" status --json >"$tmp/status.json"
  echo "+ vf replay units/ci/attempt-1.stdout.log --cli codex --output jsonl"
  "$vf" replay "$VF_STATE_DIR/units/ci/attempt-1.stdout.log" --cli codex --output jsonl >"$tmp/replay.jsonl"
  python3 - "$tmp" "$capture" <<'EOF'
import json, sys
tmp, capture = sys.argv[1], sys.argv[2]
session = json.loads(open(capture).readline())["thread_id"]
r = json.load(open(f"{tmp}/result.json"))
assert (r["unit"], r["state"], r["sessionId"]) == ("ci", "done", session), r
s = json.load(open(f"{tmp}/status.json"))
assert [(m["unit"], m["state"]) for m in s] == [("ci", "done")], s
events = [json.loads(l) for l in open(f"{tmp}/replay.jsonl")]
assert events and events[0].get("sessionId") == session, events[:2]
print(f"dispatch done (session {session}), status lists it, replay: {len(events)} events")
EOF
}

section_musl() {
  need_packages musl-tools file python3
  need_targets "$MUSL"
  check "musl: cargo build --profile $MUSL_PROFILE --target $MUSL" musl_build
  if [ "$CHECK_RC" -eq 0 ]; then
    check "musl: the static binary runs" musl_run
  else
    echo "(musl: the run checks are skipped: no binary)"
  fi
}

# --- wine ----------------------------------------------------------------------

export WINEPREFIX=${WINEPREFIX:-$HOME/.wine} WINEDEBUG=-all
SYSTEM32="$WINEPREFIX/drive_c/windows/system32"
# A string in our bcryptprimitives.dll (scripts/wine/bcryptprimitives.c).
SHIM_MARKER="vf-ci bcryptprimitives stand-in"

# The prefix, made once (headless: no DISPLAY; no Mono or Gecko offered).
wine_prefix() {
  if [ ! -f "$WINEPREFIX/system.reg" ]; then
    header "wine prefix $WINEPREFIX"
    local t0=$SECONDS
    env -u DISPLAY WINEDLLOVERRIDES="mscoree,mshtml=" wineboot -i
    wineserver -w
    echo "made in $((SECONDS - t0)) s"
  fi
}

# Wine 8 has no bcryptprimitives.dll, which Rust's std imports (ProcessPrng):
# without it every test binary fails to start (exit 53). Ours
# (scripts/wine/bcryptprimitives.c) goes into system32, unless wine brings its own.
wine_bcryptprimitives() {
  local dll="$OUT/wine/bcryptprimitives.dll" dest="$SYSTEM32/bcryptprimitives.dll"
  mkdir -p "$OUT/wine"
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -Werror -s -Wl,--no-insert-timestamp \
    -o "$dll" scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
  if [ -e "$dest" ] && ! grep -aq "$SHIM_MARKER" "$dest"; then
    echo "wine has its own bcryptprimitives.dll: kept"
  elif ! cmp -s "$dll" "$dest"; then
    cp "$dll" "$dest"
    echo "installed $dest"
  else
    echo "up to date: $dest"
  fi
}

# wine runs a Windows program headless and gives back its output.
wine_smoke() {
  local got
  got=$(env -u DISPLAY wine cmd.exe /d /c echo wine-ok | tr -d '\r')
  echo "wine cmd.exe: $got"
  [ "$got" = wine-ok ]
}

wine_tests() {
  local tests=(--lib) t
  for t in ${CI_CROSS_WINE_TESTS:-}; do
    tests+=(--test "$t")
  done
  env -u DISPLAY \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine \
    cargo test --locked --target "$WINDOWS" "${tests[@]}"
}

section_wine() {
  need_packages gcc-mingw-w64-x86-64 wine
  need_targets "$WINDOWS"
  wine_prefix
  header "wine: bcryptprimitives.dll"
  wine_bcryptprimitives
  header "wine: smoke"
  wine_smoke
  check "wine: cargo test --target $WINDOWS --lib${CI_CROSS_WINE_TESTS:+ (and ${CI_CROSS_WINE_TESTS})}" wine_tests
}

# -------------------------------------------------------------------------------

case $SECTION in
  clippy) section_clippy ;;
  musl) section_musl ;;
  wine) section_wine ;;
  all)
    section_clippy
    section_musl
    section_wine
    ;;
esac

header "summary"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${FAILED[@]}"
  exit 1
fi
echo "all checks passed"
