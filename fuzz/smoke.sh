#!/usr/bin/env bash
# A short run of every fuzz target (stable toolchain, no sanitizer), seeded
# from seeds/<target>. CI runs it with the default 30 s each; for a longer
# hunt: SECONDS_EACH=3600 fuzz/smoke.sh create_shipment
set -euo pipefail
cd "$(dirname "$0")"
seconds="${SECONDS_EACH:-30}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "seeds/$target"
  echo "==> fuzz $target for ${seconds}s"
  set +e
  cargo fuzz run --sanitizer none "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 >"run-$target.log" 2>&1
  status=$?
  set -e
  grep -E '^(Done|stat::number_of_executed_units)|panicked|SUMMARY|crash-' "run-$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "run-$target.log"
    echo "fuzz target $target failed: the input is in fuzz/artifacts/$target/" >&2
    exit "$status"
  fi
done
