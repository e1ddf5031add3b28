#!/usr/bin/env bash
# The gateway's peak memory while it takes large uploads: one, then four at once, of SIZE_MB
# (default 200) each, into the S3 server `scripts/services up` runs. Uploads stream to the object
# store in parts, so the peak should stay near the idle figure plus a few parts per upload, not
# grow with the file.
#
#   cargo build --release -p obsidian-tc
#   loadtests/upload-memory.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
size_mb=${SIZE_MB:-200}
bin=${CARGO_TARGET_DIR:-target}/release/obsidian-tc

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_upload_bench"
export OTC__REDIS__KEY_PREFIX="upload-bench:" OTC__OBJECT_STORE__PREFIX="ub"
export OTC__SERVER__LISTEN=127.0.0.1:8097 RUST_LOG=warn
export OTC__SYNC__MAX_BLOB_BYTES=$(( (size_mb + 1) * 1024 * 1024 ))
source loadtests/limits.sh
"$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_upload_bench" -c "CREATE DATABASE otc_upload_bench"
"$bin" migrate >/dev/null
"$bin" tenant create bench >/dev/null
"$bin" vault create --tenant bench bench >/dev/null
token=$("$bin" token create --tenant bench --scopes '*')

work=$(mktemp -d)
"$bin" serve & server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:8097/healthz >/dev/null && break; sleep 0.1; done
for i in 1 2 3 4; do
  python3 - "$work/f$i" "$size_mb" "$i" <<'EOF'
import os, sys
path, mb, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = os.urandom(1024 * 1024 - 1) + bytes([seed])
with open(path, "wb") as f:
    for _ in range(mb):
        f.write(block)
EOF
done
peak() { awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$server/status"; }
now() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$server/status"; }
upload() {
  local file=$1 hash
  hash=$(sha256sum "$file" | cut -d' ' -f1)
  curl -s -o /dev/null -w "%{http_code} %{time_total}s\n" -X PUT --data-binary "@$file" \
    -H "Authorization: Bearer $token" "http://127.0.0.1:8097/v1/vaults/bench/blobs/$hash"
}
echo "idle: rss $(now) MB, peak $(peak) MB"
echo "== one upload of $size_mb MB"
upload "$work/f1"
echo "after one: peak $(peak) MB"
echo "== four at once"
uploads=()
for i in 1 2 3 4; do upload "$work/f$i" & uploads+=($!); done
wait "${uploads[@]}"
echo "after four: peak $(peak) MB"
echo "== a wrong hash ($size_mb MB): refused, nothing lands"
curl -s -w " %{http_code}\n" -X PUT --data-binary "@$work/f2" -H "Authorization: Bearer $token" \
  "http://127.0.0.1:8097/v1/vaults/bench/blobs/$(printf '0%.0s' $(seq 64))" | head -c 300
echo "after the wrong one: peak $(peak) MB"
