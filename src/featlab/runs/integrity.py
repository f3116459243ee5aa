"""A run record's content, checked: every file of a run folder carries its SHA-256 in summary.json (``files``).

summary.json is written last (atomically) with the hash of every other file of the run (config.yaml,
metrics.parquet, figures/*), so a reader can tell an intact record from one damaged after it was written (a
truncated Parquet file, an edited config, a figure replaced). :func:`damage` compares them; the one reader
(``runs/record.py``) refuses a damaged record with a one-line :class:`~featlab.errors.RunRecordError` ("damaged:
redone on the next run"), so no command shows it as valid and ``featlab run`` never reuses it.

A record made before featlab wrote hashes has no ``files``: it is read as *unverified (no hashes)*, shown with that
note, and never reused as a cache hit (``RunWriter.existing``): its run is redone, the old folder kept until the new
one is complete.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

FILES = "files"  # the summary.json key: {path relative to the run folder, '/'-separated: 'sha256:<hex>'}
VERIFIED, UNVERIFIED = "verified", "unverified (no hashes)"
_CHUNK = 1 << 20
# (path, size, mtime_ns, inode) -> digest: a record read twice in one process (index, then rivals) is hashed once
_SEEN: dict[tuple[str, int, int, int], str] = {}


def file_digest(path: Path) -> str:
    """'sha256:<hex>' of a file's bytes (cached for the process by size, mtime and inode). Only a regular file is
    read (a link, a FIFO or a device in a record's place raises IsADirectoryError: it is damage, and /dev/zero
    would never end)."""
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _SEEN:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        _SEEN[key] = f"sha256:{h.hexdigest()}"
    return _SEEN[key]


def content_hashes(folder: Path, summary_name: str) -> dict[str, str]:
    """The digest of every file under a run folder but its summary.json (hidden temporaries left out)."""
    out = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            rel = Path(root, name).relative_to(folder).as_posix()
            if name.startswith(".") or rel == summary_name or not stat.S_ISREG(os.lstat(Path(root, name)).st_mode):
                continue  # a temporary, the summary itself, or no regular file (never a record's own output)
            out[rel] = file_digest(Path(root, name))
    return out


def damage(folder: Path, files: object, own: Sequence[str] = ()) -> str | None:
    """Why a run folder's content does not match the ``files`` its summary.json records, or None when it does:
    the first file that is missing, unreadable, or whose bytes changed; or one of the record's ``own`` files
    (config.yaml, metrics.parquet, its figures) present without a hash (its entry removed). A ``files`` that is not a
    mapping of text to 'sha256:<hex>' text is itself damage."""
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return f"its summary.json has a {FILES!r} that is not a mapping of file names to hashes"
    unhashed = next((n for n in own if n not in files and os.path.lexists(folder / n)), None)
    if unhashed is not None:
        return f"{unhashed} carries no hash in its summary.json"
    for rel, want in sorted(files.items()):
        p = folder / rel
        if ".." in Path(rel).parts or Path(rel).is_absolute():
            return f"its summary.json names a file outside the run folder ({rel!r})"
        try:
            got = file_digest(p)
        except FileNotFoundError:
            return f"{rel} is missing"
        except OSError as e:
            return f"{rel} cannot be read ({e.strerror or e})"  # not a regular file, no permission
        if got != want:
            return f"{rel} does not match the hash in its summary.json"
    return None
