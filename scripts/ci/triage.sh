#!/usr/bin/env bash
# One night of the perf sheriff: take in the cron job's round (ROUNDS, if the file is there),
# then `perfbisect triage`: measure the newest commit, search every new change point of TESTS
# in its gap, confirm the culprits, and with PERF_REPO post one issue per new culprit through
# `gh` (GH_TOKEN in the environment), a comment when tests join one or a later step fixes it.
# The findings live in the cache: keep PERF_CACHE between runs (the workflows do) and a second
# night posts nothing twice. Writes triage.json (the findings) and triage.md (a digest for a
# job summary); the text summary goes to the log.
#
# Environment: TESTS (default all); RANGE (default: the stored history up to HEAD);
# ROUNDS, a CSV or JSON file of rows to import (commit,test,value[,timestamp,round,machine]);
# PERF_REPO, OWNER/REPO to post to (unset: post nothing); PERF_LABEL (default performance);
# MAX_BUILDS, MAX_TIME (a nightly budget: what is left is searched the next night);
# PERF_CACHE (default perf-cache); PERFBISECT, the binary.
set -euo pipefail
pb=${PERFBISECT:-perfbisect}
cache=${PERF_CACHE:-perf-cache}
run() { "$pb" --cache "$cache" --no-progress "$@"; }
if [ -n "${ROUNDS:-}" ] && [ -f "$ROUNDS" ]; then
    run import "$ROUNDS"
fi
args=()
if [ -n "${RANGE:-}" ]; then args+=("$RANGE"); fi
post=()
if [ -n "${PERF_REPO:-}" ]; then post+=(--attach "$PERF_REPO" --label "${PERF_LABEL:-performance}"); fi
if [ -n "${MAX_BUILDS:-}" ]; then post+=(--max-builds "$MAX_BUILDS"); fi
if [ -n "${MAX_TIME:-}" ]; then post+=(--max-time "$MAX_TIME"); fi
run triage "${TESTS:-all}" "${args[@]}" "${post[@]}" --json triage.json --md triage.md
