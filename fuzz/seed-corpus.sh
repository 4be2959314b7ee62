#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the genuine captures in fixtures/ (and
# tests' sample plans/markers), so libFuzzer starts from real frames.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/projector corpus/marker corpus/plan
for f in ../fixtures/*/*/*.stdout.jsonl; do
    IFS=/ read -r _ _ cli version file <<<"$f"
    case="${file%.stdout.jsonl}"
    cmd="${f%.stdout.jsonl}.cmd.txt"
    transport=jsonl
    if grep -q -- '--output-format json ' "$cmd" && [[ $cli == claude || $cli == gemini ]]; then
        transport=json
    elif [[ $cli == copilot ]] && ! grep -q -- '--output-format' "$cmd"; then
        transport=text
    fi
    { printf '%s %s %s\n' "$cli" "$version" "$transport"; cat "$f"; } \
        >"corpus/projector/$cli-$version-$case"
done
cat >corpus/marker/valid <<'JSON'
{"format":1,"unit":"u","engine":"codex","engineVersion":"0.171.0","state":"running",
"engineSessionId":"01a229e6-b739-7472-9ac7-c8fe37200f9b","attempts":1,"cwd":"/home/dev",
"owner":{"supervisor":{"pid":1,"startTime":2,"bootId":"b","host":"h"},"cli":null,"pgid":3},
"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z","startedAt":null,
"finishedAt":null,"exitCode":null,"summary":{"confidence":1},"summaryError":null,"error":null,
"reason":null,"stdoutLog":"units/u/attempt-1.stdout.log","stderrLog":null}
JSON
cat >corpus/plan/valid <<'TOML'
[[unit]]
name = "docs"
engine = "codex"
prompt = "Write the docs."
depends_on = ["api"]
skip_permissions = true

[[unit]]
name = "api"
engine = "auto"
prompt_file = "p.md"
cwd = "sub"
attachments = []
stall_timeout = 30
TOML
echo "seeded: $(ls corpus/projector | wc -l) projector, 1 marker, 1 plan"
