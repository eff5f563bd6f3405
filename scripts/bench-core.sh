#!/usr/bin/env bash
# Benchmarks of the core pipeline, each a ratio against a reference measured in the same run:
#   1. loading 1,000,000 stored samples           (target < 0.5 s; reference: reading the file)
#   2. listing a 30,000-commit first-parent range (target: ratio <= 1.0 vs git rev-list --first-parent --count)
#   3. overhead per measured run of `true`          (target: ratio <= 1.2 vs hyperfine --runs)
#   4. the HTML site of 24 tests x 1,000 commits    (target < 3 s; reference: loading their samples)
# Usage: scripts/bench-core.sh [PART...]   (all four by default, `scripts/bench-core.sh 2` only the
#   range listing; installs hyperfine from Debian if missing; needs git, python3)
set -euo pipefail
# Its figures go to section `core` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed).
[ "${BENCH_PAGE:-}" = off ] || [ $# -gt 0 ] || exec python3 "$(dirname "$0")/bench-page.py" core -- "$0" "$@"
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine; }
cargo build --release -q
bin=$PWD/target/release/perfbisect
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
parts=" ${*:-1 2 3 4} "
want() { [[ $parts == *" $1 "* ]]; }

if want 1; then
echo "== 1. store load"
cargo bench -q --bench store 2>/dev/null | grep -v '^$'
fi

if want 2; then
echo "== 2. range listing (30,000 first-parent commits, packed, with a commit-graph as git gc writes it)"
repo=$work/big
git init -q -b main "$repo"
python3 - "$repo" <<'PY'
import subprocess, sys
repo = sys.argv[1]
out = []
n = 30000
for i in range(1, n + 1):
    msg = f"Commit {i}\n"
    out.append(f"commit refs/heads/main\nmark :{i}\nauthor A <a@x> {1600000000+i} +0000\ncommitter A <a@x> {1600000000+i} +0000\ndata {len(msg)}\n{msg}")
    if i > 1:
        out.append(f"from :{i-1}\n")
    body = f"{i}\n"
    out.append(f"M 100644 inline f{i % 50}.txt\ndata {len(body)}\n{body}\n")
subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="".join(out).encode(), check=True)
PY
git -C "$repo" gc -q
first=$(git -C "$repo" rev-list --max-parents=0 main)
echo "git rev-list count: $(git -C "$repo" rev-list --first-parent --count "$first..main"), perfbisect: $("$bin" --repo "$repo" log "$first..main" --count)"
hyperfine -N --warmup 2 --runs 15 --export-json "$work/range.json" \
    -n git "git -C $repo rev-list --first-parent --count $first..main" \
    -n perfbisect "$bin --repo $repo log $first..main --count" >/dev/null
python3 - "$work/range.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
g, p = r["git"]["median"], r["perfbisect"]["median"]
print(f"  git rev-list --first-parent --count: {g*1000:.1f} ms (median)")
print(f"  perfbisect log --count:               {p*1000:.1f} ms (median)")
print(f"  ratio: {p/g:.2f} (target <= 1.0) {'PASS' if p/g <= 1.0 else 'FAIL'}")
PY
fi

if want 3; then
echo "== 3. overhead per measured run of a trivial command"
small=$work/small
mkdir -p "$small/repo"
git init -q -b main "$small/repo"
echo hi > "$small/repo/file"
git -C "$small/repo" add file
git -C "$small/repo" -c user.name=a -c user.email=a@x commit -qm one
runs=500
cat > "$small/perfbisect.toml" <<TOML
[build]
artifacts = ["file"]
[tests.trivial]
command = "true"
repeats = $runs
TOML
pb="$bin --repo $small/repo --config $small/perfbisect.toml --cache $small/cache --no-progress -q"
$pb run trivial HEAD >/dev/null   # build (copy) and a first round
python3 - "$pb" "$runs" <<'PY'
import subprocess, sys, time
pb, runs = sys.argv[1].split(), int(sys.argv[2])
def once(cmd):
    t = time.perf_counter(); subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); return time.perf_counter() - t
# Alternate the two so that load from elsewhere hits both alike; medians of 7.
ps, hs = [], []
for _ in range(7):
    ps.append(once(pb + ["run", "trivial", "HEAD", "--again"]))
    hs.append(once(["hyperfine", "--runs", str(runs), "--style", "none", "true"]))
p, h = sorted(ps)[3], sorted(hs)[3]
print(f"  perfbisect run --again ({runs} runs of `true`, each stored and fsynced): {p:.3f} s, {p/runs*1e3:.3f} ms/run")
print(f"  hyperfine --runs {runs} true:                                        {h:.3f} s, {h/runs*1e3:.3f} ms/run")
print(f"  ratio: {p/h:.2f} (target <= 1.2) {'PASS' if p/h <= 1.2 else 'FAIL'}")
PY
fi

if want 4; then
echo "== 4. HTML site (report all --format html), 24 tests x 1,000 commits"
cargo bench -q --bench html 2>/dev/null | grep -v '^$'
fi
