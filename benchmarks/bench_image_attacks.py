"""Cost of each attack of the image ensemble per point and per step, against the dense ℓ2 PGD step.

    python benchmarks/bench_image_attacks.py [--n 64] [--size 28] [--width 16] [--steps 20] [--threads 1]
                                             [--repeats 3]

A SmallCNN (random weights: timing only; every attack runs its full budget because the attacks are given radius
0.05, where few points break) on (n, 1, size, size) images, binary score o_1 − o_0 (k = 4 classes for APGD-T,
J+ = {2, 3}). A "step" is one gradient step (PGD, APGD, APGD-T per target, DDN) or one query (Square: a forward
pass only). Prints the median seconds per point and step and the ratio to PGD's, plus the whole ensemble per
point at the default budget scaled to ``--steps``, as JSON.
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
    print(json.dumps({
        "shape": [a.n, 1, a.size, a.size], "width": a.width, "steps": S, "threads": a.threads,
        "us_per_point_step": {k: round(v * 1e6, 2) for k, v in per.items()},
        "ratio_to_pgd_step": {k: round(v / per["pgd"], 3) for k, v in per.items()},
        "ensemble_per_point_s": round(ens, 5),
        "ensemble_over_one_pgd_run": round(ens / pgd_pt, 2),
        "ensemble_budget": {"apgd-ce": S, "apgd-t": S, "ddn": S, "square_queries": 5 * S},
    }, indent=2))


if __name__ == "__main__":
    main()
