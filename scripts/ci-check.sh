# Sourced by scripts/ci-cross.sh and scripts/ci-ship.sh (CI_NAME names the
# caller in the headers): `check NAME COMMAND...` runs COMMAND (a function)
# with `set -e` in a subshell, under a header; a failure is recorded in
# FAILED and CHECK_RC, not fatal. Never call it as a condition (`if check`,
# `check || x`): bash then ignores `set -e` inside COMMAND too, and a
# failing line would not stop it.
# shellcheck shell=bash

header() { printf '\n======== %s: %s ========\n' "$CI_NAME" "$*"; }

FAILED=()
CHECK_RC=0
check() {
  local name=$1 t0=$SECONDS
  shift
  header "$name"
  set +e
  (
    set -e
    "$@"
  )
  CHECK_RC=$?
  set -e
  if [ "$CHECK_RC" -eq 0 ]; then
    echo "-------- ok: $name ($((SECONDS - t0)) s)"
  else
    echo "-------- FAILED (exit $CHECK_RC): $name ($((SECONDS - t0)) s)"
    FAILED+=("$name")
  fi
}
