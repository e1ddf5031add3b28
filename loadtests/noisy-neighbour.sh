#!/usr/bin/env bash
# Noisy neighbour: tenant A runs an abusive mix on one gateway while tenant B runs a normal one;
# B's latency beside A is compared with B's alone, in the same run, and the gateway's memory is
# sampled throughout against its configured limit.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   loadtests/noisy-neighbour.sh                  # BIG_MB=100 DURATION=20 by default
#
# A (tenant "abuser", ten vaults of the starter vault, one also holding a BIG_MB markdown note):
#   - reads of the big note (its first page, its document map, a section), 8 at a time;
#   - edits of it (an append at a heading, a whole-note append), 4 at a time;
#   - regex scans over its vaults, the big note's included, 8 at a time;
#   - graph_centrality over the ten vaults in turn, 8 at a time;
#   - 16 uploads that declare BIG_MB and stall after 1 KB, and 200 connections that stop
#     halfway through their headers (GET /healthz, POST /oauth/register).
# B (tenant "neighbour", one vault of the starter vault): reads, text searches, writes and
# listings, 4 at a time, first alone for DURATION seconds, then beside A for as long.
#
# Rate limits stay on under tiers nobody meets (loadtests/limits.sh): the fair share of heavy
# work, the per-call bounds and the HTTP timeouts are what protect B here. ABUSER_TIERS=stock
# gives A the stock tiers a deployment starts with (rate_limits.tiers' defaults) instead, as a
# tenant would meet them. The run fails on any 5xx, on any failed call of B's, if the gateway
# restarted, or if B's p99 beside A is more than twice its p99 alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc
load=$target/otc-load
duration=${DURATION:-20}
big_mb=${BIG_MB:-100}
limit_bytes=${MEMORY_LIMIT_BYTES:-1073741824} # the chart's gateway limit (1Gi)
port=8097
url=http://127.0.0.1:$port
work=$(mktemp -d /var/tmp/otc-noisy.XXXXXX)

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_noisy"
export OTC__REDIS__KEY_PREFIX="noisy:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=$work/objects
export OTC__SERVER__LISTEN=127.0.0.1:$port RUST_LOG=${RUST_LOG:-warn} OTC__TOOLS__CONFIRM_DESTRUCTIVE=false
export OTC__CACHES__MEMORY_LIMIT_BYTES=$limit_bytes
source loadtests/limits.sh

"$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_noisy" -c "CREATE DATABASE otc_noisy"
"$bin" migrate >/dev/null
"$bin" tenant create abuser >/dev/null
"$bin" tenant create neighbour >/dev/null
for i in $(seq 0 9); do "$bin" vault create --tenant abuser "a$i" >/dev/null; done
"$bin" vault create --tenant neighbour b0 >/dev/null
token_a=$("$bin" token create --tenant abuser --scopes '*')
if [ "${ABUSER_TIERS:-}" = stock ]; then
  "$bin" tenant limits abuser --set read=600/100 --set write=60/20 --set delete=60/20 --set bulk=10/3 >/dev/null
fi
token_b=$("$bin" token create --tenant neighbour --scopes '*')

"$bin" serve & server=$!
holders=()
cleanup() {
  for pid in "${holders[@]}"; do kill "$pid" 2>/dev/null || true; done
  kill $server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do curl -sf $url/healthz >/dev/null && break; sleep 0.1; done

# The vaults: the starter vault everywhere, and in a0 a big note of headed sections.
cp -r corpus/starter-vault "$work/a0"
python3 - "$work/a0/Big.md" "$big_mb" <<'EOF'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
line = "A line of the big note with a [[Welcome]] link and some words to scan through.\n"
with open(path, "w") as f:
    written, section = 0, 0
    while written < mb * 1024 * 1024:
        head = f"## Section {section}\n"
        body = line * 1000
        f.write(head + body)
        written += len(head) + len(body)
        section += 1
EOF
OTC_URL=$url OTC_TOKEN=$token_a "$bin" vault import "$work/a0" --vault a0 --quiet
for i in $(seq 1 9); do OTC_URL=$url OTC_TOKEN=$token_a "$bin" vault import corpus/starter-vault --vault "a$i" --quiet; done
OTC_URL=$url OTC_TOKEN=$token_b "$bin" vault import corpus/starter-vault --vault b0 --quiet

# One JSON-RPC tools/call per line from "name<TAB>arguments-json" lines.
to_bodies() {
  python3 -c 'import json,sys
for line in sys.stdin:
    name, args = line.rstrip("\n").split("\t", 1)
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":json.loads(args)}}))'
}
notes=$(cd corpus/starter-vault && find . -name '*.md' | sed 's|^\./||' | sort | sed -n 1,10p)
{
  while IFS= read -r p; do printf 'read_note\t{"vault":"b0","path":%s}\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$p")"; done <<< "$notes"
  printf 'search_text\t{"vault":"b0","query":"note","limit":10}\n'
  printf 'search_text\t{"vault":"b0","query":"project plan","limit":10}\n'
  printf 'write_note\t{"vault":"b0","path":"Neighbour/One.md","mode":"upsert","content":"# One\\nwritten beside a noisy neighbour\\n"}\n'
  printf 'write_note\t{"vault":"b0","path":"Neighbour/Two.md","mode":"upsert","content":"# Two\\nwritten beside a noisy neighbour\\n"}\n'
  printf 'list_notes\t{"vault":"b0","limit":20}\n'
} | to_bodies > "$work/b.jsonl"
printf 'read_note\t{"vault":"a0","path":"Big.md","format":"content"}\nread_note\t{"vault":"a0","path":"Big.md","format":"document-map"}\nread_note\t{"vault":"a0","path":"Big.md","format":"section","anchor":{"type":"heading","heading":"Section 40"}}\n' | to_bodies > "$work/a-read.jsonl"
printf 'patch_note\t{"vault":"a0","path":"Big.md","operation":"append","target_heading":"Section 7","content":"more\\n"}\nappend_note\t{"vault":"a0","path":"Big.md","content":"more\\n"}\n' | to_bodies > "$work/a-edit.jsonl"
for i in $(seq 0 9); do printf 'search_regex\t{"vault":"a%s","pattern":"(w|s)o+r?ds? t[a-z]* [sc]can.*$","limit":50}\n' "$i"; done | to_bodies > "$work/a-regex.jsonl"
for i in $(seq 0 9); do printf 'graph_centrality\t{"vault":"a%s","metric":"pagerank"}\n' "$i"; done | to_bodies > "$work/a-graph.jsonl"

accept=(--header "Accept: application/json, text/event-stream")
# The gateway's resident memory, sampled every 250 ms: the peak so far, in KiB, in $work/rss.
python3 - "$server" "$work/rss" <<'EOF' &
import sys, time
pid, out, peak = sys.argv[1], sys.argv[2], 0
while True:
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        break
    if rss > peak:
        peak = rss
        with open(out, "w") as f:
            f.write(str(peak))
    time.sleep(0.25)
EOF
holders+=("$!")

neighbour() {
  "$load" --url $url/mcp --token "$token_b" --concurrency 4 --duration "$duration" --warmup 2 "${accept[@]}" \
    --bodies "$work/b.jsonl" | tee "$work/$1.out" | grep -E '^(requests|throughput|latency|refused|first failure)' || true
}
echo "== B alone"
neighbour solo

echo "== A's abuse starts"
abuse() {
  local name=$1 conc=$2
  "$load" --url $url/mcp --token "$token_a" --concurrency "$conc" --duration $((duration + 15)) --warmup 0 \
    --refusals-ok "${accept[@]}" --bodies "$work/a-$name.jsonl" > "$work/a-$name.out" 2>&1 &
  holders+=("$!")
}
abuse read 8
abuse edit 4
abuse regex 8
abuse graph 8
# Stalled uploads and half-sent headers, held open for the whole run.
python3 - "$port" "$token_a" "$big_mb" $((duration + 15)) <<'EOF' &
import socket, sys, time, hashlib
port, token, mb, hold = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
held = []
for i in range(16):
    s = socket.create_connection(("127.0.0.1", port))
    digest = hashlib.sha256(str(i).encode()).hexdigest()
    s.sendall((f"PUT /v1/vaults/a0/blobs/{digest} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: application/octet-stream\r\nContent-Length: {mb * 1024 * 1024}\r\n\r\n").encode() + b"x" * 1024)
    held.append(s)
for i in range(200):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"POST /oauth/register HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n{")
    held.append(s)
time.sleep(hold)
EOF
holders+=("$!")
sleep 5
echo "== B beside A"
neighbour beside

sleep $((duration / 2))
for pid in "${holders[@]:1}"; do wait "$pid" 2>/dev/null || true; done
kill -0 $server || { echo "the gateway is gone"; exit 1; }
peak_kib=$(cat "$work/rss")

echo "== A's calls (refusals by code)"
for name in read edit regex graph; do
  printf '%-6s %s\n' "$name" "$(grep '^summary' "$work/a-$name.out" | cut -d' ' -f2-)"
done
python3 - "$work" "$peak_kib" "$limit_bytes" <<'EOF'
import json, sys
work, peak_kib, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
summary = lambda name: json.loads(next(l for l in open(f"{work}/{name}.out") if l.startswith("summary"))[8:])
solo, beside = summary("solo"), summary("beside")
abusers = [summary(f"a-{n}") for n in ("read", "edit", "regex", "graph")]
server_errors = sum(s["server_errors"] for s in [solo, beside, *abusers])
print(f"B p99 alone {solo['p99_ms']:.1f} ms, beside A {beside['p99_ms']:.1f} ms: {beside['p99_ms'] / solo['p99_ms']:.2f}x")
print(f"B p50 alone {solo['p50_ms']:.1f} ms, beside A {beside['p50_ms']:.1f} ms")
print(f"B failed calls: {solo['failed'] + beside['failed']}; 5xx answers (A and B): {server_errors}")
print(f"gateway peak RSS {peak_kib / 1024:.0f} MiB of its {limit / 2**20:.0f} MiB limit")
ok = (solo["failed"] + beside["failed"] == 0 and server_errors == 0 and peak_kib * 1024 < limit
      and beside["p99_ms"] <= 2 * solo["p99_ms"])
sys.exit(0 if ok else 1)
EOF
