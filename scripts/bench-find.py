#!/usr/bin/env python3
"""Accuracy and cost of `perfbisect find` against `git bisect run` with a one-shot threshold
script (what people do today), on the same seeded repositories.

For N commits in {16, 128, 1024} and a step of k x the noise's CV (k in 1, 2, 3, 5, 10; noise 1 %,
2 % of runs are outliers x1.3) at a seeded random commit, over SEEDS repositories each:
  - perfbisect find value A..B  (fresh cache; repeats 5, threshold 0.5 %, alpha 0.01)
  - git bisect run with a script that builds the commit, runs it once and calls it new when the
    value exceeds one run of A by more than half the step (the user knows the step's size).
Prints a Markdown table: right / wrong / inconclusive-or-no-change, builds and runs spent.

Usage: scripts/bench-find.py [--seeds 20] [--sizes 16,128,1024] [--steps 1,2,3,5,10] [--out FILE]
Needs: a release build (cargo build --release), git, cc.
"""
import argparse, json, math, os, random, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Its figures go to section `find` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed); not for --help.
if os.environ.get("BENCH_PAGE") != "off" and not {"-h", "--help"} & set(sys.argv[1:]):
    os.execvp(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench-page.py"), "find", "--markdown",
                               "--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
BIN = os.path.join(ROOT, "target", "release", "perfbisect")
CV = 1.0  # noise, % of the value

CONFIG = """
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "0.5%"
repeats = 5
"""

ONESHOT = r"""#!/bin/sh
# One-shot threshold script: build, run once, compare with one run of the old end.
echo x >> "$COUNTER"
cc -O1 -o "$SCRATCH/app" app.c -lm 2>/dev/null || exit 125
v=$("$SCRATCH/app" | sed -n 's/^value: //p')
awk -v v="$v" -v o="$OLD" -v t="$HALF" 'BEGIN { exit !(v > o * (1 + t / 100)) }' && exit 1
exit 0
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def one(n, k, seed, work):
    rng = random.Random(f"{n}-{k}-{seed}")
    step_at = rng.randint(2, n + 1)  # 1-based commit; the range is commits 2..n+1
    d = os.path.join(work, f"r{n}-{k}-{seed}")
    ids = sh([BIN, "demo", "--dir", d, "--create-only", "--commits", str(n + 1),
              "--step-at", str(step_at), "--step-pct", str(k * CV), "--noise-pct", str(CV),
              "--outlier-rate", "0.02"]).stdout.split()
    repo, cfg = os.path.join(d, "repo"), os.path.join(d, "bench.toml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    truth = ids[step_at - 1]
    rng_spec = f"{ids[0]}..{ids[-1]}"

    t = time.time()
    out = subprocess.run([BIN, "--repo", repo, "--config", cfg, "--cache", os.path.join(d, "cache"),
                          "--no-progress", "-q", "find", "value", rng_spec, "--format", "json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"find failed on {d}: {out.stderr}")
    j = json.loads(out.stdout)
    named = [c["commit"] for c in j["culprits"]]
    if j["verdict"] == "culprit":
        verdict = "right" if named == [truth] else "wrong"
    else:
        verdict = j["verdict"]
    pb = dict(verdict=verdict, builds=j["builds"], runs=j["runs"], secs=time.time() - t)

    # git bisect run with the one-shot script, in the repository's own checkout.
    scratch = os.path.join(d, "oneshot")
    os.makedirs(scratch)
    script = os.path.join(scratch, "oneshot.sh")
    with open(script, "w") as f:
        f.write(ONESHOT)
    os.chmod(script, 0o755)
    sh(["git", "checkout", "-q", ids[0]], cwd=repo)
    sh(["cc", "-O1", "-o", os.path.join(scratch, "app"), "app.c", "-lm"], cwd=repo)
    old = sh([os.path.join(scratch, "app")]).stdout.split("value: ")[1].split()[0]
    counter = os.path.join(scratch, "count")
    env = dict(os.environ, OLD=old, HALF=str(k * CV / 2), SCRATCH=scratch, COUNTER=counter)
    sh(["git", "bisect", "start", ids[-1], ids[0]], cwd=repo)
    r = subprocess.run(["git", "bisect", "run", script], cwd=repo, env=env, capture_output=True, text=True)
    subprocess.run(["git", "bisect", "reset", "-q"], cwd=repo, capture_output=True)
    first = None
    for line in r.stdout.splitlines():
        if line.endswith("is the first bad commit"):
            first = line.split()[0]
    runs = sum(1 for _ in open(counter)) if os.path.exists(counter) else 0
    gb = dict(verdict="right" if first == truth else "wrong", builds=runs + 1, runs=runs + 1)
    shutil.rmtree(d, ignore_errors=True)
    return pb, gb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sizes", default="16,128,1024")
    ap.add_argument("--steps", default="1,2,3,5,10")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(BIN):
        raise SystemExit("build first: cargo build --release")
    work = tempfile.mkdtemp(prefix="bench-find-")
    rows = []
    head = ("| N | step | perfbisect right | wrong | inconclusive / no-change | within ceil(log2 N)+2 builds "
            "| mean builds | mean runs | mean s | one-shot git bisect right | wrong | builds |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(head, flush=True)
    for n in map(int, a.sizes.split(",")):
        for k in map(float, a.steps.split(",")):
            res = [one(n, k, s, work) for s in range(a.seeds)]
            pbs, gbs = [p for p, _ in res], [g for _, g in res]
            share = lambda xs, v: 100.0 * sum(x["verdict"] == v for x in xs) / len(xs)
            mean = lambda xs, f: sum(x[f] for x in xs) / len(xs)
            budget = math.ceil(math.log2(n)) + 2
            within = 100.0 * sum(p["builds"] <= budget for p in pbs) / len(pbs)
            row = (f"| {n} | {k:g}x CV | {share(pbs, 'right'):.0f} % | {share(pbs, 'wrong'):.0f} % | "
                   f"{100 - share(pbs, 'right') - share(pbs, 'wrong'):.0f} % | {within:.0f} % | "
                   f"{mean(pbs, 'builds'):.1f} | {mean(pbs, 'runs'):.0f} | {mean(pbs, 'secs'):.1f} | "
                   f"{share(gbs, 'right'):.0f} % | {share(gbs, 'wrong'):.0f} % | {mean(gbs, 'builds'):.1f} |")
            print(row, flush=True)
            rows.append(row)
    shutil.rmtree(work, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write(head + "\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
