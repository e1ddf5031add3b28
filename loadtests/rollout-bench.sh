#!/usr/bin/env bash
# Gateways behind the round-robin proxy (otc-proxy), as a Deployment behind a Service: read_note
# and a read/write mix at 16 and 64 concurrent, through one gateway and through two; then the
# failover figures: writes at 16 concurrent while one of two gateways is killed (SIGKILL, and
# SIGTERM as a rolling update sends), and the time the sweep lease takes to move when its
# holder is killed. One worker runs beside the gateways (two for the lease stage).
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   loadtests/rollout-bench.sh                       # the starter vault
#   loadtests/rollout-bench.sh /tmp/v10k "Welcome--c50.md"
#   STAGES="failover lease" loadtests/rollout-bench.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:-corpus/starter-vault}
note=${2:-Dashboard.md}
stages=${STAGES:-read mix failover lease}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_rollout_bench"
export OTC__REDIS__KEY_PREFIX="rollout-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-rollout-bench-objects
export OTC__TOOLS__CONFIRM_DESTRUCTIVE=false RUST_LOG=${RUST_LOG:-warn} OTC__WORKER__LEASE_TTL_SECS=${LEASE_SECS:-15}
source loadtests/limits.sh
proxy_url=http://127.0.0.1:8100
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -f "${bodies:-}"; }
trap cleanup EXIT

rm -rf "$OTC__OBJECT_STORE__PATH"
"$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_rollout_bench" -c "CREATE DATABASE otc_rollout_bench"
"$bin" migrate >/dev/null
"$bin" tenant create bench >/dev/null
"$bin" vault create --tenant bench bench >/dev/null
token=$("$bin" token create --tenant bench --scopes '*')

declare -A gateway_pid
gateway() { # port: a gateway on it
  OTC__SERVER__LISTEN=127.0.0.1:$1 "$bin" serve & pids+=($!); gateway_pid[$1]=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return; sleep 0.1; done
}
proxy() { # upstream ports...: (re)starts otc-proxy on 8100 over them
  [ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null || true
  local args=()
  for port in "$@"; do args+=(--upstream "127.0.0.1:$port"); done
  "$target/otc-proxy" --listen 127.0.0.1:8100 "${args[@]}" 2>/dev/null & proxy_pid=$!; pids+=($!)
  for _ in $(seq 100); do curl -s "$proxy_url/healthz" >/dev/null && return; sleep 0.05; done
}
"$bin" worker & pids+=($!)
gateway 8101
gateway 8102
OTC_URL=http://127.0.0.1:8101 OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet

bodies=$(mktemp)
load() { # concurrency [seconds]: a closed loop over the bodies file through the proxy
  "$target/otc-load" --url "$proxy_url/mcp" --token "$token" --concurrency "$1" --duration "${2:-10}" --warmup 2 \
    --header "Accept: application/json, text/event-stream" --bodies "$bodies"
}
read_bodies() {
  python3 -c 'import json,sys
print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":{"vault":"bench","path":sys.argv[1],"response_format":"concise"}}}))' "$note" > "$bodies"
}
mix_bodies() { # four reads to one new 1 KB note (new paths on every call of this)
  python3 -c 'import json,sys,time
text = "# Bench\n" + ("Some text and a [[Welcome]] link. " * 30) + "\n"
run = time.time_ns()
for i in range(200000):
    if i % 5 == 4:
        name, args = "write_note", {"vault": "bench", "path": f"bench-mix/{run}/{i}.md", "content": text, "response_format": "concise"}
    else:
        name, args = "read_note", {"vault": "bench", "path": sys.argv[1], "response_format": "concise"}
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":args}}))' "$note" > "$bodies"
}
write_bodies() { # new notes (new paths on every call of this)
  python3 -c 'import json,time
run = time.time_ns()
for i in range(200000):
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_note","arguments":{"vault":"bench","path":f"bench-failover/{run}/{i}.md","content":"failover\n","response_format":"concise"}}}))' > "$bodies"
}

for stage in read mix; do
  [[ " $stages " == *" $stage "* ]] || continue
  for gateways in "8101" "8101 8102"; do
    # shellcheck disable=SC2086
    proxy $gateways
    for c in 16 64; do
      "${stage}_bodies"
      echo "== $stage, $(wc -w <<<"$gateways") gateway(s), $c concurrent"
      load "$c" || true
    done
  done
done

if [[ " $stages " == *" failover "* ]]; then
  proxy 8101 8102
  for signal in KILL TERM; do
    write_bodies
    echo "== writes at 16 concurrent through two gateways; SIG$signal to the one on 8102 3 s in"
    (sleep 5; kill "-$signal" "${gateway_pid[8102]}") & killer=$!
    load 16 8 || true
    wait "$killer"
    gateway 8102   # back to two for the next round
  done
fi

if [[ " $stages " == *" lease "* ]]; then
  "$bin" worker & pids+=($!)
  sleep 2
  key="${OTC__REDIS__KEY_PREFIX}lease:worker:sweep"
  redis=(redis-cli -p "${OTC_REDIS_PORT:-63799}")
  holder=$("${redis[@]}" GET "$key")
  echo "== the sweep lease (${OTC__WORKER__LEASE_TTL_SECS} s) held by $holder; SIGKILL to its worker"
  start=$(date +%s%N)
  kill -KILL "${holder%%:*}"
  while now=$("${redis[@]}" GET "$key"); [ -z "$now" ] || [ "$now" = "$holder" ]; do sleep 0.02; done
  echo "leadership moved to $now in $(( ($(date +%s%N) - start) / 1000000 )) ms"
fi
