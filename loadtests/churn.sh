#!/usr/bin/env bash
# Churn: VAULTS vaults (TENANTS tenants, VAULTS/TENANTS each) touched round-robin through one
# gateway, PASSES times over: each touch reads a note, searches the vault's full text and ranks
# its link graph, so every per-vault cache (manifests, blobs, full-text segments, graphs, auth)
# sees every vault. After each pass: the gateway's resident memory, and each cache's bytes,
# entries, hit rate and evictions from /metrics. Memory should level off under the limit.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   loadtests/churn.sh                     # TENANTS=100 VAULTS=1000 NOTES=50 PASSES=3
#   REUSE=1 loadtests/churn.sh             # the same vaults again, without re-importing
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
load=$target/otc-load
tenants=${TENANTS:-100}
vaults=${VAULTS:-1000}
notes=${NOTES:-50}
passes=${PASSES:-3}
per_tenant=$((vaults / tenants))
limit_bytes=${MEMORY_LIMIT_BYTES:-1073741824} # the chart's gateway limit (1Gi)
port=8096
url=http://127.0.0.1:$port
state=/var/tmp/otc-churn

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_churn"
export OTC__REDIS__KEY_PREFIX="churn:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=$state/objects
export OTC__SERVER__LISTEN=127.0.0.1:$port OTC__SERVER__ADMIN_LISTEN=127.0.0.1:9096 RUST_LOG=${RUST_LOG:-warn}
export OTC__CACHES__MEMORY_LIMIT_BYTES=$limit_bytes
source loadtests/limits.sh

if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$state" && mkdir -p "$state/vault"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_churn" -c "CREATE DATABASE otc_churn"
  "$bin" migrate >/dev/null
  # One small vault, imported everywhere: NOTES notes of the starter vault, links and all.
  (cd corpus/starter-vault && find . -name '*.md' | sort | sed -n "1,${notes}p" |
    while IFS= read -r f; do mkdir -p "$state/vault/$(dirname "$f")" && cp "$f" "$state/vault/$f"; done)
  : > "$state/tokens"
  for t in $(seq 1 "$tenants"); do
    "$bin" tenant create "t$t" >/dev/null
    for v in $(seq 1 "$per_tenant"); do "$bin" vault create --tenant "t$t" "v$v" >/dev/null; done
    printf 't%s\t%s\n' "$t" "$("$bin" token create --tenant "t$t" --scopes '*')" >> "$state/tokens"
  done
fi
"$bin" migrate >/dev/null

"$bin" serve & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf $url/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  start=$(date +%s)
  while IFS=$'\t' read -r tenant token; do
    for v in $(seq 1 "$per_tenant"); do printf '%s\tv%s\n' "$token" "$v"; done
  done < "$state/tokens" |
    xargs -P 4 -L 1 sh -c 'for try in 1 2 3; do OTC_URL='"$url"' OTC_TOKEN=$0 '"$bin"' vault import '"$state/vault"' --vault $1 --quiet && exit 0; sleep 1; done; exit 1'
  echo "import of $vaults vaults: $(($(date +%s) - start)) s"
fi

# Round-robin over every vault: a read, a search, a graph ranking each.
first_note=$(cd "$state/vault" && find . -name '*.md' | sort | sed -n 1p | sed 's|^\./||')
python3 - "$state/tokens" "$per_tenant" "$first_note" > "$state/bodies" <<'EOF'
import json, sys
tokens = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
per_tenant, note = int(sys.argv[2]), sys.argv[3]
call = lambda name, args: json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}})
for v in range(1, per_tenant + 1):
    for _, token in tokens:
        vault = f"v{v}"
        print(f"{token}\t" + call("read_note", {"vault": vault, "path": note}))
        print(f"{token}\t" + call("search_text", {"vault": vault, "query": "note", "limit": 5}))
        print(f"{token}\t" + call("graph_centrality", {"vault": vault, "limit": 5}))
EOF
calls=$(wc -l < "$state/bodies")

rss_mib() { echo $(( $(awk '/^VmRSS:/ {print $2}' /proc/$server/status) / 1024 )); }
caches() {
  curl -sf http://127.0.0.1:9096/metrics | python3 -c '
import sys, re, collections
figures = collections.defaultdict(dict)
for line in sys.stdin:
    m = re.match(r"otc_cache_(\w+)\{cache=\"([^\"]+)\"\} (\S+)", line)
    if m:
        figures[m.group(2)][m.group(1)] = float(m.group(3))
for name, f in sorted(figures.items()):
    hits, misses = f.get("hits_total", 0), f.get("misses_total", 0)
    rate = "%.0f%%" % (100 * hits / (hits + misses)) if hits + misses else "-"
    print("   %-14s %7.1f MiB %7d entries  hit rate %4s  evictions %d" % (
        name, f.get("bytes", 0) / 2**20, f.get("entries", 0), rate, f.get("evictions_total", 0)))'
}
echo "gateway before the passes (after the import unless REUSE=1): $(rss_mib) MiB; limit $((limit_bytes / 1048576)) MiB; $calls calls a pass"
for pass in $(seq 1 "$passes"); do
  "$load" --url $url/mcp --concurrency 8 --duration 3600 --warmup 0 --max-requests "$calls" \
    --header "Accept: application/json, text/event-stream" --bodies "$state/bodies" > "$state/pass.out"
  echo "pass $pass: $(grep -E '^(throughput|latency)' "$state/pass.out" | tr -s ' ' | paste -sd ';'); RSS $(rss_mib) MiB"
  caches
done
