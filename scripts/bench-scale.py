#!/usr/bin/env python3
"""Years of cron rounds: the cost of commands over a store of millions of imported samples.

Builds a 2,000-commit repository of a small C program, writes a cron CSV of SAMPLES rows
(default 10,000,000: 4 tests x 2,000 commits x 1,250 rounds, round after round as a cron job
writes them), imports it, and measures, each with its peak RSS (from wait4) and wall time:

  import                       target <= 2 s per million rows, <= 300 MB whatever the size
                               (reference: `wc -l` reading the same file)
  run value HEAD --again       target <= 100 MB, <= 0.3 s before the first run starts
                               (reference: `perfbisect --version`, the process floor)
  show value <50 commits>      target <= 100 MB, <= 0.3 s
  detect value                 target <= 1 s over the 2,000 commits
                               (reference: `cat` of the test's store file)
  triage all (no search)       the nightly sheriff's change points of the 4 tests over the
                               store, every search left for later (--max-builds 0)

With BASE=/path/to/an/earlier/perfbisect, `detect` and `triage` also run with that binary on
the same store, in turns with this build's (reference: the build before a change).

and the bytes on disk per stored sample (store and index).
Usage: scripts/bench-scale.py   (SAMPLES=N for another size, KEEP=1 to keep the repository and
                                 cache; needs git, cc, python3)
"""
import os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Its figures go to section `scale` of src/guide/benchmarks.md, with the date and the machine
# (scripts/bench-page.py runs this script again and writes what it printed); not for --help.
if os.environ.get("BENCH_PAGE") != "off" and not {"-h", "--help"} & set(sys.argv[1:]):
    os.execvp(sys.executable, [sys.executable, os.path.join(ROOT, "scripts", "bench-page.py"), "scale",
                               "--", sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
SAMPLES = int(os.environ.get("SAMPLES", "10000000"))
COMMITS, TESTS = 2000, ["value", "rss", "speed", "size"]


def measure(cmd):
    """(wall seconds, stdout) of one process (a reference: its memory is not asked)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err.decode()[-3000:]}")
    return wall, out.decode()


def measure_rss(cmd, ok=(0,)):
    """(wall seconds, peak RSS in MB, stdout) of one process, from wait4; exit codes `ok`."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) not in ok:
        sys.exit(f"{' '.join(cmd)} failed ({status}):\n{err.decode()[-3000:]}")
    return wall, ru.ru_maxrss / 1024, out.decode()


def main():
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    pb = os.path.join(ROOT, "target", "release", "perfbisect")
    work = tempfile.mkdtemp(prefix="pb-scale-")
    repo = os.path.join(work, "repo")
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    app = 'int main(void){ puts("value: 1000"); return 0; }\n'
    app = "#include <stdio.h>\n" + app
    out = []
    for i in range(1, COMMITS + 1):
        msg = f"Commit {i}\n"
        out.append(f"commit refs/heads/main\nmark :{i}\nauthor A <a@x> {1600000000+i} +0000\n"
                   f"committer A <a@x> {1600000000+i} +0000\ndata {len(msg)}\n{msg}")
        if i > 1:
            out.append(f"from :{i-1}\n")
        else:
            out.append(f"M 100644 inline app.c\ndata {len(app)}\n{app}\n")
        body = f"{i}\n"
        out.append(f"M 100644 inline n.txt\ndata {len(body)}\n{body}\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="".join(out).encode(), check=True)
    subprocess.run(["git", "-C", repo, "gc", "-q"], check=True)
    ids = subprocess.run(["git", "-C", repo, "rev-list", "--reverse", "main"], capture_output=True,
                         text=True, check=True).stdout.split()
    stamp = os.path.join(work, "first-run")
    config = os.path.join(work, "perfbisect.toml")
    with open(config, "w") as f:
        f.write('[build]\ncommand = "cc -O1 -o app app.c"\nartifacts = ["app"]\n')
        for t in TESTS:
            cmd = f"date +%s.%N >> {stamp}; ./app" if t == "value" else "./app"
            f.write(f'[tests.{t}]\ncommand = "{cmd}"\nmetric = {{ regex = "^value: ([0-9.]+)" }}\n'
                    f'repeats = 1\nthreshold = "2%"\n')
    cache = os.path.join(work, "cache")
    base = [pb, "--repo", repo, "--config", config, "--cache", cache, "--no-progress"]

    csv = os.path.join(work, "rounds.csv")
    rounds = SAMPLES // (COMMITS * len(TESTS))
    with open(csv, "w") as f:
        f.write("commit,test,value,timestamp,round,machine\n")
        ts = 1_700_000_000
        for r in range(rounds):
            lines = []
            for ci, c in enumerate(ids):
                step = 1000.0 if ci < COMMITS // 2 else 1100.0
                for t in TESTS:
                    lines.append(f"{c},{t},{step + (r * 7 + ci) % 13:.1f},{ts},R{r},cron-1\n")
                ts += 1
            f.write("".join(lines))
    rows = rounds * COMMITS * len(TESTS)
    mb = os.path.getsize(csv) / 1e6
    print(f"== {rows:,} cron rows ({mb:.0f} MB) of {len(TESTS)} tests on {COMMITS} commits")

    wc, _ = measure(["wc", "-l", csv])
    wall, rss, o = measure_rss(base + ["import", csv])
    print(f"import:  {wall:.2f} s ({wall / rows * 1e6:.2f} s per million rows), peak {rss:.0f} MB"
          f"  -- reference wc -l: {wc:.2f} s (ratio {wall / wc:.1f})")
    print(f"         {o.strip()}")
    again, rss2, o2 = measure_rss(base + ["import", csv])
    print(f"import again (nothing new): {again:.2f} s, peak {rss2:.0f} MB -- {o2.strip()[-60:]}")

    store = sum(os.path.getsize(os.path.join(cache, "results", f)) for f in os.listdir(os.path.join(cache, "results")) if f.endswith(".pbs"))
    idx = sum(os.path.getsize(os.path.join(cache, "results", f)) for f in os.listdir(os.path.join(cache, "results")) if f.endswith(".idx"))
    print(f"on disk: {store / rows:.1f} bytes per sample in the store, {idx / rows:.1f} in its index")

    floor, _ = measure([pb, "--version"])
    # Build HEAD and a first round, then the cron round that is measured.
    measure(base + ["run", "value", "HEAD"])
    starts = []
    for _ in range(3):
        if os.path.exists(stamp):
            os.remove(stamp)
        t0 = time.time()
        wall, rss, _ = measure_rss(base + ["run", "value", "HEAD", "--again"])
        first = float(open(stamp).read().split()[0])
        starts.append((first - t0, wall, rss))
    s, w, r = sorted(starts)[1]
    print(f"run value HEAD --again: {s:.3f} s before the first run, {w:.3f} s in all, peak {r:.0f} MB"
          f"  -- reference perfbisect --version: {floor:.3f} s")

    shows = sorted(measure_rss(base + ["show", "value", f"{ids[-51]}..{ids[-1]}"])[:2] for _ in range(3))
    w, r = shows[1]
    print(f"show value (50 commits): {w:.3f} s, peak {r:.0f} MB")
    dets = sorted(measure_rss(base + ["detect", "value"])[:2] for _ in range(3))
    w, r = dets[1]
    # The floor of any read of every sample: the store file's bytes through a pipe.
    store_file = os.path.join(cache, "results", "value.pbs")
    cat = sorted(measure(["sh", "-c", f"cat '{store_file}' | wc -c"])[0] for _ in range(3))[1]
    print(f"detect value ({COMMITS} commits, {rows // len(TESTS):,} samples): {w:.3f} s, peak {r:.0f} MB"
          f"  -- reference cat of its store: {cat:.3f} s (ratio {w / cat:.1f})")
    # The nightly sheriff over the same store: every test's change points, no search (what
    # is left is said; exit 1 says searches are pending).
    others = [("this build", pb)]
    if os.environ.get("BASE"):
        others.append(("BASE " + os.environ["BASE"], os.environ["BASE"]))
    for what, args in [("detect value", ["detect", "value"]),
                       ("triage all (no search)", ["triage", "all", "--max-builds", "0"])]:
        got = {name: [] for name, _ in others}
        for _ in range(3):
            for name, binary in others:
                got[name].append(measure_rss([binary] + base[1:] + args, ok=(0, 1, 3))[:2])
        for name, _ in others:
            w, r = sorted(got[name])[1]
            print(f"{what} with {name}: {w:.3f} s, peak {r:.0f} MB")
    if os.environ.get("KEEP"):
        print(f"(kept: {work})", file=sys.stderr)
    else:
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
