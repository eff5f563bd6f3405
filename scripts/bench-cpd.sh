#!/usr/bin/env bash
# Change-point detection on the shared cpd harness (../shared/bench/cpd): runs the real
# `perfbisect detect --input FILE.csv --format json` on the public set (seed 1) and on a second
# set (seed 2), and prints the harness's tables (P, R, F1, exact, time per series). The anchors'
# numbers (ruptures PELT/Binseg, E-divisive, Otava) on the public set are in
# ../shared/bench/cpd/results.md, measured by the same harness on a machine like this one.
# After each set, scripts/cpd-oracle.py prints what an oracle told the true change commits and
# levels would reach on the same data (upper bounds on recall, F1 and the exact-commit share).
# Usage: scripts/bench-cpd.sh [SCRATCH_DIR]     (needs python3; installs numpy into a venv)
#        SEEDS="1 2 3 4" scripts/bench-cpd.sh     (more sets from the harness's gen.py)
set -euo pipefail
# Its figures go to section `cpd` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed).
[ "${BENCH_PAGE:-}" = off ] || exec python3 "$(dirname "$0")/bench-page.py" cpd --markdown -- "$0" "$@"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="${CPD_SRC:-$ROOT/../shared/bench/cpd}"
CPD="${1:-${TMPDIR:-/tmp}/perfbisect-cpd}"
mkdir -p "$CPD"
cp -n "$SRC"/*.py "$CPD"/ 2>/dev/null || true
cd "$ROOT" && cargo build --release -q
BIN="$ROOT/target/release/perfbisect"
PY="$CPD/.venv/bin/python"
if [ ! -x "$PY" ]; then
    python3 -m venv "$CPD/.venv"
    "$CPD/.venv/bin/pip" install -q numpy==2.2.0
fi
cd "$CPD"
mkdir -p out data
for seed in ${SEEDS:-1 2}; do
    set_dir="data/seed$seed"
    [ -f "$set_dir/manifest.json" ] || "$PY" gen.py --seed "$seed" --out "$set_dir" >/dev/null
    rm -rf "out/pb_seed$seed"
    "$PY" run_anchors.py --data "$set_dir" --out "out/pb_seed$seed" --algos none \
        --tool "$BIN" --tool-name perfbisect > "out/pb_seed$seed.log" 2>&1
    echo "## seed $seed"
    # The harness's tables of this tool (sizes, then recall by step size), separators kept.
    awk '/^## /{h=$0} /^\| algo /{p=1; if (h != "") print "#" h; h=""} p&&/^\|/{print; next} p{p=0; print ""}' \
        "out/pb_seed$seed/summary.md"
    echo "(the anchors' figures on the same sets: ../shared/bench/cpd/results.md)"
    echo
    echo "### seed $seed: perfbisect against the oracle's bounds"
    "$PY" "$ROOT/scripts/cpd-oracle.py" "$set_dir" "out/pb_seed$seed/records.jsonl"
    echo
done
# The close-steps family (two steps 2-8 commits apart), perfbisect beside the anchors in one
# run; the anchors need the harness's own venv (its setup.sh: ruptures, Otava).
cp -n "$SRC/setup.sh" "$CPD"/ 2>/dev/null || true
if "$PY" -c 'import ruptures, otava' 2>/dev/null || { [ "${CLOSE_STEPS_SETUP:-1}" = 1 ] && bash "$CPD/setup.sh" >/dev/null 2>&1; }; then
    echo "## close steps (close_steps.py, seeds 0-39 and 1000-1039)"
    for s0 in 0 1000; do
        printf "seeds %s-%s:\n\n" "$s0" "$((s0 + 39))"
        "$PY" close_steps.py --tool "$BIN" --seed0 "$s0" | sed "s|$BIN|perfbisect|"
        echo
    done
else
    echo "(close steps skipped: the harness's setup.sh could not install its anchors)"
fi

