#!/usr/bin/env bash
# Full-index benchmark: imports a vault (each commit is indexed before it is answered), then
# rebuilds its whole index with index_vault and reports notes/s for parse + link resolution +
# full-text rows. Runs against the local services (scripts/services up) in a database of its own.
#
#   cargo build --release -p obsidian-tc
#   python3 loadtests/scale_vault.py corpus/obsidian-tasks-docs /tmp/v10k --notes 10000
#   loadtests/index-bench.sh /tmp/v10k [local|s3]
#   REUSE=1 loadtests/index-bench.sh /tmp/v10k   # the last run's database and files, no import
#
# PERF=1 records the last run's whole machine (Postgres included) with perf into
# /var/tmp/otc-index-bench.perf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: index-bench.sh VAULT_DIR [local|s3]}
store=${2:-local}
bin=${OTC_BIN:-${CARGO_TARGET_DIR:-target}/release/obsidian-tc}

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_index_bench"
export OTC__REDIS__KEY_PREFIX="index-bench:"
if [ "$store" = local ]; then
  export OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-index-bench-objects
else
  export OTC__OBJECT_STORE__PREFIX="index-bench"
fi
export OTC__SERVER__LISTEN=127.0.0.1:8099 RUST_LOG=${RUST_LOG:-warn}
source loadtests/limits.sh
token_file=/var/tmp/otc-index-bench-token
if [ "${REUSE:-0}" != 1 ]; then
  [ "$store" = local ] && rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_index_bench" -c "CREATE DATABASE otc_index_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > "$token_file"
else
  "$bin" migrate >/dev/null
fi
token=$(cat "$token_file")
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8099/healthz >/dev/null && break; sleep 0.1; done

notes=$(find "$vault_dir" -name '*.md' | wc -l)
if [ "${REUSE:-0}" != 1 ]; then
  start=$(date +%s.%N)
  OTC_URL=http://127.0.0.1:8099 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
  end=$(date +%s.%N)
  echo "import + inline indexing: $notes notes in $(echo "$end - $start" | bc) s"
fi

call() {
  curl -sf http://127.0.0.1:8099/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2}}"
}
# Cold: the index emptied first (as superuser, outside row-level security: this is the
# benchmark's own database), so the rebuild writes every row from nothing, with the planner
# believing the tables empty, as on a first import. Warm: it replaces every row of an index
# that is already there.
"$psql" "$OTC__DATABASE__URL" -qc "TRUNCATE index_files, notes, links, note_tags, note_properties, note_tasks, chunks, fts_segments" -c "VACUUM ANALYZE"
# WARM rebuilds follow the cold one (default 4); the last line gives their median.
runs=(cold)
for _ in $(seq "${WARM:-4}"); do runs+=(warm); done
rates=()
for i in "${!runs[@]}"; do
  run=${runs[$i]}
  if [ "${PERF:-0}" = 1 ] && [ "$i" = $((${#runs[@]} - 1)) ]; then
    perf record -a -g -o /var/tmp/otc-index-bench.perf -- sleep 2.5 >/dev/null 2>&1 & perf=$!
  fi
  result=$(call index_vault '{"vault":"bench","response_format":"detailed"}')
  line=$(python3 - "$result" "$run" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])["result"]["structuredContent"]
secs = r["duration_ms"] / 1000
print(f"index_vault ({sys.argv[2]}): {r['notes']} notes, {r['links']} links ({r['unresolved_links']} unresolved), "
      f"{r['chunks']} chunks in {secs:.2f} s: {r['notes'] / secs:.0f} notes/s")
EOF
)
  echo "$line"
  [ "$run" = warm ] && rates+=("${line##*: }")
done
if [ ${#rates[@]} -gt 0 ]; then
  printf '%s\n' "${rates[@]}" | sort -n | awk '{a[NR]=$1} END {print "index_vault (warm): median " a[int((NR+1)/2)] " notes/s over " NR " runs"}'
fi
[ -n "${perf:-}" ] && wait "$perf" || true
