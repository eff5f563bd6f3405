#!/usr/bin/env bash
# Random nights (issue 56): the change-point model over simulated night-like schedules of
# perfbisect's commands (scripts/nights/sim.rs: the real search and the real detector, each
# command at a machine speed of its own), with this build and with the build before the model
# knew machine states (BASE, default e30e537), on the same seeded histories in one run.
# Per family: false certain steps per history (certain where nothing moved) and the power
# (real steps decided at their commit where runs link them to their neighbours). The build
# before runs `run --shard` as it did then: no top-up of a shard's own steps.
#
# Usage: scripts/bench-nights.sh [HISTORIES] (default 200 a family)
# Env: BASE=REV the build to compare with; SCRATCH=DIR where its worktree goes
#      (default target/bench-nights-base).
# Its figures go to section `nights` of src/guide/benchmarks.md (scripts/bench-page.py runs
# this script again and writes what it printed).
[ "${BENCH_PAGE:-}" = off ] || exec python3 "$(dirname "$0")/bench-page.py" nights --markdown -- "$0" "$@"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
histories=${1:-200}
base=${BASE:-e30e537}
scratch=${SCRATCH:-$root/target/bench-nights-base}
# The bench profile, lighter: the simulation is what is measured, not the compiler.
export CARGO_PROFILE_BENCH_OPT_LEVEL=2 CARGO_PROFILE_BENCH_DEBUG=0

if [ ! -d "$scratch/src" ]; then
    rm -rf "$scratch"
    git -C "$root" worktree add --detach "$scratch" "$base" >/dev/null 2>&1 ||
        { mkdir -p "$scratch" && git -C "$root" archive "$base" | tar -x -C "$scratch"; }
fi
# The same simulation against the older build: the lines that read a run's machine dropped
# (that build has none), the bench registered.
mkdir -p "$scratch/scripts/nights"
sed '/nights:machine begin/,/nights:machine end/d' "$root/scripts/nights/sim.rs" \
    >"$scratch/scripts/nights/sim.rs"
cp "$root/scripts/bench_nights.rs" "$scratch/scripts/bench_nights.rs"
grep -q 'name = "nights"' "$scratch/Cargo.toml" ||
    printf '\n[[bench]]\nname = "nights"\npath = "scripts/bench_nights.rs"\nharness = false\n' \
        >>"$scratch/Cargo.toml"

echo "### This build ($(git -C "$root" rev-parse --short HEAD))"
echo
(cd "$root" && cargo bench -q --bench nights -- "$histories" 2>/dev/null)
echo
echo "### The build before ($base), the same histories"
echo
(cd "$scratch" && NIGHTS_SHARD_TOP_UP=0 CARGO_TARGET_DIR="$scratch/target" cargo bench -q --bench nights -- "$histories" 2>/dev/null)
