"""Figures of the Midpoint Mixup experiments (the paper has no synthetic figures; these show its theorems)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...plotting import Figure, subplots

METHOD_COLORS = {"erm": "C0", "midpoint": "C1", "mixup": "C2"}  # the paper's Fig 2 colours
METHOD_LABELS = {"erm": "ERM", "midpoint": "Midpoint Mixup", "mixup": "Mixup"}


def learned_counts(counts: dict[str, np.ndarray], seeds: list[int], k: int, title: str) -> Figure:
    """Per method, stacked bars per seed: classes that learned 0 / 1 / 2 features (Def 4.5)."""
    methods = list(counts)
    fig, axes = subplots(1, len(methods), figsize=(3.6 * len(methods), 3.4), sharey=True)
    axes = np.atleast_1d(axes)
    colors = ["#bbbbbb", "#ff7f0e", "#2ca02c"]
    for ax, meth in zip(axes, methods):
        c = counts[meth]  # (E, 3)
        bottom = np.zeros(len(seeds))
        for j in range(3):
            ax.bar(range(len(seeds)), c[:, j], bottom=bottom, color=colors[j],
                   label=f"{j} feature{'s' if j != 1 else ''}")
            bottom += c[:, j]
        ax.set_xticks(range(len(seeds)), [str(s) for s in seeds], fontsize=8)
        ax.set_xlabel("seed")
        ax.set_title(f"{METHOD_LABELS.get(meth, meth)}: both for {c[:, 2].sum() / (k * len(seeds)):.2f}", fontsize=9)
        ax.set_ylim(0, k)
    axes[0].set_ylabel("classes")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def correlation_trajectories(steps: dict[str, np.ndarray], lam: dict[str, np.ndarray], classes: list[int],
                             threshold: float, title: str) -> Figure:
    """Rows = methods, columns = classes: Λ_{y,1}, Λ_{y,2} (max_r <w_{y,r}, v_{y,ℓ}>) against each method's
    ``steps``."""
    methods = list(lam)
    fig, axes = subplots(len(methods), len(classes), figsize=(3.3 * len(classes), 2.5 * len(methods)),
                             sharex=True, squeeze=False)
    for i, meth in enumerate(methods):
        for j, y in enumerate(classes):
            ax = axes[i, j]
            ax.plot(steps[meth], lam[meth][:, y, 0], color="C3", label="$\\Lambda_{y,1}$")
            ax.plot(steps[meth], lam[meth][:, y, 1], color="C9", ls="--", label="$\\Lambda_{y,2}$")
            ax.axhline(threshold, color="gray", ls=":", lw=1)
            ax.set_yscale("symlog", linthresh=1e-3)
            ax.grid(alpha=0.3)
            if i == 0:
                ax.set_title(f"class y = {y + 1}", fontsize=9)
            if j == 0:
                ax.set_ylabel(METHOD_LABELS.get(meth, meth), fontsize=9)
            if i == len(methods) - 1:
                ax.set_xlabel("GD step")
    axes[0, -1].legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def frac_both_curves(steps: dict[str, np.ndarray], frac: dict[str, np.ndarray], title: str) -> Figure:
    """Share of classes with both features learned (mean ± std over seeds) against the step."""
    fig, ax = subplots(figsize=(5.6, 3.6))
    for meth in frac:
        f = frac[meth]  # (T, E)
        mu, sd = f.mean(1), f.std(1)
        ax.plot(steps[meth], mu, color=METHOD_COLORS.get(meth), label=METHOD_LABELS.get(meth, meth))
        ax.fill_between(steps[meth], mu - sd, mu + sd, color=METHOD_COLORS.get(meth), alpha=0.2, lw=0)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("GD step")
    ax.set_ylabel("classes with both features learned")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def lines(x: np.ndarray, ys: list[tuple[np.ndarray, str, str]], xlabel: str, ylabel: str, title: str,
          logy: bool = False, hlines: Sequence[tuple[float, str]] = ()) -> Figure:
    fig, ax = subplots(figsize=(5.6, 3.8))
    for y, label, style in ys:
        ax.plot(x, y, style, label=label, lw=1.6, ms=4)
    for v, lab in hlines:
        ax.axhline(v, color="gray", ls=":", lw=1)
        ax.text(x[0], v, lab, fontsize=7, color="gray", va="bottom")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
