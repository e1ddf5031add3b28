#!/usr/bin/env bash
# The web console's pages for a big organisation: one tenant with VAULTS vaults (100) and
# MEMBERS members (1,000, with emails and groups), an audit trail of some thousand records and a
# handful of tokens; each page fetched ROUNDS times (200) one after another with the admin's
# session, as a browser would. Prints p50, p95 and max per page. Target: p95 within 50 ms.
#
#   cargo build --release -p obsidian-tc
#   loadtests/console-bench.sh
#   BIN=target/debug/obsidian-tc loadtests/console-bench.sh   # another build of the binary
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release/obsidian-tc}
vaults=${VAULTS:-100}
members=${MEMBERS:-1000}
rounds=${ROUNDS:-200}
port=8095
url=http://127.0.0.1:$port
state=$(mktemp -d /var/tmp/otc-console.XXXXXX)

eval "$(scripts/services env)"
base=${OTC__DATABASE__URL%/*}
psql=.services/pg/pkg/pgserver/pginstall/bin/psql
export OTC__DATABASE__URL="$base/otc_console_bench"
export OTC__REDIS__KEY_PREFIX="console-bench:" OTC__OBJECT_STORE__KIND=local OTC__OBJECT_STORE__PATH=$state/objects
export OTC__SERVER__LISTEN=127.0.0.1:$port RUST_LOG=${RUST_LOG:-warn}
source loadtests/limits.sh

"$psql" "$base/postgres" -qc "DROP DATABASE IF EXISTS otc_console_bench" -c "CREATE DATABASE otc_console_bench"
"$bin" migrate >/dev/null
"$bin" tenant create bigco >/dev/null
for i in $(seq 1 "$vaults"); do printf 'vault-%03d\n' "$i"; done | while read -r name; do
  "$bin" vault create --tenant bigco "$name" >/dev/null
done
token=$("$bin" token create --tenant bigco --scopes '*')
for i in 1 2 3 4 5; do "$bin" token create --tenant bigco --scopes 'read:notes' >/dev/null; done
# The members, as the directory would have made them.
"$psql" "$OTC__DATABASE__URL" -q <<SQL
INSERT INTO principals (tenant_id, id, kind, name, email, idp_groups)
SELECT t.id, gen_random_uuid(), 'user', 'person-' || g || '@bigco.test', 'person-' || g || '@bigco.test',
       ARRAY['staff', 'team-' || (g % 20)]
  FROM tenants t, generate_series(1, $members) g WHERE t.slug = 'bigco';
SQL

"$bin" serve > "$state/serve.log" 2>&1 & server=$!
trap 'kill $server 2>/dev/null; rm -rf "$state"' EXIT
for _ in $(seq 100); do curl -sf $url/healthz >/dev/null && break; sleep 0.1; done
# Some trail: a few hundred API calls.
for i in $(seq 1 300); do curl -s -o /dev/null -H "Authorization: Bearer $token" $url/v1/whoami; done

python3 - "$url" "$token" "$rounds" <<'PY'
import http.client, sys, time, urllib.parse
url, token, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
host = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(host.hostname, host.port)
pages = ["/console", "/console/vaults", "/console/members", "/console/access", "/console/tokens",
         "/console/audit", "/console/settings", "/console/connect"]
print(f"{'page':<22} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'bytes':>8}")
for page in pages:
    times, size = [], 0
    for i in range(rounds + 10):
        start = time.perf_counter()
        conn.request("GET", page, headers={"Cookie": f"otc_console={token}"})
        response = conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            sys.exit(f"{page}: {response.status} {body[:300]!r}")
        if i >= 10:  # the first ten warm the caches
            times.append(elapsed)
        size = len(body)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"{page:<22} {p(0.5):8.1f} {p(0.95):8.1f} {times[-1]:8.1f} {size:8d}")
PY
