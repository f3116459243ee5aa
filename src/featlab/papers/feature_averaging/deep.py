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
from pydantic import Field, ValidationInfo, field_validator, model_validator

from ... import plotting
from ...config import check
from ...data.images import ImageData
from ...errors import DataError
from ...nn.twolayer import logit_margin_readout
from ...placement import to_host, to_run
from ...runs.registry import experiment
from ...runs.resources import dataset_needs, image_needs
from ...text import table
from ...train.checkpoints import fingerprint_of, run_checkpoints
from ...train.image_config import ImageTrainFields, build_model, load_run_data
from ...train.image_trainer import fit, predict
from ...train.objectives import erm_objective
from ...utils import generator, torch_threads
from . import deep_measures as dm
from .deep_attack_config import AttackFields
from .deep_claims import (
    ATTACK,
    ATTACK_DIGITS,
    ATTACK_FMNIST,
    CLAIMS,
    COARSE,
    COARSE_DIGITS,
    FIG3_EXPERIMENT,
    FINE_SHUFFLED,
    PAPER_FIG3,
    RANDOM_LABELS,
    SAME_LABELS,
    SETTING_DIGITS,
    SETTING_FMNIST,
    SETTING_PAPER,
    TRAINED_DIGITS,
    UNTRAINED,
    clean_claims,
    fig3_clean,
)
from .diagnoses import diagnosed


class FAResNetConfig(AttackFields, ImageTrainFields):
    NOT_TRAINING: ClassVar[frozenset[str]] = ImageTrainFields.NOT_TRAINING | AttackFields.ATTACK_FIELDS

    seeds: int = Field(1, ge=1, description="independent runs [featlab's choice; the paper is silent: Fig 3 has no "
                       "error bars, as of one run]")
    epochs: int = Field(100, ge=0, description="training epochs (0: both models at their init, the 'untrained' "
                        "control)")
    kclass_labels: Literal["fine", "coarse", "shuffled"] = Field(
        "fine", description="labels of the k-class arm: 'fine' (the k classes, §6.2), 'coarse' (the 'coarse-labels' "
        "control: its k logits trained on the 2-class labels through Σ_{J+}p vs Σ_{J−}p) or 'shuffled' (the "
        "'fine-shuffled' control: each image's fine label re-drawn at random within its coarse class)")
    coarse_arm: bool = Field(True, description="also train, in the same run, a third arm: the k-class network (k "
                             "logits, read out through G) on the 2-class labels alone, attacked like the others, for "
                             "fa.deep_fine_minus_coarse (the fine labels' share of the gap, paired per test point "
                             "against the same read-out; issue 45) [featlab's choice; off in the quick presets, "
                             "whose suite time it would add to]")
    shuffle_labels: bool = Field(False, description="permute the training labels across images, once per seed (the "
                                 "'random-labels' control)")
    dataset: Literal["digits", "mnist", "fashionmnist", "cifar10"] = Field("cifar10", description="dataset")
    positive: list[int] = Field([0, 1, 2, 3, 4], description="classes merged into the + label (J+): the dataset's "
                                "0-based class labels (fa-synthetic numbers its clusters 1..k instead)")
    augment: bool | None = Field(None, validate_default=True, description="random-crop (pad 4) + horizontal flip "
                                 "in training; None: on for CIFAR-10 only [featlab's choice; the paper is silent]")
    @field_validator("augment")
    @classmethod
    def _augment(cls, v: bool | None, info: ValidationInfo) -> bool:
        return info.data.get("dataset") == "cifar10" if v is None else v

    @model_validator(mode="after")
    def _ok(self):
        check(len(self.radii) > 0 and all(r >= 0 for r in self.radii), "radii",
              f"must be a non-empty list of radii >= 0 (got {next((r for r in self.radii if r < 0), 'an empty list')})",
              "e.g. radii=[0,0.5,1]")
        check(len(set(self.positive)) == len(self.positive) and len(self.positive) > 0 and all(
            0 <= c for c in self.positive), "positive", "must list distinct class indices >= 0")
        return self

    def estimate(self) -> list:
        """Both nets (2-class and k-class) per seed, one after another, and the attacks on (eval_batch, image)
        batches: the forward and backward point-passes the attack schedule spends (``predicted_passes``; a
        forward-and-backward pair is a gradient step, three forward passes of work, a Square query one forward).
        And the dataset files it reads."""
        n_att = self.n_attack or (599 if self.dataset == "digits" else 10_000)  # the test sets' sizes
        passes = self.predicted_passes(n_att)
        square = sum(v for k, v in passes.items() if k.endswith("square"))
        steps = round(((sum(passes.values()) - square) / 2 + square / 3) / n_att)
        return (image_needs(self, arms=2 + self.coarse_arm, attack_points=n_att, attack_steps=steps)
                + dataset_needs(self))


# ------------------------------------------------------------------------------------------ the experiment
def run_fa_resnet(ctx) -> None:
    cfg: FAResNetConfig = ctx.cfg
    with torch_threads(cfg.cpu_threads), run_checkpoints(ctx) as ck:
        data = load_run_data(ctx)
        pos_mask = _positive_mask(ctx, data.num_classes)
        masks: dict[str, list[torch.Tensor]] = {"binary": [], "multiclass": []}
        atts: dict[str, list[dm.Attacked]] = {"binary": [], "multiclass": []}
        points: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {"binary": [], "multiclass": []}
        clean: dict[str, list[float]] = {k: [] for k in ("binary", "multiclass", "multiclass_kclass", "binary_balanced",
                                 "multiclass_balanced", "binary_train", "multiclass_train")}
        robust = ctx.judges(*(c.id for c in CLAIMS))
        for seed in ctx.seeds:
            y_train = _training_labels(cfg, data.y_train, pos_mask, seed)
            for head in ("binary", "multiclass"):
                model, last = _train(ctx, data, pos_mask, head, seed, ck, y_train[head])
                clean[head].append(last["test_acc"])
                clean[f"{head}_balanced"].append(last["test_acc_balanced"])
                if head == "multiclass":
                    clean["multiclass_kclass"].append(last.get("test_acc_kclass", math.nan))
                tr, te = dm.readout_points(model, head, pos_mask, data, y_train["binary"].bool(), cfg.eval_batch)
                clean[f"{head}_train"].append(float(tr.double().mean()))
                points[head].append((te, pos_mask[data.y_test]))
                # §6.2: the 2-class model, and the k-class model read out as F^binary
                if robust:
                    atts[head].append(dm.measure_robustness(ctx, model, data, pos_mask, head, seed))
                masks[head].append(atts[head][-1].worst if robust else
                                   torch.zeros(1 + len(cfg.radii), 0, dtype=torch.bool))
        coarse = _coarse_arm(ctx, data, pos_mask, ck) if cfg.coarse_arm and not cfg.smoke else None
        curves = dm.summarise(ctx, masks, clean)
        pgd = {h: [a.pgd for a in atts[h] if a.pgd is not None] for h in atts}  # the 'full' schedule: PGD alone
        converged = dm.record_attacks(ctx, {**atts, **({"coarse": coarse[1]} if coarse else {})})
        if robust and all(len(pgd[h]) == len(atts[h]) for h in atts):
            dm.pgd_comparison(ctx, pgd)
            curves["pgd"] = {h: torch.stack([p[1:].double().mean(-1) for p in pgd[h]]) for h in pgd}
        _draw(ctx, curves, data.num_classes)
        if cfg.smoke:
            ctx.note("smoke preset: the pipeline on digits for a few epochs; no claims (run --preset paper with "
                     "the data)")
            return
        ds = cfg.dataset
        judge_clean = ds in PAPER_FIG3 and ctx.experiment_id == FIG3_EXPERIMENT[ds]
        if ds in PAPER_FIG3 and not judge_clean:
            ctx.note(f"the clean accuracies of Fig 3 on {ds} are claims of {FIG3_EXPERIMENT[ds]}, not judged here")
        dm.judge(ctx, masks, points, fig3_clean(ds) if judge_clean else None, converged=converged)
        if coarse:  # issue 45: the fine labels' own share of the gap, against the same k-logit read-out
            dm.judge_fine_minus_coarse(ctx, masks["multiclass"], coarse[0], converged=converged)


def _coarse_arm(ctx, data: ImageData, pos_mask: torch.Tensor, ck) -> tuple[list[torch.Tensor], list] | None:
    """The coarse-label k-logit arm of every seed (``coarse_arm``): the k-class network trained on the 2-class labels
    through Σ_{J+}p vs Σ_{J−}p (the 'coarse-labels' rival's arm), attacked with the same per-seed random stream as
    the other arms. Returns (its robust masks per seed, its attack records), or None when no robustness claim is
    judged in this run."""
    if not ctx.judges("fa.deep_fine_minus_coarse"):
        return None
    masks, atts, clean = [], [], []
    for seed in ctx.seeds:
        labels = pos_mask[data.y_train].long()
        model, last = _train(ctx, data, pos_mask, "coarse", seed, ck, labels)
        clean.append(last["test_acc"])
        atts.append(dm.measure_robustness(ctx, model, data, pos_mask, "coarse", seed))
        masks.append(atts[-1].worst)
    ctx.metric("coarse.clean_acc", sum(clean) / len(clean))  # the binary read-out's clean accuracy, mean of seeds
    return masks, atts


def _training_labels(cfg: FAResNetConfig, y: torch.Tensor, pos_mask: torch.Tensor, seed: int) -> dict:
    """The training labels of each arm: the 2-class arm's targets (1 = J+) and the k-class arm's labels (the coarse
    ones under 'coarse-labels', re-drawn within their coarse class under 'fine-shuffled'), on the CPU, per seed."""
    if cfg.shuffle_labels:  # 'random-labels': the labels permuted across images, once per seed
        y = y[torch.randperm(len(y), generator=generator(seed, "random-labels"))]
    coarse = pos_mask[y].long()
    fine = within_coarse(y, pos_mask, generator(seed, "fine-shuffled")) if cfg.kclass_labels == "shuffled" else y
    return {"binary": coarse, "multiclass": coarse if cfg.kclass_labels == "coarse" else fine}


def within_coarse(y: torch.Tensor, pos_mask: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """A uniform class of each label's own coarse class (J+ or J−), drawn from g: the 'fine-shuffled' labels.
    Drawn and picked on the host (g, ``pos_mask``: host), moved to the labels' device once."""
    pos_mask = to_host(pos_mask)
    side = [pos_mask.nonzero().flatten(), (~pos_mask).nonzero().flatten()]
    draw = [s[torch.randint(len(s), y.shape, generator=g, device="cpu")] for s in side]
    return to_run(torch.where(pos_mask[to_host(y)], draw[0], draw[1]), y.device)


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


def _train(ctx, data: ImageData, pos_mask: torch.Tensor, head: str, seed: int, ck, labels: torch.Tensor):
    """Train the 2-class (``binary``: labels 1 = J+) or k-class (``multiclass``: fine labels, or the coarse ones
    under 'coarse-labels'; ``coarse``: the coarse_arm, always the coarse ones) model of one seed on ``labels``:
    (model, last epoch's row)."""
    cfg: FAResNetConfig = ctx.cfg
    k = data.num_classes
    model = build_model(cfg.model, data.shape[0], 2 if head == "binary" else k, cfg.width, seed,
                        normalize=(data.mean, data.std))
    coarse = head == "coarse" or (head == "multiclass" and cfg.kclass_labels == "coarse")

    def coarse_objective(m, x, y, g):  # CE of the coarse label under Σ_{J+}p vs Σ_{J−}p: log(Σ_{J+}p/Σ_{J−}p) = G
        g_score = logit_margin_readout(m(x), pos_mask.to(x.device))
        return F.cross_entropy(torch.stack([torch.zeros_like(g_score), g_score], -1), y)

    # the training images live on the run device (issue 33): each batch is indexed and augmented there, from draws
    # of the CPU generators (the numbers of a CPU run)
    x_train, y_train = data.x_train.to(ctx.device), labels.to(ctx.device)

    def batch_fn(idx, g):
        x = x_train[idx]
        return (augment(x, g) if cfg.augment else x), y_train[idx]

    def evaluate(m):
        logits = predict(m, data.x_test, cfg.eval_batch)
        y_pos = pos_mask[data.y_test]
        pred_pos = logits.argmax(-1) == 1 if head == "binary" else logit_margin_readout(logits, pos_mask) > 0
        row = {"test_acc": (pred_pos == y_pos).double().mean().item(),
               "test_acc_balanced": dm.balanced_accuracy(pred_pos, y_pos)}
        if head == "multiclass" and not coarse:
            row["test_acc_kclass"] = (logits.argmax(-1) == data.y_test).double().mean().item()
        return row

    if cfg.epochs == 0:  # the 'untrained' control: the network at its init, on the run device as fit puts it
        model.to(ctx.device).eval()
        with torch.no_grad():
            return model, evaluate(model)
    res = ctx.trained(fit(model, batch_fn, len(labels), cfg.fit_spec(), evaluate=evaluate, seed=seed,
                          objective=coarse_objective if coarse else erm_objective,
                          device=ctx.device, checkpoint=ck / f"{head}-seed{seed}.pt",
                          fingerprint=fingerprint_of(ctx.experiment_id, cfg, head=head), desc=f"{head} seed {seed}",
                          prefix=f"{head}."))
    return model, res.history[-1]


def _draw(ctx, curves: dict[str, dict[str, torch.Tensor]], k: int) -> None:
    """The Fig 3 table (ours beside the paper's, and on the points both models classify correctly) and figure."""
    cfg: FAResNetConfig = ctx.cfg
    radii, paper = cfg.radii, PAPER_FIG3.get(cfg.dataset)
    A, S, P = curves["plain"], curves["both_correct"], curves.get("pgd", curves["plain"])

    def paper_at(values, r):
        return f"{values[paper[0].index(round(r, 2))]:.1f}" if paper and round(r, 2) in paper[0] else "—"

    def pgd(h, i):  # margin PGD alone is a curve of the 'full' schedule only
        return f"{100 * P[h][:, i].mean():.1f}" if "pgd" in curves else "—"

    rows = [[f"{r:g}", f"{100 * A['binary'][:, i].mean():.1f}", pgd("binary", i),
             paper_at(paper[2] if paper else None, r), f"{100 * A['multiclass'][:, i].mean():.1f}",
             pgd("multiclass", i), paper_at(paper[1] if paper else None, r),
             f"{100 * S['binary'][:, i].mean():.1f}", f"{100 * S['multiclass'][:, i].mean():.1f}"]
            for i, r in enumerate(radii)]
    title = (f"Fig 3 ({cfg.dataset}): robust binary test accuracy (%), mean of {len(ctx.seeds)} seeds, worst case "
             f"over the attack ensemble ('PGD': margin PGD alone); the last two columns on the points both models "
             f"classify correctly (the claims' measurement)"
             + ("" if paper else f"; the paper has no {cfg.dataset} panel ('paper': —)"))
    header = ["radius", "2-class", "PGD", "paper", "10-class", "PGD", "paper", "2-cl both", "10-cl both"]
    if paper and not cfg.smoke:
        ctx.beside_paper(title + " ('paper': read off Fig 3, ±1 point)", header, rows)
    else:
        ctx.note(title + "\n" + table(rows, header, [7, 8, 6, 6, 9, 6, 6, 10, 10]))
    name = {"digits": "8×8 digits", "mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR-10"}
    lines = []
    for h, color, lab in (("binary", plotting.RED, "2-class labels"),
                          ("multiclass", plotting.BLUE, f"{k}-class labels")):
        lines.append(dict(label=f"{lab} ({'attack ensemble' if cfg.attack == 'ensemble' else 'PGD'})",
                          mean=A[h].mean(0), std=A[h].std(0, correction=0), color=color,
                          paper=(paper[0], paper[2 if h == "binary" else 1]) if paper else None))
        if "pgd" in curves and cfg.attack == "ensemble":
            lines.append(dict(label=f"{lab}, margin PGD alone", mean=P[h].mean(0), style=":", color=color))
        lines.append(dict(label=f"{lab}, points both classify correctly", mean=S[h].mean(0), style="--",
                          std=S[h].std(0, correction=0), color=color))
    ctx.figure(plotting.robust_curves(radii, lines, [], f"{'SMOKE TEST: ' if cfg.smoke else ''}Robust test accuracy, "
                                   f"{name[cfg.dataset]}, {cfg.model} ({len(ctx.seeds)} seeds, ±1 std)"),
               f"fig3_{cfg.dataset}_robustness")


# ------------------------------------------------------------------------------------------ registration
FA_REF = "Fig 3 middle/right (§6.2)"
DIGITS_RADII = [round(0.05 * i, 2) for i in range(21)]  # 8×8 digits have 64 pixels (MNIST 784): a finer grid
FA_SUMMARY = "ResNet trained on 10-class labels is more ℓ2-robust (binary read-out) than on 2-class labels"
FA_MNIST: dict[str, Any] = {  # §6.2's values; seeds and augmentation: featlab's choice (the config's defaults)
    "dataset": "mnist", "model": "resnet18", "width": 64, "epochs": 100, "batch_size": 128,
    "optimizer": "sgd", "lr": 1e-3, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "none",
    "radii": [round(0.1 * i, 2) for i in range(21)]}
FA_CIFAR: dict[str, Any] = {
    "dataset": "cifar10", "model": "resnet18", "width": 64, "epochs": 200, "batch_size": 128,
    "optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "cosine",
    "radii": [round(0.08 * i, 2) for i in range(11)]}
_S62, _SGD = "§6.2: ", "§6.2 (MNIST and CIFAR-10): SGD, batch size 128, momentum 0.9, weight decay 5 × 10⁻⁴"
FA_CITES = {"mnist": {"dataset": _S62 + "MNIST", "epochs": _S62 + "100 epochs on MNIST", "lr": _S62 + "a fixed "
                      "learning rate of 0.001 on MNIST", "schedule": _S62 + "fixed learning rate on MNIST",
                      "radii": "Fig 3 (middle): its ℓ2-radius axis, 0 to 2.0 by 0.1 (read from the figure)"},
            "cifar10": {"dataset": _S62 + "CIFAR-10", "epochs": _S62 + "200 epochs on CIFAR-10", "lr": _S62 + "initial "
                        "learning rate 0.1 on CIFAR-10", "schedule": _S62 + "cosine learning-rate scheduling on "
                        "CIFAR-10", "radii": "Fig 3 (right): its ℓ2-radius axis, 0 to 0.8 by 0.08 (read from the "
                        "figure)"}}
_SHARED_CITES = {"model": _S62 + "ResNet18 models trained from scratch", "width": _S62 + "ResNet18 (64 channels in "
                 "its first stage)", **dict.fromkeys(("batch_size", "optimizer", "momentum", "weight_decay"), _SGD)}
TINY = {"seeds": 1, "epochs": 1, "width": 2, "augment": True, "radii": [0, 0.3], "n_attack": 8, "pgd_steps": 2,
        "apgd_steps": 2, "apgd_targets": 1, "square_queries": 2, "ddn_steps": 2, "fmn_steps": 2, "alma_steps": 2}
# the quick presets' ensemble [paper silent]: a CPU budget (the paper presets: AutoAttack's), checks on seed 0
QUICK_ATTACK = {"apgd_steps": 20, "apgd_targets": 5, "square_queries": 10, "ddn_steps": 16, "check_seeds": 1,
                "check_points": 50, "fmn_steps": 50, "alma_steps": 50, "min_norm_starts": 2}
experiment("fa-resnet-digits", paper="feature-averaging", reference=FA_REF + " on 8×8 digits",
           summary=FA_SUMMARY + " (8×8 digits, small CNN, CPU)", config=FAResNetConfig,
           controls=[COARSE_DIGITS, SAME_LABELS],
           claims=diagnosed(CLAIMS, "fa-resnet-digits"), assumptions=[SETTING_DIGITS, TRAINED_DIGITS, ATTACK_DIGITS],
           presets={"quick": {"dataset": "digits", "model": "smallcnn", "width": 16, "seeds": 3, "epochs": 30,
                              "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "cpu_threads": 1,
                              "weight_decay": 5e-4, "schedule": "cosine",
                              "radii": DIGITS_RADII[::2], "n_attack": 300, "coarse_arm": False, **QUICK_ATTACK},
                    # the paper did not run digits: §6.2's protocol at full length on them, on the CPU (a demo)
                    "cpu-full": {"dataset": "digits", "model": "smallcnn", "width": 32, "seeds": 5, "epochs": 100,
                                 "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9,
                                 "weight_decay": 5e-4, "schedule": "cosine", "radii": DIGITS_RADII}},
           tiny=TINY)(run_fa_resnet)
for _name, _p in (("fa-resnet-mnist", FA_MNIST), ("fa-resnet-cifar10", FA_CIFAR)):
    experiment(_name, paper="feature-averaging", reference=FA_REF, summary=FA_SUMMARY + f" ({_p['dataset']})",
               config=FAResNetConfig, claims=CLAIMS + clean_claims(_p["dataset"]),
               controls=[FINE_SHUFFLED, COARSE, RANDOM_LABELS, UNTRAINED], assumptions=[SETTING_PAPER, ATTACK],
               presets={"paper": dict(_p), "quick": {**_p, "dataset": "digits", "smoke": True, "model": "smallcnn",
                                                     "width": 16, "epochs": 8, "batch_size": 64, "lr": 0.05,
                                                     "augment": False, "cpu_threads": 1, "n_attack": 200,
                                                     "pgd_steps": 5, **QUICK_ATTACK, "apgd_steps": 5}},
               tiny=TINY, cites={**_SHARED_CITES, **FA_CITES[_p["dataset"]]})(run_fa_resnet)
# FashionMNIST (Debian's dataset-fashion-mnist): featlab's real-data stand-in for MNIST, which the paper used; on this
# CPU a small CNN on a stratified subset [featlab's choices, see docs/image-benchmarks.md]
FMNIST_RADII = [round(0.2 * i, 2) for i in range(11)]  # Fig 3 (middle)'s MNIST axis, 0 to 2.0, every other tick
# between the quick budget (its stronger-budget check flagged the 10-class net here) and AutoAttack's (≈ 2 h here)
FMNIST_ATTACK = {"apgd_steps": 50, "apgd_targets": 3, "square_queries": 100, "ddn_steps": 50, "check_points": 100}
experiment("fa-resnet-fmnist", paper="feature-averaging", reference=FA_REF + " on FashionMNIST",
           summary=FA_SUMMARY + " (real FashionMNIST images, small CNN, CPU)", config=FAResNetConfig, claims=CLAIMS,
           controls=[COARSE_DIGITS, SAME_LABELS], assumptions=[SETTING_FMNIST, ATTACK_FMNIST],
           presets={"quick": {**FA_MNIST, "dataset": "digits", "smoke": True, "model": "smallcnn", "width": 16,
                              "epochs": 8, "batch_size": 64, "lr": 0.05, "augment": False, "cpu_threads": 1,
                              "n_attack": 200, "pgd_steps": 5, **QUICK_ATTACK, "apgd_steps": 5},
                    "cpu-real": {"dataset": "fashionmnist", "model": "smallcnn", "width": 16, "seeds": 5,
                                 "train_subset": 6000, "epochs": 10, "batch_size": 128, "optimizer": "sgd",
                                 "lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "cosine",
                                 "augment": False, "cpu_threads": 1, "radii": FMNIST_RADII, "n_attack": 200,
                                 **FMNIST_ATTACK}},
           tiny=TINY)(run_fa_resnet)
