"""Carrying runs between machines: ``featlab pack OUT FILE`` and ``featlab unpack FILE OUT``.

A pack is a gzipped tar holding, for every experiment under the runs folder, its complete run records (summary.json,
config.yaml, metrics.parquet and the PNG figures; never checkpoints, PDFs or unfinished staging folders) and the
kept units of its unfinished budgeted runs (:mod:`.units`), with a manifest (``featlab-pack.json``: the format and
the SHA-256 of every file). A budgeted paper run thus moves from one short-lived GPU machine to the next in a few MB.

Unpacking checks everything before it writes anything: the manifest's format, that every member is a plain file
at a relative path inside the pack's layout, listed in the manifest with the hash its bytes have; a corrupt,
truncated or foreign file is refused in one line (exit 2). It never overwrites: a file already there with the same
bytes is left as it is, one with other bytes is refused, naming it.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from pathlib import Path, PurePosixPath

from ..errors import FeatlabError
from ..utils import atomic_write
from .units import UNITS_DIR

MANIFEST = "featlab-pack.json"
FORMAT = "featlab-pack/1"
RECORD_FILES = ("summary.json", "config.yaml", "metrics.parquet")
MAX_MEMBER_BYTES = 256 * 2**20  # a record file is a few MB at most: a larger member is not a featlab pack's
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")


class PackError(FeatlabError):
    """A pack that cannot be written or read (corrupt, foreign, conflicting with the runs already there)."""


def pack_files(out: Path) -> list[Path]:
    """The files a pack of ``out`` carries, relative to ``out``: complete records and kept units."""
    files: list[Path] = []
    for exp in sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for run in sorted(p for p in exp.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if (run / "summary.json").is_file():  # published: complete (a staging folder is hidden)
                files += [run / f for f in RECORD_FILES if (run / f).is_file()]
                files += sorted((run / "figures").glob("*.png"))
        units = exp / UNITS_DIR
        if units.is_dir():
            files += sorted(f for d in sorted(units.iterdir()) if d.is_dir() for f in d.glob("*.json"))
    return [f.relative_to(out) for f in files]


def pack(out: str | Path, file: str | Path) -> dict:
    """Write the pack of the runs folder ``out`` to ``file``; returns its manifest."""
    out = Path(out)
    if not out.is_dir():
        raise PackError(f"featlab pack: {str(out)!r} is not a runs folder; pass the --out folder of the runs")
    rels = pack_files(out)
    if not rels:
        raise PackError(f"featlab pack: {str(out)!r} holds no complete run and no kept unit; nothing to pack")
    blobs = {rel.as_posix(): (out / rel).read_bytes() for rel in rels}
    manifest = {"format": FORMAT, "files": {k: hashlib.sha256(v).hexdigest() for k, v in blobs.items()}}

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as tar:
            for name, data in [(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode()),
                               *blobs.items()]:
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, 0  # no clock, no owner: the same runs, the
                tar.addfile(info, io.BytesIO(data))  # same bytes

    atomic_write(Path(file), write)
    return manifest


def _safe(name: str) -> bool:
    p = PurePosixPath(name)
    return not p.is_absolute() and all(_SEGMENT.match(s) or s == UNITS_DIR for s in p.parts) \
        and ".." not in p.parts and 2 <= len(p.parts) <= 5


def read_pack(file: str | Path) -> dict[str, bytes]:
    """Every file of the pack, checked against its manifest (raises :class:`PackError` in one line)."""
    where = f"featlab unpack: {str(file)!r}"
    try:
        with tarfile.open(file, "r:gz") as tar:
            members = tar.getmembers()
            bad = next((m.name for m in members if not m.isfile() or m.size > MAX_MEMBER_BYTES), None)
            if bad is not None:
                raise PackError(f"{where} holds {bad!r}, which is not a plain file of a featlab pack; refused")
            blobs = {m.name: tar.extractfile(m).read() for m in members}  # type: ignore[union-attr]
    except (OSError, tarfile.TarError, EOFError) as e:
        raise PackError(f"{where} is not a readable featlab pack ({type(e).__name__}: {e}); make it again with "
                        f"'featlab pack'") from None
    try:
        manifest = json.loads(blobs.pop(MANIFEST))
        listed = dict(manifest["files"])
        assert manifest["format"] == FORMAT
    except (KeyError, ValueError, TypeError, AssertionError):
        raise PackError(f"{where} has no {FORMAT} manifest; it is not a featlab pack") from None
    for name, data in blobs.items():
        if not _safe(name) or name not in listed:
            raise PackError(f"{where}: member {name!r} is not in its manifest or not a runs-folder path; refused")
        if hashlib.sha256(data).hexdigest() != listed[name]:
            raise PackError(f"{where}: {name!r} does not match its hash (damaged in transit?); make the pack again")
    if missing := sorted(set(listed) - set(blobs)):
        raise PackError(f"{where} lacks {len(missing)} file(s) its manifest lists, e.g. {missing[0]!r}; make it again")
    return blobs


def unpack(file: str | Path, out: str | Path) -> tuple[int, int]:
    """Add the pack's runs and units to ``out``: (files written, files already there with the same bytes)."""
    blobs = read_pack(file)
    out = Path(out)
    new, same = {}, 0
    for name, data in sorted(blobs.items()):
        target = out / name
        if target.is_file():
            if target.read_bytes() != data:
                raise PackError(f"featlab unpack: {str(target)!r} exists with other content; nothing was written "
                                f"(unpack into another folder, or remove that run first)")
            same += 1
        elif target.exists():
            raise PackError(f"featlab unpack: {str(target)!r} exists and is not a file; nothing was written")
        else:
            new[target] = data
    for target, data in new.items():
        atomic_write(target, data)
    return len(new), same
