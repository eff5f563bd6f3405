#!/usr/bin/env python3
"""Wall time of `perfbisect find --jobs N` when builds are slow, against `--jobs 1` measured in
the same run, on the same seeded repositories.

A slow build is simulated by a build that sleeps before compiling (as a long link or a remote
build would: wall time without CPU), so the 2-core machine does not limit the parallel builds.
For N commits in {128, 1024} and jobs in {1, 2, 4, 8}, over SEEDS repositories each (a 3 % step,
1 % noise, at a seeded random commit, fresh cache every time), prints wall time, builds and
build rounds, their ratios to --jobs 1, and whether the answer was right.
Targets (issue 10): --jobs 4 at most 0.55x the wall time of --jobs 1 with the same answer, and at
most 2.5x its builds.

Usage: scripts/bench-jobs.py [--seeds 3] [--sizes 128,1024] [--jobs 1,2,4,8] [--sleep 2]
Needs: a release build (cargo build --release), git, cc.
"""
import argparse, json, os, random, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Its figures go to section `jobs` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed); not for --help.
if os.environ.get("BENCH_PAGE") != "off" and not {"-h", "--help"} & set(sys.argv[1:]):
    os.execvp(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench-page.py"), "jobs", "--markdown",
                               "--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
BIN = os.path.join(ROOT, "target", "release", "perfbisect")

CONFIG = """
[build]
command = "sleep {sleep} && cc -O1 -o app app.c -lm"
artifacts = ["app"]
[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
threshold = "1%"
repeats = 5
"""


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sizes", default="128,1024")
    ap.add_argument("--jobs", default="1,2,4,8")
    ap.add_argument("--sleep", type=float, default=2.0)
    a = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} is missing: run cargo build --release first")
    sizes = [int(x) for x in a.sizes.split(",")]
    jobs = [int(x) for x in a.jobs.split(",")]
    rows = {}
    with tempfile.TemporaryDirectory() as work:
        for n in sizes:
            for seed in range(a.seeds):
                rng = random.Random(f"jobs-{n}-{seed}")
                step_at = rng.randint(2, n + 1)
                d = os.path.join(work, f"r{n}-{seed}")
                ids = sh([BIN, "demo", "--dir", d, "--create-only", "--commits", str(n + 1),
                          "--step-at", str(step_at), "--step-pct", "3", "--noise-pct", "1",
                          "--noise-seed", str(seed + 1)]).stdout.split()
                cfg = os.path.join(d, "bench.toml")
                with open(cfg, "w") as f:
                    f.write(CONFIG.format(sleep=a.sleep))
                for j in jobs:
                    cache = os.path.join(d, f"cache-{j}")
                    t = time.time()
                    out = subprocess.run(
                        [BIN, "--repo", os.path.join(d, "repo"), "--config", cfg, "--cache",
                         cache, "-q", "find", "value", f"{ids[0]}..{ids[-1]}", "--jobs", str(j),
                         "--format", "json"], capture_output=True, text=True)
                    wall = time.time() - t
                    r = json.loads(out.stdout)
                    right = r["verdict"] == "culprit" and r["culprit"]["commit"] == ids[step_at - 1]
                    rows.setdefault((n, j), []).append(
                        (wall, r["builds"], r["time"]["build_rounds"], right))
                    print(f"n={n} seed={seed} jobs={j}: {wall:.1f} s, {r['builds']} builds, "
                          f"{r['time']['build_rounds']} rounds, right={right}", file=sys.stderr)
    print(f"\nslow builds: sleep {a.sleep} s + cc; {a.seeds} seeds per size; means\n")
    print("| commits | jobs | wall s | ratio to jobs 1 | builds | ratio | build rounds | right |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        base = rows[(n, jobs[0])]
        bw = sum(r[0] for r in base) / len(base)
        bb = sum(r[1] for r in base) / len(base)
        for j in jobs:
            rs = rows[(n, j)]
            w = sum(r[0] for r in rs) / len(rs)
            b = sum(r[1] for r in rs) / len(rs)
            rd = sum(r[2] for r in rs) / len(rs)
            ok = sum(r[3] for r in rs)
            print(f"| {n} | {j} | {w:.1f} | {w / bw:.2f} | {b:.1f} | {b / bb:.2f} | {rd:.1f} | "
                  f"{ok}/{len(rs)} |")


if __name__ == "__main__":
    main()
