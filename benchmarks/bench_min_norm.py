"""fa-resnet robust curves against an independent minimum-norm battery (docs/image-benchmarks.md, issue 49).

    featlab run fa-resnet-digits keep_checkpoints=true --out OUT
    python benchmarks/bench_min_norm.py OUT/fa-resnet-digits/<run-id> [more run folders on the same nets]

The nets are rebuilt from the run's kept checkpoints, the points are the run's attacked test images, and
independent implementations of minimum-norm attacks attack the binary read-out (its two-logit wrapper
[LSE_{J−}, LSE_{J+}]): adv-lib's FMN-ℓ2, DDN and ALMA-ℓ2 (``pip install --no-deps adv-lib``; imported without
its optional torchvision/visdom parts) and torchattacks' FAB-ℓ2, each with a longer schedule than featlab's.
Every point they return is re-judged with featlab's own score and acceptance rule (misclassified by sgn of the
score, in the pixel box, ‖δ‖ ≤ r with featlab's 1e-5 relative slack). Each run's curve (from its attacks.parquet)
is compared with the union of every run's breaks and the battery's: the excess (run − union, seed mean, points) at
every radius, per arm.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from featlab.data.images import load_images
from featlab.nn.twolayer import logit_margin_readout
from featlab.probes.apgd import group_logits
from featlab.probes.robustness import correct
from featlab.train.image_config import build_model


def advlib(name: str, module: str):
    """An adv-lib attack without importing adv_lib.attacks' package (which needs torchvision and visdom)."""
    spec = importlib.util.find_spec("adv_lib")
    if spec is None:
        return None
    root = spec.submodule_search_locations[0]
    if "adv_lib.attacks" not in sys.modules:
        pkg = types.ModuleType("adv_lib.attacks")
        pkg.__path__ = [root + "/attacks"]
        sys.modules["adv_lib.attacks"] = pkg
    for stub in ("visdom", "torchvision"):  # adv-lib's loggers and its LPIPS distance import them; neither is used
        if stub not in sys.modules and importlib.util.find_spec(stub) is None:
            mod = types.ModuleType(stub)
            mod.models = None  # 'from torchvision import models'
            sys.modules[stub] = mod
    return getattr(importlib.import_module(f"adv_lib.attacks.{module}"), name)


def battery(steps: int):
    """name → attack(model2, x, label01) → x_adv."""
    out = {}
    fmn, ddn = advlib("fmn", "fast_minimum_norm"), advlib("ddn", "decoupled_direction_norm")
    if fmn is not None:
        alma = advlib("alma", "augmented_lagrangian")
        out["advlib-fmn"] = lambda m, x, t: fmn(m, x, t, norm=2, steps=steps)
        out["advlib-ddn"] = lambda m, x, t: ddn(m, x, t, steps=steps)
        # ALMA's DLR needs 3 logits: a third below both, min − 1 (the ratio then is diff/(|diff| + 1)); its ℓ2
        # settings for MNIST-like data (α = 0.5, ε = 1: Rony et al. 2021, §5), half its 1000 steps
        out["advlib-alma"] = lambda m, x, t: alma(lambda z: (lambda o: torch.cat([o, o.min(1, keepdim=True).values
                                                                                  - 1], 1))(m(z)), x, t,
                                                  num_steps=steps // 2, α=0.5, init_lr_distance=1.0)
    try:
        import torchattacks
    except ImportError:
        torchattacks = None
    if torchattacks is not None:
        def fab(m, x, t):
            class M(torch.nn.Module):
                def forward(self, z):
                    return m(z)
            return torchattacks.FAB(M(), norm="L2", steps=steps // 10, n_restarts=1, n_classes=2, eps=1.0)(x, t)
        out["torchattacks-fab"] = fab
    return out


def nets(run: Path):
    """(cfg dict, data, pos_mask, [(seed, head, model)]) from a run folder with kept checkpoints."""
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    data = load_images(cfg["dataset"] if "dataset" in cfg else "digits", cfg.get("data_root", "data"))
    pos = torch.zeros(data.num_classes, dtype=torch.bool)
    pos[cfg.get("positive", [0, 1, 2, 3, 4])] = True
    ck = run.parent / ".checkpoints" / run.name
    out = []
    for s in range(cfg["seed"], cfg["seed"] + cfg["seeds"]):
        for head in ("binary", "multiclass"):
            m = build_model(cfg["model"], data.shape[0], 2 if head == "binary" else data.num_classes, cfg["width"], s,
                            normalize=(data.mean, data.std))
            m.load_state_dict(torch.load(ck / f"{head}-seed{s}.pt", map_location="cpu", weights_only=True)["model"])
            out.append((s, head, m.eval().requires_grad_(False)))
    return cfg, data, pos, out


def independent_breaks(run: Path, steps: int, skip: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per (arm, seed, point): each battery attack's verified distance (inf where it found none); ``skip``: the
    attacks not to run (already cached)."""
    cfg, data, pos, models = nets(run)
    n = cfg["n_attack"] or len(data.y_test)
    x, y = data.x_test[:n], pos[data.y_test[:n]].double() * 2 - 1
    rows = []
    for seed, head, m in models:
        score = (lambda z, m=m: (lambda o: o[:, 1] - o[:, 0])(m(z))) if head == "binary" else \
            (lambda z, m=m: logit_margin_readout(m(z), pos))
        two = (lambda z, m=m: m(z)) if head == "binary" else (lambda z, m=m: group_logits(m(z), pos))
        row = {"arm": [head] * n, "seed": [seed] * n, "point": list(range(n))}
        for name, atk in battery(steps).items():
            if name in skip:
                continue
            t = time.time()
            torch.manual_seed(seed)
            xa = atk(two, x.clone(), (y > 0).long()).detach()
            with torch.no_grad():
                ok = ~correct(score(xa).double(), y) & ((xa >= 0) & (xa <= 1)).flatten(1).all(1)
            d = (xa - x).flatten(1).norm(dim=1).double()
            row[name] = torch.where(ok & correct(score(x).double(), y), d, torch.inf).tolist()
            print(f"{head} seed {seed} {name}: {int(ok.sum())} broken, {time.time() - t:.1f}s", file=sys.stderr)
        rows.append(pd.DataFrame(row))
    return pd.concat(rows, ignore_index=True)


def _own(run: Path) -> pd.DataFrame:
    """A run's break radius per (arm, seed, point): its attacks' smallest, 0 where misclassified at x."""
    att = pd.read_parquet(run / "attacks.parquet")
    rcols = [c for c in att.columns if c.startswith("r_")]
    return att.assign(own=att[rcols].min(axis=1).where(att.clean_correct, 0.0))[["arm", "seed", "point", "own",
                                                                                   "clean_correct"]]


def compare(run: Path, ind: pd.DataFrame, others: list[Path] = ()) -> dict:
    """Per arm and radius: the run's robust accuracy and the union's (seed means), and the points moved. The union:
    the run's breaks, the battery's and those of the ``others`` runs (on the same nets and points)."""
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    radii = [float(r) for r in cfg["radii"]]
    att = _own(run).merge(ind, on=["arm", "seed", "point"])
    own = att["own"].to_numpy()
    for o in others:
        att = att.merge(_own(o)[["arm", "seed", "point", "own"]].rename(columns={"own": f"own_{o.name}"}),
                        on=["arm", "seed", "point"])
    names = [c for c in ind.columns if c not in ("arm", "seed", "point")]
    d = att[names].min(axis=1).to_numpy()
    grid = np.array(radii)
    ind_r = np.array([grid[grid * (1 + 1e-5) + 1e-12 >= v].min() if np.isfinite(v) and v <= grid.max() * (1 + 1e-5)
                      else np.inf for v in d])
    union = np.minimum(own, ind_r)
    for o in others:
        union = np.minimum(union, att[f"own_{o.name}"].to_numpy())
    out = {}
    for arm in ("binary", "multiclass"):
        sel = (att.arm == arm).to_numpy()
        res = {"radius": radii, "run": [], "union": [], "excess_pp": [], "moved": int((union[sel] < own[sel]).sum())}
        for r in radii:
            a = [float((own[sel & (att.seed == s).to_numpy()] > r).mean()) for s in sorted(att.seed.unique())]
            u = [float((union[sel & (att.seed == s).to_numpy()] > r).mean()) for s in sorted(att.seed.unique())]
            res["run"].append(round(float(np.mean(a)), 4))
            res["union"].append(round(float(np.mean(u)), 4))
            res["excess_pp"].append(round(100 * (float(np.mean(a)) - float(np.mean(u))), 2))
        res["max_excess_pp"] = max(res["excess_pp"])
        out[arm] = res
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (the first's checkpoints rebuild the nets)")
    p.add_argument("--steps", type=int, default=1000, help="the battery's iterations (FAB: a tenth)")
    p.add_argument("--cache", type=Path, default=None, help="parquet of the battery's distances (reused if present)")
    p.add_argument("--json", type=Path, default=None, help="also write the comparison here")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    ind = pd.read_parquet(a.cache) if a.cache is not None and a.cache.exists() else None
    have = () if ind is None else tuple(ind.columns)
    if set(battery(a.steps)) - set(have):
        new = independent_breaks(a.runs[0], a.steps, skip=have)
        ind = new if ind is None else ind.merge(new, on=["arm", "seed", "point"])
        if a.cache is not None:
            ind.to_parquet(a.cache, index=False)
    res = {str(r): compare(r, ind, [o for o in a.runs if o != r]) for r in a.runs}
    text = json.dumps(res, indent=1)
    if a.json is not None:
        a.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
