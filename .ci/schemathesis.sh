#!/usr/bin/env bash
# Property-based API testing: schemathesis generates requests from the
# served OpenAPI document and checks every response against it (all
# checks), as a merchant (X-API-KEY) and as a dashboard session (Bearer).
# Fixtures come from the `admin` commands. Needs a built server
# (SHIPMENT_SERVER, default $CARGO_TARGET_DIR or target, then /debug/shipment-server) and `st`.
# MAX_EXAMPLES (per operation and run) sets the size.
# The `testing` tag (the test controls: they exist only with --test-controls,
# which this server does not get, and would arm faults against the run) is
# never included, and excluded outright where the merchant's key is used.
set -euo pipefail
cd "$(dirname "$0")/.."
server="${SHIPMENT_SERVER:-${CARGO_TARGET_DIR:-target}/debug/shipment-server}"
max_examples="${MAX_EXAMPLES:-25}"
work="$(mktemp -d)"
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
db="sqlite://$work/st.db"
admin() { "$server" admin --database-url "$db" --json "$@"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

"$server" migrate --database-url "$db" >/dev/null
merchant=$(admin create-merchant --name Shop --email shop@example.com --password 'correct horse battery' | field merchant_id)
key=$(admin create-api-key --merchant-id "$merchant" --name schemathesis | field key)
courier=$(admin create-courier --name Swift --base-fee 5.00 --per-kg 1.00 --per-km 0.10 | field courier_company_id)
admin link-courier --merchant-id "$merchant" --courier-id "$courier" >/dev/null
driver=$(admin create-driver --courier-id "$courier" --name Ada | field driver_id)
courier_key=$(admin create-courier-key --courier-id "$courier" | field key)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Deliveries would go to whatever hosts schemathesis invents: off here, and
# any host is allowed (the document cannot say which names are private).
"$server" serve --addr "127.0.0.1:$port" --database-url "$db" --no-webhook-delivery \
  --allow-private-webhook-targets \
  >"$work/server.log" 2>&1 &
pid=$!
base="http://127.0.0.1:$port/api/v1"
for _ in $(seq 50); do curl -sf "$base/openapi.json" >/dev/null && break; sleep 0.2; done
token=$(curl -sf "$base/auth/login" -H 'Content-Type: application/json' \
  -d '{"email": "shop@example.com", "password": "correct horse battery"}' | field token)
# Shipments with their own webhook_url need the shipment signing key first.
curl -sf -X POST "$base/webhooks/shipment-signing-key" -H "Authorization: Bearer $token" >/dev/null
export ST_COURIER_ID="$courier" ST_DRIVER_ID="$driver"
export SCHEMATHESIS_HOOKS="$PWD/.ci/schemathesis_hooks.py"

run() {
  st run "$base/openapi.json" --checks all \
    --max-examples "$max_examples" --seed "${SEED:-1}" --no-color \
    --generation-database none --report-dir "$work/report" "$@"
}
echo "==> as a merchant (X-API-KEY)"
run --header "X-API-KEY: $key" --include-tag shipments --exclude-tag testing
echo "==> as the courier company (X-API-KEY, courier key)"
run --header "X-API-KEY: $courier_key" --include-tag courier
echo "==> as a dashboard session (Bearer)"
# Signing out would end the session the rest of the run uses.
run --header "Authorization: Bearer $token" --include-tag dashboard --exclude-path /auth/logout
echo "==> the listener signing key, as a merchant (X-API-KEY)"
# The listener stream itself never ends (Server-Sent Events), so it is left
# to the integration tests (server/tests/api/listen.rs).
run --header "X-API-KEY: $key" --include-tag listen --exclude-path /webhooks/listen

if grep -q "panicked\|internal error" "$work/server.log"; then
  grep "panicked\|internal error" "$work/server.log" | head -20
  echo "the server logged an internal error" >&2
  exit 1
fi
