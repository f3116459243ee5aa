"""What a run needs, known before anything is allocated, and what happens when an allocation fails anyway.

Experiments declare their big tensors in ``cfg.estimate()`` (a list of :class:`~featlab.config.Need`) with the
builders below; ``featlab run`` refuses a request the machine cannot hold (one line naming the fields to lower),
an allocation failure that still happens becomes one line and a failed run record. The work terms give a lower bound
on the time (a refusal above a month); :mod:`featlab.runs.timing` measures the time itself.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from ..config import Need
from ..data.images import SPECS, locate

# (channels, height, width, training images, classes) of the image datasets (data/images.py reads them)
IMAGE_SHAPES: dict[str, tuple[int, int, int, int, int]] = {
    "digits": (1, 8, 8, 1198, 10), "mnist": (1, 28, 28, 60_000, 10), "fashionmnist": (1, 28, 28, 60_000, 10),
    "cifar10": (3, 32, 32, 50_000, 10), "cifar100": (3, 32, 32, 50_000, 100)}
FLOP_RATE = 1e12  # optimistic FLOP/s (several times a CPU's peak) and per-step cost: the work's lower bound
STEP_S = 2e-5  # a training or attack step is a few tensor ops, each several microseconds at least


def item(dtype: str) -> int:
    return 8 if dtype == "float64" else 4


def tensor(what: str, fields: tuple[str, ...], *dims: float, itemsize: int = 4, copies: float = 1.0,
           host: bool = False) -> Need:
    """A dense tensor of shape ``dims`` (``copies`` of it held at once: gradients, autograd's saved values);
    ``host``: data drawn or read on the host first (a GPU run holds it in host memory too)."""
    return Need(what, fields, bytes=copies * itemsize * math.prod(float(x) for x in dims), host=host)


def work(what: str, fields: tuple[str, ...], flops: float, steps: float) -> Need:
    """Work only: ``flops`` in all over ``steps`` iterations."""
    return Need(what, fields, flops=float(flops), steps=float(steps))


def sequential(groups: list[list[Need]]) -> list[Need]:
    """Runs made one after another: the memory terms of the largest, the work of all."""
    held = max(groups, key=lambda ns: sum(n.bytes for n in ns), default=[])
    return [n for n in held if n.bytes or n.missing] + [n for ns in groups for n in ns if not (n.bytes or n.missing)]


# ------------------------------------------------------------------------------------------ image networks
def net_size(model: str, width: int, channels: int, hw: int, classes: int) -> tuple[float, float, float]:
    """(parameters, forward flops per image, activations kept for the backward pass per image) of the small CNN or
    the CIFAR ResNet-18 (nn/smallcnn.py, nn/resnet.py), from their layer shapes."""
    w = float(width)
    if model == "smallcnn":  # conv c→w, w→2w, (pool) 2w→2w, linear 2w→classes
        params = 9 * channels * w + 18 * w * w + 36 * w * w + 2 * w * classes
        flops = 2 * hw * (9 * channels * w + 18 * w * w + 9 * w * w)
        return params, flops, 12 * w * hw
    # ResNet-18: 11.2M parameters and 0.56 GMAC per 32×32 image at width 64, both ∝ width²; about 32·width·HW
    # activations per image saved for backward (each BasicBlock keeps ~7 maps of its stage's size)
    params = 2730 * w * w + 9 * channels * w + 8 * w * classes
    flops = 2 * 0.556e9 * (w / 64) ** 2 * hw / 1024
    return params, flops, 32 * w * hw


def image_needs(cfg: Any, arms: int, attack_points: int = 0, attack_steps: int = 0,
                channel_factor: int = 1) -> list[Need]:
    """Memory and work of an image experiment (fields of ``ImageTrainFields``): the dataset as float32 tensors,
    the network with its gradient and optimiser state, one batch's activations, an attack batch's activations; work
    of ``arms`` networks (methods or label sets) per seed, trained one after another, plus the attacks."""
    c, h, w_, n_train, classes = IMAGE_SHAPES.get(cfg.dataset, IMAGE_SHAPES["cifar10"])
    c *= channel_factor
    params, fwd, act = net_size(cfg.model, cfg.width, c, h * w_, classes)
    batch, ev = int(cfg.batch_size), int(cfg.eval_batch)
    steps = int(cfg.epochs) * math.ceil(n_train / batch) * arms * int(cfg.seeds)
    needs = [
        tensor(f"the {cfg.dataset} images (train and test) as float32, twice", ("dataset",), n_train * 1.2, c, h, w_,
               copies=2, host=True),
        tensor(f"{cfg.model} of width {cfg.width}: {params:.3g} parameters, with gradients and optimiser state, "
               f"and the {arms} trained nets", ("width",), params, copies=4 + arms),
        # measured: 10.2 MiB per 32×32 image for ResNet-18 (forward and backward), 0.15 MiB per 8×8 for the CNN
        tensor(f"activations of a batch of {batch} images", ("batch_size", "width"), batch, act, copies=1.3),
        tensor(f"activations of an evaluation/attack batch of {ev} images", ("eval_batch", "width"), ev, act,
               copies=1.0 if attack_points else 0.25),  # attacks keep them for the input gradient
        work(f"{cfg.epochs} epochs × {n_train} images × {arms} nets × {cfg.seeds} seeds", ("epochs", "seeds"),
             3 * fwd * n_train * int(cfg.epochs) * arms * int(cfg.seeds), steps)]
    if attack_points and attack_steps:
        needs.append(work(f"attacks: {attack_points} images × {attack_steps} gradient steps", ("n_attack", "radii"),
                          3 * fwd * attack_points * attack_steps,
                          math.ceil(attack_points / ev) * attack_steps))
    return needs


def embedding_needs(cfg: Any, source: str, width: int, heads: int, steps: int) -> list[Need]:
    """Two-layer heads trained full-batch on embeddings: ``source`` is "digits" (1797 × 64 pixels) or a file, sized
    from its bytes (float32 values, 512 per row as CLIP ViT-B/32's); a missing file is a term saying so."""
    path = Path(source).expanduser()
    N, D = (1797, 64) if source == "digits" else (60_000, 512)
    if source != "digits" and path.is_file():
        N = max(1, path.stat().st_size // (4 * D))
    it, E = item(cfg.dtype), int(cfg.seeds)
    needs = [tensor(f"the embeddings, {N} × {D}, loaded, centred and cast", ("embeddings",), N, D, itemsize=it,
                    copies=3, host=True),
             tensor(f"{heads} heads × {E} seeds × {N} points × width {width}: activations and gradients",
                    ("width", "seeds"), heads, E, N, width, itemsize=it, copies=4),
             work(f"{steps} full-batch steps of {heads} heads", ("steps", "width"),
                  6.0 * heads * E * N * D * width * steps, heads * steps)]
    if source != "digits" and not path.is_file():
        needs.append(Need(f"the embeddings file {source!r}", ("embeddings",),
                          missing=f"needs the embeddings file {source!r} ('featlab embed' makes it)"))
    return needs


def dataset_needs(cfg: Any) -> list[Need]:
    """A term saying the dataset files are missing (``cfg.dataset`` under ``cfg.data_root``), or none."""
    why = missing_dataset(cfg.dataset, cfg.data_root)
    return [Need(f"the {cfg.dataset} files", ("data_root",), missing=why)] if why else []


def missing_dataset(name: str, root: str) -> str:
    """Why ``name`` cannot be read, or "" (digits ship with scikit-learn): the one resolver's answer
    (:func:`featlab.data.images.locate`: ``root``, ``$FEATLAB_DATA``, a system copy, every file's MD5 checked)."""
    if name not in SPECS:
        return ""
    loc = locate(name, root)
    if loc.found:
        return ""
    return f"needs the {name} files ({loc.text(short=True)}; 'featlab data check' says where to get them)"


# ------------------------------------------------------------------------------------------ allocation failures
_OOM_TEXT = ("not enough memory", "can't allocate memory", "out of memory", "cannot allocate memory",
             "unable to allocate")


def is_out_of_memory(err: BaseException) -> bool:
    """An allocator failure: MemoryError, torch's OutOfMemoryError (CUDA) or the CPU allocator's RuntimeError."""
    if isinstance(err, (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))):
        return True
    return isinstance(err, RuntimeError) and any(t in str(err).lower() for t in _OOM_TEXT)


def tried_bytes(err: BaseException) -> float | None:
    """The size of the failed allocation when the allocator says it ("you tried to allocate 48000000000 bytes")."""
    words = str(err).replace(",", " ").split()
    for i, word in enumerate(words[:-1]):
        if word == "allocate" and words[i + 1].isdigit():
            return float(words[i + 1])
    return None


def size(b: float) -> str:
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b / 2**20:.3g} MiB"


def fields_text(cfg: Any, names: tuple[str, ...] | list[str]) -> str:
    shown = [f"{n!r} ({getattr(cfg, n)})" if hasattr(cfg, n) else repr(n) for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"


def memory_fields(cfg: Any) -> tuple[str, ...]:
    """The fields of the run's biggest memory term (what a user lowers after running out of memory)."""
    try:
        needs = [n for n in cfg.estimate() if n.bytes > 0]
    except Exception:  # an estimate must never hide the allocation failure it is asked to explain
        needs = []
    return max(needs, key=lambda n: n.bytes).fields if needs else ("seeds",)


def oom_message(experiment_id: str, cfg: Any, err: BaseException) -> str:
    tried = tried_bytes(err)
    what = f" (an allocation of {size(tried)} failed)" if tried else ""
    return f"{experiment_id} ran out of memory{what}; lower {fields_text(cfg, memory_fields(cfg))}"


# ------------------------------------------------------------------------------------------ time estimates
def lower_bound(needs: list[Need], device_type: str = "cpu") -> float:
    """Seconds the work terms of ``needs`` take at least: their flops at ``FLOP_RATE`` (× 100 on a GPU) and a
    launch cost per step. A floor, not an estimate (runs here took 5-90× it; featlab.runs.timing measures them)."""
    rate = FLOP_RATE * (100 if device_type == "cuda" else 1)
    return sum(n.flops / rate + n.steps * STEP_S for n in needs)


def duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h" if s < 172_800 else f"{s / 86_400:.1f} days"
