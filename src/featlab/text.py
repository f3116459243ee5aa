"""Text for people, in one style: the one number formatter and the plain-text table every command prints."""

from __future__ import annotations

import json
import textwrap
from typing import Any


def fmt_value(v: Any) -> str:
    """A value as every command and page prints it: 4 significant digits, scientific outside [1e-3, 1e4), nan as
    ``nan``, None as blank, lists and mappings as JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4g}" if v == 0 or 1e-3 <= abs(v) < 1e4 else f"{v:.3e}"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def table(rows: list[list[str]], header: list[str], widths: list[int] | None = None) -> str:
    """A text table; cells longer than their column width are wrapped."""
    cols = len(header)
    widths = widths or [max(len(str(r[i])) for r in rows + [header]) for i in range(cols)]
    out: list[str] = []

    def emit(cells):
        wrapped = [textwrap.wrap(str(c), w) or [""] for c, w in zip(cells, widths)]
        for line in range(max(len(w) for w in wrapped)):
            out.append("  ".join((w[line] if line < len(w) else "").ljust(wd) for w, wd in zip(wrapped, widths)))

    emit(header)
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        emit(r)
    return "\n".join(out)
