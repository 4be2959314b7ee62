#!/usr/bin/env bash
# Runs a command next to a real agent CLI, inside a network namespace that has
# ONLY loopback, with the fake model server listening in that same namespace.
#
#   scripts/engine-sandbox.sh <cli|all> [options] -- <command...>
#
#   <cli>   codex | claude | gemini | opencode | copilot, or `all` (every CLI set up
#           in one HOME, the server listening on every CLI's port)
# Options (each also settable by the env var shown):
#   --version V     engine version (VF_ENGINE_VERSION; default: the pin in scripts/engines.env;
#                   only with a single cli)
#   --home DIR      HOME to use and keep (VF_SANDBOX_HOME; default: a fresh temp dir,
#                   removed afterwards). Reuse it to resume a session in a later call.
#   --workdir DIR   cwd of the command (VF_SANDBOX_WORKDIR; default: $HOME/project)
#   --log FILE      fake server request log (VF_FAKE_LOG; default: $HOME/fake-model.jsonl)
#   --timeout S     kill the command after S seconds (VF_SANDBOX_TIMEOUT; default 300)
#   --keep          keep a temp HOME (VF_SANDBOX_KEEP=1); its path is printed on stderr
#   VF_SANDBOX_CACHE=DIR  share copilot's unpacked package (~235 MB) between HOMEs
#
# Needs root (unshare -n). Refuses to run if any interface other than lo exists in
# the namespace. /etc/resolv.conf is bind-mounted (privately) to point at a DNS sink
# in the fake server that answers NXDOMAIN and logs every name asked for
# (`dns <name>` entries in the log; VF_SANDBOX_DNS=0 turns this off). The command gets a clean environment: HOME, TMPDIR=$HOME/tmp,
# XDG_* under HOME, PATH with the engine's bin dir first, the CLI's own variables
# (API base URL, fake key, every telemetry/update switch off, lowered retries),
# and these for the command's own use:
#   VF_SANDBOX=1 VF_SANDBOX_HOME VF_FAKE_LOG VF_FAKE_PORT (single cli) VF_FAKE_URL
#   VF_ENGINE_BIN_<cli> VF_ENGINE_VERSION_<cli> VF_FAKE_PORT_<cli>
# Passed through from the caller: VF_* variables, RUST_LOG, RUST_BACKTRACE, and the
# names listed in VF_SANDBOX_PASS (space separated).
# Exit status: the command's (124 on timeout); 2 for a sandbox setup failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/engines.env
. "$ROOT/scripts/engines.env"
SERVER="$ROOT/tests/support/fake_model_server.py"
CONFIGS="$ROOT/tests/support/engine-configs"
ALL_CLIS=(codex claude gemini opencode copilot)

die() { echo "engine-sandbox: $*" >&2; exit 2; }

# Lowered retry counts, so that a persistent error ends in seconds. claude and codex
# keep one or two quick retries (their retry frames still show); gemini backs off
# 5 s and more between attempts, so it gets a single attempt (errors then take ~3 s
# instead of ~19 s). opencode and copilot have no retry setting: the fake server's
# `retry-after-ms: 0` keeps opencode quick, copilot waits 1 s per retry (5 retries).
: "${VF_CLAUDE_MAX_RETRIES:=2}"
: "${VF_CODEX_REQUEST_RETRIES:=1}"
: "${VF_CODEX_STREAM_RETRIES:=1}"
: "${VF_GEMINI_MAX_ATTEMPTS:=1}"

# ---------------------------------------------------------------- per-CLI setup

# Prints the CLI's environment, one NAME=value per line.
engine_env() {
  local cli=$1 port=$2
  case "$cli" in
    codex)
      echo "LAB_API_KEY=lab-fake-key"
      echo "CODEX_HOME=$HOME/.codex" ;;
    claude)
      echo "ANTHROPIC_BASE_URL=http://127.0.0.1:$port"
      echo "ANTHROPIC_API_KEY=lab-fake-key"
      echo "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
      echo "DISABLE_AUTOUPDATER=1"
      echo "DISABLE_TELEMETRY=1"
      echo "DISABLE_ERROR_REPORTING=1"
      echo "DISABLE_BUG_COMMAND=1"
      echo "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1"
      echo "CLAUDE_CODE_MAX_RETRIES=$VF_CLAUDE_MAX_RETRIES" ;;
    gemini)
      echo "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$port"
      echo "GEMINI_API_KEY=lab-fake-key" ;;
    opencode)
      echo "OPENCODE_DISABLE_AUTOUPDATE=1"
      echo "OPENCODE_DISABLE_MODELS_FETCH=1"
      echo "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"
      echo "OPENCODE_DISABLE_SHARE=1"
      echo "OPENCODE_DISABLE_LSP_DOWNLOAD=1"
      echo "OPENCODE_DISABLE_CLAUDE_CODE=1"
      echo "OPENCODE_DISABLE_EXTERNAL_SKILLS=1" ;;
    copilot)
      echo "COPILOT_OFFLINE=true"
      echo "COPILOT_AUTO_UPDATE=false"
      echo "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:$port/v1"
      echo "COPILOT_PROVIDER_API_KEY=lab-fake-key"
      echo "COPILOT_MODEL=lab-model" ;;
  esac
}

# Writes the CLI's config files under $HOME.
engine_config() {
  local cli=$1 port=$2
  case "$cli" in
    codex)
      mkdir -p "$HOME/.codex"
      sed -e "s/@PORT@/$port/" \
          -e "s/@CODEX_REQUEST_RETRIES@/$VF_CODEX_REQUEST_RETRIES/" \
          -e "s/@CODEX_STREAM_RETRIES@/$VF_CODEX_STREAM_RETRIES/" \
          "$CONFIGS/codex/config.toml" >"$HOME/.codex/config.toml" ;;
    gemini)
      mkdir -p "$HOME/.gemini"
      sed -e "s/@GEMINI_MAX_ATTEMPTS@/$VF_GEMINI_MAX_ATTEMPTS/" \
          "$CONFIGS/gemini/settings.json" >"$HOME/.gemini/settings.json" ;;
    opencode)
      local dir="$HOME/.config/opencode"
      mkdir -p "$dir/node_modules"
      sed -e "s/@PORT@/$port/" "$CONFIGS/opencode/opencode.json" >"$dir/opencode.json"
      # Without a lock file naming @opencode-ai/plugin (and a node_modules dir),
      # every run starts a detached `npm install` against registry.npmjs.org.
      cp "$CONFIGS/opencode/package-lock.json" "$dir/package-lock.json" ;;
    copilot)
      # Its first run in a HOME unpacks ~235 MB into ~/.cache/copilot/pkg; with a
      # shared cache that happens once (warm it with one run before running many
      # sandboxes at the same time).
      if [ -n "${VF_SANDBOX_CACHE:-}" ] && [ ! -e "$HOME/.cache/copilot/pkg" ]; then
        mkdir -p "$VF_SANDBOX_CACHE/copilot-pkg" "$HOME/.cache/copilot"
        ln -s "$VF_SANDBOX_CACHE/copilot-pkg" "$HOME/.cache/copilot/pkg"
      fi ;;
  esac
}

# ---------------------------------------------------------------- inner part

if [ "${1:-}" = "--inner" ]; then
  shift
  # Runs as PID 1 of fresh pid + net namespaces: everything it leaves behind
  # (detached helpers of the CLIs, the server) dies with it.
  ip link set lo up || die "cannot bring lo up"
  others="$(awk -F: 'NR > 2 { gsub(/ /, "", $1); if ($1 != "lo") print $1 }' /proc/net/dev)"
  [ -z "$others" ] || die "refusing to run: network interfaces other than lo exist: $others"

  export HOME="$SB_HOME"
  mkdir -p "$HOME/tmp" "$HOME/project" "$HOME/.config" "$HOME/.local/share" \
           "$HOME/.cache" "$HOME/.local/state"

  # Name lookups go to the fake server's DNS sink (NXDOMAIN, logged), so any
  # attempt to reach a host shows in the log as a `dns <name>` entry. Only in
  # the private mount namespace made by the outer part (we are its pid 1).
  dns_args=()
  if [ "${VF_SANDBOX_DNS:-1}" = 1 ] && [ "$$" = 1 ] && [ "${SB_PRIVATE_MOUNTS:-}" = 1 ] \
     && [ -e /etc/resolv.conf ]; then
    printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$HOME/tmp/resolv.conf"
    mount --bind "$HOME/tmp/resolv.conf" /etc/resolv.conf || die "cannot point /etc/resolv.conf at the DNS sink"
    dns_args=(--dns-port 53)
  fi
  read -r -a clis <<<"$SB_CLIS"
  ports=()
  for cli in "${clis[@]}"; do
    port="$(engine_port "$cli")"
    var="VF_FAKE_PORT_$cli"; [ -n "${!var:-}" ] && port="${!var}"
    ports+=("$port")
    engine_config "$cli" "$port"
  done

  ready="$HOME/tmp/.fake-model-ready"
  rm -f "$ready"
  server_args=()
  for port in "${ports[@]}"; do server_args+=(--port "$port"); done
  "$SB_PYTHON" "$SERVER" "${server_args[@]}" "${dns_args[@]}" --log "$SB_LOG" --ready-file "$ready" \
    2>>"$HOME/tmp/fake-model.stderr" &
  server_pid=$!
  for _ in $(seq 1 100); do
    [ -s "$ready" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$HOME/tmp/fake-model.stderr" >&2; die "fake model server failed to start"; }
    sleep 0.05
  done
  [ -s "$ready" ] || die "fake model server did not become ready"

  envs=(
    "HOME=$HOME" "TMPDIR=$HOME/tmp" "USER=${SB_USER}" "LOGNAME=${SB_USER}" "LANG=C.UTF-8"
    "XDG_CONFIG_HOME=$HOME/.config" "XDG_DATA_HOME=$HOME/.local/share"
    "XDG_CACHE_HOME=$HOME/.cache" "XDG_STATE_HOME=$HOME/.local/state"
    "PATH=$SB_PATH" "VF_SANDBOX=1" "VF_SANDBOX_HOME=$HOME" "VF_FAKE_LOG=$SB_LOG"
  )
  for i in "${!clis[@]}"; do
    cli="${clis[$i]}"
    while IFS= read -r kv; do envs+=("$kv"); done < <(engine_env "$cli" "${ports[$i]}")
    envs+=("VF_FAKE_PORT_$cli=${ports[$i]}")
  done
  if [ "${#clis[@]}" = 1 ]; then
    envs+=("VF_FAKE_PORT=${ports[0]}" "VF_FAKE_URL=http://127.0.0.1:${ports[0]}")
  fi
  # Caller's pass-through variables and the engine paths (prepared outside).
  while IFS= read -r -d '' kv; do envs+=("$kv"); done < "$SB_PASS_FILE"

  workdir="${SB_WORKDIR:-$HOME/project}"
  mkdir -p "$workdir"
  set +e
  # --foreground: the command stays in our process group, so it can use a terminal
  # it is given; whatever it leaves behind dies with the pid namespace anyway.
  (cd "$workdir" && exec env -i "${envs[@]}" timeout --foreground --kill-after=5 "$SB_TIMEOUT" "$@")
  rc=$?
  set -e
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  exit "$rc"
fi

# ---------------------------------------------------------------- outer part

[ $# -ge 1 ] || die "usage: engine-sandbox.sh <cli|all> [options] -- <command...>"
target=$1; shift
version="${VF_ENGINE_VERSION:-}"
home="${VF_SANDBOX_HOME:-}"
workdir="${VF_SANDBOX_WORKDIR:-}"
log="${VF_FAKE_LOG:-}"
timeout_s="${VF_SANDBOX_TIMEOUT:-300}"
keep="${VF_SANDBOX_KEEP:-0}"
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version=$2; shift 2 ;;
    --home) home=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command goes after --)" ;;
  esac
done
[ $# -ge 1 ] || die "no command given after --"

if [ "$target" = all ]; then
  clis=("${ALL_CLIS[@]}")
  [ -z "$version" ] || die "--version needs a single cli"
else
  engine_port "$target" >/dev/null || die "unknown cli '$target' (one of: ${ALL_CLIS[*]} all)"
  clis=("$target")
fi

[ "$(id -u)" = 0 ] || die "needs root (unshare -n)"
command -v unshare >/dev/null || die "unshare not found"
command -v ip >/dev/null || die "ip (iproute2) not found"
SB_PYTHON="$(command -v python3.11 || command -v python3)" || die "python3 not found"
export SB_PYTHON

engines_dir="${VF_ENGINES_DIR:-$ROOT/.engines}"
pass_file="$(mktemp)"
path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
node_dir="$(dirname "$(command -v node)")" || die "node not found"
path="$node_dir:$path"
for cli in "${clis[@]}"; do
  v="${version:-$(engine_pinned_version "$cli" || true)}"
  [ -n "$v" ] || die "no pinned version for $cli: pass --version"
  bin="$engines_dir/$cli-$v/node_modules/.bin"
  [ -x "$bin/$cli" ] || die "$cli $v is not installed in $engines_dir (run scripts/install-engines.sh $cli@$v)"
  path="$bin:$path"
  printf '%s\0' "VF_ENGINE_BIN_$cli=$bin/$cli" "VF_ENGINE_VERSION_$cli=$v" >>"$pass_file"
done
while IFS= read -r name; do
  printf '%s\0' "$name=${!name}" >>"$pass_file"
done < <(compgen -e | grep -E '^(VF_|RUST_LOG$|RUST_BACKTRACE$)' \
         | grep -vE '^VF_(SANDBOX_HOME|SANDBOX_WORKDIR|FAKE_LOG|ENGINE_VERSION|SANDBOX_KEEP|SANDBOX_TIMEOUT|SANDBOX_CACHE|SANDBOX)$' || true)
for name in ${VF_SANDBOX_PASS:-}; do
  [ -n "${!name+x}" ] && printf '%s\0' "$name=${!name}" >>"$pass_file"
done

created_home=0
if [ -z "$home" ]; then
  home="$(mktemp -d /tmp/vf-sandbox.XXXXXX)"
  created_home=1
fi
mkdir -p "$home"
home="$(cd "$home" && pwd)"
[ -n "$log" ] || log="$home/fake-model.jsonl"
mkdir -p "$(dirname "$log")"

cleanup() {
  rm -f "$pass_file"
  if [ "$created_home" = 1 ]; then
    if [ "$keep" = 1 ]; then echo "engine-sandbox: kept HOME $home" >&2; else rm -rf "$home"; fi
  fi
}
trap cleanup EXIT

export SB_HOME="$home" SB_LOG="$log" SB_WORKDIR="$workdir" SB_TIMEOUT="$timeout_s"
export SB_PATH="$path" SB_PASS_FILE="$pass_file" SB_CLIS="${clis[*]}" SB_USER="$(id -un)"
export SB_PRIVATE_MOUNTS=1
# --mount-proc implies a private mount namespace (propagation private): the
# resolv.conf bind mount inside never reaches the host. unshare runs in the
# background so that a TERM/INT sent to this script reaches it; --kill-child then
# takes the whole pid namespace down. The explicit <&0 keeps the caller's stdin
# (a background job would otherwise read /dev/null).
unshare --net --pid --fork --mount-proc --propagation private --kill-child -- \
  bash "$0" --inner "$@" <&0 &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
set +e
while :; do
  wait "$child"
  rc=$?
  # wait returns early (status > 128) when a trapped signal arrives.
  kill -0 "$child" 2>/dev/null || break
done
set -e
exit "$rc"
