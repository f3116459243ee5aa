"""fa-resnet-*: Feature Averaging §6.2 on images (Fig 3 middle/right). A deep network trained on 2-class labels
is less ℓ2-robust, read out as the binary classifier, than the same network trained on the 10 classes.

Decisions where the paper is silent (each is a config field; see docs/image-benchmarks.md):
* CIFAR-style ResNet-18, in_channels = 1 for MNIST; normalisation inside the model so that radii are ℓ2 in
  [0, 1] pixel space; CIFAR augmentation random-crop 32 (pad 4) + flip, none for MNIST.
* the 2-class model has 2 logits + CE; its score is f_+ − f_−. The 10-class model is scored and attacked through
  G = logsumexp_{J+} f − logsumexp_{J−} f, whose sign is that of F^binary = Σ_{J+}p − Σ_{J−}p.
* ℓ2 PGD, 20 steps of 2.5·δ/20, uniform random start in the ball, 1 restart, pixels clipped to [0, 1]; radii
  attacked in increasing order on the survivors; the final-epoch model; J+ = classes 0–4. Both models of a seed
  draw the same random starts (a paired comparison).
* the comparative claims are judged on the test points both models classify correctly (deep_measures.py says
  why); the plain curves stay as metrics and in the figure.
* ``positive`` (J+) lists the datasets' own class labels, which are 0-based (digits 0–4; CIFAR-10 airplane,
  automobile, bird, cat, deer) — unlike fa-synthetic's clusters, which are numbered 1..k as in the paper.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field, model_validator

from ... import plotting
from ...config import check
from ...data.images import ImageData
from ...errors import DataError
from ...nn.twolayer import logit_margin_readout
from ...runs.claims import AtLeast, Claim, Control
from ...runs.registry import experiment
from ...text import table
from ...train.checkpoints import fingerprint_of, run_checkpoints
from ...train.image_config import ImageTrainFields, build_model, load_run_data
from ...train.image_trainer import fit, predict
from ...utils import torch_threads
from . import deep_measures as dm

# Fig 3 middle/right, read off the figure (±1 point): radii, robust accuracy (%) of the 10-class and 2-class models.
PAPER_FIG3 = {
    "mnist": ([round(0.1 * i, 2) for i in range(21)],
              [99.6, 99.3, 98.8, 98.4, 97.8, 96.7, 95.8, 94.5, 92.8, 90.5, 87.8, 84.5, 80.3, 75.1, 69.5, 62.9,
               55.9, 48.7, 41.4, 34.6, 28.1],
              [99.2, 98.8, 98.1, 97.3, 96.2, 94.7, 92.6, 90.2, 86.5, 81.5, 75.3, 67.9, 58.3, 48.6, 39.4, 31.0,
               23.7, 17.8, 12.8, 9.2, 7.0]),
    "cifar10": ([round(0.08 * i, 2) for i in range(11)],
                [98.4, 96.7, 94.2, 90.4, 85.4, 79.2, 72.2, 65.0, 57.4, 50.3, 43.6],
                [97.1, 94.6, 90.4, 84.5, 76.6, 67.6, 59.1, 50.6, 42.9, 36.6, 31.2]),
}


class FAResNetConfig(ImageTrainFields):
    NOT_TRAINING: ClassVar[frozenset[str]] = ImageTrainFields.NOT_TRAINING | {
        "radii", "n_attack", "pgd_steps", "pgd_step_factor", "pgd_restarts"}

    epochs: int = Field(100, ge=0, description="training epochs (0: both models at their init, the 'untrained' "
                        "control)")
    kclass_labels: Literal["fine", "coarse"] = Field(
        "fine", description="labels of the k-class arm: 'fine' (the k classes, §6.2) or 'coarse' (the 'coarse-labels' "
        "control: no fine-grained information, so the arm is the 2-class arm's training of the same seed)")
    dataset: Literal["digits", "mnist", "cifar10"] = Field("cifar10", description="dataset")
    positive: list[int] = Field([0, 1, 2, 3, 4], description="classes merged into the + label (J+): the dataset's "
                                "0-based class labels (fa-synthetic numbers its clusters 1..k instead)")
    augment: bool = Field(False, description="random-crop (pad 4) + horizontal flip during training")
    radii: list[float] = Field([round(0.08 * i, 2) for i in range(11)], description="ℓ2 radii in [0,1] pixel units")
    n_attack: int | None = Field(None, ge=1, description="attack the first n test images (None: all)")
    pgd_steps: int = Field(20, ge=1, description="PGD iterations per radius")
    pgd_step_factor: float = Field(2.5, gt=0, description="PGD step = factor·δ/steps")
    pgd_restarts: int = Field(1, ge=1, description="PGD restarts")

    @model_validator(mode="after")
    def _ok(self):
        check(len(self.radii) > 0 and all(r >= 0 for r in self.radii), "radii",
              f"must be a non-empty list of radii >= 0 (got {next((r for r in self.radii if r < 0), 'an empty list')})",
              "e.g. radii=[0,0.5,1]")
        check(len(set(self.positive)) == len(self.positive) and len(self.positive) > 0 and all(
            0 <= c for c in self.positive), "positive", "must list distinct class indices >= 0")
        return self


# ------------------------------------------------------------------------------------------ claims
CLAIMS = [
    Claim("fa.deep_kclass_more_robust", "on the test points both models classify correctly, the 10-class model's "
          "robust accuracy averaged over the radii > 0 exceeds the 2-class model's (pp, 10-class − 2-class)",
          "Fig 3, §6.2", AtLeast(lo=0, strict=True),
          why="§6.2: 'models trained with 10-class labels have higher robust test accuracy than those trained with "
              "2-class labels in all datasets'; strictly higher: > 0 pp. Measured where both are correct clean, so "
              "the 2-class model's lower clean accuracy does not count as non-robustness"),
    Claim("fa.deep_kclass_above_every_radius", "on the points both classify correctly, the 10-class curve is "
          "strictly above the 2-class curve at every radius > 0 where they are not both at 100 % or both at 0 % "
          "(smallest gap, pp)", "Fig 3", AtLeast(lo=0, strict=True),
          why="Fig 3: the blue curve is above the red one at every radius > 0 of all three panels (smallest gap "
              "0.5 pp, MNIST δ = 0.1). Strict, so that two identical models fail it (the former '≥ −1 pp', the "
              "figure's reading precision, held for identical models); radii where both curves sit at 100 % or "
              "0 % are left out, as Fig 3's grids stop before its curves get there"),
]
FIG3_EXPERIMENT = {"mnist": "fa-resnet-mnist", "cifar10": "fa-resnet-cifar10"}  # judges that dataset's Fig 3


def _fig3_clean(dataset: str) -> dict[str, float]:
    """Fig 3's clean (δ = 0) binary accuracy (%) of each model."""
    _, p10, p2 = PAPER_FIG3[dataset]
    return {"binary": p2[0], "multiclass": p10[0]}


def _clean_claims(dataset: str) -> list[Claim]:
    """fa.deep_<model>_clean: clean binary accuracy (%), balanced over the two labels, at least Fig 3's value at
    δ = 0 minus 1 pp."""
    return [Claim(f"fa.deep_{h}_clean", f"{h} model's clean binary test accuracy as in Fig 3 ({pv}%), balanced over "
                  "the two labels", "Fig 3", AtLeast(lo=pv - 1),
                  why="Fig 3 at δ = 0, read off the figure to ±1 pp. Balanced (the mean of the J+ and J− "
                      "accuracies): the same as plain accuracy on MNIST's and CIFAR-10's near-balanced test sets, but "
                      "a constant prediction scores 50 % (undefined when a label is missing), whatever the label mix")
            for h, pv in _fig3_clean(dataset).items()]


# ------------------------------------------------------------------------------------------ the experiment
def run_fa_resnet(ctx) -> None:
    cfg: FAResNetConfig = ctx.cfg
    with torch_threads(cfg.cpu_threads), run_checkpoints(ctx) as ck:
        data = load_run_data(ctx)
        pos_mask = _positive_mask(ctx, data.num_classes)
        masks: dict[str, list[torch.Tensor]] = {"binary": [], "multiclass": []}
        clean: dict[str, list[float]] = {k: [] for k in ("binary", "multiclass", "multiclass_kclass", "binary_balanced",
                                 "multiclass_balanced")}
        for seed in ctx.seeds:
            model, last = _train(ctx, data, pos_mask, "binary", seed, ck)
            clean["binary"].append(last["test_acc"])
            clean["binary_balanced"].append(last["test_acc_balanced"])
            masks["binary"].append(dm.measure_robustness(ctx, model, data, pos_mask, "binary", seed))
            coarse = cfg.kclass_labels == "coarse"
            if not coarse:  # §6.2: the k-class model, read out as F^binary
                model, last = _train(ctx, data, pos_mask, "multiclass", seed, ck)
            # coarse-labels control: the 2-class labels give the 2-class arm's training (same seed, same labels,
            # same init), so its network is reused and read out and attacked through the k-class path (G, J+ = {1})
            clean["multiclass"].append(last["test_acc"])
            clean["multiclass_balanced"].append(last["test_acc_balanced"])
            clean["multiclass_kclass"].append(math.nan if coarse else last["test_acc_kclass"])
            masks["multiclass"].append(dm.measure_robustness(
                ctx, model, data, pos_mask, "multiclass", seed,
                torch.tensor([False, True], device="cpu") if coarse else None))
        curves = dm.summarise(ctx, masks, clean)
        _draw(ctx, curves, data.num_classes)
        if cfg.smoke:
            ctx.note("smoke preset: the pipeline on digits for a few epochs; no claims (run --preset paper with "
                     "the data)")
            return
        ds = cfg.dataset
        judge_clean = ds in PAPER_FIG3 and ctx.experiment_id == FIG3_EXPERIMENT[ds]
        if ds in PAPER_FIG3 and not judge_clean:
            ctx.note(f"the clean accuracies of Fig 3 on {ds} are claims of {FIG3_EXPERIMENT[ds]}, not judged here")
        dm.judge(ctx, curves, clean, _fig3_clean(ds) if judge_clean else None)


def _positive_mask(ctx, k: int) -> torch.Tensor:
    """J+ as a (k,) boolean mask of the dataset's classes."""
    positive = ctx.cfg.positive
    if max(positive) >= k or len(positive) >= k:
        raise DataError(f"{ctx.experiment_id}: the 'positive' field must list classes below {k} and leave some "
                        f"out; got {positive}")
    pos_mask = torch.zeros(k, dtype=torch.bool, device="cpu")  # beside the labels, on the CPU
    pos_mask[positive] = True
    return pos_mask


def augment(x: torch.Tensor, g: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Random crop (zero padding ``pad``) and horizontal flip, per image, drawn from generator g."""
    n, c, h, w = x.shape
    xp = F.pad(x, (pad, pad, pad, pad))
    dev = g.device  # drawn where the generator lives, moved to the images
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=g, device=dev).to(x.device)
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=g, device=dev).to(x.device)
    flip = (torch.rand(n, generator=g, device=dev) < 0.5).to(x.device)
    rows = dy[:, None] + torch.arange(h, device=x.device)[None]
    cols = dx[:, None] + torch.arange(w, device=x.device)[None]
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    t = xp.gather(2, rows[:, None, :, None].expand(n, c, h, w + 2 * pad))
    return t.gather(3, cols[:, None, None, :].expand(n, c, h, w))


def _train(ctx, data: ImageData, pos_mask: torch.Tensor, head: str, seed: int, ck):
    """Train the 2-class (``binary``) or k-class (``multiclass``) model of one seed: (model, last epoch's row)."""
    cfg: FAResNetConfig = ctx.cfg
    k = data.num_classes
    labels = pos_mask[data.y_train].long() if head == "binary" else data.y_train  # binary target: 1 = J+
    model = build_model(cfg.model, data.shape[0], 2 if head == "binary" else k, cfg.width, seed,
                        normalize=(data.mean, data.std))

    def batch_fn(idx, g):
        x = data.x_train[idx]
        return (augment(x, g) if cfg.augment else x), labels[idx]

    def evaluate(m):
        logits = predict(m, data.x_test, cfg.eval_batch)
        y_pos = pos_mask[data.y_test]
        pred_pos = logits.argmax(-1) == 1 if head == "binary" else logit_margin_readout(logits, pos_mask) > 0
        row = {"test_acc": (pred_pos == y_pos).double().mean().item(),
               "test_acc_balanced": dm.balanced_accuracy(pred_pos, y_pos)}
        if head == "multiclass":
            row["test_acc_kclass"] = (logits.argmax(-1) == data.y_test).double().mean().item()
        return row

    if cfg.epochs == 0:  # the 'untrained' control: the network at its init
        model.eval()
        with torch.no_grad():
            return model, evaluate(model)
    res = ctx.trained(fit(model, batch_fn, len(data.y_train), cfg.fit_spec(), evaluate=evaluate, seed=seed,
                          device=ctx.device, checkpoint=ck / f"{head}-seed{seed}.pt",
                          fingerprint=fingerprint_of(ctx.experiment_id, cfg, head=head), desc=f"{head} seed {seed}",
                          prefix=f"{head}."))
    return model, res.history[-1]


def _draw(ctx, curves: dict[str, dict[str, torch.Tensor]], k: int) -> None:
    """The Fig 3 table (ours beside the paper's, and on the points both models classify correctly) and figure."""
    cfg: FAResNetConfig = ctx.cfg
    radii, paper = cfg.radii, PAPER_FIG3.get(cfg.dataset)
    A, S = curves["plain"], curves["both_correct"]

    def paper_at(values, r):
        return f"{values[paper[0].index(round(r, 2))]:.1f}" if paper and round(r, 2) in paper[0] else "—"

    rows = [[f"{r:g}", f"{100 * A['binary'][:, i].mean():.1f}", paper_at(paper[2] if paper else None, r),
             f"{100 * A['multiclass'][:, i].mean():.1f}", paper_at(paper[1] if paper else None, r),
             f"{100 * S['binary'][:, i].mean():.1f}", f"{100 * S['multiclass'][:, i].mean():.1f}"]
            for i, r in enumerate(radii)]
    ctx.note(f"Fig 3 ({cfg.dataset}): robust binary test accuracy (%), mean of {len(ctx.seeds)} seeds; the last two "
             f"columns on the points both models classify correctly (the claims' measurement)\n"
             + table(rows, ["radius", "2-class", "paper", "10-class", "paper", "2-cl both", "10-cl both"],
                     [7, 8, 6, 9, 6, 10, 10]))
    name = {"digits": "8×8 digits, small CNN", "mnist": "MNIST, ResNet-18", "cifar10": "CIFAR-10, ResNet-18"}
    lines = []
    for h, color, lab in (("binary", plotting.RED, "2-class labels"),
                          ("multiclass", plotting.BLUE, f"{k}-class labels")):
        lines.append(dict(label=f"{lab} (PGD)", mean=A[h].mean(0), std=A[h].std(0, correction=0), color=color,
                          paper=(paper[0], paper[2 if h == "binary" else 1]) if paper else None))
        lines.append(dict(label=f"{lab}, points both classify correctly", mean=S[h].mean(0), style="--",
                          std=S[h].std(0, correction=0), color=color))
    ctx.figure(plotting.robust_curves(radii, lines, [], f"{'SMOKE TEST: ' if cfg.smoke else ''}Robust test accuracy, "
                                   f"{name[cfg.dataset]} ({len(ctx.seeds)} seeds, ±1 std)"),
               f"fig3_{cfg.dataset}_robustness")


# ------------------------------------------------------------------------------------------ registration
FA_REF = "Fig 3 middle/right (§6.2)"
DIGITS_RADII = [round(0.05 * i, 2) for i in range(21)]  # 8×8 digits have 64 pixels (MNIST 784): a finer grid
FA_SUMMARY = "ResNet trained on 10-class labels is more ℓ2-robust (binary read-out) than on 2-class labels"
FA_MNIST: dict[str, Any] = {
    "dataset": "mnist", "model": "resnet18", "width": 64, "seeds": 1, "epochs": 100, "batch_size": 128,
    "optimizer": "sgd", "lr": 1e-3, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "none",
    "radii": [round(0.1 * i, 2) for i in range(21)]}
FA_CIFAR: dict[str, Any] = {
    "dataset": "cifar10", "model": "resnet18", "width": 64, "seeds": 1, "epochs": 200, "batch_size": 128,
    "optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "cosine",
    "augment": True, "radii": [round(0.08 * i, 2) for i in range(11)]}
COARSE = Control("coarse-labels", {"kclass_labels": "coarse", "seeds": 1},
                 "the k-class arm gets no fine-grained information: trained on the 2-class labels it is the 2-class "
                 "arm's training (same seed), read out and attacked through the k-class path; the two arms coincide, "
                 "so neither is more robust (one seed: they coincide for every seed)",
                 claims=tuple(c.id for c in CLAIMS))
TINY = {"seeds": 1, "epochs": 1, "width": 2, "augment": True, "radii": [0, 0.3], "n_attack": 8, "pgd_steps": 2}
UNTRAINED = Control("untrained", {"epochs": 0}, "epochs = 0: both networks at their random init, same data and "
                    "measurements; an untrained network is not accurate", claims=("fa.deep_binary_clean",
                                                                                    "fa.deep_multiclass_clean"))
experiment("fa-resnet-digits", paper="feature-averaging", reference=FA_REF + " on 8×8 digits",
           summary=FA_SUMMARY + " (8×8 digits, small CNN, CPU)", config=FAResNetConfig, claims=CLAIMS,
           controls=[COARSE],
           presets={"quick": {"dataset": "digits", "model": "smallcnn", "width": 16, "seeds": 3, "epochs": 30,
                              "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "cpu_threads": 1,
                              "weight_decay": 5e-4, "schedule": "cosine",
                              "radii": DIGITS_RADII[::2], "n_attack": 300},
                    "paper": {"dataset": "digits", "model": "smallcnn", "width": 32, "seeds": 5, "epochs": 100,
                              "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9,
                              "weight_decay": 5e-4, "schedule": "cosine", "radii": DIGITS_RADII}},
           tiny=TINY)(run_fa_resnet)
for _name, _p in (("fa-resnet-mnist", FA_MNIST), ("fa-resnet-cifar10", FA_CIFAR)):
    experiment(_name, paper="feature-averaging", reference=FA_REF, summary=FA_SUMMARY + f" ({_p['dataset']})",
               config=FAResNetConfig, claims=CLAIMS + _clean_claims(_p["dataset"]), controls=[COARSE, UNTRAINED],
               presets={"paper": dict(_p), "quick": {**_p, "dataset": "digits", "smoke": True, "model": "smallcnn",
                                                     "width": 16, "epochs": 8, "batch_size": 64, "lr": 0.05,
                                                     "augment": False, "cpu_threads": 1, "n_attack": 200,
                                                     "pgd_steps": 5}}, tiny=TINY)(run_fa_resnet)
