"""Epoch-based training of one image model (ResNet-18, the small CNN, any ``nn.Module``), resumable after a kill.

    spec = FitSpec(epochs=100, batch_size=750, optimizer="adam", lr=1e-3)
    res = fit(model, batch_fn, n_train, spec, objective=mixup_objective(Mixup(1.0)), evaluate=ev,
              seed=0, checkpoint=Path("ckpt/mixup-seed0.pt"), fingerprint={"experiment": ..., "config": ...})
    res.history   # one dict per epoch: epoch, train_loss, lr, images_per_s and whatever ``evaluate`` returns
    ctx.trained(res)  # like the synthetic trainer's result: status, message, frame() of (seed, step, metric, value)

* ``batch_fn(idx, generator) -> (x, y)`` builds the training batch of the example indices ``idx`` (so a dataset
  wrapper, e.g. Midpoint Mixup's spurious channels, draws its random mixing from the given generator).
* Every random draw of epoch e (order, γ, Mixup's pairing and λ, augmentation) comes from a generator keyed by
  (seed, role, e): a run resumed at epoch e is bit-identical to one never interrupted (on CPU).
* A checkpoint (model, optimizer, AMP scaler, history, fingerprint) is written atomically after every epoch and
  read with ``torch.load(weights_only=True)``. Running the same command again continues where it stopped; a
  checkpoint written under another fingerprint (another config) is refused with the fields that differ.
  A config marks the fields that do not change training in ``NOT_TRAINING``; :func:`fingerprint_of` leaves them out.
* ``device="auto"`` uses CUDA when present, with float16 autocast and a gradient scaler there.
* What the image experiments of every paper share: :class:`ImageTrainFields`, :func:`build_model`,
  :func:`load_run_data`, :func:`run_checkpoints`.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Literal

import pandas as pd
import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn

from ..config import ExperimentConfig
from ..data.images import ImageData, load_images
from ..errors import ConfigError, DataError, FeatlabError
from ..nn.resnet import Normalize, resnet18
from ..nn.smallcnn import SmallCNN
from ..utils import generator as make_generator
from ..utils import resolve_device
from ..utils import progress_bar
from .mixup import Mixup, mixup_cross_entropy

BatchFn = Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]]
Objective = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]


class CheckpointError(FeatlabError):
    """A checkpoint cannot be used for this run (another config, unreadable)."""


@dataclass
class FitSpec:
    epochs: int
    batch_size: int
    optimizer: str = "adam"  # "adam" | "sgd"
    lr: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    schedule: str = "none"  # "none" | "cosine" (per epoch, to 0 at the last epoch)
    betas: tuple[float, float] = (0.9, 0.999)

    def __post_init__(self):
        if self.epochs < 1 or self.batch_size < 1 or not self.lr > 0:
            raise ConfigError(f"epochs, batch_size and lr must be positive; got {self.epochs}, {self.batch_size}, "
                              f"{self.lr}")
        if self.optimizer not in ("adam", "sgd"):
            raise ConfigError(f"the 'optimizer' field must be 'adam' or 'sgd'; got {self.optimizer!r}")
        if self.schedule not in ("none", "cosine"):
            raise ConfigError(f"the 'schedule' field must be 'none' or 'cosine'; got {self.schedule!r}")

    def lr_at(self, epoch: int) -> float:
        """Learning rate of (0-based) epoch ``epoch``."""
        if self.schedule == "cosine":
            return self.lr * 0.5 * (1 + math.cos(math.pi * epoch / self.epochs))
        return self.lr


@dataclass
class FitResult:
    """What :func:`fit` returns; shares the synthetic trainer's protocol (``status``, ``message``, ``frame()``)."""

    history: list[dict[str, float]] = field(default_factory=list)
    status: str = "complete"  # or "failed" (the loss became non-finite)
    message: str = ""
    resumed_from: int = 0  # epochs already done when this call started
    elapsed_s: float = 0.0
    seed: int = 0
    prefix: str = ""  # metric-name prefix of frame(), e.g. "erm."

    def series(self, key: str) -> list[float]:
        return [h[key] for h in self.history]

    def frame(self) -> pd.DataFrame:
        """Every measurement of the history as tidy rows (seed, step = epoch, prefix + metric, value)."""
        rows = [(self.seed, int(h["epoch"]), self.prefix + k, float(v)) for h in self.history for k, v in h.items()
                if k != "epoch"]
        return pd.DataFrame(rows, columns=["seed", "step", "metric", "value"])


# ------------------------------------------------------------------------------------------ objectives
def erm_objective(model: nn.Module, x: torch.Tensor, y: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return F.cross_entropy(model(x), y)


def mixup_objective(mix: Mixup) -> Objective:
    """λ·CE(y_a) + (1 − λ)·CE(y_b) on mixed inputs; the pairing and λ come from the epoch's generator."""

    def objective(model, x, y, g):
        mix.generator = g
        xm, ya, yb, lam = mix.pair(x, y)
        return mixup_cross_entropy(model(xm), ya, yb, lam.to(xm.dtype))

    return objective


# ------------------------------------------------------------------------------------------ evaluation helpers
@torch.no_grad()
def predict(model: nn.Module, x: torch.Tensor, batch_size: int = 1000, device=None) -> torch.Tensor:
    """Logits of x (on CPU), in eval mode, batch by batch."""
    device = device or next(model.parameters()).device
    was = model.training
    model.eval()
    out = [model(x[i: i + batch_size].to(device)).float().cpu() for i in range(0, len(x), batch_size)]
    model.train(was)
    return torch.cat(out)


# ------------------------------------------------------------------------------------------ checkpoints
def _diff(a: dict, b: dict) -> str:
    keys = sorted(set(a) | set(b))
    diffs = [k for k in keys if a.get(k) != b.get(k)]
    if not diffs:
        return "its fingerprint differs"
    k = diffs[0]
    shown = k.removeprefix("fingerprint.").removeprefix("config.")
    more = [d for d in diffs[1:] if not d.startswith("spec.")]  # spec.* repeats the config's training fields
    return f"field {shown!r} is {a.get(k)!r} there and {b.get(k)!r} here" + (f" (and {len(more)} more)" if more else "")


def _flatten(d: dict, prefix: str = "") -> dict:
    return {kk: vv for k, v in d.items()
            for kk, vv in (_flatten(v, f"{prefix}{k}.").items() if isinstance(v, dict) else [(f"{prefix}{k}", v)])}


def load_checkpoint(path: Path, fingerprint: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists and was written under ``fingerprint``; raise if it is foreign."""
    if not path.is_file():
        return None
    try:  # any malformed file (truncated, not a checkpoint, tampered) is one line, never a traceback
        state = torch.load(path, map_location="cpu", weights_only=True)
        theirs = json.loads(state["fingerprint"])
        state["epoch"], state["history"], _ = int(state["epoch"]), list(state["history"]), state["model"]
        if not (isinstance(theirs, dict) and isinstance(state["optimizer"], dict)):
            raise TypeError("not a featlab checkpoint")
    except Exception as e:  # noqa: BLE001
        raise CheckpointError(f"checkpoint {str(path)!r} is unreadable or not a featlab checkpoint "
                              f"({type(e).__name__}); delete it to start this model afresh") from None
    if theirs != (ours := json.loads(json.dumps(fingerprint, default=str))):
        raise CheckpointError(f"refusing to resume from checkpoint {str(path)!r}: it was written by another config "
                              f"({_diff(_flatten(theirs), _flatten(ours))}); delete it or choose another checkpoint "
                              f"folder")
    return state


def save_checkpoint(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------------ the loop
def _batches(n: int, batch_size: int, g: torch.Generator) -> Iterator[torch.Tensor]:
    order = torch.randperm(n, generator=g)
    for i in range(0, n, batch_size):  # keeps the last partial batch, as the papers' DataLoaders
        yield order[i: i + batch_size]


def fit(model: nn.Module, batch_fn: BatchFn, n_train: int, spec: FitSpec, *, objective: Objective = erm_objective,
        evaluate: Callable[[nn.Module], dict[str, float]] | None = None, seed: int = 0, device: str = "auto",
        checkpoint: str | Path | None = None, fingerprint: dict | None = None, desc: str = "train",
        on_epoch_end: Callable[[int, list], None] | None = None, prefix: str = "") -> FitResult:
    """Train ``model`` for ``spec.epochs`` epochs (resuming from ``checkpoint`` if it holds earlier epochs).

    ``prefix`` names the result's metrics in ``frame()`` (``prefix + "test_err"``), as the synthetic trainer's."""
    if spec.batch_size > n_train:
        raise ConfigError(f"the 'batch_size' field ({spec.batch_size}) is larger than the training set "
                          f"({n_train} images); choose batch_size <= {n_train}")
    dev = resolve_device(device)
    use_amp = dev.type == "cuda"
    model.to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    if spec.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=spec.lr, betas=spec.betas, weight_decay=spec.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    fp = {"fingerprint": fingerprint or {}, "spec": {k: v for k, v in spec.__dict__.items()}, "seed": seed}
    fp_json = json.dumps(fp, sort_keys=True, default=str)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    res = FitResult(seed=seed, prefix=prefix)
    start = 0
    if ckpt is not None and (state := load_checkpoint(ckpt, json.loads(fp_json))) is not None:
        try:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            if use_amp and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
        except Exception as e:  # noqa: BLE001 - tampered: its fingerprint matches, its tensors do not
            raise CheckpointError(f"checkpoint {str(ckpt)!r} does not fit this model ({type(e).__name__}); delete "
                                  f"it to start this model afresh") from None
        res.history = list(state["history"])
        start = res.resumed_from = int(state["epoch"])
    steps_per_epoch = math.ceil(n_train / spec.batch_size)
    t0 = time.perf_counter()
    bar = progress_bar(spec.epochs * steps_per_epoch, desc)
    bar.update(start * steps_per_epoch)
    try:
        for epoch in range(start, spec.epochs):
            lr = spec.lr_at(epoch)
            for group in opt.param_groups:
                group["lr"] = lr
            g_order = make_generator(seed, f"fit/order/{epoch}")
            g_data = make_generator(seed, f"fit/data/{epoch}")
            g_obj = make_generator(seed, f"fit/objective/{epoch}")
            model.train()
            tot, cnt, te = 0.0, 0, time.perf_counter()
            for idx in _batches(n_train, spec.batch_size, g_order):
                x, y = batch_fn(idx, g_data)
                x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cuda", dtype=torch.float16, enabled=use_amp):
                    loss = objective(model, x, y, g_obj)
                if not torch.isfinite(loss):
                    res.status = "failed"
                    res.message = f"{desc}: loss became non-finite at epoch {epoch + 1}"
                    return res
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                tot += float(loss.detach()) * len(idx)
                cnt += len(idx)
                ips = cnt / max(time.perf_counter() - te, 1e-9)
                bar.set_postfix(loss=f"{tot / cnt:.4f}", img_s=f"{ips:.0f}", epoch=epoch + 1)
                bar.update(1)
            row = {"epoch": epoch + 1, "train_loss": tot / cnt, "lr": lr,
                   "images_per_s": cnt / max(time.perf_counter() - te, 1e-9)}
            if evaluate is not None:
                model.eval()
                with torch.no_grad():
                    row.update({k: float(v) for k, v in evaluate(model).items()})
                model.train()
            res.history.append(row)
            if ckpt is not None:
                save_checkpoint(ckpt, {"fingerprint": fp_json, "epoch": epoch + 1, "model": model.state_dict(),
                                       "optimizer": opt.state_dict(),
                                       "scaler": scaler.state_dict() if use_amp else {},
                                       "history": res.history})
            if on_epoch_end is not None:
                on_epoch_end(epoch + 1, res.history)
    finally:
        bar.close()
    res.elapsed_s = time.perf_counter() - t0
    model.eval()
    return res


def fingerprint_of(experiment_id: str, cfg: Any, **extra: Any) -> dict:
    """What a checkpoint must have been written under: the experiment, its config minus the fields the config's
    class marks as not changing the training (``NOT_TRAINING``: where checkpoints live, the attack...) and the
    model's tag."""
    d = dict(cfg.to_dict()) if hasattr(cfg, "to_dict") else dict(cfg)
    for k in getattr(cfg, "NOT_TRAINING", ()):
        d.pop(k, None)
    return {"experiment": experiment_id, "config": d, **extra}


# ------------------------------------------------------------------------------------------ image experiments
class ImageTrainFields(ExperimentConfig):
    """Config fields of every image experiment: data, model, optimiser, checkpoints."""

    NOT_TRAINING: ClassVar[frozenset[str]] = frozenset({  # left out of checkpoint fingerprints
        "seeds", "seed", "device", "data_root", "eval_batch", "checkpoint_dir", "keep_checkpoints", "cpu_threads"})

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
    checkpoint_dir: str | None = Field(None, description="checkpoints go into its sub-folder featlab-<experiment>")
    keep_checkpoints: bool = Field(False, description="keep the final checkpoints (trained weights) after the run")
    cpu_threads: int | None = Field(None, ge=1, description="torch CPU threads while this experiment runs (None: "
                                    "leave as is; 1 is fastest for the small CNN on a shared CPU)")
    smoke: bool = Field(False, description="pipeline smoke test (the quick preset of a real-data experiment runs "
                        "on digits for a few epochs): figures and metrics, no claims")

    def fit_spec(self) -> FitSpec:
        return FitSpec(self.epochs, self.batch_size, self.optimizer, self.lr, self.momentum, self.weight_decay,
                       self.schedule)


def build_model(kind: str, in_channels: int, num_classes: int, width: int, seed: int,
                normalize: tuple | None = None) -> nn.Module:
    """A fresh model whose init comes from seed alone (the global RNG is forked, not touched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(make_generator(seed, "init/image").initial_seed()) % (2**63))
        net = resnet18(in_channels, num_classes, width) if kind == "resnet18" else SmallCNN(in_channels, num_classes,
                                                                                            width)
    return nn.Sequential(Normalize(*normalize), net) if normalize is not None else net


def load_run_data(ctx) -> ImageData:
    """The run's dataset (``cfg.dataset`` under ``cfg.data_root``); a missing file's message names the experiment."""
    try:
        return load_images(ctx.cfg.dataset, ctx.cfg.data_root)
    except DataError as e:
        raise DataError(f"{ctx.experiment_id}: {e}") from None


@contextmanager
def run_checkpoints(ctx) -> Iterator[Path]:
    """The run's checkpoint folder: OUT/<experiment>/.checkpoints/<run-id>, or with ``checkpoint_dir`` its own
    sub-folder ``featlab-<experiment>`` (the user's folder may hold anything: featlab never touches the rest). When
    the block completes, unless ``keep_checkpoints``, only the checkpoint files featlab writes (``*.pt``, their
    temporaries) are deleted, then each folder it made if empty. A run that raises keeps them: it resumes."""
    base = Path(ctx.cfg.checkpoint_dir).expanduser() if ctx.cfg.checkpoint_dir else ctx.dir.parent / ".checkpoints"
    ck = base / (f"featlab-{ctx.experiment_id}" if ctx.cfg.checkpoint_dir else ctx.cfg.digest(ctx.experiment_id))
    if ck.exists() and not ck.is_dir():
        raise ConfigError(f"the 'checkpoint_dir' field: {str(ck)!r} is a file; move it or choose another folder")
    made = [ck, *(p for p in ck.parents if not p.exists())] if ctx.cfg.checkpoint_dir else [ck, base]
    yield ck
    if not ctx.cfg.keep_checkpoints:
        for f in [*ck.glob("*.pt"), *ck.glob(".*.pt.*.tmp")]:
            f.unlink(missing_ok=True)
        for folder in made:  # a user's checkpoint_dir that existed before is never removed
            with suppress(OSError):
                folder.rmdir()  # only when empty
