"""Shared figure style and helpers. Every figure is a ``matplotlib.figure.Figure`` built without pyplot, so
importing featlab never touches matplotlib's global backend (a notebook keeps its own); RunContext.figure saves it.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure


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
    """Robust accuracy (%) vs radius (FA Fig 3): each curve {label, mean, std, color, style, [paper]}.

    Bands are ±1 std over seeds; ``paper`` is (radii, values) read off the paper's figure, drawn as hollow
    markers; ``marks`` are vertical lines at the theory's radii.
    """
    fig, ax = subplots(figsize=(6.4, 4.4))
    r = np.asarray(radii)
    for c in curves:
        mean, std = 100 * np.asarray(c["mean"]), 100 * np.asarray(c.get("std", np.zeros_like(c["mean"])))
        ax.plot(r, mean, c.get("style", "-"), color=c["color"], label=c["label"], lw=1.8)
        ax.fill_between(r, mean - std, mean + std, color=c["color"], alpha=0.15, lw=0)
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
