#!/usr/bin/env bash
# The crash harness's long mode (docs/testing.md, "The crash harness"): new seeds for hours, on
# SQLite and on PostgreSQL with two workers, one after the other, each for SECONDS.
#   bash bench/crash_soak.sh [SECONDS] [sqlite] [pg]       (default: 3600, both stores)
# OE_CRASH_SEED picks the first seed (default: one from the clock, printed, so a run can be
# repeated); OE_CRASH_BUILD the build folder (default build/release); OE_CRASH_KEEP where failing
# cases are kept (default /tmp/oe-crash-soak). Each store's output goes to
# <keep>/<store>-<first seed>.log; the last lines are the counts and the divergences with their
# replay commands.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-3600}"
shift || true
stores=("$@")
if [ "${#stores[@]}" -eq 0 ]; then stores=(sqlite pg); fi
build="${OE_CRASH_BUILD:-build/release}"
keep="${OE_CRASH_KEEP:-/tmp/oe-crash-soak}"
# Far above the CI ranges (1.., 1001..), different on every run unless given.
seed="${OE_CRASH_SEED:-$(( 100000 + ($(date +%s) % 100000) * 1000 ))}"
harness="$build/bin/oe_crash_harness"
if [ ! -x "$harness" ]; then
  echo "crash_soak.sh: $harness is not built: cmake --build $build --target oe_crash_harness" >&2
  exit 2
fi
mkdir -p "$keep"
status=0
for store in "${stores[@]}"; do
  log="$keep/$store-$seed.log"
  echo "crash_soak.sh: $store for ${seconds}s from seed $seed (log: $log)"
  "$harness" --store "$store" --seed "$seed" --seconds "$seconds" --keep "$keep" >"$log" 2>&1 ||
    status=1
  sed -n '/^oe crash harness (/,$p' "$log"
done
exit "$status"
