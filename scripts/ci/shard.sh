#!/usr/bin/env bash
# One runner of a CI matrix (scripts/ci/github-actions-shards.yml, gitlab-ci-shards.yml): build
# shard SHARD of SHARDS of RANGE for the machine that measures (`run --build-only`), measure
# here only the tests whose numbers do not depend on the machine (EVERY_RUNNER), and pack what
# the machine that measures needs into OUT: the builds (manifests and content-addressed
# objects), the failed-build records and logs, the samples and the fingerprints.
#
# Environment: RANGE (required); SHARD and SHARDS (GitLab's CI_NODE_INDEX and CI_NODE_TOTAL
# stand in); TESTS, the tests to build for (default all); EVERY_RUNNER, comma-separated tests
# measured on every runner (struct sizes, allocation counts, Cachegrind counts; default none);
# PERF_CACHE (default perf-cache); OUT (default perf-shard-SHARD.tar); PERFBISECT, the binary.
set -euo pipefail
pb=${PERFBISECT:-perfbisect}
cache=${PERF_CACHE:-perf-cache}
range=${RANGE:?RANGE: the commit range to measure}
shard=${SHARD:-${CI_NODE_INDEX:?SHARD (or CI_NODE_INDEX): the shard of this runner, 1-based}}
shards=${SHARDS:-${CI_NODE_TOTAL:?SHARDS (or CI_NODE_TOTAL): how many runners}}
out=${OUT:-perf-shard-$shard.tar}

# Builds every commit of the shard that has no sample yet (of any machine's, as the restored
# store holds them): the machine that measures gets them through `merge`.
"$pb" --cache "$cache" --no-progress run "${TESTS:-all}" "$range" \
    --build-only --gaps --shard "$shard/$shards" --format json
if [ -n "${EVERY_RUNNER:-}" ]; then
    "$pb" --cache "$cache" --no-progress run "$EVERY_RUNNER" "$range" \
        --gaps --shard "$shard/$shards" --format json
fi
# tar keeps the objects' modes, which CI artifact uploads drop (merge restores them anyway).
parts=()
for d in manifests objects failed logs results fingerprints; do
    [ -d "$cache/$d" ] && parts+=("$d")
done
tar -C "$cache" -cf "$out" "${parts[@]}"
echo "shard.sh: shard $shard/$shards packed into $out"
