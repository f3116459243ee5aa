"""Image embeddings for heads trained on frozen features: read from a file, or computed with CLIP ViT-B-32.

    ztr, ytr, zte, yte, name = embedding_split("cifar10_clip_vitb32.npz")   # or "digits": the 64 pixels of 8×8 digits
    z, y, is_test = load_embeddings("e.npy", labels_file="labels.npy")      # .npz / .npy (+ labels) / .parquet
    z, y, is_test = clip_embeddings(load_images("cifar10", "data"))        # needs open_clip (``featlab embed``)
    save_embeddings("e.npz", z, y, is_test)                                 # or .parquet

Files: ``.npz`` with arrays ``embeddings`` (or ``x``/``z``), ``labels`` (or ``y``) and optionally ``is_test``;
a bare ``.npy`` array with a labels ``.npy``; ``.parquet`` with ``label``, optionally ``split`` (train/test), and
an ``embedding`` column of vectors or one column per dimension. Without a split, a fixed stratified split is drawn.
CLIP: open_clip ``ViT-B-32`` with its own preprocessing, the projected ``encode_image`` output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..errors import DataError
from ..placement import to_host, to_numpy
from ..utils import progress_bar, resolve_device
from .images import ImageData, load_images, stratified_test_mask

HINT = "compute it with 'featlab embed --root DATA --out FILE' or pass embeddings=digits"


def load_embeddings(path: str, labels_file: str | None = None):
    """(z (N, D) float32, labels (N,) int64, split (N,) bool is_test or None) from .npz / .npy / .parquet."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"embeddings file {str(p)!r} does not exist; {HINT}")
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
                z = np.stack(list(df["embedding"].to_numpy()))
            else:
                z = df[[c for c in df.columns if c not in ("label", "split")]].to_numpy()
        else:
            raise DataError(f"embeddings file {str(p)!r} must end in .npz, .npy or .parquet")
    except (ValueError, OSError) as e:
        raise DataError(f"embeddings file {str(p)!r} could not be read ({e}); {HINT}") from None
    z, y = np.asarray(z, dtype=np.float32), np.asarray(y).astype(np.int64)
    if z.ndim != 2 or y.ndim != 1 or len(z) != len(y):
        raise DataError(f"{str(p)!r}: embeddings must be (N, D) and labels (N,); got {z.shape} and {y.shape}")
    cpu = torch.device("cpu")  # read from a file: the run moves what it trains on
    return (torch.tensor(z, device=cpu), torch.tensor(y, device=cpu),
            None if split is None else torch.tensor(np.asarray(split), device=cpu))


def embedding_split(source: str, labels_file: str | None = None, test_fraction: float = 0.2):
    """(z_train, y_train, z_test, y_test, name): ``source`` = 'digits' (the 64 pixels of the fixed digits split)
    or an embeddings file, split by its own ``is_test``/``split`` or else by a fixed stratified split."""
    if source == "digits":
        d = load_images("digits")
        return d.x_train.flatten(1), d.y_train, d.x_test.flatten(1), d.y_test, "8×8 digits (64 pixels)"
    z, y, is_test = load_embeddings(source, labels_file)
    if is_test is None:
        is_test = stratified_test_mask(y, test_fraction)
    return z[~is_test], y[~is_test], z[is_test], y[is_test], Path(source).name


def _open_clip():
    try:
        import open_clip
    except ImportError:
        raise DataError("featlab embed needs open_clip: pip install open_clip_torch (and the ViT-B-32 weights, "
                        "downloaded by open_clip or given with --pretrained FILE)") from None
    return open_clip


def require_open_clip() -> None:
    """Raise a one-line DataError when open_clip is not installed (checked before any data is read)."""
    _open_clip()


def clip_embeddings(data: ImageData, pretrained: str = "openai", device: str = "auto", batch_size: int = 256):
    """CLIP ViT-B-32 embeddings of ``data``'s train and test images: (z (N, 512), labels (N,), is_test (N,))."""
    open_clip = _open_clip()
    from PIL import Image

    dev = resolve_device(device)
    try:
        model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained=pretrained)
    except Exception as e:
        raise DataError(f"could not load CLIP ViT-B-32 weights {pretrained!r} ({type(e).__name__}: {e}); pass "
                        f"--pretrained with a local checkpoint file") from None
    model = model.to(dev).eval()
    out, labels, is_test = [], [], []
    for x, y, t in ((data.x_train, data.y_train, False), (data.x_test, data.y_test, True)):
        bar = progress_bar(len(x), f"CLIP {'test' if t else 'train'}")
        for i in range(0, len(x), batch_size):
            imgs = [(to_numpy(xi.permute(1, 2, 0)) * 255).round().astype(np.uint8) for xi in x[i: i + batch_size]]
            batch = torch.stack([preprocess(Image.fromarray(a)) for a in imgs]).to(dev)
            with torch.no_grad():
                out.append(to_host(model.encode_image(batch).float()))
            bar.update(len(imgs))
        bar.close()
        labels.append(y)
        is_test.append(torch.full((len(y),), t, device="cpu"))
    return to_numpy(torch.cat(out)), to_numpy(torch.cat(labels)), to_numpy(torch.cat(is_test))


def save_embeddings(dest: str | Path, z: np.ndarray, y: np.ndarray, is_test: np.ndarray) -> Path:
    """Write embeddings as .parquet (label, split, embedding) or, for any other suffix, .npz."""
    dest = Path(dest)
    if dest.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame({"label": y, "split": np.where(is_test, "test", "train"), "embedding": list(z)}).to_parquet(dest)
    else:
        np.savez(dest, embeddings=z, labels=y, is_test=is_test)
    return dest
