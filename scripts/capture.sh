#!/usr/bin/env bash
# Records a CLI version's genuine output for every scenario into
# fixtures/<cli>/<version>/ (<case>.stdout.jsonl, <case>.stderr.txt, <case>.cmd.txt),
# the same layout as the shared captures. Paths are rewritten: HOME -> /home/dev,
# work dir -> /home/dev/project, TMPDIR -> /home/dev/tmp, engine dir -> /opt/engines.
#
#   scripts/capture.sh <cli> <version> [--cases a,b] [--with-requests] [--strict] [--out DIR]
#
#   --with-requests  also keep requests.jsonl (every request the CLI sent, keys
#                    redacted; 1-2 MB per CLI)
#   --strict         exit 1 if a case does not have the shape of the known captures
#                    (default: record anyway and report, since a new version may differ)
#   --out DIR        record there instead of fixtures/<cli>/<version>
#   --force          record even if the folder already holds captures (they are
#                    overwritten case by case; tests/it/engine_captures.rs then needs
#                    a row for every new case)
# The version is installed first if needed (scripts/install-engines.sh). Runs inside
# scripts/engine-sandbox.sh: loopback only, fake model server, fresh HOME.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "capture: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: capture.sh <cli> <version> [--cases a,b] [--with-requests] [--strict] [--out DIR]"
cli=$1 version=$2
shift 2
cases=() with_requests=0 strict=0 out="" force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cases) cases=(--cases "$2"); shift 2 ;;
    --with-requests) with_requests=1; shift ;;
    --strict) strict=1; shift ;;
    --out) out=$2; shift 2 ;;
    --force) force=1; shift ;;
    *) die "unknown option $1" ;;
  esac
done
[[ "$version" =~ ^[0-9A-Za-z.+-]+$ ]] || die "bad version '$version'"
[ -n "$out" ] || out="$ROOT/fixtures/$cli/$version"

if [ "$force" = 0 ] && compgen -G "$out/*.stdout.jsonl" >/dev/null; then
  die "$out already holds captures; pass --force to overwrite them, or --out DIR"
fi

"$ROOT/scripts/install-engines.sh" "$cli@$version"

home="$(mktemp -d /tmp/vf-capture.XXXXXX)"
trap 'rm -rf "$home"' EXIT
mkdir -p "$out"
rc=0
"$ROOT/scripts/engine-sandbox.sh" "$cli" --version "$version" --home "$home" \
  --log "$home/requests.raw.jsonl" -- \
  python3 "$ROOT/tests/real-engines/cases.py" "$cli" --out "$out" --sanitize "${cases[@]}" || rc=$?

if [ "$with_requests" = 1 ]; then
  engine_dir="${VF_ENGINES_DIR:-$ROOT/.engines}/$cli-$version"
  # Same rewriting as the outputs, longest path first.
  python3 - "$home/requests.raw.jsonl" "$out/requests.jsonl" "$home" "$engine_dir" <<'EOF'
import sys
src, dst, home, engine = sys.argv[1:5]
pairs = [(engine, "/opt/engines"), (home + "/project", "/home/dev/project"),
         (home + "/tmp", "/home/dev/tmp"), (home, "/home/dev")]
with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
    for line in f:
        for a, b in pairs:
            line = line.replace(a, b)
        g.write(line)
EOF
fi

# The capturing machine's own paths never stay in a capture: what the
# rewriting above missed (a path outside HOME, TMPDIR and the engine dir,
# e.g. under /tmp) fails the capture. /home/dev/tmp is TMPDIR's neutral name.
# claude's project folder spells the path with dashes (-tmp-x-project).
if leftover=$(grep -rlP '(?<![A-Za-z0-9_.-])/tmp/|/\.claude/projects/-tmp-' "$out"); then
  echo "capture: paths of this machine's /tmp left in: $leftover (rewrite them, see tests/real-engines/cases.py)" >&2
  exit 1
fi
echo "capture: $cli $version recorded in ${out#"$ROOT"/}"
if [ "$rc" != 0 ]; then
  echo "capture: some cases do not have the shape of the known captures (see FAIL lines above)" >&2
  [ "$strict" = 1 ] && exit 1
fi
exit 0
