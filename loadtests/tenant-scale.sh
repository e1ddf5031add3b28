#!/usr/bin/env bash
# Tenant scale: N tenants (10,000 by default) seeded straight into Postgres, each with a vault
# and its upkeep items, and two workers. Reports, each on its own line:
#   1. how long the two workers take to run every tenant's due sweep once (the items are all due
#      at the start) and whether any item ran twice;
#   2. the transactions a second Postgres commits with every tenant idle (pg_stat_database over
#      IDLE_SECS, the workers alone);
#   3. the index lag of BUSY tenants (10) importing NOTES notes each with indexing left to the
#      workers (the time from the last import's end until every one is indexed), among the idle
#      tenants and, in a second database, alone;
#   4. each worker's resident memory.
#
#   cargo build --release -p obsidian-tc
#   loadtests/tenant-scale.sh              # TENANTS=10000 BUSY=10 NOTES=200 IDLE_SECS=60 SETTLE_SECS=30
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${OTC_BIN:-${CARGO_TARGET_DIR:-target}/release/obsidian-tc}
tenants=${TENANTS:-10000}
busy=${BUSY:-10}
notes=${NOTES:-200}
idle_secs=${IDLE_SECS:-60}
state=/var/tmp/otc-tenant-scale
port=8097

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=$state/objects
export OTC__SERVER__LISTEN=127.0.0.1:$port RUST_LOG=${RUST_LOG:-warn}
# Every write is left to the workers' indexing, so the lag is theirs.
export OTC__INDEX__INLINE_DEADLINE_MS=0
source loadtests/limits.sh

# The busy tenants' notes: NOTES notes of the starter vault's text, links and all.
rm -rf "$state" && mkdir -p "$state/vault"
(cd corpus/starter-vault && find . -name '*.md' | sort) > "$state/files"
i=0
while [ "$i" -lt "$notes" ]; do
  while read -r f && [ "$i" -lt "$notes" ]; do
    mkdir -p "$state/vault/$(dirname "$f")"
    cp "corpus/starter-vault/$f" "$state/vault/${f%.md}-$i.md"
    i=$((i + 1))
  done < "$state/files"
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# One database: IDLE seeded tenants, the busy ones, two workers and a gateway.
run() {
  local db=$1 idle=$2 label=$3
  export OTC__DATABASE__URL="$base/$db" OTC__REDIS__KEY_PREFIX="$db:"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
  "$bin" migrate >/dev/null
  # Seeded as the server's superuser: tenants (their upkeep items come with them) and a vault each.
  "$psql" "$OTC__DATABASE__URL" -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO tenants (id, slug, name) SELECT gen_random_uuid(), 'idle-' || g, 'Idle ' || g FROM generate_series(1, $idle) g;
INSERT INTO vaults (tenant_id, id, name) SELECT id, gen_random_uuid(), 'Notes' FROM tenants;
ANALYZE;
SQL
  local tokens=()
  for b in $(seq "$busy"); do
    "$bin" tenant create "busy-$b" >/dev/null
    "$bin" vault create --tenant "busy-$b" Notes >/dev/null
    tokens+=("$("$bin" token create --tenant "busy-$b" --scopes '*')")
  done
  "$bin" serve >"$state/$db-serve.log" 2>&1 & pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  local workers=()
  for w in 1 2; do
    OTC__SERVER__ADMIN_LISTEN=127.0.0.1:$((9180 + w)) "$bin" worker >"$state/$db-worker-$w.log" 2>&1 &
    workers+=($!); pids+=($!)
  done
  local started
  started=$(date +%s.%N)

  # 1. Every due sweep once.
  while [ "$("$psql" "$OTC__DATABASE__URL" -Atc "SELECT count(*) FROM upkeep_items WHERE kind = 'sweep' AND runs = 0")" != 0 ]; do
    sleep 0.5
  done
  local swept twice
  swept=$(echo "$(date +%s.%N) - $started" | bc)
  twice=$("$psql" "$OTC__DATABASE__URL" -Atc "SELECT count(*) FROM upkeep_items WHERE kind = 'sweep' AND runs > 1")
  echo "$label: every sweep of $((idle + busy)) tenants ran once in ${swept} s with two workers; items run twice: $twice"

  # 2. Idle: the workers' transactions a second, once autovacuum has dealt with the sweeps'
  #    updates (SETTLE_SECS, 30).
  sleep "${SETTLE_SECS:-30}"

  xacts() { "$psql" "$OTC__DATABASE__URL" -Atc "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"; }
  local before after
  before=$(xacts)
  sleep "$idle_secs"
  after=$(xacts)
  echo "$label: every tenant idle: $(echo "scale=1; ($after - $before - 2) / $idle_secs" | bc) Postgres transactions a second over ${idle_secs} s"

  # 3. Index lag of the busy tenants, written at once.
  local imports=()
  for b in $(seq "$busy"); do
    OTC_URL=http://127.0.0.1:$port OTC_TOKEN=${tokens[$((b - 1))]} "$bin" vault import "$state/vault" --vault Notes --quiet &
    imports+=($!)
  done
  for p in "${imports[@]}"; do wait "$p"; done
  local written lag
  written=$(date +%s.%N)
  while [ "$("$psql" "$OTC__DATABASE__URL" -Atc "SELECT count(*) FROM vault_heads h JOIN tenants t ON t.id = h.tenant_id
            LEFT JOIN index_state s ON s.tenant_id = h.tenant_id AND s.vault_id = h.vault_id
            WHERE t.slug LIKE 'busy-%' AND coalesce(s.indexed_seq, 0) < h.seq")" != 0 ]; do
    sleep 0.2
  done
  lag=$(echo "$(date +%s.%N) - $written" | bc)
  echo "$label: $busy busy tenants x $notes notes indexed by the workers ${lag} s after the last import ended"

  # 4. The workers' memory.
  for w in "${workers[@]}"; do
    echo "$label: worker RSS $(($(awk '/VmRSS/ {print $2}' "/proc/$w/status") / 1024)) MiB"
  done
  cleanup
  pids=()
  sleep 1
}

run otc_tenant_scale "$tenants" "$((tenants)) idle + $busy busy"
run otc_tenant_scale_alone 0 "$busy busy alone"
