"""Image benchmarks: Midpoint Mixup's spurious-channel benchmark (Table 1, Fig 2) and Feature Averaging's
deep-network robustness (Fig 3 middle/right) and CLIP-embedding heads (Figs 2c/2d, 10).

Decisions where the papers are silent (each is a config field; see docs/image-benchmarks.md):

Midpoint Mixup §5 (mm-spurious-*)
* run i uses seed i for everything: the spurious wrapper (class pairing, partners, γ), data order, init. Within a
  run the three methods share the wrapper and the initial weights (a paired comparison, as run 1 of the code);
  the optimizer is re-created per run (the code reuses Adam's moments across runs; we do not copy that).
* Mixup pairs inside the batch by a random permutation (self-pairs allowed, one λ per batch, λ-weighted CE),
  where the code draws each partner from the whole training set; both are uniform random partners.
* inputs are normalised with the code's per-dataset mean/std before scaling and concatenation; test zeros are
  zeros in normalised space (as the code).
* final test error = error after the last epoch; ± is the population std over runs (ddof = 0, as the code).

Feature Averaging §6.2 (fa-resnet-*)
* CIFAR-style ResNet-18, in_channels = 1 for MNIST; normalisation inside the model so that radii are ℓ2 in
  [0, 1] pixel space; CIFAR augmentation random-crop 32 (pad 4) + flip, none for MNIST.
* the 2-class model has 2 logits + CE; its score is f_+ − f_−. The 10-class model is scored and attacked through
  G = logsumexp_{J+} f − logsumexp_{J−} f, whose sign is that of F^binary = Σ_{J+}p − Σ_{J−}p.
* ℓ2 PGD, 20 steps of 2.5·δ/20, uniform random start in the ball, 1 restart, pixels clipped to [0, 1]; radii
  attacked in increasing order on the survivors; the final-epoch model; J+ = classes 0–4.

Feature Averaging §6.1 (fa-embeddings)
* embeddings mean-centred with the training mean, then scaled to norm √D (the synthetic setting's ‖x‖ ≈ √d);
  μ_j = class mean of the training embeddings; full-batch Adam on the heads (the paper gives no optimiser).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field, model_validator
from torch import nn

from ..config import ExperimentConfig, check
from ..data.images import ImageData, load_images
from .midpoint_mixup.spurious_data import SpuriousChannels
from ..errors import DataError
from ..nn.resnet import Normalize, resnet18
from ..nn.smallcnn import SmallCNN
from ..nn.twolayer import EnsembleTwoLayer, block_readout, logit_margin_readout, signed_readout
from .feature_averaging import measures as al
from ..probes.image_robustness import robust_accuracy_images
from ..report import plots
from ..report.tables import table
from ..train.image_loop import FitSpec, erm_objective, fingerprint_of, fit, mixup_objective, predict
from ..train.loop import progress_bar, train
from ..train.mixup import MidpointMixup, Mixup
from ..train.objectives import cross_entropy, logistic
from ..utils import generator
from ..runs.registry import experiment

# ------------------------------------------------------------------------------------------ paper numbers
# Midpoint Mixup Table 1: final test error (%) mean over 5 runs; std (pp) from the code's logs.
PAPER_TABLE1 = {
    "fashionmnist": {"mixup": (9.66, 0.0), "midpoint": (14.84, 1.0), "erm": (16.55, 2.0)},
    "cifar10": {"mixup": (18.52, 1.0), "midpoint": (22.29, 2.0), "erm": (27.77, 2.0)},
    "cifar100": {"mixup": (53.42, 1.0), "midpoint": (53.61, 2.0), "erm": (69.28, 2.0)},
}
METHOD_LABEL = {"mixup": "Uniform Mixup", "midpoint": "Midpoint Mixup", "erm": "ERM"}
METHOD_COLOR = {"erm": "C0", "midpoint": "C1", "mixup": "C2"}  # the code's colours

# Feature Averaging Fig 3 middle/right, read off the figure (±1 point): robust accuracy (%).
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


# ------------------------------------------------------------------------------------------ shared pieces
def build_model(kind: str, in_channels: int, num_classes: int, width: int, seed: int,
                normalize: tuple | None = None) -> nn.Module:
    """A fresh model whose init comes from seed alone (the global RNG is forked, not touched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(generator(seed, "init/image").initial_seed()) % (2**63))
        net = resnet18(in_channels, num_classes, width) if kind == "resnet18" else SmallCNN(in_channels, num_classes,
                                                                                            width)
    return nn.Sequential(Normalize(*normalize), net) if normalize is not None else net


def checkpoint_dir(ctx) -> Path:
    """Per-run checkpoints live beside the run folders (kept when a run is killed; removed when it completes)."""
    if getattr(ctx.cfg, "checkpoint_dir", None):
        return Path(ctx.cfg.checkpoint_dir)
    return ctx.dir.parent / ".checkpoints" / ctx.cfg.digest(ctx.experiment_id)


class _threads:
    """Set torch's CPU thread count for the duration of an experiment, then restore it."""

    def __init__(self, n: int | None):
        self.n, self.old = n, torch.get_num_threads()

    def __enter__(self):
        if self.n:
            torch.set_num_threads(self.n)

    def __exit__(self, *exc):
        torch.set_num_threads(self.old)


def _drop_checkpoints(ck: Path) -> None:
    """Remove a completed run's checkpoints (and the .checkpoints folder once it is empty)."""
    shutil.rmtree(ck, ignore_errors=True)
    try:
        ck.parent.rmdir()
    except OSError:
        pass


def _mean_std(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    return float(a.mean()), float(a.std())  # population std (ddof = 0), as the papers' code


def _load(cfg, experiment_id: str) -> ImageData:
    try:
        return load_images(cfg.dataset, cfg.data_root)
    except DataError as e:
        raise DataError(f"{experiment_id}: {e}") from None


class ImageTrainFields(ExperimentConfig):
    data_root: str = Field("data", description="folder holding the datasets in torchvision's layout")
    model: Literal["smallcnn", "resnet18"] = Field("resnet18", description="CIFAR ResNet-18 or the small CPU CNN")
    width: int = Field(64, ge=1, description="channels of the first stage (64 = ResNet-18; 32 for the small CNN)")
    epochs: int = Field(100, ge=1, description="training epochs")
    batch_size: int = Field(128, ge=1, description="mini-batch size")
    optimizer: Literal["adam", "sgd"] = Field("sgd", description="Adam (β = 0.9, 0.999) or SGD")
    lr: float = Field(1e-3, gt=0, description="learning rate")
    momentum: float = Field(0.0, ge=0, lt=1, description="SGD momentum")
    weight_decay: float = Field(0.0, ge=0, description="L2 weight decay")
    schedule: Literal["none", "cosine"] = Field("none", description="learning-rate schedule (per epoch)")
    eval_batch: int = Field(1000, ge=1, description="batch size of evaluation and attacks")
    checkpoint_dir: str | None = Field(None, description="where per-epoch checkpoints go (default: beside the runs)")
    keep_checkpoints: bool = Field(False, description="keep the final checkpoints (trained weights) after the run")
    cpu_threads: int | None = Field(None, ge=1, description="torch CPU threads while this experiment runs (None: "
                                    "leave as is; 1 is fastest for the small CNN on a shared CPU)")
    smoke: bool = Field(False, description="pipeline smoke test (the quick preset of a real-data experiment runs "
                        "on digits for a few epochs): figures and metrics, no claims")

    def fit_spec(self) -> FitSpec:
        return FitSpec(self.epochs, self.batch_size, self.optimizer, self.lr, self.momentum, self.weight_decay,
                       self.schedule)


# ------------------------------------------------------------------------------------------ mm-spurious-*
class MMSpuriousConfig(ImageTrainFields):
    dataset: Literal["digits", "fashionmnist", "cifar10", "cifar100"] = Field("cifar10", description="dataset")
    methods: list[Literal["mixup", "midpoint", "erm"]] = Field(["mixup", "midpoint", "erm"],
                                                              description="methods, in the code's order")
    mixup_alpha: float = Field(1.0, gt=0, description="Uniform Mixup's Beta(α, α) (α = 1: uniform λ)")
    per_sample_lambda: bool = Field(False, description="one λ per example (True) or per batch (False, the code)")
    allow_self_pairs: bool = Field(True, description="Mixup partners by permutation (True) or derangement")
    partner: Literal["fixed", "resample"] = Field("fixed", description="spurious partner image fixed per example "
                                                  "(the code) or redrawn at every access")

    @model_validator(mode="after")
    def _ok(self):
        check(len(self.methods) > 0 and len(set(self.methods)) == len(self.methods), "methods",
              "must list distinct methods among mixup, midpoint, erm")
        return self


MM_PAPER = {"seeds": 5, "model": "resnet18", "width": 64, "epochs": 100, "batch_size": 750, "optimizer": "adam",
            "lr": 1e-3}


def _mm_objective(cfg: MMSpuriousConfig, method: str, k: int):
    if method == "erm":
        return erm_objective
    if method == "midpoint":
        return mixup_objective(MidpointMixup(allow_self_pairs=cfg.allow_self_pairs, num_classes=k))
    return mixup_objective(Mixup(cfg.mixup_alpha, per_sample=cfg.per_sample_lambda,
                                 allow_self_pairs=cfg.allow_self_pairs, num_classes=k))


def run_mm_spurious(ctx) -> None:
    with _threads(ctx.cfg.cpu_threads):
        _run_mm_spurious(ctx)


def _run_mm_spurious(ctx) -> None:
    cfg: MMSpuriousConfig = ctx.cfg
    data = _load(cfg, ctx.experiment_id)
    k = data.num_classes
    xtr, xte = data.normalize(data.x_train), data.normalize(data.x_test)
    x_test = SpuriousChannels.test_view(xte)
    ck = checkpoint_dir(ctx)
    curves: dict[str, list[list[float]]] = {m: [] for m in cfg.methods}
    spec = cfg.fit_spec()
    for seed in ctx.seeds:
        sc = SpuriousChannels(xtr, data.y_train, k, seed=seed, partner=cfg.partner)
        for method in cfg.methods:
            model = build_model(cfg.model, sc.channels, k, cfg.width, seed)

            def evaluate(m):
                err = (predict(m, x_test, cfg.eval_batch).argmax(-1) != data.y_test).double().mean().item()
                return {"test_err": err}

            res = fit(model, sc.batch, len(sc), spec, objective=_mm_objective(cfg, method, k), evaluate=evaluate,
                      seed=seed, device=cfg.device, checkpoint=ck / f"{method}-seed{seed}.pt",
                      fingerprint=fingerprint_of(ctx.experiment_id, cfg, method=method),
                      desc=f"{method} seed {seed}")
            ctx.log([(seed, int(h["epoch"]), f"{method}.{key}", float(h[key])) for h in res.history
                     for key in ("test_err", "train_loss", "images_per_s")])
            if res.status != "complete":
                ctx.fail(res.message)
                return
            curves[method].append(res.series("test_err"))

    # ---- Table 1 and summary metrics
    final = {}
    for m in cfg.methods:
        mean, std = _mean_std([c[-1] for c in curves[m]])
        final[m] = (mean, std)
        ctx.metric(f"{m}.test_err", mean)
        ctx.metric(f"{m}.test_err_std", std)
    paper = PAPER_TABLE1.get(cfg.dataset)
    rows = []
    for m in cfg.methods:
        mean, std = final[m]
        p = paper[m] if paper else None
        rows.append([METHOD_LABEL[m], f"{100 * mean:.2f} ± {100 * std:.2f}",
                     f"{p[0]:.2f} ± {p[1]:.0f}" if p else "—"])
    ctx.note(f"Table 1 ({cfg.dataset}, {len(ctx.seeds)} runs, {cfg.epochs} epochs): final test error (%) on the "
             f"zero-concatenated test set\n" + table(rows, ["model", "ours", "paper"], [15, 16, 12]))

    # ---- Fig 1 (the data modification) and Fig 2
    ctx.figure(_fig1(data, SpuriousChannels(data.x_train, data.y_train, k, seed=ctx.seeds[0], partner=cfg.partner)),
               f"fig1_{cfg.dataset}_spurious_examples")
    ctx.figure(_fig2(cfg, curves, paper, len(ctx.seeds)), f"fig2_{cfg.dataset}_error_curves")

    # ---- claims
    if cfg.smoke:
        ctx.note("smoke preset: the pipeline on digits for a few epochs; no claims (run --preset paper with the data)")
    elif "erm" in final:
        erm = final["erm"][0]
        for m in ("mixup", "midpoint"):
            if m in final:
                ctx.claim(f"mm.{m}_below_erm", f"{METHOD_LABEL[m]} ends below ERM's test error on spurious-channel "
                          f"{cfg.dataset}", "Table 1, §5", round(100 * final[m][0], 2),
                          f"< ERM's {100 * erm:.2f}%", final[m][0] < erm)
    if paper:
        for m in cfg.methods:
            ours = 100 * final[m][0]
            ctx.claim(f"mm.table1_{m}", f"{METHOD_LABEL[m]}: final test error matches Table 1 ({paper[m][0]}%)",
                      "Table 1", round(ours, 2), f"within 3 pp of {paper[m][0]}", abs(ours - paper[m][0]) <= 3.0)
    if not cfg.keep_checkpoints:
        _drop_checkpoints(ck)


def _fig1(data: ImageData, sc: SpuriousChannels, n: int = 4):
    """MM Fig 1: training images next to their concatenated partner from the paired class (raw pixels, γ shown)."""

    g = torch.Generator().manual_seed(0)
    idx = torch.randperm(len(sc), generator=g)[:n]
    xb, _ = sc.batch(idx, g)
    C = data.x_train.shape[1]
    fig, axes = subplots(2, n, figsize=(2.2 * n, 4.6))
    for j, i in enumerate(idx.tolist()):
        gamma = float(xb[j, :C].sum() / data.x_train[i].sum().clamp_min(1e-12))
        for row, (img, title) in enumerate((
                (xb[j, :C], f"class {data.classes[int(data.y_train[i])]}: γ·x (γ={gamma:.2f})"),
                (xb[j, C:], f"class {data.classes[int(sc.sigma[data.y_train[i]])]}: (1−γ)·x'"))):
            im = img.permute(1, 2, 0).clamp(0, 1).numpy()
            axes[row, j].imshow(im[..., 0] if C == 1 else im, cmap="gray" if C == 1 else None, vmin=0, vmax=1)
            axes[row, j].set_title(title, fontsize=7)
            axes[row, j].axis("off")
    fig.suptitle("Fig 1: each training image (top) is concatenated along channels with an image of its paired "
                 "class (bottom)", fontsize=9)
    fig.tight_layout()
    return fig


def _fig2(cfg, curves, paper, runs):

    fig, ax = subplots(figsize=(7.2, 5.0))
    for m in ("erm", "midpoint", "mixup"):
        if m not in curves or not curves[m]:
            continue
        a = np.asarray(curves[m])
        ep = np.arange(1, a.shape[1] + 1)
        mean, std = a.mean(0), a.std(0)
        ax.plot(ep, mean, color=METHOD_COLOR[m], label=METHOD_LABEL[m], lw=1.6)
        ax.fill_between(ep, mean - std, mean + std, color=METHOD_COLOR[m], alpha=0.3, lw=0)
        if paper:
            ax.plot([cfg.epochs], [paper[m][0] / 100], marker="o", mfc="none", color=METHOD_COLOR[m], ms=7,
                    ls="none", label=f"{METHOD_LABEL[m]} (paper, Table 1)")
    name = {"digits": "Digits 8×8", "fashionmnist": "FMNIST", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
    smoke = "SMOKE TEST (pipeline check, not a result): " if cfg.smoke else ""
    ax.set_title(f"{smoke}Error Curves, {name[cfg.dataset]} (2 Features, {cfg.optimizer.capitalize()}, {runs} Runs; "
                 f"{cfg.model}, ±1 std)", fontsize=10)
    ax.set_xlabel("Epochs")
    ax.set_ylabel("Test Error")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


MM_REF = "Table 1, Figs 1-2 (§5)"
MM_SUMMARY = "spurious-channel benchmark: Uniform and Midpoint Mixup end below ERM's test error"

experiment("mm-spurious-digits", paper="midpoint-mixup", reference=MM_REF + " on 8×8 digits",
           summary=MM_SUMMARY + " (8×8 digits, small CNN, CPU)", config=MMSpuriousConfig,
           presets={"quick": {"dataset": "digits", "model": "smallcnn", "width": 16, "seeds": 3, "epochs": 30,
                              "batch_size": 50, "optimizer": "adam", "lr": 3e-3, "cpu_threads": 1},
                    "paper": {"dataset": "digits", "model": "smallcnn", "width": 32, "seeds": 5, "epochs": 100,
                              "batch_size": 50, "optimizer": "adam", "lr": 1e-3}})(run_mm_spurious)
for _ds, _nm in (("fashionmnist", "fmnist"), ("cifar10", "cifar10"), ("cifar100", "cifar100")):
    experiment(f"mm-spurious-{_nm}", paper="midpoint-mixup", reference=MM_REF, summary=MM_SUMMARY + f" ({_ds})",
               config=MMSpuriousConfig,
               presets={"paper": {"dataset": _ds, **MM_PAPER},
                        "quick": {**MM_PAPER, "dataset": "digits", "smoke": True, "seeds": 1, "epochs": 3,
                                  "model": "smallcnn", "width": 16, "batch_size": 100,
                                  "cpu_threads": 1}})(run_mm_spurious)


# ------------------------------------------------------------------------------------------ fa-resnet-*
class FAResNetConfig(ImageTrainFields):
    dataset: Literal["digits", "mnist", "cifar10"] = Field("cifar10", description="dataset")
    positive: list[int] = Field([0, 1, 2, 3, 4], description="classes merged into the + label (J+)")
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


def _augment(x: torch.Tensor, g: torch.Generator, pad: int = 4) -> torch.Tensor:
    """Random crop (zero padding ``pad``) and horizontal flip, per image, drawn from generator g."""
    n, c, h, w = x.shape
    xp = F.pad(x, (pad, pad, pad, pad))
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=g)
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=g)
    flip = torch.rand(n, generator=g) < 0.5
    rows = dy[:, None] + torch.arange(h)[None]
    cols = dx[:, None] + torch.arange(w)[None]
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    t = xp.gather(2, rows[:, None, :, None].expand(n, c, h, w + 2 * pad))
    return t.gather(3, cols[:, None, None, :].expand(n, c, h, w))


def run_fa_resnet(ctx) -> None:
    with _threads(ctx.cfg.cpu_threads):
        _run_fa_resnet(ctx)


def _run_fa_resnet(ctx) -> None:
    cfg: FAResNetConfig = ctx.cfg
    data = _load(cfg, ctx.experiment_id)
    k = data.num_classes
    if max(cfg.positive) >= k or len(cfg.positive) >= k:
        raise DataError(f"{ctx.experiment_id}: the 'positive' field must list classes below {k} and leave some "
                        f"out; got {cfg.positive}")
    pos_mask = torch.zeros(k, dtype=torch.bool)
    pos_mask[cfg.positive] = True
    yb_train = pos_mask[data.y_train].long()  # binary target: 1 = J+
    ypm_test = pos_mask[data.y_test].double() * 2 - 1  # ±1
    x_att = data.x_test if cfg.n_attack is None else data.x_test[: cfg.n_attack]
    y_att = ypm_test if cfg.n_attack is None else ypm_test[: cfg.n_attack]
    ck = checkpoint_dir(ctx)
    spec = cfg.fit_spec()
    radii = list(cfg.radii)
    acc = {"binary": [], "multiclass": []}
    clean = {"binary": [], "multiclass": [], "multiclass_kclass": []}
    for seed in ctx.seeds:
        for head in ("binary", "multiclass"):
            n_out = 2 if head == "binary" else k
            labels = yb_train if head == "binary" else data.y_train
            model = build_model(cfg.model, data.shape[0], n_out, cfg.width, seed, normalize=(data.mean, data.std))

            def batch_fn(idx, g, labels=labels):
                x = data.x_train[idx]
                return (_augment(x, g) if cfg.augment else x), labels[idx]

            def evaluate(m, head=head):
                logits = predict(m, data.x_test, cfg.eval_batch)
                if head == "binary":
                    return {"test_acc": (logits.argmax(-1) == pos_mask[data.y_test].long()).double().mean().item()}
                return {"test_acc_kclass": (logits.argmax(-1) == data.y_test).double().mean().item(),
                        "test_acc": ((logit_margin_readout(logits, pos_mask) > 0) == pos_mask[data.y_test])
                        .double().mean().item()}

            res = fit(model, batch_fn, len(data.y_train), spec, evaluate=evaluate, seed=seed, device=cfg.device,
                      checkpoint=ck / f"{head}-seed{seed}.pt",
                      fingerprint=fingerprint_of(ctx.experiment_id, cfg, head=head), desc=f"{head} seed {seed}")
            ctx.log([(seed, int(h["epoch"]), f"{head}.{key}", float(h[key])) for h in res.history
                     for key in h if key != "epoch"])
            if res.status != "complete":
                ctx.fail(res.message)
                return
            clean[head].append(res.history[-1]["test_acc"])
            if head == "multiclass":
                clean["multiclass_kclass"].append(res.history[-1]["test_acc_kclass"])
            model.eval()
            if head == "binary":
                score = lambda x, m=model: (lambda z: z[:, 1] - z[:, 0])(m(x))  # noqa: E731
            else:
                score = lambda x, m=model: logit_margin_readout(m(x), pos_mask.to(x.device))  # noqa: E731
            bar = progress_bar(len(radii), f"PGD {head} seed {seed}")
            dev = next(model.parameters()).device
            curve = robust_accuracy_images(score, x_att, y_att, radii, steps=cfg.pgd_steps,
                                           step_size_factor=cfg.pgd_step_factor, restarts=cfg.pgd_restarts,
                                           batch_size=cfg.eval_batch, generator=generator(seed, f"attack/{head}"),
                                           device=dev, progress=bar)
            bar.close()
            acc[head].append(curve)
            ctx.log([(seed, cfg.epochs, f"{head}.robust_acc@{r:g}", float(curve[i])) for i, r in enumerate(radii)])

    A = {h: torch.stack(v) for h, v in acc.items()}  # (seeds, R)
    for h in ("binary", "multiclass"):
        ctx.metric(f"{h}.clean_acc", float(np.mean(clean[h])))
        for i, r in enumerate(radii):
            ctx.metric(f"{h}.robust_acc@{r:g}", A[h][:, i].mean())
        ctx.metric(f"{h}.robust_acc_mean", A[h].mean())
    ctx.metric("multiclass.clean_acc_kclass", float(np.mean(clean["multiclass_kclass"])))
    paper = PAPER_FIG3.get(cfg.dataset)
    if paper:
        pr, p10, p2 = paper
        rows = [[f"{r:g}", f"{100 * A['binary'][:, i].mean():.1f}",
                 f"{p2[pr.index(round(r, 2))]:.1f}" if round(r, 2) in pr else "—",
                 f"{100 * A['multiclass'][:, i].mean():.1f}",
                 f"{p10[pr.index(round(r, 2))]:.1f}" if round(r, 2) in pr else "—"] for i, r in enumerate(radii)]
    else:
        rows = [[f"{r:g}", f"{100 * A['binary'][:, i].mean():.1f}", "—", f"{100 * A['multiclass'][:, i].mean():.1f}",
                 "—"] for i, r in enumerate(radii)]
    ctx.note(f"Fig 3 ({cfg.dataset}): robust binary test accuracy (%), mean of {len(ctx.seeds)} seeds\n"
             + table(rows, ["radius", "2-class", "paper", "10-class", "paper"], [7, 8, 6, 9, 6]))
    name = {"digits": "8×8 digits, small CNN", "mnist": "MNIST, ResNet-18", "cifar10": "CIFAR-10, ResNet-18"}
    ctx.figure(plots.robust_curves(radii, [
        dict(label="2-class labels (PGD)", mean=A["binary"].mean(0), std=A["binary"].std(0, correction=0),
             color=plots.RED, paper=(paper[0], paper[2]) if paper else None),
        dict(label=f"{k}-class labels (PGD)", mean=A["multiclass"].mean(0), std=A["multiclass"].std(0, correction=0),
             color=plots.BLUE, paper=(paper[0], paper[1]) if paper else None)], [],
        f"{'SMOKE TEST: ' if cfg.smoke else ''}Robust test accuracy, {name[cfg.dataset]} ({len(ctx.seeds)} seeds, "
        f"±1 std)"),
        f"fig3_{cfg.dataset}_robustness")

    # ---- claims (FA §6.2: "models trained with 10-class labels have higher robust test accuracy ... in all
    # datasets"; in Fig 3 the blue curve is above the red one at every radius > 0)
    m10, m2 = A["multiclass"].mean(0), A["binary"].mean(0)
    auc10, auc2 = float(m10.mean()), float(m2.mean())
    if cfg.smoke:
        ctx.note("smoke preset: the pipeline on digits for a few epochs; no claims (run --preset paper with the data)")
        if not cfg.keep_checkpoints:
            _drop_checkpoints(ck)
        return
    ctx.claim("fa.deep_kclass_more_robust", f"{k}-class training: higher mean robust accuracy over the radius grid",
              "Fig 3, §6.2", round(100 * (auc10 - auc2), 2), "> 0 pp (10-class − 2-class)", auc10 > auc2)
    gaps = [float(m10[i] - m2[i]) for i, r in enumerate(radii) if r > 0]
    worst = min(gaps) if gaps else 0.0
    ctx.claim("fa.deep_kclass_above_every_radius", f"{k}-class robust accuracy ≥ 2-class's at every radius > 0",
              "Fig 3", round(100 * worst, 2), ">= -1 pp at every radius (figure read ±1)", worst >= -0.01)
    if paper:
        for h, pv in (("binary", paper[2][0]), ("multiclass", paper[1][0])):
            c = 100 * float(np.mean(clean[h]))
            ctx.claim(f"fa.deep_{h}_clean", f"{h} model's clean binary test accuracy as in Fig 3 ({pv}%)", "Fig 3",
                      round(c, 2), f">= {pv - 1:.1f}", c >= pv - 1)
    if not cfg.keep_checkpoints:
        _drop_checkpoints(ck)


FA_REF = "Fig 3 middle/right (§6.2)"
DIGITS_RADII = [round(0.05 * i, 2) for i in range(21)]  # 8×8 digits have 64 pixels (MNIST 784): a finer grid
FA_SUMMARY = "ResNet trained on 10-class labels is more ℓ2-robust (binary read-out) than on 2-class labels"
FA_MNIST = {"dataset": "mnist", "model": "resnet18", "width": 64, "seeds": 1, "epochs": 100, "batch_size": 128,
            "optimizer": "sgd", "lr": 1e-3, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "none",
            "radii": [round(0.1 * i, 2) for i in range(21)]}
FA_CIFAR = {"dataset": "cifar10", "model": "resnet18", "width": 64, "seeds": 1, "epochs": 200, "batch_size": 128,
            "optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "schedule": "cosine",
            "augment": True, "radii": [round(0.08 * i, 2) for i in range(11)]}
experiment("fa-resnet-digits", paper="feature-averaging", reference=FA_REF + " on 8×8 digits",
           summary=FA_SUMMARY + " (8×8 digits, small CNN, CPU)", config=FAResNetConfig,
           presets={"quick": {"dataset": "digits", "model": "smallcnn", "width": 16, "seeds": 3, "epochs": 30,
                              "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "cpu_threads": 1,
                              "weight_decay": 5e-4, "schedule": "cosine",
                              "radii": DIGITS_RADII[::2], "n_attack": 300},
                    "paper": {"dataset": "digits", "model": "smallcnn", "width": 32, "seeds": 5, "epochs": 100,
                              "batch_size": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9,
                              "weight_decay": 5e-4, "schedule": "cosine", "radii": DIGITS_RADII}}
           )(run_fa_resnet)
for _name, _p in (("fa-resnet-mnist", FA_MNIST), ("fa-resnet-cifar10", FA_CIFAR)):
    experiment(_name, paper="feature-averaging", reference=FA_REF, summary=FA_SUMMARY + f" ({_p['dataset']})",
               config=FAResNetConfig,
               presets={"paper": dict(_p), "quick": {**_p, "dataset": "digits", "smoke": True, "model": "smallcnn",
                                                     "width": 16, "epochs": 8, "batch_size": 64, "lr": 0.05, "augment": False,
                                                     "cpu_threads": 1,
                                                     "n_attack": 200, "pgd_steps": 5}})(run_fa_resnet)


# ------------------------------------------------------------------------------------------ fa-embeddings
class FAEmbeddingsConfig(ExperimentConfig):
    embeddings: str = Field("digits", description="'digits' (the 64 pixels of 8×8 digits; no download) or a .npz/"
                            ".npy/.parquet file of image embeddings with labels (see 'featlab embed')")
    labels_file: str | None = Field(None, description="labels (.npy) when 'embeddings' is a bare .npy array")
    positive: list[int] = Field([0, 1, 2, 3, 4], description="classes merged into the + label (J+)")
    width: int = Field(30, ge=2, description="hidden width of both heads (2-class: width/2 per sign)")
    h: int = Field(3, ge=1, description="neurons per class of the 10-class head; also the 2-class head's grouping")
    center: bool = Field(True, description="subtract the training mean embedding [paper silent]")
    optimizer: Literal["adam", "gd"] = Field("adam", description="full-batch optimiser of the heads [paper silent]")
    lr: float = Field(1e-2, gt=0, description="learning rate")
    steps: int = Field(300, ge=1, description="full-batch steps")
    sigma_w: float = Field(1e-3, ge=0, description="init std of the first-layer weights")
    test_fraction: float = Field(0.2, gt=0, lt=1, description="held-out fraction when the file has no split")
    per_class: int = Field(100, ge=1, description="training images per class in the Fig 10 correlation map")
    cpu_threads: int | None = Field(None, ge=1, description="torch CPU threads while this experiment runs (None: "
                                    "leave as is)")

    @model_validator(mode="after")
    def _ok(self):
        check(self.width % 2 == 0 and (self.width // 2) % self.h == 0, "width",
              f"must be even with width/2 a multiple of h={self.h} (groups of h neurons per class)",
              "e.g. width=30 h=3")
        check(len(set(self.positive)) == len(self.positive) > 0, "positive", "must list distinct classes")
        return self


def load_embeddings(path: str, labels_file: str | None = None):
    """(z (N, D) float32, labels (N,) int64, split (N,) bool is_test or None) from .npz / .npy / .parquet."""
    p = Path(path).expanduser()
    hint = "compute it with 'featlab embed --root DATA --out FILE' or pass embeddings=digits"
    if not p.is_file():
        raise DataError(f"embeddings file {str(p)!r} does not exist; {hint}")
    split = None
    try:
        if p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as f:
                zk = next((k for k in ("embeddings", "x", "z") if k in f), None)
                yk = next((k for k in ("labels", "y") if k in f), None)
                if zk is None or yk is None:
                    raise DataError(f"{str(p)!r} must hold arrays 'embeddings' and 'labels' (has {list(f)})")
                z, y = f[zk], f[yk]
                split = f["is_test"].astype(bool) if "is_test" in f else None
        elif p.suffix == ".npy":
            z = np.load(p, allow_pickle=False)
            if labels_file is None or not Path(labels_file).is_file():
                raise DataError(f"{str(p)!r} is a bare array: pass labels_file=<labels .npy> "
                                f"(missing: {labels_file!r})")
            y = np.load(labels_file, allow_pickle=False)
        elif p.suffix == ".parquet":
            import pandas as pd

            df = pd.read_parquet(p)
            if "label" not in df:
                raise DataError(f"{str(p)!r} needs a 'label' column (has {list(df.columns)[:5]}...)")
            y = df["label"].to_numpy()
            if "split" in df:
                split = (df["split"].astype(str) == "test").to_numpy()
            if "embedding" in df:
                z = np.stack(df["embedding"].to_numpy())
            else:
                cols = [c for c in df.columns if c not in ("label", "split")]
                z = df[cols].to_numpy()
        else:
            raise DataError(f"embeddings file {str(p)!r} must end in .npz, .npy or .parquet")
    except (ValueError, OSError) as e:
        raise DataError(f"embeddings file {str(p)!r} could not be read ({e}); {hint}") from None
    z, y = np.asarray(z, dtype=np.float32), np.asarray(y).astype(np.int64)
    if z.ndim != 2 or y.ndim != 1 or len(z) != len(y):
        raise DataError(f"{str(p)!r}: embeddings must be (N, D) and labels (N,); got {z.shape} and {y.shape}")
    return torch.tensor(z), torch.tensor(y), None if split is None else torch.tensor(np.asarray(split))


def _embedding_data(cfg: FAEmbeddingsConfig):
    if cfg.embeddings == "digits":
        d = load_images("digits")
        return (d.x_train.flatten(1), d.y_train, d.x_test.flatten(1), d.y_test, "8×8 digits (64 pixels)")
    z, y, is_test = load_embeddings(cfg.embeddings, cfg.labels_file)
    if is_test is None:  # a fixed stratified split
        g = torch.Generator().manual_seed(0)
        is_test = torch.zeros(len(y), dtype=torch.bool)
        for c in y.unique():
            idx = (y == c).nonzero().flatten()
            idx = idx[torch.randperm(len(idx), generator=g)]
            is_test[idx[: round(len(idx) * cfg.test_fraction)]] = True
    return z[~is_test], y[~is_test], z[is_test], y[is_test], Path(cfg.embeddings).name


@experiment("fa-embeddings", paper="feature-averaging", reference="Fig 2c/2d, Fig 10 (§6.1)",
            summary="two-layer heads on image embeddings: 2-class labels average class features, 10-class labels "
                    "decouple them",
            config=FAEmbeddingsConfig,
            presets={"quick": {"seeds": 4, "cpu_threads": 1},
                     "paper": {"seeds": 5, "embeddings": "cifar10_clip_vitb32.npz"}})
def fa_embeddings(ctx) -> None:
    with _threads(ctx.cfg.cpu_threads):
        _fa_embeddings(ctx)


def _fa_embeddings(ctx) -> None:
    cfg: FAEmbeddingsConfig = ctx.cfg
    ztr, ytr, zte, yte, src = _embedding_data(cfg)
    k = int(max(ytr.max(), yte.max())) + 1
    if k * cfg.h != cfg.width:
        raise DataError(f"fa-embeddings: {src} has {k} classes, so width must be k·h = {k * cfg.h} (got width="
                        f"{cfg.width}, h={cfg.h}); set width={k * cfg.h}")
    if max(cfg.positive) >= k or len(cfg.positive) * 2 != k:
        raise DataError(f"fa-embeddings: 'positive' must list half of the {k} classes (the 2-class head has width/2 "
                        f"neurons per sign, h per class); got {cfg.positive}")
    D = ztr.shape[1]
    mean = ztr.mean(0) if cfg.center else torch.zeros(D)
    scale = ((ztr - mean).norm(dim=1).mean() / math.sqrt(D))
    prep = lambda z: ((z - mean) / scale).double()  # noqa: E731  (‖z‖ ≈ √D on average)
    xtr, xte = prep(ztr), prep(zte)
    pos = torch.zeros(k, dtype=torch.bool)
    pos[cfg.positive] = True
    # class order for the figure and the head: J+ classes first, then J− (rows μ_1..μ_k in this order)
    order = torch.cat([pos.nonzero().flatten(), (~pos).nonzero().flatten()])
    rank = torch.empty(k, dtype=torch.long)
    rank[order] = torch.arange(k)
    ctr, cte = rank[ytr], rank[yte]  # relabelled so that classes 0..k/2−1 are J+
    pos_r = torch.arange(k) < k // 2
    ypm_tr, ypm_te = pos_r[ctr].double() * 2 - 1, pos_r[cte].double() * 2 - 1
    seeds, E, half = ctx.seeds, len(ctx.seeds), cfg.width // 2
    mu = torch.stack([xtr[ctr == c].mean(0) for c in range(k)])  # μ_j: class means of the training embeddings
    mu_e = mu.expand(E, k, D)

    bnet = EnsembleTwoLayer.init(seeds, D, signed_readout(half, half, 1 / half), sigma_w=cfg.sigma_w, sigma_b=None,
                                 dtype=torch.float64, role="init/emb-binary")
    knet = EnsembleTwoLayer.init(seeds, D, block_readout(k, cfg.h, 1 / cfg.h), sigma_w=cfg.sigma_w, sigma_b=None,
                                 dtype=torch.float64, role="init/emb-multiclass")
    opt = "adam" if cfg.optimizer == "adam" else "gd"
    bres = train([bnet.W], lambda s: logistic(bnet(xtr), ypm_tr), cfg.steps, seeds=seeds, optimizer=opt, lr=cfg.lr,
                 probe=lambda s: {"train_acc": (torch.where(bnet(xtr) > 0, 1.0, -1.0) == ypm_tr).double().mean(-1)},
                 probe_every=max(1, cfg.steps // 20), prefix="binary.", desc="2-class head")
    cidx = ctr.expand(E, -1)
    kres = train([knet.W], lambda s: cross_entropy(knet(xtr), cidx), cfg.steps, seeds=seeds, optimizer=opt,
                 lr=cfg.lr, probe=lambda s: {"train_acc_kclass": (knet(xtr).argmax(-1) == ctr).double().mean(-1)},
                 probe_every=max(1, cfg.steps // 20), prefix="multiclass.", desc="10-class head")
    ctx.log(bres.frame())
    ctx.log(kres.frame())
    for r in (bres, kres):
        if r.status != "complete":
            ctx.fail(r.message)
            return
    with torch.no_grad():
        ctx.metric("binary.test_acc", (torch.where(bnet(xte) > 0, 1.0, -1.0) == ypm_te).double().mean(-1))
        lk = knet(xte)
        ctx.metric("multiclass.test_acc_kclass", (lk.argmax(-1) == cte).double().mean(-1))
        ctx.metric("multiclass.test_acc", ((logit_margin_readout(lk, pos_r) > 0) == pos_r[cte]).double().mean(-1))
        # equivalent weights: groups of h consecutive neurons (2-class: k/2 positive then k/2 negative groups)
        bcos = al.cosine_matrix(mu_e, al.equivalent_weights(bnet.W, k))  # (E, k, k)
        kcos = al.cosine_matrix(mu_e, al.equivalent_weights(knet.W, k))
    eye = torch.eye(k, dtype=torch.bool)
    block = pos_r[:, None] == pos_r[None, :]
    stats = {}
    for name, cos in (("binary", bcos), ("multiclass", kcos)):
        diag = cos[:, eye].mean(-1)
        in_off = cos[:, block & ~eye].mean(-1)
        off_block = cos[:, ~block].mean(-1)
        stats[name] = {"cos_diag_mean": diag, "cos_in_block_offdiag_mean": in_off, "cos_off_block_mean": off_block,
                       "diag_excess": diag - in_off, "block_excess": cos[:, block].mean(-1) - off_block}
        for key, v in stats[name].items():
            ctx.metric(f"{name}.{key}", v)
    ctx.figure(plots.heatmap_panels([
        (bcos.mean(0).numpy(), f"(c) 2-class labels: cos($\\mu_i, w_j$), mean of {E} seeds"),
        (kcos.mean(0).numpy(), f"(d) {k}-class labels: cos($\\mu_i, w_j$), mean of {E} seeds")],
        f"Feature averaging vs decoupling on {src} (width {cfg.width}, h={cfg.h}; rows/columns: J+ classes "
        f"{[int(c) for c in order[: k // 2]]} first)"), "fig2cd_embedding_cosine")

    # ---- Fig 10: cos(z_i, z_j) of `per_class` training embeddings per class, ordered by class
    sel = torch.cat([(ytr == c).nonzero().flatten()[: cfg.per_class] for c in range(k)])
    zs = xtr[sel]
    zs = zs / zs.norm(dim=1, keepdim=True)
    corr = (zs @ zs.T).numpy()
    lab = ytr[sel]
    same = (lab[:, None] == lab[None, :]) & ~torch.eye(len(sel), dtype=torch.bool)
    within = float(torch.from_numpy(corr)[same].mean())
    between = float(torch.from_numpy(corr)[lab[:, None] != lab[None, :]].mean())
    ctx.metric("embeddings.cos_within_class", within)
    ctx.metric("embeddings.cos_between_class", between)

    fig, ax = subplots(figsize=(6.2, 5.4))
    im = ax.imshow(corr, cmap="viridis", interpolation="nearest")
    ticks = [int((lab == c).sum()) for c in range(k)]
    edges = np.cumsum([0] + ticks)
    ax.set_xticks((edges[:-1] + edges[1:]) / 2, [str(c) for c in range(k)], fontsize=7)
    ax.set_yticks((edges[:-1] + edges[1:]) / 2, [str(c) for c in range(k)], fontsize=7)
    ax.set_xlabel("class")
    ax.set_ylabel("class")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title(f"Fig 10: cos($z_i, z_j$), {len(sel)} training embeddings ({src}, "
                 f"{'centred' if cfg.center else 'raw'}), ordered by class", fontsize=9)
    fig.tight_layout()
    ctx.figure(fig, "fig10_embedding_correlation")

    # ---- claims (thresholds: docs/image-benchmarks.md)
    kd = ctx.metrics["multiclass.diag_excess"]
    bd = ctx.metrics["binary.diag_excess"]
    bb = ctx.metrics["binary.block_excess"]
    ctx.claim("fa.emb_kclass_decouples", f"{k}-class head: cos(μ_j, w_j) exceeds cos(μ_i, w_j), i ≠ j same block",
              "Fig 2d", round(kd, 3), ">= 0.1 (Fig 2d: diagonal 0.25–0.66, off-diagonal ≈ 0)", kd >= 0.1)
    ctx.claim("fa.emb_binary_blocks", "2-class head: its weights align with its own label's class features",
              "Fig 2c", round(bb, 3), ">= 0.05 (Fig 2c: in-block up to 0.29, cross-block −0.08…0.02)", bb >= 0.05)
    ctx.claim("fa.emb_binary_averages", "2-class head singles out each class less than the 10-class head",
              "Fig 2c vs 2d", round(bd, 3), f"< half the 10-class head's {kd:.3f}", bd < 0.5 * kd)
    ctx.claim("fa.emb_within_gt_between", "embeddings: within-class cosine > between-class cosine", "Fig 10",
              round(within - between, 3), "> 0", within > between)


def cmd_embed(args) -> int:
    """featlab embed: CLIP ViT-B-32 image embeddings of CIFAR-10 (train and test) → .npz or .parquet."""
    try:
        import open_clip
    except ImportError:
        raise DataError("featlab embed needs open_clip: pip install open_clip_torch (and the ViT-B-32 weights, "
                        "downloaded by open_clip or given with --pretrained FILE)") from None
    from PIL import Image

    from ..utils import resolve_device

    data = load_images("cifar10", args.root)
    dev = resolve_device(args.device)
    try:
        model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained=args.pretrained)
    except Exception as e:  # noqa: BLE001
        raise DataError(f"could not load CLIP ViT-B-32 weights {args.pretrained!r} ({type(e).__name__}: {e}); pass "
                        f"--pretrained with a local checkpoint file") from None
    model = model.to(dev).eval()
    out, labels, is_test = [], [], []
    for x, y, t in ((data.x_train, data.y_train, False), (data.x_test, data.y_test, True)):
        bar = progress_bar(len(x), f"CLIP {'test' if t else 'train'}")
        for i in range(0, len(x), args.batch_size):
            imgs = [(xi.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8) for xi in x[i: i + args.batch_size]]
            batch = torch.stack([preprocess(Image.fromarray(a)) for a in imgs]).to(dev)
            with torch.no_grad():
                out.append(model.encode_image(batch).float().cpu())
            bar.update(len(imgs))
        bar.close()
        labels.append(y)
        is_test.append(torch.full((len(y),), t))
    z, y, t = torch.cat(out).numpy(), torch.cat(labels).numpy(), torch.cat(is_test).numpy()
    dest = Path(args.out)
    if dest.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame({"label": y, "split": np.where(t, "test", "train"), "embedding": list(z)}).to_parquet(dest)
    else:
        np.savez(dest, embeddings=z, labels=y, is_test=t)
    print(f"wrote {len(z)} CLIP ViT-B-32 embeddings ({z.shape[1]}-d) to {dest}")
    return 0
