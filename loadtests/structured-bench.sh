#!/usr/bin/env bash
# Latency of the structured-format tools on a large vault (issue 18): list_tasks, tasks_filter,
# search_dql (LIST, TABLE with WHERE, TASK) and query_base; and of the /mcp/compat/obsidian
# surface's reads beside the catalogue tools they call (get_note, search_notes). Imports the vault into a database of
# its own (skipped with REUSE=1 when a previous run left it), serves it, and drives each call with
# otc-load, one at a time, reporting p50/p95.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/structured-bench.sh /tmp/v100k
#   REUSE=1 DURATION=5 loadtests/structured-bench.sh /tmp/v100k
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: structured-bench.sh VAULT_DIR}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
duration=${DURATION:-5}

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_structured_bench"
export OTC__REDIS__KEY_PREFIX="structured-bench:" OTC__OBJECT_STORE__KIND=local
export OTC__OBJECT_STORE__PATH=/var/tmp/otc-structured-bench-objects OTC__EMBEDDINGS__PROVIDER=none
export OTC__SERVER__LISTEN=127.0.0.1:8096 RUST_LOG=${RUST_LOG:-warn} OTC__TOOLS__CONFIRM_DESTRUCTIVE=false
source loadtests/limits.sh
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_structured_bench" -c "CREATE DATABASE otc_structured_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-structured-bench-token
else
  "$bin" migrate >/dev/null
fi
token=$(cat /var/tmp/otc-structured-bench-token)
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8096/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  start=$(date +%s.%N)
  OTC_URL=http://127.0.0.1:8096 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
  echo "import + inline indexing: $(echo "$(date +%s.%N) - $start" | bc) s"
  # A base over the whole vault, for query_base.
  body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_base","arguments":{"vault":"bench","path":"Bench.base","base":{"filters":"file.hasTag(\"project\")","views":[{"type":"table","name":"Projects","order":["file.name","status"],"sort":[{"property":"file.name","direction":"ASC"}],"limit":50}]}}}}'
  curl -sf http://127.0.0.1:8096/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$body" >/dev/null
fi

body() { python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":sys.argv[1],"arguments":json.loads(sys.argv[2])}}))' "$1" "$2"; }
run() {
  local b; b=$(body "$1" "$2")
  local path=${MCP_PATH:-/mcp}
  local first
  first=$(curl -sf "http://127.0.0.1:8096$path" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$b")
  # The answer through stdin: a page of search hits is longer than an argument may be.
  python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; s=r.get("structuredContent",{})
assert not r.get("isError"), r
s = s.get("result", s)
print("   total", s.get("total", s.get("totalCount", s.get("total_count", "?"))))' <<< "$first"
  "$target/otc-load" --url "http://127.0.0.1:8096$path" --token "$token" --concurrency 1 --duration "$duration" \
    --warmup 1 --header "Accept: application/json, text/event-stream" --json "$b" | grep -E 'calls/s|p50|p95|errors' || true
}
q() { echo "== $1 $2"; run "$1" "$2"; }

q list_tasks '{"vault":"bench"}'
q list_tasks '{"vault":"bench","status":"open","limit":20}'
q tasks_filter '{"vault":"bench","filter":"not done\nsort by path\nlimit 20"}'
q search_dql '{"vault":"bench","dql":"LIST FROM #project LIMIT 20"}'
q search_dql '{"vault":"bench","dql":"TABLE file.mtime FROM \"Projects\" SORT file.name LIMIT 20"}'
q search_dql '{"vault":"bench","dql":"TASK WHERE !completed LIMIT 20"}'
q query_base '{"vault":"bench","path":"Bench.base","limit":20}'
# The compat surface beside the catalogue tools it calls.
q read_note '{"vault":"bench","path":"Dashboard.md","format":"content"}'
MCP_PATH=/mcp/compat/obsidian q obsidian_get_note '{"vault":"bench","format":"content","target":{"type":"path","path":"Dashboard.md"}}'
q search_text '{"vault":"bench","query":"meeting","limit":50}'
MCP_PATH=/mcp/compat/obsidian q obsidian_search_notes '{"vault":"bench","mode":"text","query":"meeting"}'
