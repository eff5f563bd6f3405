#!/usr/bin/env python3
"""Verdicts decided every time (issue 58): how often `git bisect run perfbisect step` and `find`
give a verdict (decided) and the right one, and the runs they spend, beside the build before
the change, on the same seeded repositories.

Generated repositories (`perfbisect demo --create-only`): a C program whose printed value has
1 % noise of its own with 2 % outliers of +5-10 %, runs of about a millisecond, builds of about
a tenth of a second; threshold 1 %, repeats 5 (max_repeats 30). Three families, SEEDS each:
  - bisect:    `git bisect run perfbisect step value --old A` over 64 commits with a +4 % step at
               a seeded commit. Decided: git bisect names a commit and skipped none. Right: it
               is the step's commit.
  - no-change: `find value A..B` over 80 commits without a step. Decided: not inconclusive.
               Right: "no-change".
  - step:      `find value A..B` over 80 commits with a step of twice the threshold (+2 %) at a
               seeded commit. Right: that commit, alone.
Each family runs with each binary on a fresh cache; the noise is the program's own, seeded, so
both binaries see the same stream of values. Runs: the runs stored (`show`), mean per repository;
"x before, decided" is the after binary's mean runs over the repositories the before binary
decided, against the before binary's on those (the issue's target: at most 2).

Usage: scripts/bench-decided.py [--seeds 50] [--families bisect,no-change,step]
                                [--base BIN] [--base-label TEXT] [--bin BIN] [--dir DIR]
Needs: release builds (cargo build --release; the base: the build before the change, built
into a directory of its own, e.g. `git archive main | tar -x -C /tmp/base && cd /tmp/base &&
cargo build --release`), git, cc.
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Its figures go to section `decided` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed); not for --help.
if os.environ.get("BENCH_PAGE") != "off" and not {"-h", "--help"} & set(sys.argv[1:]):
    os.execvp(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench-page.py"), "decided", "--markdown",
                               "--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

CONFIG = """
[build]
command = "cc -O1 -o app app.c -lm"
artifacts = ["app"]
[tests.value]
command = "./app"
metric = { regex = "^value: ([0-9.]+)" }
threshold = "1%"
repeats = 5
"""

FAMILIES = {
    # name: (commits in the range, step % or None)
    "bisect": (64, 4.0),
    "no-change": (80, None),
    "step": (80, 2.0),
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def make_repo(gen, family, seed, work):
    """A seeded repository of `family`: its folder, commit ids (oldest first), the step's
    1-based commit (None without one)."""
    n, pct = FAMILIES[family]
    rng = random.Random(f"{family}-{seed}")
    step_at = rng.randint(2, n + 1) if pct else None
    d = os.path.join(work, f"{family}-{seed}")
    args = [gen, "demo", "--dir", d, "--create-only", "--commits", str(n + 1),
            "--noise-pct", "1", "--outlier-rate", "0.02", "--outlier-pct", "5-10",
            "--noise-seed", str(1000 + seed)]
    if step_at:
        args += ["--step-at", str(step_at), "--step-pct", str(pct)]
    ids = sh(args).stdout.split()
    with open(os.path.join(d, "bench.toml"), "w") as f:
        f.write(CONFIG)
    return d, ids, step_at


def runs_stored(bin_, d, cache, ids):
    """Runs stored in `cache` over the repository's range (every commit builds apart)."""
    out = sh([bin_, "--repo", os.path.join(d, "repo"), "--config", os.path.join(d, "bench.toml"),
              "--cache", cache, "--no-progress", "-q", "show", "value",
              f"{ids[0]}..{ids[-1]}", "--format", "json"]).stdout
    return sum(c.get("n", 0) for c in json.loads(out)["commits"])


def bisect(bin_, d, ids, step_at, cache):
    repo = os.path.join(d, "repo")
    sh(["git", "bisect", "start", ids[-1], ids[0]], cwd=repo)
    r = subprocess.run(["git", "bisect", "run", bin_, "--config", os.path.join(d, "bench.toml"),
                        "--cache", cache, "--no-progress", "-q", "step", "value", "--old", ids[0]],
                       cwd=repo, capture_output=True, text=True)
    log = subprocess.run(["git", "bisect", "log"], cwd=repo, capture_output=True, text=True).stdout
    subprocess.run(["git", "bisect", "reset", "-q"], cwd=repo, capture_output=True)
    named = None
    for line in r.stdout.splitlines():
        if line.endswith("is the first bad commit"):
            named = line.split()[0]
    skips = sum(1 for l in log.splitlines() if l.startswith("git bisect skip"))
    decided = named is not None and skips == 0
    return dict(decided=decided, right=decided and named == ids[step_at - 1],
                runs=runs_stored(bin_, d, cache, ids), skips=skips)


def find(bin_, d, ids, step_at, cache):
    out = subprocess.run([bin_, "--repo", os.path.join(d, "repo"), "--config",
                          os.path.join(d, "bench.toml"), "--cache", cache, "--no-progress", "-q",
                          "find", "value", f"{ids[0]}..{ids[-1]}", "--format", "json",
                          "--no-why"], capture_output=True, text=True)
    if out.returncode not in (0, 3):
        raise SystemExit(f"find failed on {d}: {out.stderr}")
    j = json.loads(out.stdout)
    if step_at:
        named = [c["commit"] for c in j.get("culprits", [])]
        right = j["verdict"] == "culprit" and named == [ids[step_at - 1]]
    else:
        right = j["verdict"] == "no-change"
    return dict(decided=j["verdict"] != "inconclusive", right=right, runs=j["runs"])


def one(bin_, family, d, ids, step_at, label):
    cache = os.path.join(d, f"cache-{label}")
    t = time.time()
    r = (bisect if family == "bisect" else find)(bin_, d, ids, step_at, cache)
    r["secs"] = time.time() - t
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--families", default="bisect,no-change,step")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "perfbisect"))
    ap.add_argument("--base", help="the build before the change (its column is left out without it)")
    ap.add_argument("--base-label", default="before")
    ap.add_argument("--dir", help="work folder (default: a temporary one, removed after)")
    a = ap.parse_args()
    for b in [a.bin] + ([a.base] if a.base else []):
        if not os.path.exists(b):
            raise SystemExit(f"{b}: build first (cargo build --release)")
    work = a.dir or tempfile.mkdtemp(prefix="bench-decided-")
    os.makedirs(work, exist_ok=True)
    bins = ([(a.base_label, a.base)] if a.base else []) + [("after", a.bin)]
    print(f"Seeds: {a.seeds} a family; noise 1 % with 2 % outliers of +5-10 %, threshold 1 %, "
          f"repeats 5. Binaries: " + ", ".join(f"{l} = `{os.path.relpath(b, ROOT) if b.startswith(ROOT) else b}`"
                                               for l, b in bins) + ".\n")
    cols = " | ".join(f"{l}: decided | right | runs | s" for l, _ in bins)
    head = f"| family | {cols} |" + (" after ÷ before, runs on ranges decided before |" if a.base else "")
    ncol = 1 + 4 * len(bins) + (1 if a.base else 0)
    print(head)
    print("|" + "---|" + "---:|" * (ncol - 1))
    worst = []
    for family in a.families.split(","):
        res = {l: [] for l, _ in bins}
        for seed in range(a.seeds):
            d, ids, step_at = make_repo(a.bin, family, seed, work)
            for l, b in bins:
                res[l].append(one(b, family, d, ids, step_at, l))
            for l, _ in bins:
                r = res[l][-1]
                if not (r["decided"] and r["right"]):
                    worst.append(f"{family} seed {seed} ({l}): decided {r['decided']}, right {r['right']}"
                                 + (f", {r['skips']} skips" if r.get("skips") else ""))
            shutil.rmtree(d, ignore_errors=True)
        n = len(res[bins[-1][0]])
        pct = lambda xs, k: f"{100.0 * sum(bool(x[k]) for x in xs) / len(xs):.0f} %"
        mean = lambda xs, k: sum(x[k] for x in xs) / max(len(xs), 1)
        cells = []
        for l, _ in bins:
            xs = res[l]
            cells.append(f"{pct(xs, 'decided')} | {pct(xs, 'right')} | {mean(xs, 'runs'):.0f} | {mean(xs, 'secs'):.1f}")
        row = f"| {family} ({n}) | " + " | ".join(cells) + " |"
        if a.base:
            before, after = res[a.base_label], res["after"]
            pairs = [(x, y) for x, y in zip(before, after) if x["decided"]]
            if pairs:
                ratio = sum(y["runs"] for _, y in pairs) / max(sum(x["runs"] for x, _ in pairs), 1)
                row += f" {ratio:.2f} ({len(pairs)}) |"
            else:
                row += " - |"
        print(row, flush=True)
    if worst:
        print("\nNot decided, or not right:\n")
        for w in worst:
            print(f"- {w}")
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
