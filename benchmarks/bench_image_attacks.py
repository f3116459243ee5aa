"""Cost of each attack of the image ensemble per point and per step, against the dense ℓ2 PGD step.

    python benchmarks/bench_image_attacks.py [--n 64] [--size 28] [--width 16] [--steps 20] [--threads 1]
                                             [--repeats 3]

A SmallCNN (random weights: timing only; every attack runs its full budget because the attacks are given radius
0.05, where few points break) on (n, 1, size, size) images, binary score o_1 − o_0 (k = 4 classes for APGD-T,
J+ = {2, 3}). A "step" is one gradient step (PGD, APGD, APGD-T per target, DDN) or one query (Square: a forward
pass only). Prints the median seconds per point and step and the ratio to PGD's, plus the whole ensemble per
point at the default budget scaled to ``--steps``, as JSON. ``curve``: a robust-accuracy curve over 6 radii
(fa-resnet's protocol: margin PGD on its survivors, then the ensemble) — run independently, as a cascade and with
the frontier search — each against margin PGD's curve alone, with the worst-case accuracies they reach.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from featlab.nn.smallcnn import SmallCNN
from featlab.probes.apgd import apgd_l2, apgd_targeted, group_logits
from featlab.probes.ensemble import AttackBudget, robust_masks_ensemble
from featlab.probes.min_norm import ddn_l2
from featlab.probes.robustness import pgd_l2
from featlab.probes.square import square_l2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--size", type=int, default=28)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = SmallCNN(1, 4, a.width).eval().requires_grad_(False)
    pos = torch.tensor([False, False, True, True])
    score = lambda z: (lambda G: G[..., 1] - G[..., 0])(group_logits(net(z), pos))
    g = torch.Generator().manual_seed(0)
    x = torch.rand(a.n, 1, a.size, a.size, generator=g)
    with torch.no_grad():  # centre the score on the data (a random net's is nearly constant): points near the boundary
        s0 = score(x).median()
    raw = score
    score = lambda z: raw(z) - s0
    y = torch.where(score(x) > 0, 1.0, -1.0)  # every point correct: every attack runs on all of them
    S, eps, gen = a.steps, 0.05, lambda: torch.Generator().manual_seed(1)
    kw = dict(event_dims=3, clip=(0.0, 1.0))
    arms = {  # name → (callable, number of steps it takes)
        "pgd": (lambda: pgd_l2(score, x, y, eps, steps=S, generator=gen(), **kw), S + 1),
        "apgd-ce": (lambda: apgd_l2(score, x, y, eps, steps=S, generator=gen(), **kw), S + 1),
        "apgd-t (per target)": (lambda: apgd_targeted(net, pos, x, y, eps, n_targets=1, steps=S, generator=gen(),
                                                      **kw), S + 1),
        "ddn": (lambda: ddn_l2(score, x, y, steps=S, max_norm=eps, alpha=eps, init_norm=eps / 2, **kw), S + 1),
        "square (per query)": (lambda: square_l2(score, x, y, eps, queries=5 * S, generator=gen()), 5 * S + 1),
    }
    times: dict[str, list[float]] = {k: [] for k in arms}
    for _ in range(a.repeats):
        for name, (fn, _) in arms.items():  # interleaved, so load changes hit every arm alike
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    per = {k: statistics.median(v) / (a.n * arms[k][1]) for k, v in times.items()}
    budget = AttackBudget(steps=S, queries=5 * S, ddn_steps=S, n_targets=1, large_radius=0)
    t = time.perf_counter()
    robust_masks_ensemble(score, x, y, [0.0, eps], budget=budget, logits=net, positive=pos, generator=gen())
    ens = (time.perf_counter() - t) / a.n
    t = time.perf_counter()
    pgd_l2(score, x, y, eps, steps=S, generator=gen(), **kw)
    pgd_pt = (time.perf_counter() - t) / a.n
    curve = _curve(score, net, pos, x, y, S, eps, kw)
    print(json.dumps({
        "shape": [a.n, 1, a.size, a.size], "width": a.width, "steps": S, "threads": a.threads,
        "us_per_point_step": {k: round(v * 1e6, 2) for k, v in per.items()},
        "ratio_to_pgd_step": {k: round(v / per["pgd"], 3) for k, v in per.items()},
        "ensemble_per_point_s": round(ens, 5),
        "ensemble_over_one_pgd_run": round(ens / pgd_pt, 2),
        "ensemble_budget": {"apgd-ce": S, "apgd-t": S, "ddn": S, "square_queries": 5 * S},
        "curve": curve,
    }, indent=2))


def _curve(score, net, pos, x, y, S: int, eps: float, kw) -> dict:
    """Seconds of a 6-radius curve per mode (ratio to margin PGD's curve) and the worst-case accuracy it reaches;
    radii at the 10–90 % quantiles of DDN's distances, so the curve falls from 100 % to about 10 %."""
    _, dist = ddn_l2(score, x, y, steps=4 * S, max_norm=64 * eps, alpha=64 * eps, init_norm=eps, **kw)
    fin = dist[torch.isfinite(dist)]
    q = fin.quantile(torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=fin.dtype)) if len(fin) else torch.ones(5) * eps
    radii = [0.0] + [round(float(v), 4) for v in q]
    budget = AttackBudget(steps=S, queries=S, ddn_steps=S, n_targets=1, large_radius=0, pgd_steps=S,
                          attacks=("pgd", "apgd-ce", "apgd-t", "ddn", "square"))
    modes = {"pgd": dict(budget=AttackBudget(attacks=("pgd",), pgd_steps=S, large_radius=0)),
             "independent": dict(budget=budget), "cascade": dict(budget=budget, cascade=True),
             "frontier": dict(budget=budget, frontier=True)}
    out = {}
    for name, m in modes.items():
        t = time.perf_counter()
        res = robust_masks_ensemble(score, x, y, radii, logits=net, positive=pos, generator=torch.Generator()
                                    .manual_seed(1), **kw, **m)
        out[name] = {"s": round(time.perf_counter() - t, 3),
                     "worst_acc": [round(float(v), 3) for v in res.worst.double().mean(-1)]}
    for v in out.values():
        v["ratio_to_pgd_curve"] = round(v["s"] / out["pgd"]["s"], 2)
    return {"radii": radii, **out}


if __name__ == "__main__":
    main()
