#!/usr/bin/env bash
# Runs every fuzz target of a BTSTUB_FUZZ build for a bounded time on its
# seed corpus (tests/fuzz/corpus/<target>/), two at a time; fails if any
# target finds a crash, a sanitizer report, a leak, a timeout or a broken
# invariant. New inputs go to a scratch corpus in the build tree, so the
# seeds in the source tree only change when someone adds one on purpose.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [PARALLEL]
#
# Each target's last lines (executions, coverage) are printed at the end;
# crashing inputs are kept as BUILD_DIR/fuzz/artifacts/<target>-crash-*.
set -uo pipefail
BUILD=${1:?usage: run.sh BUILD_DIR [SECONDS] [PARALLEL]}
SECONDS_EACH=${2:-30}
PARALLEL=${3:-2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$BUILD/fuzz

targets=()
for exe in "$OUT"/fuzz_*; do
  [ -x "$exe" ] && targets+=("$(basename "$exe")")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "no fuzz targets in $OUT (configure with -DBTSTUB_FUZZ=ON, build target fuzzers)" >&2
  exit 2
fi

run_one() {
  local name=$1 work=$OUT/corpus-work/$1
  mkdir -p "$work" "$OUT/artifacts" "$OUT/logs"
  # -timeout: a single input taking 25 s is a hang (every seed runs in well
  # under a second; the margin is for a loaded machine); -rss_limit_mb: a leak.
  "$OUT/$name" "$work" "$HERE/corpus/$name" \
      -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$name-" \
      > "$OUT/logs/$name.log" 2>&1
}

declare -A pids
failed=0
for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n || true; done
  run_one "$name" &
  pids[$name]=$!
done
for name in "${targets[@]}"; do
  if wait "${pids[$name]}"; then status=ok; else status=FAILED; failed=1; fi
  log=$OUT/logs/$name.log
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*')
  echo "fuzz $name: $status, ${execs:-?} executions (limit ${SECONDS_EACH}s), ${cov:-no coverage line}"
  if [ $status = FAILED ]; then
    echo "---- $log (last 60 lines)"
    tail -60 "$log"
  fi
done
exit $failed
