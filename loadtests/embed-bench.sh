#!/usr/bin/env bash
# Embeddings on the local model (scripts/models), in three stages (STAGES, default "lag search
# recall"):
#
#   lag     imports VAULT_DIR into a fresh database with a gateway and a worker running, and
#           reports the worker's lag from the import's last commit to the last chunk's vector
#           (and the end-to-end chunks/s).
#   search  (after lag, on the same database) grows the vector table to the chunks of a second,
#           larger vault (SEARCH_VAULT_DIR, imported with embeddings off, its vectors made in SQL
#           around the real vectors of the first: each a real vector plus noise, unit length, so
#           the data clusters like real text), then reports search_semantic and hybrid
#           search_vault p50/p95 on it, one call at a time, and HNSW recall@10 against exact
#           search under the tenant and vault filter (recall) for RECALL_QUERIES query vectors.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v10k --notes 10000 --attachments skip
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   scripts/models install
#   SEARCH_VAULT_DIR=/tmp/v100k loadtests/embed-bench.sh /tmp/v10k
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: embed-bench.sh VAULT_DIR}
stages=${STAGES:-lag search recall}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
duration=${DURATION:-10}
port=8096

eval "$(scripts/services env)"
eval "$(scripts/models env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
db="$base/otc_embed_bench"
export OTC__DATABASE__URL="$db"
export OTC__REDIS__KEY_PREFIX="embed-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-embed-bench-objects
export OTC__SERVER__LISTEN=127.0.0.1:$port RUST_LOG=${RUST_LOG:-warn} OTC__TOOLS__CONFIRM_DESTRUCTIVE=false
export OTC__EMBEDDINGS__PROVIDER=local OTC__EMBEDDINGS__LOCAL_LIBRARY="$OTC_TEST_EMBEDDING_LIBRARY"
export OTC__EMBEDDINGS__LOCAL_MODEL="$OTC_TEST_EMBEDDING_MODEL" OTC__EMBEDDINGS__LOCAL_TOKENIZER="$OTC_TEST_EMBEDDING_TOKENIZER"
source loadtests/limits.sh
sql() { "$psql" "$db" -qAtX -c "$1"; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
start_roles() {
  "$bin" serve & pids+=($!)
  if [ "${1:-}" = worker ]; then "$bin" worker & pids+=($!); fi
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}
stop_roles() { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

if [[ " $stages " == *" lag "* ]]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_embed_bench" -c "CREATE DATABASE otc_embed_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench small >/dev/null
  "$bin" vault create --tenant bench large >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-embed-bench-token
  token=$(cat /var/tmp/otc-embed-bench-token)
  start_roles worker
  start=$(date +%s.%N)
  OTC_URL=http://127.0.0.1:$port OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault small --quiet
  imported=$(date +%s.%N)
  echo "import + inline indexing: $(echo "$imported - $start" | bc) s"
  # The vault's chunks outside the hidden folders, and those with a vector.
  small="(SELECT id FROM vaults WHERE name = 'small')"
  while :; do
    left=$(sql "SELECT (SELECT count(*) FROM chunks WHERE vault_id = $small AND path !~ '^\.(obsidian|trash|git)/')
                     - (SELECT count(*) FROM chunk_vectors WHERE vault_id = $small)
                     + (SELECT count(*) FROM jobs WHERE vault_id = $small AND kind = 'embed' AND state = 'queued')")
    [ "$left" -le 0 ] && break
    sleep 1
  done
  done_at=$(date +%s.%N)
  chunks=$(sql "SELECT count(*) FROM chunk_vectors WHERE vault_id = $small")
  embedded=$(sql "SELECT coalesce(sum(embedded), 0) || ' embedded, ' || coalesce(sum(cached), 0) || ' from the cache' FROM embedding_usage")
  lag=$(echo "$done_at - $imported" | bc)
  echo "vectors: $chunks chunks ($embedded); lag from the import's end to the last vector: $lag s;" \
    "from the import's start: $(echo "$done_at - $start" | bc) s ($(echo "$chunks / ($done_at - $start)" | bc) chunks/s end to end)"
  dead=$(sql "SELECT count(*) FROM jobs WHERE kind = 'embed' AND state = 'dead'")
  echo "dead embed jobs: $dead"
  stop_roles
fi

if [[ " $stages " == *" search "* ]]; then
  token=$(cat /var/tmp/otc-embed-bench-token)
  large_dir=${SEARCH_VAULT_DIR:?SEARCH_VAULT_DIR names the large vault}
  large="(SELECT id FROM vaults WHERE name = 'large')"
  if [ "$(sql "SELECT count(*) FROM notes WHERE vault_id = $large")" = 0 ]; then
    # Imported with embeddings off (no jobs); its vectors are made below (the noise is drawn
    # per chunk: the subquery refers to the chunk, so it runs for each).
    OTC__EMBEDDINGS__PROVIDER=none "$bin" serve & pids+=($!)
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    start=$(date +%s.%N)
    OTC_URL=http://127.0.0.1:$port OTC_TOKEN=$token "$bin" vault import "$large_dir" --vault large --quiet
    echo "large vault import: $(echo "$(date +%s.%N) - $start" | bc) s"
    stop_roles
  fi
  if [ "$(sql "SELECT count(*) FROM chunk_vectors WHERE vault_id = $large")" = 0 ]; then
    start=$(date +%s.%N)
    model=$(sql "SELECT model FROM vault_embeddings WHERE vault_id = (SELECT id FROM vaults WHERE name = 'small')")
    sql "DELETE FROM chunk_vectors WHERE vault_id = $large; DELETE FROM vault_embeddings WHERE vault_id = $large"
    # Each chunk: a real vector of the small vault (picked by a hash of its path) plus noise.
    sql "WITH centres AS (SELECT (row_number() OVER (ORDER BY path, ord)) - 1 AS i, embedding FROM chunk_vectors
                           WHERE vault_id = (SELECT id FROM vaults WHERE name = 'small')),
              n AS (SELECT count(*) AS n FROM centres)
         INSERT INTO chunk_vectors (tenant_id, vault_id, model, path, ord, dims, embedding)
         SELECT c.tenant_id, c.vault_id, '$model', c.path, c.ord, 384,
                l2_normalize(ce.embedding + (SELECT array_agg((random() - 0.5) * 0.08 + 0 * g + 0 * c.ord)::vector(384)
                                               FROM generate_series(1, 384) AS g))
           FROM chunks c CROSS JOIN n
           JOIN centres ce ON ce.i = abs(hashtext(c.path || c.ord::text)) % n.n
          WHERE c.vault_id = $large AND c.path !~ '^\.(obsidian|trash|git)/'"
    sql "INSERT INTO vault_embeddings (tenant_id, vault_id, model, dims, state, completed_at)
         SELECT tenant_id, id, '$model', 384, 'complete', now() FROM vaults WHERE name = 'large'"
    sql "ANALYZE chunk_vectors"
    echo "large vault vectors: $(sql "SELECT count(*) FROM chunk_vectors WHERE vault_id = $large") in $(echo "$(date +%s.%N) - $start" | bc) s (SQL, HNSW maintained)"
  fi
  start_roles
  body() { python3 -c 'import json,sys; print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":sys.argv[1],"arguments":json.loads(sys.argv[2])}}))' "$1" "$2"; }
  run() {
    local b first; b=$(body "$1" "$2")
    first=$(curl -sf "http://127.0.0.1:$port/mcp" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' -d "$b")
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; s=r.get("structuredContent",{})
assert not r.get("isError"), r
print("   hits", len(s.get("hits", [])), "first", (s.get("hits") or [{}])[0].get("path"))' "$first"
    "$target/otc-load" --url "http://127.0.0.1:$port/mcp" --token "$token" --concurrency 1 --duration "$duration" \
      --warmup 1 --header "Accept: application/json, text/event-stream" --json "$b" | grep -E 'calls/s|p50|p95|errors' || true
  }
  q() { echo "== $1 $2"; run "$1" "$2"; }
  q search_semantic '{"vault":"large","query":"growing vegetables hydroponically"}'
  q search_semantic '{"vault":"large","query":"how to plan a project","k":25}'
  q search_vault '{"vault":"large","query":"vertical hydroponics","mode":"semantic"}'
  q search_vault '{"vault":"large","query":"vertical hydroponics","mode":"hybrid"}'
  q search_vault '{"vault":"large","query":"project dashboard tasks","mode":"hybrid"}'
  q search_vault '{"vault":"large","query":"vertical hydroponics"}'
  stop_roles
fi

if [[ " $stages " == *" recall "* ]]; then

  # Recall@10 of the HNSW index (iterative scan, tenant + vault + model filter) against exact
  # search, for query vectors near the large vault's own (a chunk's vector plus noise).
  n=${RECALL_QUERIES:-50}
  # EF_SEARCH: the candidate list (the tools use 100).
  # RECALL_VAULT: the vault queried (large, default, or small: the real vectors alone).
  python3 - "$psql" "$db" "$n" "${EF_SEARCH:-100}" "${RECALL_VAULT:-large}" <<'EOF'
import subprocess, sys
psql, db, n, ef, vault = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def q(sql):
    return subprocess.run([psql, db, "-qAtX", "-c", sql], check=True, capture_output=True, text=True).stdout.splitlines()
queries = q(f"""SELECT v.ord || ':' || v.path FROM chunk_vectors v JOIN vaults ON vaults.id = v.vault_id AND vaults.name = '{vault}'
               ORDER BY random() LIMIT {n}""")
filt = f"""tenant_id = (SELECT tenant_id FROM vaults WHERE name = '{vault}') AND vault_id = (SELECT id FROM vaults WHERE name = '{vault}')
          AND model = (SELECT model FROM vault_embeddings LIMIT 1) AND dims = 384"""
total = 0.0
for item in queries:
    ord_, path = item.split(":", 1)
    path = path.replace("'", "''")
    qv = f"""(SELECT l2_normalize(embedding + (SELECT array_agg((random() - 0.5) * 0.08)::vector(384) FROM generate_series(1, 384)))
              FROM chunk_vectors WHERE vault_id = (SELECT id FROM vaults WHERE name = '{vault}')
                AND path = '{path}' AND ord = {ord_})"""
    sql = f"""CREATE TEMP TABLE qv AS SELECT {qv}::vector(384) AS v;
      SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {ef};
      SELECT 'A', path || '#' || ord FROM (SELECT path, ord FROM chunk_vectors WHERE {filt}
        ORDER BY embedding::vector(384) <=> (SELECT v FROM qv) LIMIT 10) a;
      SET enable_indexscan = off; SET enable_bitmapscan = off;
      SELECT 'E', path || '#' || ord FROM (SELECT path, ord FROM chunk_vectors WHERE {filt}
        ORDER BY embedding::vector(384) <=> (SELECT v FROM qv) LIMIT 10) e;"""
    out = subprocess.run([psql, db, "-qAtX", "-F", " ", "-c", sql], check=True, capture_output=True, text=True).stdout.splitlines()
    approx = {l[2:] for l in out if l.startswith("A ")}
    exact = {l[2:] for l in out if l.startswith("E ")}
    total += len(approx & exact) / max(len(exact), 1)
print(f"HNSW recall@10 (ef_search {ef}) against exact search, tenant + vault filter, vault {vault}, {len(queries)} queries: {total / max(len(queries), 1):.3f}")
EOF
fi
