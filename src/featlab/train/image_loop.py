"""Epoch-based training of one image model (ResNet-18, the small CNN, any ``nn.Module``), resumable after a kill.

    spec = FitSpec(epochs=100, batch_size=750, optimizer="adam", lr=1e-3)
    res = fit(model, batch_fn, n_train, spec, objective=mixup_objective(Mixup(1.0)), evaluate=ev,
              seed=0, checkpoint=Path("ckpt/mixup-seed0.pt"), fingerprint={"experiment": ..., "config": ...})
    res.history   # one dict per epoch: epoch, train_loss, lr, images_per_s and whatever ``evaluate`` returns

* ``batch_fn(idx, generator) -> (x, y)`` builds the training batch of the example indices ``idx`` (so a dataset
  wrapper such as :class:`~featlab.data.spurious.SpuriousChannels` draws its γ from the given generator).
* Every random draw of epoch e (order, γ, Mixup's pairing and λ, augmentation) comes from a generator keyed by
  (seed, role, e): a run resumed at epoch e is bit-identical to one never interrupted (on CPU).
* A checkpoint (model, optimizer, AMP scaler, history, fingerprint) is written atomically after every epoch and
  read with ``torch.load(weights_only=True)``. Running the same command again continues where it stopped; a
  checkpoint written under another fingerprint (another config) is refused with the fields that differ.
* ``device="auto"`` uses CUDA when present, with float16 autocast and a gradient scaler there.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError, FeatlabError
from ..utils import generator as make_generator
from ..utils import resolve_device
from .loop import progress_bar
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
    history: list[dict[str, float]] = field(default_factory=list)
    status: str = "complete"
    message: str = ""
    resumed_from: int = 0  # epochs already done when this call started
    elapsed_s: float = 0.0

    def series(self, key: str) -> list[float]:
        return [h[key] for h in self.history]


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


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 1000) -> float:
    return (predict(model, x, batch_size).argmax(-1) == y).double().mean().item()


# ------------------------------------------------------------------------------------------ checkpoints
def _diff(a: dict, b: dict) -> str:
    keys = sorted(set(a) | set(b))
    diffs = [k for k in keys if a.get(k) != b.get(k)]
    if not diffs:
        return "its fingerprint differs"
    k = diffs[0]
    shown = k.removeprefix("fingerprint.").removeprefix("config.")
    more = [d for d in diffs[1:] if not d.startswith("spec.")]  # spec.* repeats the config's training fields
    extra = f" (and {len(more)} more)" if more else ""
    return f"field {shown!r} is {a.get(k)!r} there and {b.get(k)!r} here{extra}"


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def load_checkpoint(path: Path, fingerprint: dict) -> dict | None:
    """The checkpoint at ``path`` if it exists and was written under ``fingerprint``; raise if it is foreign."""
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001
        raise CheckpointError(f"checkpoint {str(path)!r} is unreadable ({type(e).__name__}); delete it to start "
                              f"this model afresh") from None
    theirs = json.loads(state.get("fingerprint", "{}"))
    if theirs != json.loads(json.dumps(fingerprint, sort_keys=True, default=str)):
        raise CheckpointError(
            f"refusing to resume from checkpoint {str(path)!r}: it was written by another config "
            f"({_diff(_flatten(theirs), _flatten(json.loads(json.dumps(fingerprint, default=str))))}); delete it "
            f"or choose another checkpoint folder")
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
        on_epoch_end: Callable[[int, list], None] | None = None) -> FitResult:
    """Train ``model`` for ``spec.epochs`` epochs (resuming from ``checkpoint`` if it holds earlier epochs)."""
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
    res = FitResult()
    start = 0
    if ckpt is not None and (state := load_checkpoint(ckpt, json.loads(fp_json))) is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if use_amp and state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
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
    """What a checkpoint must have been written under: the experiment, its config (minus fields that do not
    change the training, e.g. where checkpoints live) and the model's tag."""
    d = dict(cfg.to_dict()) if hasattr(cfg, "to_dict") else dict(cfg)
    for k in ("checkpoint_dir", "keep_checkpoints", "cpu_threads", "data_root", "device", "seeds", "seed", "pgd_steps",
              "pgd_restarts", "pgd_step_factor",
              "radii", "eval_batch", "n_attack"):
        d.pop(k, None)
    return {"experiment": experiment_id, "config": d, **extra}
