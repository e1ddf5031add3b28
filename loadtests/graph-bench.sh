#!/usr/bin/env bash
# The graph tools and the quality report on a large vault: imports the vault into a database of
# its own (skipped with REUSE=1 when a previous run left it), serves it, and times each tool
# one call at a time with otc-load (p50/p95 over DURATION seconds, default 20). Each call loads
# the caller's link graph from Postgres and computes in memory; the in-memory part alone is
# `OTC_BENCH_VAULT=VAULT_DIR cargo bench -p otc-graph`.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/graph-bench.sh /tmp/v100k
#   REUSE=1 loadtests/graph-bench.sh /tmp/v100k
#   REUSE=1 ONLY=lint_wiki loadtests/graph-bench.sh /tmp/v100k
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: graph-bench.sh VAULT_DIR}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
duration=${DURATION:-20}

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_graph_bench"
export OTC__REDIS__KEY_PREFIX="graph-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-graph-bench-objects
export OTC__SERVER__LISTEN=127.0.0.1:8098 RUST_LOG=${RUST_LOG:-warn} OTC__TOOLS__CONFIRM_DESTRUCTIVE=false
source loadtests/limits.sh
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_graph_bench" -c "CREATE DATABASE otc_graph_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-graph-bench-token
else
  "$bin" migrate >/dev/null
fi
token=$(cat /var/tmp/otc-graph-bench-token)
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8098/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  start=$(date +%s.%N)
  OTC_URL=http://127.0.0.1:8098 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
  echo "import + inline indexing: $(echo "$(date +%s.%N) - $start" | bc) s"
fi

body() { python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":sys.argv[1],"arguments":json.loads(sys.argv[2])}}))' "$1" "$2"; }
q() {
  # ONLY=tool_name times that tool alone.
  if [ -n "${ONLY:-}" ] && [ "$1" != "$ONLY" ]; then return; fi
  echo "== $1 $2"
  local b first
  b=$(body "$1" "$2")
  # One call first: it must succeed (a tool error is still HTTP 200); its answer's size and a
  # few of its fields say what was computed.
  first=$(curl -sf http://127.0.0.1:8098/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$b")
  printf '%s' "$first" | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; s=r.get("structuredContent",{})
assert not r.get("isError"), r
print("   ", len(json.dumps(s)), "bytes", {k: v for k, v in s.items() if not isinstance(v, (list, dict))}, s.get("counts", ""))'
  "$target/otc-load" --url http://127.0.0.1:8098/mcp --token "$token" --concurrency 1 --duration "$duration" \
    --warmup 0 --header "Accept: application/json, text/event-stream" --json "$b" | grep -E 'calls/s|p50|p95|errors|first failure' || true
}

q graph_centrality '{"vault":"bench","metric":"pagerank"}'
q graph_centrality '{"vault":"bench","metric":"in_degree"}'
q graph_centrality '{"vault":"bench","metric":"betweenness"}'
q graph_communities '{"vault":"bench"}'
q find_link_cycles '{"vault":"bench"}'
q vault_health_score '{"vault":"bench"}'
q note_quality_report '{"vault":"bench"}'
q graph_path_between '{"vault":"bench","from":"Dashboard.md","to":"Element Structure and Formats.md","directed":false}'
q get_link_strength '{"vault":"bench","from":"Dashboard.md","to":"Element Structure and Formats.md"}'
# The duplicate check: every note's names compared in SQL.
q find_existing_page '{"vault":"bench","topic":"Dashboard"}'
# The whole vault as the wiki (no [wiki] folder is configured here): every check, the pairwise
# ones over max_notes (1500) pages; then one folder.
q lint_wiki '{"vault":"bench","folder":""}'
q lint_wiki '{"vault":"bench","folder":"Projects"}'
if [ -n "${EXTRA:-}" ]; then eval "$EXTRA"; fi
