#!/usr/bin/env bash
# A short run of every fuzz target (stable toolchain, no sanitizer), seeded
# from seeds/<target>. CI runs it with the default 30 s each, two targets at
# a time (JOBS; the machine has two cores); for a longer hunt:
# SECONDS_EACH=3600 fuzz/smoke.sh create_shipment
set -euo pipefail
cd "$(dirname "$0")"
seconds="${SECONDS_EACH:-30}"
jobs="${JOBS:-2}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
# Built once, all together, before any runs: the runs below then find their
# binaries built instead of each waiting on cargo's lock.
if [ ${#targets[@]} -eq 1 ]; then
  cargo fuzz build --sanitizer none "${targets[0]}"
else
  cargo fuzz build --sanitizer none
fi

# One target's run; its log is run-<target>.log, printed below.
run() {
  local target=$1
  mkdir -p "corpus/$target" "seeds/$target"
  cargo fuzz run --sanitizer none "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 >"run-$target.log" 2>&1
}

declare -A pids
failed=()
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "==> fuzz $target for ${seconds}s"
  run "$target" &
  pids[$target]=$!
done
for target in "${targets[@]}"; do
  status=0
  wait "${pids[$target]}" || status=$?
  echo "--- $target"
  grep -E '^(Done|stat::number_of_executed_units)|panicked|SUMMARY|crash-' "run-$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "run-$target.log"
    echo "fuzz target $target failed ($status): the input is in fuzz/artifacts/$target/" >&2
    failed+=("$target")
  fi
done
[ ${#failed[@]} -eq 0 ] || exit 1
