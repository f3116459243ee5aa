"""CIFAR-10/100 from their python pickles, in a folder or in the published archive; each file's MD5 is checked
before it is unpickled, and the unpickler can build only builtin containers, bytes/str and numpy arrays."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import torch

from ..errors import DataError
from .image_files import CifarSpec, ImageData, md5_bytes, to_float, where_to_get


class RestrictedUnpickler(pickle.Unpickler):
    """Builds only builtin containers/scalars/bytes/str and numpy arrays; any other global is refused."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"), ("_codecs", "encode"),
    }

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")


def safe_unpickle(blob: bytes, what: str):
    try:
        return RestrictedUnpickler(io.BytesIO(blob), encoding="latin1").load()
    except Exception as e:  # any failure here is a bad file, reported in one line
        raise DataError(f"{what} could not be read as a CIFAR batch ({type(e).__name__}: {e}); replace it with the "
                        f"original file") from None


def cifar_blobs(spec: CifarSpec, root: Path) -> tuple[dict[str, bytes], str]:
    """Verified bytes of every member (train, test, meta), from the folder or from the archive."""
    folder, archive = root / spec.folder, root / spec.archive
    names = {**spec.train, **spec.test, spec.meta[0]: spec.meta[1]}
    present = {n: folder / n for n in names if (folder / n).is_file()}
    if len(present) == len(names):
        blobs = {n: present[n].read_bytes() for n in names}
        bad = [f"{n}: corrupt (MD5 mismatch)" for n, md5 in names.items() if md5_bytes(blobs[n]) != md5]
        if not bad:
            return blobs, str(folder)
        if not archive.is_file():
            raise DataError(f"{spec.name}: {'; '.join(bad)} in {folder}; {where_to_get(spec, root)}")
    if archive.is_file():
        tgz = archive.read_bytes()
        if md5_bytes(tgz) != spec.archive_md5:
            raise DataError(f"{spec.name}: {archive.name} is corrupt (MD5 mismatch) in {root}; "
                            f"{where_to_get(spec, root)}")
        blobs = {}
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tf:
            for m in tf.getmembers():
                base = m.name.rsplit("/", 1)[-1]
                if m.isfile() and m.name == f"{spec.folder}/{base}" and base in names and (f := tf.extractfile(m)):
                    blobs[base] = f.read()
        missing = [n for n in names if n not in blobs]
        bad = [n for n in names if n in blobs and md5_bytes(blobs[n]) != names[n]]
        if missing or bad:
            raise DataError(f"{spec.name}: {archive.name} lacks {missing} or holds corrupt {bad}; "
                            f"{where_to_get(spec, root)}")
        return blobs, str(archive)
    missing = [n for n in names if n not in present]
    raise DataError(f"{spec.name}: missing {', '.join(missing)} in {folder} and no {spec.archive} in {root}; "
                    f"{where_to_get(spec, root)}")


def load_cifar(spec: CifarSpec, found: tuple[dict[str, bytes], str]) -> ImageData:
    """The dataset from :func:`cifar_blobs`' verified files and where they were found."""
    blobs, src = found

    def batch(names):
        xs, ys = [], []
        for n in names:
            d = safe_unpickle(blobs[n], f"{src}:{n}")
            if not isinstance(d, dict) or "data" not in d or spec.label_key not in d:
                raise DataError(f"{src}:{n} lacks 'data' or {spec.label_key!r}; replace it with the original file")
            x = np.asarray(d["data"], dtype=np.uint8)
            y = np.asarray(d[spec.label_key], dtype=np.int64)
            if x.ndim != 2 or x.shape[1] != 3072 or len(x) != len(y):
                raise DataError(f"{src}:{n} holds data {x.shape} / labels {y.shape}, not (N, 3072) / (N,)")
            xs.append(x.reshape(-1, 3, 32, 32))
            ys.append(y)
        return to_float(np.concatenate(xs)), torch.from_numpy(np.concatenate(ys))

    xtr, ytr = batch(spec.train)
    xte, yte = batch(spec.test)
    meta = safe_unpickle(blobs[spec.meta[0]], f"{src}:{spec.meta[0]}")
    classes = ([str(c) for c in meta.get(spec.meta[2], [])] if isinstance(meta, dict) else []) or [
        str(i) for i in range(int(ytr.max()) + 1)]
    return ImageData(spec.name, xtr, ytr, xte, yte, classes, spec.mean, spec.std, [src])
