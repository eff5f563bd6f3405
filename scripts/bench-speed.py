#!/usr/bin/env python3
"""Speed on a shared machine: `perfbisect find` of a CPU-bound step, wall time against
instruction counts, and drift of the machine, with and without interleaving.

(a) --cpu: a CPU-bound generated program (a busy loop) whose work grows STEP % (default 2) at a
    seeded random commit of N (default 48), searched with `metric = "wall"` and with
    `metric = "instructions"` (Valgrind's Cachegrind here: this machine has no hardware
    counter), each from a fresh cache, while a CPU hog (a shell busy loop) runs beside it.
    Reports right / wrong / other, builds, runs and wall time per search, over SEEDS seeds.

(b) --drift: a printed value that drifts with the wall clock (the fixture's --drift-pct, a
    20 s period: load coming and going on a shared runner), a +4 % step at a seeded random
    commit of 32, 1 % noise, builds of 2 s; drift amplitude 0, 3, 6 and 10 %, with
    interleaving (the default) and without (`[measure] interleave = false`: each commit's runs
    back to back, pooled whenever they were taken). Reports right / wrong / inconclusive or
    no-change, runs and wall time.

Usage: scripts/bench-speed.py [--cpu] [--drift] [--seeds 10] [--out FILE]
Needs: a release build (cargo build --release), git, cc, valgrind (for --cpu).
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "perfbisect")

CPU_CONFIG = """
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.wall]
command = "./app"
metric = "wall"
threshold = "1%"

[tests.instructions]
command = "./app"
metric = "instructions"
threshold = "1%"
"""

DRIFT_CONFIG = """
[build]
command = "sleep 2 && cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.value]
command = "./app"
metric = {{ regex = "^value: ([0-9.]+)" }}
threshold = "1%"
repeats = 5
{measure}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def make(work, name, args):
    d = os.path.join(work, name)
    ids = sh([BIN, "demo", "--dir", d, "--create-only"] + args).stdout.split()
    return d, ids


def find(d, cfg, test, spec):
    t = time.time()
    out = subprocess.run([BIN, "--repo", os.path.join(d, "repo"), "--config", cfg, "--cache",
                          os.path.join(d, "cache-" + test), "--no-progress", "-q", "find", test,
                          spec, "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"find failed in {d}: {out.stderr}")
    return json.loads(out.stdout), time.time() - t


def judge(j, truth):
    if j["verdict"] == "culprit":
        return "right" if [c["commit"] for c in j["culprits"]] == [truth] else "wrong"
    return j["verdict"]


def summary(rows):
    n = len(rows)
    share = lambda v: 100.0 * sum(r["verdict"] == v for r in rows) / n
    mean = lambda f: sum(r[f] for r in rows) / n
    return (f"{share('right'):.0f} % | {share('wrong'):.0f} % | "
            f"{100 - share('right') - share('wrong'):.0f} % | {mean('builds'):.1f} | "
            f"{mean('runs'):.1f} | {mean('runs') / max(mean('builds'), 1e-9):.1f} | {mean('secs'):.1f}")


def cpu(seeds, work, n=48, step=2.0):
    head = ("| metric | seeds | right | wrong | other | mean builds | mean runs | runs / build | mean s |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    res = {"wall": [], "instructions": []}
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        for seed in range(seeds):
            rng = random.Random(f"cpu-{seed}")
            at = rng.randint(2, n)
            d, ids = make(work, f"cpu-{seed}", ["--commits", str(n), "--step-at", str(at),
                                                "--step-pct", "0", "--noise-pct", "0",
                                                "--work", "3000000", "--work-step-pct", str(step),
                                                "--noise-seed", str(seed + 1)])
            cfg = os.path.join(d, "bench.toml")
            with open(cfg, "w") as f:
                f.write(CPU_CONFIG)
            for test in res:
                j, secs = find(d, cfg, test, f"{ids[0]}..{ids[-1]}")
                r = dict(verdict=judge(j, ids[at - 1]), builds=j["builds"], runs=j["runs"], secs=secs)
                res[test].append(r)
                print(f"  seed {seed} {test}: {r}", file=sys.stderr, flush=True)
            shutil.rmtree(d, ignore_errors=True)
    finally:
        hog.kill()
    rows = [f"| {t} | {seeds} | {summary(rs)} |" for t, rs in res.items()]
    return head, rows


def drift(seeds, work, n=32):
    head = ("| drift amplitude | interleaving | seeds | right | wrong | inconclusive / no-change "
            "| mean builds | mean runs | runs / build | mean s |\n"
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for amp in [0, 3, 6, 10]:
        for inter in [True, False]:
            res = []
            for seed in range(seeds):
                rng = random.Random(f"drift-{amp}-{seed}")
                at = rng.randint(2, n)
                d, ids = make(work, f"drift-{amp}-{inter}-{seed}",
                              ["--commits", str(n), "--step-at", str(at), "--step-pct", "4",
                               "--noise-pct", "1", "--drift-pct", str(amp), "--drift-period", "20",
                               "--noise-seed", str(seed + 1)])
                cfg = os.path.join(d, "bench.toml")
                with open(cfg, "w") as f:
                    f.write(DRIFT_CONFIG.format(measure="" if inter else "[measure]\ninterleave = false"))
                j, secs = find(d, cfg, "value", f"{ids[0]}..{ids[-1]}")
                r = dict(verdict=judge(j, ids[at - 1]), builds=j["builds"], runs=j["runs"], secs=secs)
                res.append(r)
                print(f"  drift {amp} interleave {inter} seed {seed}: {r}", file=sys.stderr, flush=True)
                shutil.rmtree(d, ignore_errors=True)
            rows.append(f"| {amp} % | {'on' if inter else 'off'} | {seeds} | {summary(res)} |")
            print(rows[-1], flush=True)
    return head, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--drift", action="store_true")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not (a.cpu or a.drift):
        a.cpu = a.drift = True
    if not os.path.exists(BIN):
        raise SystemExit("build first: cargo build --release")
    work = tempfile.mkdtemp(prefix="bench-speed-")
    out = []
    try:
        if a.cpu:
            head, rows = cpu(a.seeds, work)
            out += ["(a) a 2 % CPU-bound step beside a CPU hog, 48 commits", head] + rows + [""]
            print("\n".join(out), flush=True)
        if a.drift:
            head, rows = drift(a.seeds, work)
            block = ["(b) a +4 % step on a machine whose speed drifts (20 s period), 32 commits", head] + rows
            out += block
            print("\n".join(block), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
