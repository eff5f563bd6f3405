#!/usr/bin/env bash
# The machine that measures, first step: unpack the runners' packs (perf-shard-*.tar, made by
# shard.sh, found up to two folders under SHARDS_DIR) and merge them into PERF_CACHE: samples,
# builds (so `run` here builds nothing a runner built), failed-build records, fingerprints.
# `merge` warns when a machine-dependent test's samples come from several machines.
#
# Environment: SHARDS_DIR (default .); PERF_CACHE (default perf-cache); PERFBISECT, the binary.
set -euo pipefail
pb=${PERFBISECT:-perfbisect}
cache=${PERF_CACHE:-perf-cache}
dir=${SHARDS_DIR:-.}
srcs=()
while IFS= read -r pack; do
    unpacked=${pack%.tar}.d
    mkdir -p "$unpacked"
    tar -C "$unpacked" -xf "$pack"
    srcs+=("$unpacked")
done < <(find "$dir" -maxdepth 2 -name 'perf-shard-*.tar' | sort)
if [ "${#srcs[@]}" -eq 0 ]; then
    echo "merge.sh: no perf-shard-*.tar under $dir: did any shard job finish?" >&2
    exit 2
fi
"$pb" --cache "$cache" --no-progress merge "${srcs[@]}"
