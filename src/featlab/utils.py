"""Small shared helpers: per-replica random generators, dtype/device resolution."""

from __future__ import annotations

import hashlib

import torch


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[dtype]


def generator(seed: int, role: str) -> torch.Generator:
    """An independent CPU generator for (seed, role): data, init, test, attack... never the global RNG.

    Streams are keyed by role so that changing e.g. the init draws never changes the data of the same seed.
    """
    h = int.from_bytes(hashlib.sha256(f"{seed}/{role}".encode()).digest()[:8], "little") & ((1 << 63) - 1)
    return torch.Generator().manual_seed(h)


def per_replica(seeds: list[int], role: str, fn, *, device=None, dtype=None) -> torch.Tensor:
    """Stack ``fn(generator)`` over replicas: replica i draws from its own (seed_i, role) stream.

    Drawing per replica (on CPU, then moving) is what makes replica i identical to training seed i alone.
    """
    out = torch.stack([fn(generator(s, role)) for s in seeds])
    return out.to(device=device, dtype=dtype) if (device is not None or dtype is not None) else out
