#!/usr/bin/env python3
"""Change points at the speed of reading: `perfbisect detect --input` on long generated series,
side by side in one run with a binary of an earlier build and with Apache Otava where it
finishes, each timed as a whole process (median of the rounds, taken in turns) with its peak
memory, and scored against the truth.

The series: 10,000, 100,000 (one run a commit, and three) and 1,000,000 commits (one run),
steps of 5-30 % (either way) every 500-3,500 commits, 1 % Gaussian noise a run and 1 % of runs
30 % high (outliers). Score: a true step is found when a change point lies within 2 commits of
it (exact: at its commit); a change point within 2 commits of no true step is false.

Usage: scripts/bench-detect.py [--base BIN [--base-label TEXT] | --base-rev REV]
                               [--otava-python PY] [--rounds N]
                               [--sizes 10000,100000,100000x3,1000000] [--dir SCRATCH]
--base-rev builds REV (a git revision of this repository) into target/bench-base first.
--otava-python: a Python with apache-otava 0.8 (scripts/bench-cpd.sh's venv has one); Otava
runs on the sizes it finishes in under --otava-limit seconds (default 60).
Its figures go to section `detect-scale` of src/guide/benchmarks.md (scripts/bench-page.py runs
this script again and writes what it printed), unless BENCH_PAGE=off.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(path, n, reps, seed):
    """Write a series; return the true change indices."""
    rng = random.Random(seed * 1_000_003 + n * 7 + reps)
    level, truth = 1000.0, []
    nxt = rng.randint(500, 3500)
    with open(path, "w") as f:
        f.write("index,value\n")
        for i in range(n):
            if i == nxt:
                level *= 1 + rng.uniform(0.05, 0.30) * rng.choice((-1, 1))
                truth.append(i)
                nxt = i + rng.randint(500, 3500)
            for _ in range(reps):
                v = level * (1 + 0.01 * rng.gauss(0, 1))
                if rng.random() < 0.01:
                    v *= 1.3
                f.write(f"{i},{v:.4f}\n")
    return truth


def score(truth, found):
    tp = sum(1 for t in truth if any(abs(t - x) <= 2 for x in found))
    exact = sum(1 for t in truth if t in set(found))
    false = sum(1 for x in found if not any(abs(t - x) <= 2 for t in truth))
    p = (len(found) - false) / len(found) if found else 1.0
    r = tp / len(truth) if truth else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return tp, exact, false, f1


def run_tool(binary, csv):
    """Seconds, peak RSS (MB) and the change points of one `detect --input` run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([binary, "detect", "--input", csv, "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{binary} failed on {csv}: {err.decode()[:400]}")
    return secs, json.loads(out)["change_points"]


def peak_mb(binary, csv):
    """Peak RSS of one run (the waited child's rusage), in MB."""
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(binary, [binary, "detect", "--input", csv, "--format", "json"])
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"{binary} failed on {csv}")
    return usage.ru_maxrss / 1024


OTAVA = """
import sys, time, json
from otava.analysis import compute_change_points
ys = {}
for line in open(sys.argv[1]).read().split()[1:]:
    i, v = line.split(',')
    ys.setdefault(int(i), []).append(float(v))
keys = sorted(ys)
y = [sorted(ys[k])[len(ys[k]) // 2] for k in keys]
t = time.perf_counter()
cps, _ = compute_change_points(y, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
print(json.dumps({"s": time.perf_counter() - t, "cps": sorted(keys[int(c.index)] for c in cps)}))
"""


def run_otava(python, csv, limit):
    try:
        out = subprocess.run([python, "-c", OTAVA, csv], capture_output=True, timeout=limit,
                             check=True).stdout
    except subprocess.TimeoutExpired:
        return None
    r = json.loads(out)
    return r["s"], r["cps"]


def build_base(rev):
    work = tempfile.mkdtemp(prefix="pb-bench-base-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "-q", "--detach", work, rev], check=True)
    try:
        target = os.path.join(ROOT, "target", "bench-base")
        subprocess.run(["cargo", "build", "--release", "-q", "--target-dir", target], cwd=work,
                       check=True)
        return os.path.join(target, "release", "perfbisect")
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", work], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base")
    ap.add_argument("--base-rev")
    ap.add_argument("--base-label", help="how the table names --base (default: its path)")
    ap.add_argument("--otava-python")
    ap.add_argument("--otava-limit", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000,100000x3,1000000")
    ap.add_argument("--dir")
    a = ap.parse_args()
    if os.environ.get("BENCH_PAGE") != "off":
        os.execvp(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench-page.py"), "detect-scale",
                                   "--markdown", "--", *sys.argv])
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    tools = [("perfbisect (this build)", os.path.join(ROOT, "target", "release", "perfbisect"))]
    base = a.base or (build_base(a.base_rev) if a.base_rev else None)
    if base:
        tools.append((f"perfbisect (before: {a.base_label or a.base_rev or base})", base))
    scratch = a.dir or tempfile.mkdtemp(prefix="pb-bench-detect-")
    os.makedirs(scratch, exist_ok=True)
    print("| series | detector | median s | peak MB | true steps | found (±2) | exact | false | F1 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    times = {}
    for spec in a.sizes.split(","):
        n, _, reps = spec.partition("x")
        n, reps = int(n), int(reps or 1)
        csv = os.path.join(scratch, f"s{n}x{reps}.csv")
        truth = generate(csv, n, reps, 1)
        label = f"{n:,} commits, {reps} run{'s' if reps > 1 else ''} a commit"
        # Rounds in turns: each tool's k-th run next to the others' k-th.
        secs = {name: [] for name, _ in tools}
        found = {}
        for _ in range(a.rounds):
            for name, binary in tools:
                s, cps = run_tool(binary, csv)
                secs[name].append(s)
                found[name] = [c["index"] for c in cps]
        for name, binary in tools:
            tp, exact, false, f1 = score(truth, found[name])
            med = statistics.median(secs[name])
            times[(name, n, reps)] = med
            print(f"| {label} | {name} | {med:.3f} | {peak_mb(binary, csv):.0f} | {len(truth)} | "
                  f"{tp} | {exact} | {false} | {f1:.3f} |")
        if a.otava_python:
            r = run_otava(a.otava_python, csv, a.otava_limit)
            if r is None:
                print(f"| {label} | Otava 0.8 | > {a.otava_limit:.0f} (stopped) | | {len(truth)} | | | | |")
            else:
                s, cps = r
                tp, exact, false, f1 = score(truth, cps)
                print(f"| {label} | Otava 0.8 (in-process timing of its own process) | {s:.3f} | | "
                      f"{len(truth)} | {tp} | {exact} | {false} | {f1:.3f} |")
        sys.stdout.flush()
    print()
    for name, _ in tools:
        small, big = times.get((name, 100000, 1)), times.get((name, 1000000, 1))
        if small and big:
            print(f"- {name}: 100,000 → 1,000,000 commits, time × {big / small:.1f}")
    if base:
        for (name, n, reps), s in times.items():
            if name == tools[0][0]:
                b = times.get((tools[1][0], n, reps))
                if b:
                    print(f"- {n:,} commits × {reps}: this build takes {s / b:.3f} of the earlier "
                          f"build's time ({b / s:.1f}× faster)")


if __name__ == "__main__":
    main()
