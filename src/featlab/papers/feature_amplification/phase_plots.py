"""rfa-phase's figure: test error after early stopping and after long training over (η, d/n), the theory's
prediction η + (1 − 2η)·e* beside them, and the excess of the long run over it; the theory's boundaries d = n
(Fig 2's regimes) and (A1) d = C·log²(n/δ) drawn as vertical lines."""

from __future__ import annotations

import math

import numpy as np

from ...plotting import get_cmap, subplots


def _x(ds, d: float) -> float:
    """Position of dimension ``d`` on the heat map's column axis (log-interpolated between columns)."""
    ld = np.log(np.asarray(ds, float))
    return float(np.interp(math.log(d), ld, np.arange(len(ds)), left=-0.5, right=len(ds) - 0.5))


def phase_figure(cfg, early: np.ndarray, late: np.ndarray, fits: np.ndarray, target: np.ndarray):
    ds, etas, n = list(cfg.ds), list(cfg.etas), cfg.n
    panels = ((early, "test error at T (early stopping)", "viridis", 0, 0.5),
              (late, f"test error after {cfg.steps_long} steps", "viridis", 0, 0.5),
              (late - target, "long run − predicted η + (1−2η)e*", "RdBu_r", -0.2, 0.2),
              (fits, "train accuracy after the long run", "viridis", 0.5, 1))
    fig, axes = subplots(1, 4, figsize=(20, 4.2))
    a1 = max(cfg.check_C, 1 / (4 * cfg.alpha ** 2)) * math.log(n / cfg.delta) ** 2  # (A1) at the checked C
    for ax, (z, title, cm, lo, hi) in zip(axes, panels):
        im = ax.imshow(z, cmap=get_cmap(cm), vmin=lo, vmax=hi, aspect="auto", origin="lower")
        for i in range(z.shape[0]):
            for j in range(z.shape[1]):
                txt = f"{z[i, j]:.3f}"
                if z is early or z is late:
                    txt += f"\n({target[i, j]:.3f})"  # the prediction beside the measurement
                dark = (z[i, j] < lo + 0.6 * (hi - lo) if cm == "viridis"  # dark cells: the low end of viridis,
                        else abs(z[i, j] - (lo + hi) / 2) > 0.35 * (hi - lo))  # both ends of a diverging map
                ax.text(j, i, txt, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.axvline(_x(ds, n), color="#ff7f0e", lw=2, ls="--", label="d = n")
        ax.axvline(_x(ds, a1), color="#d62728", lw=2, ls=":",
                   label=f"(A1) d = C log²(n/δ), C={a1 / math.log(n / cfg.delta) ** 2:g}")
        ax.set_xticks(range(len(ds)), [f"{d}\n({d / n:.2g})" for d in ds], fontsize=8)
        ax.set_yticks(range(len(etas)), [f"{e:g}" for e in etas], fontsize=8)
        ax.set_xlabel(f"d  (d/n, n = {n})")
        ax.set_ylabel("noise rate η")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    h, lab = axes[0].get_legend_handles_labels()  # below the maps: inside one it hides cells
    fig.legend(h, lab, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(f"rfa-phase: m={cfg.m}, α={cfg.alpha:g}, σ²=d^-1.2, {cfg.seeds} seeds, n_test={cfg.n_test}; "
                 "in brackets: the prediction η + (1−2η)·e* (e*: f*'s clean error)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
