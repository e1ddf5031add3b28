#!/usr/bin/env bash
# read_note over HTTP at 16 concurrent on a large vault: imports the vault into a database of
# its own (skipped with REUSE=1 when a previous run left it), serves it, and drives
# tools/call read_note with otc-load.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/read-bench.sh /tmp/v100k "Welcome--c500.md"      # a path in the vault
#   SPREAD=100000 loadtests/read-bench.sh /tmp/v100k x          # then also: each call a different note
#                                                              # (up to SPREAD of them), mostly cache misses
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: read-bench.sh VAULT_DIR NOTE_PATH}
note=${2:?usage: read-bench.sh VAULT_DIR NOTE_PATH}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_read_bench"
export OTC__REDIS__KEY_PREFIX="read-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-read-bench-objects
export OTC__SERVER__LISTEN=127.0.0.1:8098 RUST_LOG=warn
source loadtests/limits.sh
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_read_bench" -c "CREATE DATABASE otc_read_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-read-bench-token
fi
token=$(cat /var/tmp/otc-read-bench-token)
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8098/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  OTC_URL=http://127.0.0.1:8098 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
fi
body=$(python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":{"vault":"bench","path":sys.argv[1],"response_format":"concise"}}}))' "$note")
curl -sf http://127.0.0.1:8098/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -d "$body" | head -c 300; echo
echo "== one note, over and over: $note"
"$target/otc-load" --url http://127.0.0.1:8098/mcp --token "$token" --concurrency 16 --duration 10 --warmup 2 \
  --header "Accept: application/json, text/event-stream" --json "$body"
# The same call as an MCP 2026-07-28 request: its version, client and capabilities in _meta,
# the routing headers mirrored from the body (the per-call overhead of the new era).
modern=$(python3 -c 'import json,sys; b=json.loads(sys.argv[1]); b["params"]["_meta"]={"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"otc-load","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}; print(json.dumps(b))' "$body")
echo "== the same note as 2026-07-28 requests"
"$target/otc-load" --url http://127.0.0.1:8098/mcp --token "$token" --concurrency 16 --duration 10 --warmup 2 \
  --header "Accept: application/json, text/event-stream" --header "MCP-Protocol-Version: 2026-07-28" \
  --header "Mcp-Method: tools/call" --header "Mcp-Name: read_note" --json "$modern"
if [ -n "${SPREAD:-}" ]; then
  bodies=$(mktemp)
  (cd "$vault_dir" && find . -name '*.md' -not -path './.obsidian/*' | sed 's|^\./||' | sort | head -n "$SPREAD") |
    python3 -c 'import json,sys
for p in sys.stdin.read().splitlines():
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":{"vault":"bench","path":p,"response_format":"concise"}}}))' > "$bodies"
  echo "== $(wc -l < "$bodies") different notes, in turn"
  "$target/otc-load" --url http://127.0.0.1:8098/mcp --token "$token" --concurrency 16 --duration 10 --warmup 2 \
    --header "Accept: application/json, text/event-stream" --bodies "$bodies"
  rm -f "$bodies"
fi
