#!/usr/bin/env bash
# Latency of the knowledge tools on a large vault (issue 20): vault_graph_search (hybrid chunks
# fused across variants, expanded along links) and vault_context (packed within a token
# budget; the first call's tokens_used is printed against the budget), beside search_and_read,
# their keyword arm. Shares structured-bench.sh's database and vault (REUSE=1 skips the import when
# a previous run of either left them), serves it, and drives each call with otc-load, one at a
# time, reporting p50/p95.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/knowledge-bench.sh /tmp/v100k
#   REUSE=1 DURATION=5 loadtests/knowledge-bench.sh /tmp/v100k
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: knowledge-bench.sh VAULT_DIR}
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
hits = s.get("hits", s.get("results", []))
notes = s.get("notes", [])
budget = s.get("budget")
print("   hits", len(hits), "notes", len(notes), "budget", budget)' <<< "$first"
  "$target/otc-load" --url "http://127.0.0.1:8096$path" --token "$token" --concurrency 1 --duration "$duration" \
    --warmup 1 --header "Accept: application/json, text/event-stream" --json "$b" | grep -E 'calls/s|p50|p95|errors' || true
}
q() { echo "== $1 $2"; run "$1" "$2"; }

q search_and_read '{"vault":"bench","query":"project meeting","mode":"section","k":20}'
q vault_graph_search '{"vault":"bench","query":"project meeting","response_format":"concise"}'
q vault_graph_search '{"vault":"bench","query":"project meeting","queries":["meeting notes for the project"],"final_top_k":20,"response_format":"concise"}'
q vault_context '{"vault":"bench","query":"project meeting","token_budget":2000,"response_format":"detailed"}'
q vault_context '{"vault":"bench","query":"project meeting","token_budget":8000,"k":20,"response_format":"detailed"}'
q vault_context '{"vault":"bench","token_budget":2000,"response_format":"detailed"}'
# What work memory costs the read path: read_note at 16 concurrent, outside a work session, then
# inside one (an episode written per call, with its audit record).
call_json() { curl -sf http://127.0.0.1:8096/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -d "$(body "$1" "$2")"; }
load16() {
  "$target/otc-load" --url http://127.0.0.1:8096/mcp --token "$token" --concurrency 16 --duration "$duration" \
    --warmup 1 --header "Accept: application/json, text/event-stream" --json "$(body read_note '{"vault":"bench","path":"Dashboard.md"}')" \
    | grep -E 'calls/s|p50|errors' || true
}
echo "== read_note, 16 concurrent, no work session"
load16
session=$(call_json start_session '{"vault":"bench","caller":"bench"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["structuredContent"]["session_id"])')
echo "== read_note, 16 concurrent, in a work session (an episode per call)"
load16
call_json end_session "{\"vault\":\"bench\",\"session_id\":\"$session\"}" >/dev/null
