#!/usr/bin/env bash
# Prints the main /metrics figures every 5 s (PORT, default 18080), e.g. beside
# `bash bench/load.sh sqlite` to watch them move under load.
for i in $(seq 200); do
  m=$(curl -sf "http://127.0.0.1:${PORT:-18080}/metrics") || { sleep 1; continue; }
  t=$(date +%H:%M:%S)
  req=$(echo "$m" | grep '^http_requests_total' | awk '{s+=$NF} END {print s}')
  get=$(echo "$m" | grep '^http_requests_total' | grep 'route="/api/v1/shipments/{code}"' | awk '{s+=$NF} END {print s+0}')
  post=$(echo "$m" | grep '^http_requests_total' | grep 'method="POST"' | grep 'route="/api/v1/shipments"' | awk '{s+=$NF} END {print s+0}')
  depth=$(echo "$m" | grep '^outbox_depth' | awk '{print $NF}')
  age=$(echo "$m" | grep '^outbox_oldest_age_seconds' | awk '{print $NF}')
  busy=$(echo "$m" | grep '^db_pool_connections' | grep 'in_use' | awk '{print $NF}')
  deliv=$(echo "$m" | grep '^webhook_deliveries_total' | awk '{s+=$NF} END {print s+0}')
  echo "$t requests=$req get_by_code=$get post=$post outbox_depth=$depth oldest_age_s=$age pool_in_use=$busy deliveries=$deliv"
  sleep 5
done
