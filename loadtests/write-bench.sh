#!/usr/bin/env bash
# The write tools over HTTP on a large vault: write_note (each call a new note) and patch_note
# (each call a different existing note) at 16 concurrent with otc-load; move_note of a note
# with 1,000 backlinks (timed one move at a time); and a vault restore (timed with the CLI).
# Imports the vault into a database of its own (skipped with REUSE=1 when a previous run left
# it), with the local object store, and serves it on 127.0.0.1:8099 with a worker beside it.
#
#   cargo build --release -p obsidian-tc -p otc-loadtests
#   python3 loadtests/scale_vault.py corpus/starter-vault /tmp/v100k --notes 100000 --attachments skip
#   loadtests/write-bench.sh /tmp/v100k
#   REUSE=1 STAGES="move restore" loadtests/write-bench.sh /tmp/v100k   # only some stages, no import
#   REUSE=1 STAGES=write CONCURRENCY=1 loadtests/write-bench.sh /tmp/v100k   # one call at a time
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vault_dir=${1:?usage: write-bench.sh VAULT_DIR}
stages=${STAGES:-write patch move restore}
target=${CARGO_TARGET_DIR:-target}/release
bin=$target/obsidian-tc

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_write_bench"
export OTC__REDIS__KEY_PREFIX="write-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=/var/tmp/otc-write-bench-objects
export OTC__SERVER__LISTEN=127.0.0.1:8099 OTC__TOOLS__CONFIRM_DESTRUCTIVE=false RUST_LOG=${RUST_LOG:-warn}
source loadtests/limits.sh
url=http://127.0.0.1:8099
if [ "${REUSE:-0}" != 1 ]; then
  rm -rf "$OTC__OBJECT_STORE__PATH"
  "$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_write_bench" -c "CREATE DATABASE otc_write_bench"
  "$bin" migrate >/dev/null
  "$bin" tenant create bench >/dev/null
  "$bin" vault create --tenant bench bench >/dev/null
  "$bin" token create --tenant bench --scopes '*' > /var/tmp/otc-write-bench-token
fi
"$bin" migrate >/dev/null   # a reused database gets the migrations added since it was made
token=$(cat /var/tmp/otc-write-bench-token)
# A gateway and a worker, as deployed: the worker merges the full-text segments commits leave.
"$bin" serve & server=$!
"$bin" worker & worker=$!
trap 'kill $server $worker 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf $url/healthz >/dev/null && break; sleep 0.1; done
if [ "${REUSE:-0}" != 1 ]; then
  OTC_URL=$url OTC_TOKEN=$token "$bin" vault import "$vault_dir" --vault bench --quiet
fi
# Wait (up to SETTLE seconds, default 120) for the worker to run the full-text merges the
# import's index batches asked for, bringing the segments under the merge plan's cap (24), so no
# large merge runs during the measurements.
for _ in $(seq "${SETTLE:-120}"); do
  [ "$("$psql" "$OTC__DATABASE__URL" -tAc "SELECT count(*) FROM fts_segments")" -le 24 ] && break
  sleep 1
done
run=$(date +%s)
bodies=$(mktemp)
trap 'kill $server $worker 2>/dev/null; rm -f "$bodies"' EXIT

# One JSON-RPC tools/call per line, from "name<TAB>arguments-json" lines on stdin.
to_bodies() {
  python3 -c 'import json,sys
for line in sys.stdin:
    name, args = line.rstrip("\n").split("\t", 1)
    print(json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":json.loads(args)}}))'
}
post() { # body: one call, its result
  curl -sf $url/mcp -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d @- <<<"$1"
}
call() { # name args-json: one call, its result
  post "$(printf '%s\t%s\n' "$1" "$2" | to_bodies)"
}
load() { # a closed loop of $CONCURRENCY (16) over the bodies file for 10 s
  "$target/otc-load" --url $url/mcp --token "$token" --concurrency "${CONCURRENCY:-16}" --duration 10 --warmup 2 \
    --header "Accept: application/json, text/event-stream" --bodies "$bodies"
}

if [[ " $stages " == *" write "* ]]; then
  echo "== write_note: a new 1 KB note per call"
  python3 -c 'import json,sys
text = "# Bench\n" + ("Some text and a [[Welcome]] link. " * 30) + "\n"
for i in range(100000):
    print("write_note\t" + json.dumps({"vault": "bench", "path": f"bench-w/{sys.argv[1]}/{i}.md", "content": text, "response_format": "concise"}))' "$run" |
    to_bodies > "$bodies"
  load
fi

if [[ " $stages " == *" patch "* ]]; then
  echo "== patch_note: prepend a line to a different existing note per call"
  (cd "$vault_dir" && find . -name '*.md' -not -path './.obsidian/*' | sed 's|^\./||' | sort) |
    python3 -c 'import json,sys
for p in sys.stdin.read().splitlines():
    print("patch_note\t" + json.dumps({"vault": "bench", "path": p, "operation": "prepend", "anchor": {"type": "frontmatter"}, "content": "bench line", "response_format": "concise"}))' |
    to_bodies > "$bodies"
  load
fi

if [[ " $stages " == *" move "* ]]; then
  echo "== move_note: a note with 1,000 backlinks, moved back and forth"
  python3 -c 'import json,sys
items = [{"path": f"bench-move/{sys.argv[1]}/n{i}.md", "content": f"Note {i} links [[Target {sys.argv[1]}]] and [[Target {sys.argv[1]}#Part|the part]].\n"} for i in range(1000)]
print(json.dumps({"vault": "bench", "items": items, "response_format": "concise"}))' "$run" > "$bodies"
  made=$(call bulk_create_notes "$(cat "$bodies")")
  echo "${made:0:120}"
  call write_note "{\"vault\":\"bench\",\"path\":\"bench-move/$run/Target $run.md\",\"content\":\"# Part\\n\"}" >/dev/null
  from="bench-move/$run/Target $run.md"
  for to in "bench-move/$run/Moved A $run.md" "bench-move/$run/Moved B $run.md" "bench-move/$run/Moved C $run.md" "bench-move/$run/Moved D $run.md" "bench-move/$run/Moved E $run.md"; do
    # The body is made first: the time is the call's alone (python's start-up is 0.1 s).
    body=$(printf 'move_note\t%s\n' "{\"vault\":\"bench\",\"from\":\"$from\",\"to\":\"$to\"}" | to_bodies)
    start=$(date +%s%N)
    out=$(post "$body")
    end=$(date +%s%N)
    echo "move_note: $(( (end - start) / 1000000 )) ms  $(echo "$out" | grep -o '"backlinks_updated":{[^}]*}' | head -1)"
    from=$to
  done
fi

if [[ " $stages " == *" restore "* ]]; then
  echo "== vault restore: back to the state after the import's first half, then forward again"
  head=$("$psql" "$OTC__DATABASE__URL" -tAc "SELECT max(seq) FROM change_log")
  half=$(( head / 2 ))
  for at in "$half" "$head"; do
    start=$(date +%s%N)
    "$bin" vault restore --tenant bench --vault bench --at "$at" > "$bodies"
    end=$(date +%s%N)
    head -1 "$bodies"
    echo "vault restore --at $at: $(( (end - start) / 1000000 )) ms"
  done
fi
