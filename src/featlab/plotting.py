"""Figure style and the figures shared by papers and sweeps (a low-level module: it imports no other part of
featlab but errors and placement). Every figure is a ``matplotlib.figure.Figure`` built without pyplot, so importing
featlab never touches matplotlib's global backend (a notebook keeps its own); RunContext.figure saves it.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .errors import ConfigError
from .placement import to_numpy


def subplots(nrows: int = 1, ncols: int = 1, **kw):
    """``plt.subplots`` without pyplot: (Figure, axes) with the same ``squeeze``/``sharey``/``figsize`` options."""
    fig_kw = {k: kw.pop(k) for k in ("figsize", "dpi", "layout") if k in kw}
    fig = Figure(**fig_kw)
    return fig, fig.subplots(nrows, ncols, **kw)


def get_cmap(name: str):
    return matplotlib.colormaps[name]

RED, BLUE = "#d62728", "#1f77b4"


def cosine_heatmap(ax, cos: np.ndarray, title: str, row_label: str = "\\mu", col_label: str = "w",
                   annotate: bool = True) -> None:
    """cos(μ_i, w_j) as the FA paper draws it (Fig 2): viridis, rows μ_1.., columns w_1.., value in each cell."""
    k, M = cos.shape
    im = ax.imshow(cos, cmap="viridis", aspect="equal")
    ax.set_xticks(range(M), [f"${col_label}_{{{j + 1}}}$" for j in range(M)], fontsize=8)
    ax.set_yticks(range(k), [f"${row_label}_{{{i + 1}}}$" for i in range(k)], fontsize=8)
    ax.set_title(title, fontsize=10)
    if annotate and k * M <= 400:
        lo, hi = float(cos.min()), float(cos.max())
        for i in range(k):
            for j in range(M):
                v = cos[i, j]
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if v > lo + 0.6 * (hi - lo) else "white")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def heatmap_panels(panels: list[tuple[np.ndarray, str]], suptitle: str = "") -> Figure:
    fig, axes = subplots(1, len(panels), figsize=(5.2 * len(panels), 4.6))
    axes = np.atleast_1d(axes)
    for ax, (cos, title) in zip(axes, panels):
        cosine_heatmap(ax, cos, title)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    return fig


def robust_curves(radii, curves: list[dict], marks: list[tuple[float, str]], title: str,
                  xlabel: str = "$\\ell_2$ perturbation radius $\\delta$") -> Figure:
    """Robust accuracy (%) vs radius (FA Fig 3): each curve {label, mean, std, color, style, [lower], [paper]}.

    Bands are ±1 std over seeds; with ``lower`` (a certified curve below ``mean``, the attacked one) the band is the
    interval [lower, mean] where the truth lies, hatched. ``paper`` is (radii, values) read off the paper's figure,
    drawn as hollow markers; ``marks`` are vertical lines at the theory's radii.
    """
    fig, ax = subplots(figsize=(6.4, 4.4))
    r = to_numpy(radii)
    for c in curves:
        mean = 100 * to_numpy(c["mean"], float)
        std = 100 * to_numpy(c["std"], float) if "std" in c else np.zeros_like(mean)
        ax.plot(r, mean, c.get("style", "-"), color=c["color"], label=c["label"], lw=1.8)
        ax.fill_between(r, mean - std, mean + std, color=c["color"], alpha=0.15, lw=0)
        if c.get("lower") is not None:
            low = 100 * to_numpy(c["lower"], float)
            ax.fill_between(r, low, mean, facecolor="none", edgecolor=c["color"], hatch="///", lw=0, alpha=0.6,
                            label=c["label"].split(" (")[0] + " (certified to attacked)")
            ax.plot(r, low, ":", color=c["color"], lw=1.2)
        if c.get("paper") is not None:
            pr, pv = c["paper"]
            ax.plot(pr, pv, "o", mfc="none", color=c["color"], ms=4, label=c["label"].split(" (")[0] + " (paper)")
    for x, lab in marks:
        ax.axvline(x, color="gray", ls=":", lw=1)
        ax.text(x, 3, lab, rotation=90, va="bottom", ha="right", fontsize=8, color="gray")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("robust test accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- the figure of `featlab sweep --plot`
PLOT_KEYS = ("x", "y", "hue", "kind")
SWEEP_BOOKKEEPING = ("status", "claims_held", "claims", "run_dir", "error")  # a sweep table's non-metric columns


def parse_plot(items: list[str] | str | None, axes: list[str]) -> dict[str, str] | None:
    """``["x=d", "y=binary.critical_radius", "hue=k"]`` → dict, checked against the sweep's axes before any run."""
    if not items:
        return None
    if isinstance(items, str):
        items = items.split()
    spec: dict[str, str] = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or key not in PLOT_KEYS or not val:
            raise ConfigError(f"--plot item {item!r} is not one of x=AXIS, y=METRIC, hue=AXIS, kind=line|heatmap "
                              f"(e.g. --plot x=d y=binary.critical_radius hue=k)")
        spec[key] = val
    if "x" not in spec or "y" not in spec:
        raise ConfigError("--plot needs x=AXIS and y=METRIC (e.g. --plot x=d y=binary.critical_radius)")
    for k in ("x", "hue"):
        if k in spec and spec[k] not in axes:
            raise ConfigError(f"--plot {k}={spec[k]!r} is not a swept field; choose one of: {', '.join(axes)}")
    kind = spec.setdefault("kind", "line")
    if kind not in ("line", "heatmap"):
        raise ConfigError(f"--plot kind={kind!r} must be line or heatmap")
    if kind == "heatmap" and "hue" not in spec:
        raise ConfigError("--plot kind=heatmap needs hue=AXIS for its rows (x=AXIS gives the columns)")
    return spec


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values)


def sweep_figure(df: pd.DataFrame, spec: dict[str, str], axes: list[str], title: str = ""):
    """The metric ``y`` against the axis ``x`` (one curve per ``hue`` value), or a heat map of ``y`` over hue × x."""
    x, y, hue = spec["x"], spec["y"], spec.get("hue")
    if y not in df.columns:
        metrics = [c for c in df.columns if c not in (*axes, *SWEEP_BOOKKEEPING) and "@" not in c]
        raise ConfigError(f"--plot y={y!r} is not a metric of these runs; e.g. {', '.join(metrics[:6])}")
    keys = [x] + ([hue] if hue else [])
    others = [a for a in axes if a not in keys and df[a].astype(str).nunique() > 1]
    if others:
        raise ConfigError(f"the sweep also varies {', '.join(others)}: name it as hue= (or sweep it alone) so each "
                          f"plotted point is one run")
    data = df[keys + [y]].copy()
    data[y] = pd.to_numeric(data[y], errors="coerce")
    if spec.get("kind") == "heatmap":
        assert hue is not None, "kind=heatmap needs hue (parse_plot checks it)"
        return _heatmap(data, x, y, hue, title)
    fig, ax = subplots(figsize=(6.0, 4.2))
    groups = [(None, data)] if hue is None else list(data.groupby(hue, sort=True))
    numeric_x = _numeric(data[x].tolist())
    cats = list(dict.fromkeys(data[x].tolist()))
    for val, g in groups:
        g = g.sort_values(x) if numeric_x else g
        xs = g[x].to_numpy(float) if numeric_x else [cats.index(v) for v in g[x]]
        ax.plot(xs, g[y].to_numpy(float), "o-", lw=1.6, ms=4, label=None if hue is None else f"{hue} = {val!s}")
    if numeric_x:
        xv = data[x].to_numpy(float)
        if (xv > 0).all() and xv.max() / xv.min() >= 100:
            ax.set_xscale("log")
    else:
        ax.set_xticks(range(len(cats)), [str(c) for c in cats])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    if hue is not None:
        ax.legend(title=hue, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _heatmap(data: pd.DataFrame, x: str, y: str, hue: str, title: str):
    grid = data.pivot_table(index=hue, columns=x, values=y, aggfunc="mean", sort=True)
    fig, ax = subplots(figsize=(1.2 * grid.shape[1] + 3.0, 0.6 * grid.shape[0] + 2.4))
    im = ax.imshow(grid.to_numpy(float), cmap="viridis", aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index])
    ax.set_xlabel(x)
    ax.set_ylabel(hue)
    vals = grid.to_numpy(float)
    mid = np.nanmin(vals) + 0.6 * (np.nanmax(vals) - np.nanmin(vals)) if np.isfinite(vals).any() else 0
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = vals[i, j]
            ax.text(j, i, "" if np.isnan(v) else f"{v:.3g}", ha="center", va="center", fontsize=8,
                    color="black" if v > mid else "white")
    fig.colorbar(im, ax=ax, label=y)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
