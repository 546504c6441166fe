#!/usr/bin/env bash
# Lists at any size: how reading every shipment and a filtered or deep page
# grow with the account (wrk, Debian package `wrk`; sqlite3 or psql).
#
#   bash bench/lists.sh sqlite          # or: postgres (uses $BENCH_DATABASE_URL or
#                                       #     postgres://postgres@127.0.0.1:5432/)
#
# For each size in SIZES (default "20000 80000 320000"): a fresh database
# with one merchant and that many shipments, created over the last 365 days
# (copied in SQL from one shipment made over HTTP, with the counts the
# server keeps beside them rebuilt, as bench/load.sh does), then:
#   --all        `shipctl shipments list --all -o ndjson` to /dev/null, timed;
#   dates        a page of 100 filtered by `created_after` (30.5 days ago:
#                a twelfth of the account, and a partial day), one request
#                at a time (wrk, 1 connection) and under load (CONNECTIONS);
#   deep         a page of 100 at a random page number in the second half of
#                the account, one at a time and under load.
# Then the growth exponent of --all between the last two sizes:
# log(t_last / t_before) / log(size_last / size_before).
# Settings: SIZES, DURATION (of each wrk run, default 5s), CONNECTIONS (32),
# THREADS (1), PORT (18090), SERVER_BIN and SHIPCTL_BIN (binaries to
# measure instead of building this checkout's in release, for a before-and-
# after comparison: a server from before the kept counts per day gets only
# the counts it has). Pin it when the machine is shared: `taskset -c 1 bash
# bench/lists.sh sqlite`.
set -euo pipefail
cd "$(dirname "$0")/.."
backend="${1:-sqlite}"
SIZES="${SIZES:-20000 80000 320000}"
DURATION="${DURATION:-5s}"
CONNECTIONS="${CONNECTIONS:-32}"
THREADS="${THREADS:-1}"
PORT="${PORT:-18090}"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
case "$backend" in sqlite | postgres) ;; *) echo "usage: $0 sqlite|postgres" >&2; exit 2 ;; esac
if [ -z "${SERVER_BIN:-}" ] || [ -z "${SHIPCTL_BIN:-}" ]; then
  cargo build --release -q -p shipment-server -p shipctl
fi
server_bin="${SERVER_BIN:-$PWD/target/release/shipment-server}"
shipctl_bin="${SHIPCTL_BIN:-$PWD/target/release/shipctl}"
work="$(mktemp -d)"
admin_url="${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db=""
cleanup() {
  # Never `kill 0`: that is every process in the group, a caller's too.
  if [ -n "${server_pid:-}" ]; then kill "$server_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ -n "$db" ]; then psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"; fi
  rm -rf "$work"
}
trap cleanup EXIT
export SHIPMENT_DATA_KEY_FILE="$work/data.key" RUST_LOG=warn SHIPCTL_CONFIG_DIR="$work/shipctl"

admin() { "$server_bin" admin --json "$@"; }
field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([0-9]+)).*/\2\3/"; }
sql() {
  case "$backend" in
    sqlite) sqlite3 "$work/bench.db" ".timeout 10000" "$1" ;;
    postgres) psql -qtA "$DATABASE_URL" -c "$1" ;;
  esac
}
# wrk's p50 and p99 in ms, and requests per second, on one line.
latency() {
  awk '/^ +50%/ {p50=$2} /^ +99%/ {p99=$2} /Requests\/sec/ {rps=$2}
       function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
       END { printf "p50 %.2f ms, p99 %.2f ms, %.0f req/s", ms(p50), ms(p99), rps }'
}

declare -A all_time
echo "lists benchmark ($backend): server $server_bin, shipctl $shipctl_bin, sizes $SIZES"
for size in $SIZES; do
  case "$backend" in
    sqlite) rm -f "$work"/bench.db*; export DATABASE_URL="sqlite://$work/bench.db" ;;
    postgres)
      if [ -n "$db" ]; then psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"; fi
      db="shipments_lists_$$_$size"
      psql -q "$admin_url" -c "CREATE DATABASE $db"
      export DATABASE_URL="${admin_url%/*}/$db" ;;
  esac
  "$server_bin" migrate >/dev/null
  merchant=$(admin create-merchant --name Bench --email "bench-$size@example.com" --password bench-password | field merchant_id)
  key=$(admin create-api-key --merchant-id "$merchant" | field key)
  courier=$(admin create-courier --name Swift | field courier_company_id)
  admin link-courier --merchant-id "$merchant" --courier-id "$courier" >/dev/null
  "$server_bin" serve --addr "127.0.0.1:$PORT" &
  server_pid=$!
  base="http://127.0.0.1:$PORT/api/v1"
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
  template=$(curl -sf "$base/shipments" -H "X-API-KEY: $key" -H 'Content-Type: application/json' \
    -d "{\"courier_company_id\": $courier, \"weight_kg\": 2.5, \"items\": [\"book\"], \"start_address\": \"52.52,13.405\", \"end_address\": \"52.3759,4.8975\"}")
  code=$(printf '%s' "$template" | field code)
  # size - 1 more, one every 365 days / size back from now (whole seconds,
  # written as the server writes instants), then the kept counts rebuilt.
  seed=$((size - 1))
  step=$((365 * 86400 / size))
  columns="merchant_id, courier_company_id, status, description, weight_kg, dimensions, items, start_address, end_address, total_fee_minor, webhook_url, version, assigned_to_courier_at"
  recount="DELETE FROM shipment_counts_by_courier; INSERT INTO shipment_counts_by_courier SELECT merchant_id, courier_company_id, status, 0, COUNT(*) FROM shipments GROUP BY 1, 2, 3;"
  by_day=$(case "$backend" in
    sqlite) sql "SELECT COUNT(*) FROM sqlite_master WHERE name = 'shipment_counts_by_day'" ;;
    postgres) sql "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'shipment_counts_by_day'" ;;
  esac)
  now=$(date +%s)
  case "$backend" in
    sqlite)
      day="CAST(strftime('%s', created_at) AS INTEGER) / 86400"
      [ "$by_day" = 1 ] && recount="$recount DELETE FROM shipment_counts_by_day; INSERT INTO shipment_counts_by_day SELECT merchant_id, $day, courier_company_id, status, 0, COUNT(*) FROM shipments GROUP BY 1, 2, 3, 4;"
      sql "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < $seed)
        INSERT INTO shipments (code, $columns, created_at, updated_at)
        SELECT printf('SHP-B%03d-%04d', i / 10000, i % 10000), $columns,
               strftime('%Y-%m-%dT%H:%M:%S+00:00', $now - i * $step, 'unixepoch'),
               strftime('%Y-%m-%dT%H:%M:%S+00:00', $now - i * $step, 'unixepoch')
        FROM n, (SELECT * FROM shipments WHERE code = '$code');
        $recount" >/dev/null ;;
    postgres)
      day="FLOOR(EXTRACT(EPOCH FROM created_at) / 86400)::BIGINT"
      [ "$by_day" = 1 ] && recount="$recount DELETE FROM shipment_counts_by_day; INSERT INTO shipment_counts_by_day SELECT merchant_id, $day, courier_company_id, status, 0, COUNT(*) FROM shipments GROUP BY 1, 2, 3, 4;"
      sql "INSERT INTO shipments (code, $columns, created_at, updated_at)
        SELECT format('SHP-B%s-%s', lpad((i / 10000)::text, 3, '0'), lpad((i % 10000)::text, 4, '0')), $columns,
               to_timestamp($now - i * $step), to_timestamp($now - i * $step)
        FROM generate_series(1, $seed) AS i, (SELECT * FROM shipments WHERE code = '$code') AS t;
        $recount" >/dev/null
      psql -q "$DATABASE_URL" -c "VACUUM ANALYZE" ;;
  esac
  total=$(curl -sf "$base/shipments?page_size=1" -H "X-API-KEY: $key" | field total)
  echo
  echo "=== $size shipments ($backend; the server counts $total)"

  start=$(date +%s.%N)
  rows=$(SHIPCTL_API_KEY="$key" SHIPCTL_BASE_URL="$base" "$shipctl_bin" shipments list --all -o ndjson | wc -l)
  t=$(echo "$(date +%s.%N) - $start" | bc)
  all_time[$size]=$t
  printf -- "--all -o ndjson: %.2f s (%s rows)\n" "$t" "$rows"

  after=$(date -u -d "@$((now - 30 * 86400 - 43200))" +%Y-%m-%dT%H:%M:%SZ)
  dates="$base/shipments?page_size=100&created_after=$after"
  echo "dates alone:      $(wrk -t1 -c1 -d"$DURATION" --latency -H "X-API-KEY: $key" "$dates" | latency)"
  echo "dates under load: $(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "X-API-KEY: $key" "$dates" | latency)"
  pages=$(( (size + 99) / 100 ))
  cat > "$work/deep.lua" <<LUA
wrk.headers["X-API-KEY"] = "$key"
request = function()
  return wrk.format("GET", string.format("/api/v1/shipments?page_size=100&page=%d", math.random(math.floor($pages / 2) + 1, $pages)))
end
LUA
  echo "deep alone:       $(wrk -t1 -c1 -d"$DURATION" --latency -s "$work/deep.lua" "$base/shipments" | latency)"
  echo "deep under load:  $(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$work/deep.lua" "$base/shipments" | latency)"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
done

set -- $SIZES
if [ $# -ge 2 ]; then
  prev="${@: -2:1}" last="${@: -1}"
  echo
  awk -v a="${all_time[$prev]}" -v b="${all_time[$last]}" -v n="$prev" -v m="$last" \
    'BEGIN { printf "--all growth exponent %s -> %s: %.2f\n", n, m, log(b / a) / log(m / n) }'
fi
