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

(c) --jobs: a counted metric (instructions under Cachegrind, a 1 % step at a seeded random
    commit of 64) searched with `--jobs 1` and `--jobs 2` from fresh caches, in three
    scenarios: the issue's (builds of 3 s, runs of about 2 s under Cachegrind), build-dominated
    (builds of 6 s, runs of about 0.5 s) and measure-dominated (builds of 1 s, runs of about
    3 s). With two jobs, runs of different commits go at once and the next probes build beside
    a measurement; the verdicts must be the same. Reports the wall time of each, the ratio
    (jobs 2 / jobs 1, measured one after the other in the same run), builds and runs.

Usage: scripts/bench-speed.py [--cpu] [--drift] [--jobs] [--seeds 10] [--out FILE]
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


def find(d, cfg, test, spec, extra=(), cache=None):
    t = time.time()
    out = subprocess.run([BIN, "--repo", os.path.join(d, "repo"), "--config", cfg, "--cache",
                          os.path.join(d, cache or "cache-" + test), "--no-progress", "-q", "find",
                          test, spec, "--format", "json", *extra], capture_output=True, text=True)
    if out.returncode not in (0, 3):
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


JOBS_CONFIG = """
[build]
command = "sleep {build_s} && cc -O1 -o app app.c -lm"
artifacts = ["app"]

[tests.instr]
command = "./app"
metric = "instructions"
threshold = "0.5%"

[measure]
counter = "cachegrind"
"""


def jobs(seeds, work_dir, n=64):
    limit = (n - 1).bit_length() + 2
    head = ("| scenario | seeds | jobs 1 s | jobs 2 s | ratio | same verdict | builds (jobs 1 / 2) "
            f"| of them probed (limit ⌈log2 {n}⌉ + 2 = {limit}) | pristine checks "
            "| runs (jobs 1 / 2) | made ahead (jobs 2) | never measured (jobs 2) |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    # (name, build seconds, loop iterations: about 2 s, 0.5 s and 3 s under Cachegrind here)
    for name, build_s, work in [("builds 3 s, runs 2 s", 3, 190_000_000),
                                ("build-dominated: builds 6 s, runs 0.5 s", 6, 30_000_000),
                                ("measure-dominated: builds 1 s, runs 3 s", 1, 290_000_000)]:
        res = []
        for seed in range(seeds):
            rng = random.Random(f"jobs-{name}-{seed}")
            at = rng.randint(2, n)
            d, ids = make(work_dir, f"jobs-{seed}", ["--commits", str(n), "--step-at", str(at),
                                                     "--step-pct", "0", "--noise-pct", "0",
                                                     "--work", str(work), "--work-step-pct", "1",
                                                     "--noise-seed", str(seed + 1)])
            cfg = os.path.join(d, "bench.toml")
            with open(cfg, "w") as f:
                f.write(JOBS_CONFIG.format(build_s=build_s))
            spec = f"{ids[0]}..{ids[-1]}"
            j1, s1 = find(d, cfg, "instr", spec, ["--jobs", "1", "--no-why"], "cache-1")
            j2, s2 = find(d, cfg, "instr", spec, ["--jobs", "2", "--no-why"], "cache-2")
            r = dict(s1=s1, s2=s2, same=judge(j1, ids[at - 1]) == judge(j2, ids[at - 1]) == "right",
                     b1=j1["builds"], b2=j2["builds"], r1=j1["runs"], r2=j2["runs"],
                     c1=j1.get("pristine_checks", 0), c2=j2.get("pristine_checks", 0),
                     ahead=j2["measured"].get("ahead", 0), unused=j2["measured"].get("ahead_unused", 0))
            # Builds the search probed: all but the pristine rebuilds and those never measured
            # (made ahead, or a k-ary point of a round of builds).
            r["p1"] = r["b1"] - r["c1"] - j1["measured"]["unprobed"]
            r["p2"] = r["b2"] - r["c2"] - j2["measured"]["unprobed"]
            r["unused"] = j2["measured"]["unprobed"]
            res.append(r)
            print(f"  {name} seed {seed}: {r}", file=sys.stderr, flush=True)
            shutil.rmtree(d, ignore_errors=True)
        k = len(res)
        mean = lambda f: sum(r[f] for r in res) / k
        rows.append(f"| {name} | {k} | {mean('s1'):.1f} | {mean('s2'):.1f} | "
                    f"{mean('s2') / mean('s1'):.2f} | {sum(r['same'] for r in res)}/{k} | "
                    f"{mean('b1'):.1f} / {mean('b2'):.1f} | "
                    f"{mean('p1'):.1f} / {mean('p2'):.1f} (most {max(max(r['p1'], r['p2']) for r in res)}) | "
                    f"{mean('c1'):.1f} / {mean('c2'):.1f} | {mean('r1'):.1f} / {mean('r2'):.1f} | "
                    f"{mean('ahead'):.1f} | {mean('unused'):.1f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return head, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--drift", action="store_true")
    ap.add_argument("--jobs", action="store_true")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not (a.cpu or a.drift or a.jobs):
        a.cpu = a.drift = a.jobs = True
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
        if a.jobs:
            head, rows = jobs(a.seeds, work)
            block = ["(c) a counted metric (instructions under Cachegrind), 1 % step in 64 commits, "
                     "--jobs 1 then --jobs 2", head] + rows
            out += block
            print("\n".join(block), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
