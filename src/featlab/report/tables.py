"""Plain-text tables for the terminal: the claims table and headline metrics."""

from __future__ import annotations

import textwrap
from typing import Any, Iterable


def fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v == 0 or 1e-3 <= abs(v) < 1e4:
            return f"{v:.4g}"
        return f"{v:.3e}"
    return str(v)


def table(rows: list[list[str]], header: list[str], widths: list[int] | None = None) -> str:
    """A text table; cells longer than their column width are wrapped."""
    cols = len(header)
    widths = widths or [max(len(str(r[i])) for r in rows + [header]) for i in range(cols)]
    out = []

    def emit(cells):
        wrapped = [textwrap.wrap(str(c), w) or [""] for c, w in zip(cells, widths)]
        for line in range(max(len(w) for w in wrapped)):
            out.append("  ".join((w[line] if line < len(w) else "").ljust(wd) for w, wd in zip(wrapped, widths)))

    emit(header)
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        emit(r)
    return "\n".join(out)


def claims_table(claims: Iterable[dict[str, Any]], with_experiment: bool = False) -> str:
    rows = []
    for c in claims:
        row = [c.get("experiment", "")] if with_experiment else []
        row += [c["statement"], c["source"], fmt(c["measured"]), c["threshold"], "✓" if c["holds"] else "✗"]
        rows.append(row)
    header = (["experiment"] if with_experiment else []) + ["claim", "paper", "measured", "threshold", "ok"]
    widths = ([18] if with_experiment else []) + [54, 16, 11, 24, 2]
    if not rows:
        return "(no claims)"
    return table(rows, header, widths)


def metrics_table(metrics: dict[str, float], keys: list[str] | None = None) -> str:
    keys = keys or list(metrics)
    rows = [[k, fmt(metrics[k])] for k in keys if k in metrics]
    return table(rows, ["metric", "value"])


def run_report(summary: dict[str, Any], run_dir: str, headline: list[str] | None = None) -> str:
    lines = []
    status = summary.get("status")
    lines.append(f"{summary['experiment']}  [{status}]  {run_dir}  ({summary.get('elapsed_s', 0):.1f} s)")
    if summary.get("message"):
        lines.append(f"  {summary['message']}")
    lines.append("")
    lines.append(claims_table(summary.get("claims", [])))
    held = sum(c["holds"] for c in summary.get("claims", []))
    lines.append(f"\n{held}/{len(summary.get('claims', []))} claims hold.")
    m = summary.get("metrics", {})
    keys = headline or [k for k in m if "@" not in k][:16]
    if m:
        lines.append("")
        lines.append(metrics_table(m, keys))
    if summary.get("figures"):
        lines.append("\nfigures:")
        lines += [f"  {run_dir}/{f}" for f in summary["figures"]]
    return "\n".join(lines)
