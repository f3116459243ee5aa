"""mm-spurious-*: Midpoint Mixup §5, the spurious-channel image benchmark (Table 1, Figs 1-2). Every training image
is concatenated with an image of a paired class (:mod:`.spurious_data`); Uniform and Midpoint Mixup, which learn
both, end below ERM's test error on the unmodified test images.

Decisions where the paper is silent (each is a config field; see docs/image-benchmarks.md):
* run i uses seed i for everything: the spurious wrapper (class pairing, partners, γ), data order, init. Within a
  run the three methods share the wrapper and the initial weights (a paired comparison, as run 1 of the code);
  the optimizer is re-created per run (the code reuses Adam's moments across runs; we do not copy that).
* Mixup pairs inside the batch by a random permutation (self-pairs allowed, one λ per batch, λ-weighted CE),
  where the code draws each partner from the whole training set; both are uniform random partners.
* inputs are normalised with the code's per-dataset mean/std before scaling and concatenation; test zeros are
  zeros in normalised space (as the code).
* final test error = error after the last epoch; ± is the population std over runs (ddof = 0, as the code).
* epochs = 0 (the control `untrained`) evaluates each method's network at its init, which is the same for every
  method because it depends on the seed alone.
* the claims, their controls (λ = 1: ERM through the Mixup code path; the spurious channel removed) and premises,
  and their uncertainty (paired by run) are in :mod:`.spurious_claims`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import torch
from pydantic import Field, model_validator

from ...config import Need, check
from ...data.images import ImageData
from ...placement import to_host, to_numpy
from ...plotting import subplots
from ...runs.registry import experiment
from ...runs.resources import dataset_needs, image_needs
from ...text import table
from ...train.checkpoints import fingerprint_of, run_checkpoints
from ...train.image_config import ImageTrainFields, build_model, load_run_data
from ...train.image_trainer import FitResult, fit, predict
from ...train.mixup import MidpointMixup, Mixup
from ...train.objectives import erm_objective, mixup_objective
from ...utils import generator as make_generator
from ...utils import torch_threads
from .diagnoses import MM_SPURIOUS_DIGITS, with_diagnoses
from .spurious_claims import (
    BELOW_ERM,
    BELOW_IDS,
    METHOD_LABEL,
    PAPER_TABLE1,
    TABLE1_EXPERIMENT,
    TRAINED,
    UNTRAINED,
    assumptions,
    judge,
    lambda_one,
    no_spurious,
    table1_claims,
)
from .spurious_data import SpuriousChannels
from .spurious_rivals import controls as mixing_rivals
from .spurious_rivals import rival_objective

__all__ = ["BELOW_ERM", "PAPER_TABLE1", "MMSpuriousConfig", "paper_cell", "run_mm_spurious"]

METHOD_COLOR = {"erm": "C0", "midpoint": "C1", "mixup": "C2"}  # the code's colours


class MMSpuriousConfig(ImageTrainFields):
    epochs: int = Field(100, ge=0, description="training epochs (0: the networks at their init, the control)")
    dataset: Literal["digits", "fashionmnist", "cifar10", "cifar100"] = Field("cifar10", description="dataset")
    methods: list[Literal["mixup", "midpoint", "erm"]] = Field(["mixup", "midpoint", "erm"],
                                                              description="methods, in the code's order")
    mixup_alpha: float = Field(1.0, gt=0, description="Uniform Mixup's Beta(α, α) (α = 1: uniform λ)")
    per_sample_lambda: bool = Field(False, description="one λ per example (True) or per batch (False, the code)")
    allow_self_pairs: bool = Field(True, description="Mixup partners by permutation (True) or derangement")
    partner: Literal["fixed", "resample"] = Field("fixed", description="spurious partner image fixed per example "
                                                  "(the code) or redrawn at every access")
    mix_lambda: float | None = Field(None, ge=0, le=1, description="fix λ of both Mixups (None: Beta(α, α) and 1/2, "
                                     "the paper); 1: no mixing, each trains as ERM through its own code path (the "
                                     "control 'lambda-one')")
    judge_table1: bool = Field(True, description="judge Table 1's test errors as claims (its setting: ResNet-18, "
                               "the whole training set, 100 epochs); False where a preset departs from it (a small "
                               "CNN on a subset, on the CPU): Table 1 is then printed beside the run, unjudged")
    NEUTRAL_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("mix_rival",)  # added after the GPU units were kept (issue 46)
    mix_rival: Literal["none", "label-smoothing", "same-class", "input-noise"] = Field(
        "none", description="the objective of both Mixups: their own (none, the paper) or, as a rival, ERM on labels "
        "smoothed by the mixing's off-label mass, the same mixing within a class only, or ERM on inputs with "
        "Gaussian noise of the mixing's scale (spurious_rivals.py); ERM untouched")
    spurious: bool = Field(True, description="concatenate each training image with a paired-class image (the "
                           "paper); False: zeros there, as at test, the spurious feature removed (the control "
                           "'no-spurious')")

    @model_validator(mode="after")
    def _ok(self):
        check(len(self.methods) > 0 and len(set(self.methods)) == len(self.methods), "methods",
              "must list distinct methods among mixup, midpoint, erm")
        return self

    def estimate(self) -> list[Need]:
        """The network, a batch's activations and the dataset with its spurious partner channels (§5: two images
        concatenated along the channels), one method after another; and the dataset files it reads."""
        return image_needs(self, arms=len(self.methods), channel_factor=2) + dataset_needs(self)


# ------------------------------------------------------------------------------------------ the experiment
def run_mm_spurious(ctx) -> None:
    with torch_threads(ctx.cfg.cpu_threads), run_checkpoints(ctx) as ck:
        data = load_run_data(ctx)
        curves, wrong, train_acc = _train(ctx, data, ck)
        final = _measure(ctx, curves, train_acc)
        _draw(ctx, data, curves, final)
        judge(ctx, {m: np.asarray([c[-1] for c in curves[m]], dtype=float) for m in curves}, wrong)


def _objective(cfg: MMSpuriousConfig, method: str, k: int):
    if method == "erm":
        return erm_objective
    if cfg.mix_rival != "none":  # a rival in the Mixups' place (spurious_rivals.py)
        mix = _mixing(cfg, "midpoint" if method == "midpoint" else "mixup", k)
        return rival_objective(cfg.mix_rival, method, cfg.mixup_alpha, k, lambda g: _lam(mix, g))
    if cfg.mix_lambda is not None:  # the control 'lambda-one': both Mixups' code path with a fixed λ
        return mixup_objective(Mixup(None, lam=cfg.mix_lambda, per_sample=cfg.per_sample_lambda,
                                     allow_self_pairs=cfg.allow_self_pairs, num_classes=k))
    if method == "midpoint":
        return mixup_objective(MidpointMixup(allow_self_pairs=cfg.allow_self_pairs, num_classes=k))
    return mixup_objective(Mixup(cfg.mixup_alpha, per_sample=cfg.per_sample_lambda,
                                 allow_self_pairs=cfg.allow_self_pairs, num_classes=k))


def _mixing(cfg: MMSpuriousConfig, method: str, k: int) -> Mixup:
    if method == "midpoint":
        return MidpointMixup(allow_self_pairs=cfg.allow_self_pairs, num_classes=k)
    return Mixup(cfg.mixup_alpha, per_sample=False, allow_self_pairs=cfg.allow_self_pairs, num_classes=k)


def _lam(mix: Mixup, g: torch.Generator) -> torch.Tensor:
    """One λ of the method's law for the batch (a rival's same-class mixing), from the epoch's generator."""
    mix.generator = g
    return mix.sample_lam(1)[0]


def _train(ctx, data: ImageData, ck):
    """Every method on every run: (method → the test error after each epoch, one curve per run; method → (runs,
    test points) errors of the final nets; method → training accuracy per run). Each method × run is a unit
    (``ctx.units_of``): a budgeted run stops between two of them and the next call resumes (featlab.runs.units)."""
    cfg: MMSpuriousConfig = ctx.cfg
    k = data.num_classes
    # the images live on the run device for the whole run (issue 33): the spurious concatenation and γ-scaling of
    # every batch happen there, with no host copy per step (the random draws stay on CPU generators: same numbers)
    xtr, ytr = data.normalize(data.x_train).to(ctx.device), data.y_train.to(ctx.device)
    x_test = SpuriousChannels.test_view(data.normalize(data.x_test)).to(ctx.device)

    def wrong_of(m) -> torch.Tensor:
        return predict(m, x_test, cfg.eval_batch).argmax(-1) != data.y_test

    curves: dict[str, list[list[float]]] = {m: [] for m in cfg.methods}
    wrong: dict[str, list[np.ndarray]] = {m: [] for m in cfg.methods}
    train_acc: dict[str, list[float]] = {m: [] for m in cfg.methods}
    computes = {}
    for seed in ctx.seeds:
        wrapper: list[SpuriousChannels] = []  # drawn once per run, only when one of its units is computed

        def spurious(seed=seed, wrapper=wrapper) -> SpuriousChannels:
            if not wrapper:
                wrapper.append(SpuriousChannels(xtr, ytr, k, seed=seed, partner=cfg.partner, spurious=cfg.spurious))
            return wrapper[0]

        for method in cfg.methods:
            computes[f"{method}-seed{seed}"] = lambda method=method, seed=seed, sc=spurious: _unit(
                ctx, sc(), method, seed, k, wrong_of, ck)
    units = ctx.units_of(computes)
    for seed in ctx.seeds:
        for method in cfg.methods:
            u = units[f"{method}-seed{seed}"]
            if u["fit"] is not None:
                ctx.trained(FitResult.from_dict(u["fit"]))  # a diverged unit ends the run as failed, as before
            curves[method].append([float(e) for e in u["curve"]])
            wrong[method].append(u["wrong"])
            train_acc[method].append(float(u["train_acc"]))
    return curves, {m: np.stack(w) for m, w in wrong.items()}, train_acc


def _unit(ctx, sc: SpuriousChannels, method: str, seed: int, k: int, wrong_of, ck) -> dict:
    """One method on one run: its fit's history, test-error curve, per-test-point errors and training accuracy."""
    cfg: MMSpuriousConfig = ctx.cfg
    model = build_model(cfg.model, sc.channels, k, cfg.width, seed)  # the init depends on the seed alone
    if cfg.epochs == 0:  # the control: every method's network at the same init, evaluated as trained ones
        model.to(ctx.device).eval()  # on the run device, as fit() puts the trained ones
        with torch.no_grad():
            res, curve = None, [float(wrong_of(model).double().mean())]
    else:
        res = fit(model, sc.batch, len(sc), cfg.fit_spec(), objective=_objective(cfg, method, k),
                  evaluate=lambda m: {"test_err": wrong_of(m).double().mean().item()}, seed=seed, device=ctx.device,
                  checkpoint=ck / f"{method}-seed{seed}.pt",
                  fingerprint=fingerprint_of(ctx.experiment_id, cfg, method=method),
                  desc=f"{method} seed {seed}", prefix=f"{method}.")
        curve = res.series("test_err")
        if res.status != "complete":
            return {"fit": res.to_dict(), "curve": curve, "wrong": np.zeros(0, bool), "train_acc": float("nan")}
    with torch.no_grad():
        return {"fit": None if res is None else res.to_dict(), "curve": curve,
                "wrong": ctx.numpy(wrong_of(model)).astype(bool),
                "train_acc": _train_accuracy(model, sc, seed, cfg.eval_batch)}


def _train_accuracy(model, sc: SpuriousChannels, seed: int, batch: int) -> float:
    """Accuracy on the run's training images as trained on (each beside its partner, one γ draw per image, from a
    generator of its own), batch by batch: shows the net fits its data (the controls' 'trained' metric)."""
    g = make_generator(seed, "spurious/train-acc")
    correct = 0
    for i in range(0, len(sc), batch):
        xb, yb = sc.batch(torch.arange(i, min(i + batch, len(sc)), device=sc.y.device), g)
        correct += int((predict(model, xb, batch).argmax(-1) == to_host(yb)).sum())  # predict's logits are on the host
    return correct / len(sc)


def _measure(ctx, curves: dict[str, list[list[float]]], train_acc: dict[str, list[float]]):
    """Final test error per method: (mean, population std) over runs; the mean training accuracy."""
    final = {}
    for m in ctx.cfg.methods:
        a = np.asarray([c[-1] for c in curves[m]], dtype=float)
        final[m] = (float(a.mean()), float(a.std()))  # population std (ddof = 0), as the paper's code
        ctx.metric(f"{m}.test_err", final[m][0])
        ctx.metric(f"{m}.test_err_std", final[m][1])
        ctx.metric(f"{m}.train_acc", float(np.mean(train_acc[m])))
    return final


def _draw(ctx, data: ImageData, curves: dict, final: dict[str, tuple[float, float]]) -> None:
    """Table 1 (ours beside the paper's), Fig 1 (the data modification) and Fig 2 (test error per epoch)."""
    cfg: MMSpuriousConfig = ctx.cfg
    paper = PAPER_TABLE1.get(cfg.dataset)
    rows = [[METHOD_LABEL[m], f"{100 * final[m][0]:.2f} ± {100 * final[m][1]:.2f}",
             paper_cell(paper[m]) if paper else "—"] for m in cfg.methods]
    title = (f"Table 1 ({cfg.dataset}; featlab: {len(ctx.seeds)} runs, {cfg.model}, {cfg.train_subset or 'all'} "
             f"training images, {cfg.epochs} epochs): final test error (%) on the zero-concatenated test set, mean ± "
             "population std over runs")
    if paper and not cfg.smoke:
        ctx.beside_paper(title + "; the paper's: ResNet-18, all, 100 epochs, 5 runs", ["model", "featlab", "paper"],
                         rows)
    else:
        ctx.note(title + "\n" + table(rows, ["model", "ours", "paper"], [15, 16, 12]))
    sc = SpuriousChannels(data.x_train, data.y_train, data.num_classes, seed=ctx.seeds[0], partner=cfg.partner)
    ctx.figure(_fig1(data, sc), f"fig1_{cfg.dataset}_spurious_examples")
    ctx.figure(_fig2(cfg, curves, paper, len(ctx.seeds)), f"fig2_{cfg.dataset}_error_curves")


def paper_cell(value: tuple[float, float | None]) -> str:
    """Table 1's entry as printed: '9.66 ± ?' where the paper gives no ± (Uniform Mixup, FMNIST)."""
    mean, std = value
    return f"{mean:.2f} ± " + ("?" if std is None else f"{std:.0f}")


# ------------------------------------------------------------------------------------------ figures
def _fig1(data: ImageData, sc: SpuriousChannels, n: int = 4):
    """MM Fig 1: training images next to their concatenated partner from the paired class (raw pixels, γ shown)."""
    g = torch.Generator().manual_seed(0)
    idx = torch.randperm(len(sc), generator=g, device=g.device)[:n]
    xb, _ = sc.batch(idx, g)
    C = data.x_train.shape[1]
    fig, axes = subplots(2, n, figsize=(2.2 * n, 4.6))
    for j, i in enumerate(idx.tolist()):
        gamma = float(xb[j, :C].sum() / data.x_train[i].sum().clamp_min(1e-12))
        for row, (img, title) in enumerate((
                (xb[j, :C], f"class {data.classes[int(data.y_train[i])]}: γ·x (γ={gamma:.2f})"),
                (xb[j, C:], f"class {data.classes[int(sc.sigma[data.y_train[i]])]}: (1−γ)·x'"))):
            im = to_numpy(img.permute(1, 2, 0).clamp(0, 1))
            axes[row, j].imshow(im[..., 0] if C == 1 else im, cmap="gray" if C == 1 else None, vmin=0, vmax=1)
            axes[row, j].set_title(title, fontsize=7)
            axes[row, j].axis("off")
    fig.suptitle("Fig 1: each training image (top) is concatenated along channels with an image of its paired "
                 "class (bottom)", fontsize=9)
    fig.tight_layout()
    return fig


def _fig2(cfg: MMSpuriousConfig, curves: dict, paper: dict | None, runs: int):
    """MM Fig 2: test error per epoch, mean ± 1 std over runs, Table 1's final values as hollow markers."""
    fig, ax = subplots(figsize=(7.2, 5.0))
    for m in ("erm", "midpoint", "mixup"):
        if m not in curves or not curves[m]:
            continue
        a = np.asarray(curves[m])
        ep = np.asarray(cfg.fit_spec().eval_epochs()) if cfg.epochs > 0 else np.zeros(1)  # 0: the init alone
        if len(ep) != a.shape[1]:  # a run shortened to time its steps (featlab.meter): tested at each epoch it ran
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


# ------------------------------------------------------------------------------------------ registration
MM_PAPER = {"seeds": 5, "model": "resnet18", "width": 64, "epochs": 100, "batch_size": 750, "optimizer": "adam",
            "lr": 1e-3}
_S5 = "§5: "
MM_CITES = {"seeds": "Fig 2 caption, Table 1: the mean of 5 runs", "model": _S5 + "ResNet-18 (Kuang Liu's code)",
            "width": _S5 + "ResNet-18 (64 channels in its first stage)", "epochs": _S5 + "100 epochs",
            "batch_size": _S5 + "a batch size of 750", "optimizer": _S5 + "Adam, β1 = 0.9, β2 = 0.999",
            "lr": _S5 + "a learning rate of 0.001"}
_NAMES = {"fashionmnist": "Fashion MNIST", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
MM_REF = "Table 1, Figs 1-2 (§5)"
MM_SUMMARY = "spurious-channel benchmark: Uniform and Midpoint Mixup end below ERM's test error"
TINY = {"seeds": 1, "epochs": 1, "width": 2, "batch_size": 200}

experiment("mm-spurious-digits", paper="midpoint-mixup", reference=MM_REF + " on 8×8 digits",
           summary=MM_SUMMARY + " (8×8 digits, small CNN, CPU)", config=MMSpuriousConfig,
           claims=with_diagnoses(BELOW_ERM, MM_SPURIOUS_DIGITS),
           controls=[UNTRAINED, lambda_one(), no_spurious("digits"), *mixing_rivals(BELOW_IDS, TRAINED)],
           assumptions=assumptions("digits"),
           presets={"quick": {"dataset": "digits", "model": "smallcnn", "width": 16, "seeds": 3, "epochs": 30,
                              "batch_size": 50, "optimizer": "adam", "lr": 3e-3, "cpu_threads": 1},
                    # the paper did not run digits: §5's protocol at full length on them, on the CPU (a demo)
                    "cpu-full": {"dataset": "digits", "model": "smallcnn", "width": 32, "seeds": 5, "epochs": 100,
                                 "batch_size": 50, "optimizer": "adam", "lr": 1e-3}}, tiny=TINY)(run_mm_spurious)
# the real FashionMNIST files (Debian's dataset-fashion-mnist) on this CPU: §5's protocol on a small CNN and a
# class-stratified subset, fewer epochs [featlab's choices; Table 1 printed beside, not judged]
MM_CPU_REAL = {"dataset": "fashionmnist", "model": "smallcnn", "width": 16, "seeds": 5, "train_subset": 4000,
               "epochs": 30, "batch_size": 50, "optimizer": "adam", "lr": 1e-3, "eval_every": 5, "cpu_threads": 1,
               "judge_table1": False}
for _ds, _id in TABLE1_EXPERIMENT.items():
    experiment(_id, paper="midpoint-mixup", reference=MM_REF, summary=MM_SUMMARY + f" ({_ds})",
               config=MMSpuriousConfig, claims=BELOW_ERM + table1_claims(_ds),
               controls=[UNTRAINED, lambda_one(_ds), no_spurious(_ds),
                         *mixing_rivals(BELOW_IDS, TRAINED, _ds)],
               assumptions=assumptions(_ds),
               presets={"paper": {"dataset": _ds, **MM_PAPER},
                        "quick": {**MM_PAPER, "dataset": "digits", "smoke": True, "seeds": 1, "epochs": 3,
                                  "model": "smallcnn", "width": 16, "batch_size": 100,
                                  "cpu_threads": 1},
                        **({"cpu-real": MM_CPU_REAL} if _ds == "fashionmnist" else {})}, tiny=TINY,
               cites={**MM_CITES, "dataset": f"§5, Table 1: {_NAMES[_ds]}"})(run_mm_spurious)
