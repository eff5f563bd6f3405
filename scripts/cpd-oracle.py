#!/usr/bin/env python3
"""What no change-point detector can beat on a cpd harness set: bounds from the ground truth.

For every true change of a set made by the shared harness's gen.py, an oracle that is told
what a detector has to find out:

* detection: the oracle knows the commit of every change and the noise, and tests each change
  alone with a z test on the means of the two true neighbouring segments (clean Gaussian data,
  no outliers, no drift). P(detect) = Phi(|shift| / se - z_crit). At z_crit = 1.96 (a single
  test at 5 %) this is far more generous than any detector that must also search the positions;
  at 3.29 it matches one test at 0.1 % (perfbisect's alpha) with no search at all.
* location: the oracle also knows both levels and places the boundary by maximum likelihood,
  the Bayes-optimal rule for a uniform prior, simulated on clean Gaussian samples: P(exact commit)
  and P(within +-5 commits, the harness's margin).

Outliers and drift only remove information (the harness's samples are the clean ones plus
independent disturbances), so these are upper bounds for the harness's data too.

Printed per size: the oracle's recall within the margin and the F1 it would reach with perfect
precision (bounds on any detector's F1), and the oracle's exact-commit share on the very changes
the tool matched (a bound on the tool's "exact" column). Pass the tool's records.jsonl from
run_anchors.py to compare. Last, the tool's false positives per 1,000 commits on the series with
drift or outliers (the issue's third target).

  cd HARNESS_DIR && python PATH/TO/scripts/cpd-oracle.py DATA_DIR RECORDS.jsonl
(needs numpy and the harness's run_anchors.py, whose matching it uses, in the working directory;
seeded: reproducible)
"""
import glob
import json
import math
import os
import sys
from statistics import NormalDist

import numpy as np

sys.path.insert(0, os.getcwd())
from run_anchors import match_dist  # noqa: E402  (the harness's one-to-one matching)

MARGIN = 5
Z_CRITS = (1.96, 3.29)
SIMS = 4000
SIDE = 150  # commits simulated on each side: the likelihood walks never come back from further


def location_probs(rng, before, after, cv, reps, left, right):
    """P(MLE boundary = true commit), P(|error| <= MARGIN) with known levels and noise."""
    left, right = min(left, SIDE), min(right, SIDE)
    sb, sa = cv * before / math.sqrt(reps), cv * after / math.sqrt(reps)
    xl = before + rng.standard_normal((SIMS, left)) * sb
    xr = after + rng.standard_normal((SIMS, right)) * sa

    def loglik(x, mu, s):
        return -0.5 * ((x - mu) / s) ** 2 - math.log(s)

    # Gain in log-likelihood of moving the boundary k commits to the left / right.
    gain_l = np.cumsum((loglik(xl, after, sa) - loglik(xl, before, sb))[:, ::-1], axis=1)
    gain_r = np.cumsum(loglik(xr, before, sb) - loglik(xr, after, sa), axis=1)[:, :-1]
    zero = np.zeros((SIMS, 1))
    gl = np.concatenate([zero, gain_l], axis=1)
    gr = np.concatenate([zero, gain_r], axis=1)
    err = np.where(gl.max(axis=1) > gr.max(axis=1), gl.argmax(axis=1), gr.argmax(axis=1))
    return float((err == 0).mean()), float((err <= MARGIN).mean())


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data, records = sys.argv[1], sys.argv[2]
    pred = {}
    with open(records) as f:
        for line in f:
            r = json.loads(line)
            pred[r["id"]] = r.get("pred") or []
    rng = np.random.default_rng(20261129)
    phi = NormalDist().cdf
    sizes = {}
    for path in sorted(glob.glob(os.path.join(data, "n*_*.json"))):
        t = json.load(open(path))
        if t["id"] not in pred:
            continue
        n, cps, reps, cv = t["n"], t["change_points"], t["repeats"], t["cv"]
        got = dict(zip(sorted(cps), match_dist(cps, pred[t["id"]], MARGIN)))
        s = sizes.setdefault(n, {"true": 0, "pred": 0, "tp": 0, "exact": 0, "or_exact": 0.0,
                                 "rec": {z: 0.0 for z in Z_CRITS},
                                 "noisy_fp": 0, "noisy_commits": 0})
        s["pred"] += len(pred[t["id"]])
        if t["outliers"] or t["drift"]:
            hits = sum(d is not None for d in got.values())
            s["noisy_fp"] += len(pred[t["id"]]) - hits
            s["noisy_commits"] += n
        for i, c in enumerate(t["changes"]):
            tau = c["index"]
            left = tau - (cps[i - 1] if i else 0)
            right = (cps[i + 1] if i + 1 < len(cps) else n) - tau
            b, a = c["before"], c["after"]
            se = cv * math.sqrt(b * b / (reps * left) + a * a / (reps * right))
            p_exact, p_near = location_probs(rng, b, a, cv, reps, left, right)
            s["true"] += 1
            for z in Z_CRITS:
                s["rec"][z] += phi(abs(a - b) / se - z) * p_near
            d = got[tau]
            if d is not None:
                s["tp"] += 1
                s["exact"] += d == 0
                s["or_exact"] += p_exact
    print(f"| n | true changes | tool P | tool R | tool F1 | "
          + " | ".join(f"oracle R, F1 (z {z})" for z in Z_CRITS)
          + " | tool exact | oracle exact on the tool's matches |")
    print("|---:" * (7 + len(Z_CRITS)) + "|")
    tot = {"tp": 0, "exact": 0, "or_exact": 0.0, "noisy_fp": 0, "noisy_commits": 0}
    for n, s in sorted(sizes.items()):
        p = s["tp"] / s["pred"] if s["pred"] else 1.0
        r = s["tp"] / s["true"] if s["true"] else 1.0
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        bounds = []
        for z in Z_CRITS:
            orr = s["rec"][z] / s["true"] if s["true"] else 1.0
            bounds.append(f"{orr:.3f}, {2 * orr / (1 + orr):.3f}")
        tp = max(1, s["tp"])
        print(f"| {n} | {s['true']} | {p:.3f} | {r:.3f} | {f1:.3f} | " + " | ".join(bounds)
              + f" | {s['exact'] / tp:.3f} | {s['or_exact'] / tp:.3f} |")
        for k in tot:
            tot[k] += s[k]
    tp = max(1, tot["tp"])
    per_k = lambda s: 1000 * s["noisy_fp"] / max(1, s["noisy_commits"])  # noqa: E731
    print("\nfalse positives per 1,000 commits on series with drift or outliers: "
          + ", ".join(f"n={n} {per_k(s):.2f} ({s['noisy_fp']})" for n, s in sorted(sizes.items()))
          + f"; all sizes {per_k(tot):.2f}")
    print(f"all sizes: tool exact {tot['exact'] / tp:.3f}, "
          f"oracle exact on the same {tot['tp']} matched changes {tot['or_exact'] / tp:.3f}")


if __name__ == "__main__":
    main()
