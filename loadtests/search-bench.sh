#!/usr/bin/env bash
# Search latency on a large vault: imports the vault into a database of its own (skipped with
# REUSE=1 when a previous run left it), serves it, and drives each search tool with otc-load,
# one call at a time (CONCURRENCY, default 1), reporting p50/p95 per query. Then the latency of
# one changed note: write_note calls (commit + inline indexing) each replacing one note.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/search-bench.sh /tmp/v100k
#   REUSE=1 DURATION=5 loadtests/search-bench.sh /tmp/v100k
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: search-bench.sh VAULT_DIR}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
duration=${DURATION:-5}
concurrency=${CONCURRENCY:-1}

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_search_bench"
export OTC__REDIS__KEY_PREFIX="search-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-search-bench-objects
export OTC__SERVER__LISTEN=127.0.0.1:8097 RUST_LOG=${RUST_LOG:-warn} OTC__TOOLS__CONFIRM_DESTRUCTIVE=false
source loadtests/limits.sh
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_search_bench" -c "CREATE DATABASE otc_search_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-search-bench-token
else
  "$bin" migrate >/dev/null
fi
token=$(cat /var/tmp/otc-search-bench-token)
# A gateway and a worker, as deployed: the worker merges the full-text segments the import's
# commits leave.
"$bin" serve & server=$!
"$bin" worker & worker=$!
trap 'kill $server $worker 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8097/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  start=$(date +%s.%N)
  OTC_URL=http://127.0.0.1:8097 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
  echo "import + inline indexing: $(echo "$(date +%s.%N) - $start" | bc) s"
fi
# Let the worker run the full-text merges the import's index batches asked for (up to SETTLE
# seconds, default 35, for the segments to come under the merge plan's cap of 24).
for _ in $(seq "${SETTLE:-35}"); do
  [ "$("$psql" "$OTC__DATABASE__URL" -tAc "SELECT count(*) FROM fts_segments")" -le 24 ] && break
  sleep 1
done

body() { python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":sys.argv[1],"arguments":json.loads(sys.argv[2])}}))' "$1" "$2"; }
run() {
  local b; b=$(body "$1" "$2")
  # One call first: it must succeed (a tool error is still HTTP 200), and it warms the caches.
  local first
  first=$(curl -sf http://127.0.0.1:8097/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$b")
  python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; s=r.get("structuredContent",{})
assert not r.get("isError"), r
print("   total", s.get("total_count", "?"), "hits", len(s.get("hits", s.get("results", s.get("notes", [])))))' "$first"
  "$target/otc-load" --url http://127.0.0.1:8097/mcp --token "$token" --concurrency "$concurrency" --duration "$duration" \
    --warmup 1 --header "Accept: application/json, text/event-stream" --json "$b" | grep -E 'calls/s|p50|p95|errors' || true
}
q() { echo "== $1 $2"; run "$1" "$2"; }

q search_vault '{"vault":"bench","query":"vertical hydroponics"}'
q search_vault '{"vault":"bench","query":"project dashboard tasks"}'
q search_vault '{"vault":"bench","query":"\"concept board\" -satellite"}'
q search_vault '{"vault":"bench","query":"learning notes","explain":true}'
q search_text '{"vault":"bench","query":"hydroponic"}'
q search_text '{"vault":"bench","query":"satellite concept"}'
q search_text '{"vault":"bench","query":"dataview","whole_word":true}'

# REGEX=0 skips the scanning tools (search_regex, search_jsonlogic).
if [ "${REGEX:-1}" = 1 ]; then
  q search_regex '{"vault":"bench","pattern":"[Hh]ydroponic\\w*"}' || true
  q search_regex '{"vault":"bench","pattern":"Satellite Concept"}' || true
  q search_jsonlogic '{"vault":"bench","logic":{"glob":["Projects/**",{"var":"path"}]}}' || true
  q search_jsonlogic '{"vault":"bench","logic":{"in":["dashboard",{"var":"tags"}]}}' || true
fi

echo "== one changed note: write_note (commit + inline indexing), each call a different note"
bodies=$(mktemp)
python3 -c 'import json
for i in range(2000):
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":{"vault":"bench","path":f"Bench/inc-{i % 50}.md","mode":"upsert","content":f"# Change {i}\nA changed note, version {i}, about kayaks and hydroponics.\n"}}}))' > "$bodies"
"$target/otc-load" --url http://127.0.0.1:8097/mcp --token "$token" --concurrency 1 --duration "$duration" --warmup 1 \
  --header "Accept: application/json, text/event-stream" --bodies "$bodies" | grep -E 'calls/s|p50|p95|errors' || true
rm -f "$bodies"
q search_vault '{"vault":"bench","query":"kayaks hydroponics"}'
