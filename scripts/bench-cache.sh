#!/usr/bin/env bash
# What content addressing and identical builds save, on a generated repository where every
# other commit changes only documentation (as in curl's history, where docs, tests and CI
# commits are about half):
#   - runs saved by identical builds: `run value` over the range, `runs_saved` of its JSON;
#   - bytes per cached commit before (each build's files as plain copies) and after (each
#     distinct file once, hard-linked into place), from `cache ls`.
# The build makes a curl-like set of artifacts: the program with debug info (changes with
# every code commit) and a 6 MB library that most commits do not change.
# Usage: scripts/bench-cache.sh   (COMMITS=N, default 200; needs git and cc)
set -euo pipefail
# Its figures go to section `cache` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed).
[ "${BENCH_PAGE:-}" = off ] || exec python3 "$(dirname "$0")/bench-page.py" cache -- "$0" "$@"
cd "$(dirname "$0")/.."
cargo build --release -q
bin=$PWD/target/release/perfbisect
n=${COMMITS:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" demo --create-only --dir "$work/d" --commits "$n" --docs-every 2 --noise-seed 1 >/dev/null
cat > "$work/d/perfbisect.toml" <<'TOML'
[build]
command = "cc -O1 -g -o app app.c -lm && mkdir -p lib && head -c 6000000 /dev/zero | tr '\\0' x > lib/libdata.a"
artifacts = ["app", "lib"]

[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
repeats = 5
TOML
P=("$bin" --repo "$work/d/repo" --config "$work/d/perfbisect.toml" --cache "$work/d/cache" --no-progress -q)
first=$(git -C "$work/d/repo" rev-list --max-parents=0 main)
start=$(date +%s.%N)
"${P[@]}" run value "$first..main" --format json | tail -1 > "$work/run.json"
end=$(date +%s.%N)
python3 - "$work/run.json" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
docs = len({b["commit"] for b in r["identical_builds"]})
print(f"run over {r['commits']} commits in {float(sys.argv[3]) - float(sys.argv[2]):.1f} s: {r['builds']} builds, "
      f"{r['runs']} runs made, {r['runs_saved']} runs saved by {docs} identical builds "
      f"({100 * r['runs_saved'] / max(1, r['runs'] + r['runs_saved']):.0f} % of the runs)")
PY
"${P[@]}" cache ls | head -1 | python3 -c '
import re, sys
line = sys.stdin.read()
m = re.search(r"(\d+) cached builds?: (.+?) as plain copies, (.+?) on disk, (.+?) per build", line)
units = {"B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1024**2, "GB": 1e9, "GiB": 1024**3}
def size(s):
    v, u = s.split()
    return float(v) * units[u]
n, copies, disk = int(m.group(1)), size(m.group(2)), size(m.group(3))
print(f"bytes per cached commit: {copies / n / 1e6:.2f} MB as plain copies, {disk / n / 1e6:.2f} MB content-addressed "
      f"({copies / disk:.1f}x less); 1,000 such commits: {copies / n * 1000 / 1e9:.2f} GB before, {disk / n * 1000 / 1e9:.2f} GB after")
'
