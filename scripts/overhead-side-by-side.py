#!/usr/bin/env python3
"""Per-run overhead of two perfbisect builds side by side, against hyperfine in the same run.

Usage: scripts/overhead-side-by-side.py BEFORE/perfbisect AFTER/perfbisect (each with its
perfbisect-launch beside it). 500 runs of `true` stored by `run --again`, the two builds and
`hyperfine --runs 500 true` alternated, medians of 7; then the median wall time each stored for
`true` (the number a wall-time test keeps). Figures in src/guide/benchmarks.md ("core").
"""
import subprocess, sys, time, os, tempfile
before, after = sys.argv[1], sys.argv[2]
runs = 500
work = tempfile.mkdtemp()
repo = f"{work}/repo"; os.makedirs(repo)
sh = lambda *a: subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sh("git", "init", "-q", "-b", "main", repo)
open(f"{repo}/file", "w").write("hi\n")
sh("git", "-C", repo, "add", "file")
sh("git", "-C", repo, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "one")
open(f"{work}/perfbisect.toml", "w").write(f'[build]\nartifacts = ["file"]\n[tests.trivial]\ncommand = "true"\nrepeats = {runs}\n')
def pb(b, cache): return [b, "--repo", repo, "--config", f"{work}/perfbisect.toml", "--cache", f"{work}/{cache}", "--no-progress", "-q"]
for b, c in [(before, "cb"), (after, "ca")]:
    sh(*pb(b, c), "run", "trivial", "HEAD")
def once(cmd):
    t = time.perf_counter(); subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); return time.perf_counter() - t
bs, as_, hs = [], [], []
for _ in range(7):
    bs.append(once(pb(before, "cb") + ["run", "trivial", "HEAD", "--again"]))
    as_.append(once(pb(after, "ca") + ["run", "trivial", "HEAD", "--again"]))
    hs.append(once(["hyperfine", "--runs", str(runs), "--style", "none", "true"]))
m = lambda v: sorted(v)[3] / runs * 1e3
print(f"before {m(bs):.3f} ms/run, after {m(as_):.3f} ms/run, hyperfine {m(hs):.3f} ms/run; ratios {m(bs)/m(hs):.2f} {m(as_)/m(hs):.2f}")
# wall time stored: median of the stored wall of `true` runs, from show --format json
import json
for b, c in [(before, "cb"), (after, "ca")]:
    out = subprocess.run(pb(b, c) + ["show", "trivial", "HEAD", "--format", "json"], capture_output=True, text=True).stdout
    j = json.loads(out)
    ws = sorted(s["wall"] for s in j["samples"] if s.get("wall") is not None)
    print(b, "stored wall median of `true`:", f"{ws[len(ws)//2]*1e3:.3f} ms" if ws else "n/a", "n", len(ws))
