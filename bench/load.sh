#!/usr/bin/env bash
# Load benchmark of the reference server with wrk (Debian package `wrk`).
#
#   bash bench/load.sh sqlite          # or: postgres (uses $BENCH_DATABASE_URL or
#                                      #     postgres://postgres@127.0.0.1:5432/)
#
# Builds the release server, makes a fresh database with one merchant and
# 100,000 shipments, then runs wrk against: GET one shipment by code, GET
# shipments by code each request another (random among the 100,000), POST a
# shipment, GET a list page of 100 (the first page: unfiltered; filtered by
# courier; filtered by creation date; and each request another page, random
# among the 1,000), and /healthz (the ceiling: no database). The filters
# match every shipment, so the exact total counts all 100,000.
# Prints wrk's report for each, and the server's CPU time per request.
# Settings: DURATION (default 15s),
# CONNECTIONS (32), THREADS (1; the machine has 2 cores and wrk shares them),
# ONLY (a space-separated subset of: healthz code codes list pages courier
# dates post;
# default all),
# DB_CONNECTIONS (the server's --db-max-connections; its default, 8, when
# unset), SERVER_BIN (a
# server binary to measure instead of building this checkout's, for a
# before-and-after comparison), OTLP=1 (the server exports its spans with
# `--otlp-endpoint` to a collector here that takes and discards them, a
# Python HTTP server beside wrk; it prints what it took at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
backend="${1:-sqlite}"
DURATION="${DURATION:-15s}"
CONNECTIONS="${CONNECTIONS:-32}"
THREADS="${THREADS:-1}"
SEED="${SEED:-100000}"
PORT="${PORT:-18080}"
ONLY="${ONLY:-healthz code codes list pages courier dates post}"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
if [ -n "${SERVER_BIN:-}" ]; then
  bin="$SERVER_BIN"
else
  # With span export built in (the image's binary), so OTLP=1 can use it.
  cargo build --release -q -p shipment-server --features otlp
  bin="$PWD/target/release/shipment-server"
fi
work="$(mktemp -d)"
trap 'kill ${server_pid:-} ${sink_pid:-} 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

case "$backend" in
  sqlite) export DATABASE_URL="sqlite://$work/bench.db" ;;
  postgres)
    admin_url="${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
    db="shipments_bench_$$"
    psql -q "$admin_url" -c "CREATE DATABASE $db"
    trap 'kill ${server_pid:-} ${sink_pid:-} 2>/dev/null || true; wait 2>/dev/null || true; psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"; rm -rf "$work"' EXIT
    export DATABASE_URL="${admin_url%/*}/$db" ;;
  *) echo "usage: $0 sqlite|postgres" >&2; exit 2 ;;
esac
export SHIPMENT_DATA_KEY_FILE="$work/data.key" RUST_LOG=warn

admin() { "$bin" admin --json "$@"; }
field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([0-9]+)).*/\2\3/"; }
"$bin" migrate >/dev/null
merchant=$(admin create-merchant --name Bench --email bench@example.com --password bench-password | field merchant_id)
key=$(admin create-api-key --merchant-id "$merchant" | field key)
courier=$(admin create-courier --name Swift | field courier_company_id)
admin link-courier --merchant-id "$merchant" --courier-id "$courier" >/dev/null

if [ "${OTLP:-0}" = 1 ]; then
  # A collector that answers every export 200 and keeps only a count: what
  # is measured is the server's side of exporting.
  python3 -u - "$work/otlp.count" <<'PY' &
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    exports = 0
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
        Sink.exports += 1
        open(sys.argv[1], "w").write(f"{Sink.exports}\n")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", 14318), Sink).serve_forever()
PY
  sink_pid=$!
  export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:14318
fi
"$bin" serve --addr "127.0.0.1:$PORT" ${DB_CONNECTIONS:+--db-max-connections "$DB_CONNECTIONS"} &
server_pid=$!
base="http://127.0.0.1:$PORT/api/v1"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done

template=$(curl -sf "$base/shipments" -H "X-API-KEY: $key" -H 'Content-Type: application/json' \
  -d "{\"courier_company_id\": $courier, \"weight_kg\": 2.5, \"items\": [\"book\"], \"start_address\": \"52.52,13.405\", \"end_address\": \"52.3759,4.8975\"}")
code=$(printf '%s' "$template" | field code)

# 100k more shipments, copied from the one made over HTTP, with unique codes
# (and the counts the server keeps beside them brought up to date; a
# SERVER_BIN from before migration 0009 keeps them per merchant and status).
columns="merchant_id, courier_company_id, status, description, weight_kg, dimensions, items, start_address, end_address, total_fee_minor, webhook_url, version, created_at, assigned_to_courier_at, updated_at"
recount="DELETE FROM shipment_counts_by_courier; INSERT INTO shipment_counts_by_courier SELECT merchant_id, courier_company_id, status, 0, COUNT(*) FROM shipments GROUP BY 1, 2, 3;"
if [ "$(
  case "$backend" in
    sqlite) sqlite3 "$work/bench.db" "SELECT COUNT(*) FROM sqlite_master WHERE name = 'shipment_counts_by_courier'" ;;
    postgres) psql -qtA "$DATABASE_URL" -c "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'shipment_counts_by_courier'" ;;
  esac)" = 0 ]; then
  recount="DELETE FROM shipment_counts; INSERT INTO shipment_counts SELECT merchant_id, status, 0, COUNT(*) FROM shipments GROUP BY 1, 2;"
fi
case "$backend" in
  sqlite) sqlite3 "$work/bench.db" ".timeout 10000" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < $SEED)
    INSERT INTO shipments (code, $columns) SELECT printf('SHP-B%03d-%04d', i / 10000, i % 10000), $columns
    FROM n, (SELECT * FROM shipments WHERE code = '$code');
    $recount" >/dev/null ;;
  postgres) psql -q "$DATABASE_URL" -c "INSERT INTO shipments (code, $columns)
    SELECT format('SHP-B%s-%s', lpad((i / 10000)::text, 3, '0'), lpad((i % 10000)::text, 4, '0')), $columns
    FROM generate_series(1, $SEED) AS i, (SELECT * FROM shipments WHERE code = '$code') AS t;
    $recount"
    # Vacuumed now, or autovacuum would wake for the 100k new rows in the
    # middle of a later run and take a core from it.
    psql -q "$DATABASE_URL" -c "VACUUM ANALYZE" ;;
esac
echo "seeded: $(curl -sf "$base/shipments?page_size=1" -H "X-API-KEY: $key" | field total) shipments ($backend)"

cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-KEY"] = "$key"
wrk.body = '{"courier_company_id": $courier, "weight_kg": 2.5, "items": ["book"], "start_address": "52.52,13.405", "end_address": "52.3759,4.8975"}'
LUA

# Another seeded shipment per request (codes as the seeding above made them).
cat > "$work/codes.lua" <<LUA
wrk.headers["X-API-KEY"] = "$key"
request = function()
  local i = math.random(1, $SEED)
  return wrk.format("GET", string.format("/api/v1/shipments/SHP-B%03d-%04d", math.floor(i / 10000), i % 10000))
end
LUA

# Another page of 100 per request: the rows a list shows are remembered by
# version, so the first page alone would measure that memory only.
cat > "$work/pages.lua" <<LUA
wrk.headers["X-API-KEY"] = "$key"
request = function()
  return wrk.format("GET", string.format("/api/v1/shipments?page_size=100&page=%d", math.random(1, math.ceil($SEED / 100))))
end
LUA

# The server process's CPU time so far (user + system), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }

run() {
  local which="$1" name="$2"; shift 2
  [[ " $ONLY " == *" $which "* ]] || return 0
  echo; echo "=== $name ($backend, $DURATION, $CONNECTIONS connections)"
  local before report
  before=$(cpu_ticks)
  report=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$@")
  grep -E "Requests/sec|Latency +|^ +(50|99)%|Non-2xx|Socket errors" <<<"$report"
  # CPU the server spent per request: steadier than requests per second
  # when the machine's speed varies between runs (the database's own
  # processes are not counted).
  awk -v ticks="$(($(cpu_ticks) - before))" -v hz="$(getconf CLK_TCK)" \
    '/requests in/ { printf "  server CPU per request: %.1f us\n", ticks / hz * 1e6 / $1 }' <<<"$report"
}
run healthz "GET /healthz (ceiling)" "http://127.0.0.1:$PORT/healthz"
run code "GET /shipments/:code" -H "X-API-KEY: $key" "$base/shipments/SHP-B005-0000"
run codes "GET /shipments/:code (random codes)" -s "$work/codes.lua" "$base/shipments"
run list "GET /shipments?page_size=100" -H "X-API-KEY: $key" "$base/shipments?page_size=100"
run pages "GET /shipments?page_size=100&page=... (random pages)" -s "$work/pages.lua" "$base/shipments"
run courier "GET /shipments?page_size=100&courier_company_id=..." -H "X-API-KEY: $key" \
  "$base/shipments?page_size=100&courier_company_id=$courier"
run dates "GET /shipments?page_size=100&created_after=..." -H "X-API-KEY: $key" \
  "$base/shipments?page_size=100&created_after=2000-01-01T00:00:00Z"
run post "POST /shipments" -s "$work/post.lua" "$base/shipments"
if [ -n "${sink_pid:-}" ]; then
  echo; echo "OTLP exports the collector took: $(cat "$work/otlp.count" 2>/dev/null || echo 0)"
fi
