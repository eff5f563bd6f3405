#!/usr/bin/env bash
# The machine that measures, second step (after merge.sh): measure the tests whose numbers
# depend on the machine (ONE_MACHINE: times, memory peaks, hardware-counter counts) on every
# commit of RANGE that has no sample of this machine yet, with the builds the runners made.
# The JSON summary goes to stdout and SUMMARY; `builds` in it counts what had to be built here
# (0 when every runner's shard came through).
#
# Environment: RANGE (required); ONE_MACHINE, comma-separated tests (default all); PERF_CACHE
# (default perf-cache); SUMMARY (default measure.json); PERFBISECT, the binary.
set -euo pipefail
pb=${PERFBISECT:-perfbisect}
cache=${PERF_CACHE:-perf-cache}
range=${RANGE:?RANGE: the commit range to measure}
"$pb" --cache "$cache" --no-progress run "${ONE_MACHINE:-all}" "$range" --gaps --format json \
    | tee "${SUMMARY:-measure.json}"
