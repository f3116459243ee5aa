"""fa-phase's figure: heat maps of measured / predicted over (k, d) — the binary in-class cosine / (1/√(k/2)),
the binary critical radius / √(d/k), the k-class one / √(d/2) — cells off by more than 20 % outlined in red,
and the log-log fits of the radii beside the theory's exponent 0.5."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from ...plotting import BLUE, RED, get_cmap, subplots

PANELS = (("binary.cos_ratio", "binary cos(μ_j, w) / (1/√(k/2))  [Thm 4.5 (2)]"),
          ("binary.radius_ratio", "binary critical radius / √(d/k)  [Thm 4.5 (3)]"),
          ("multiclass.radius_ratio", "k-class critical radius / √(d/2)  [Thm 4.7 (3)]"))


def _dim(d: int) -> str:
    """A tick label: 2^p for the theory grid's powers of two, the number otherwise."""
    p = int(d).bit_length() - 1
    return f"2^{p}" if d >= 2**16 and d == 2**p else str(d)


def phase_figure(cfg, cells: dict, fits: dict):
    ks, ds = list(cfg.ks), list(cfg.ds)
    fig, axes = subplots(1, 4, figsize=(19, 4.4))
    cmap = get_cmap("RdBu_r")
    for ax, (key, title) in zip(axes[:3], PANELS):
        z = np.full((len(ks), len(ds)), np.nan)
        for (k, d), c in cells.items():
            z[ks.index(k), ds.index(d)] = c[key]
        im = ax.imshow(z, cmap=cmap, vmin=0.4, vmax=1.6, aspect="auto", origin="lower")
        for i, k in enumerate(ks):
            for j, d in enumerate(ds):
                if (k, d) not in cells:  # not run: d < k, or (scaling='theory') d < k¹⁰
                    ax.text(j, i, "not run", ha="center", va="center", fontsize=7, color="0.5")
                    continue
                v = z[i, j]
                ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8)
                if np.isnan(v) or abs(v - 1) > 0.2:  # the prediction is off by more than 20 % here
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=RED, lw=2.5))
        ax.set_xticks(range(len(ds)), [_dim(d) for d in ds], fontsize=8)
        ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=8)
        ax.set_xlabel("d")
        ax.set_ylabel("k")
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="measured / predicted (1 = theory)")
    ax = axes[3]
    keys = sorted(cells)
    for net, x, color, label in (("binary", [d / k for k, d in keys], RED, "binary vs d/k"),
                                 ("multiclass", [d for _, d in keys], BLUE, "k-class vs d")):
        y = np.array([cells[c][f"{net}.critical_radius"] for c in keys])
        ax.loglog(x, y, "o", color=color, label=label)
        slope, icpt, lo, hi = fits[net]
        xs = np.array([min(x), max(x)], float)
        if np.isfinite(slope):
            ax.loglog(xs, np.exp(icpt) * xs ** slope, "-", color=color,
                      label=f"fit: slope {slope:.2f} [{lo:.2f}, {hi:.2f}]")
        theory = np.sqrt(xs) if net == "binary" else np.sqrt(xs / 2)
        ax.loglog(xs, theory, ":", color=color, label="theory " + ("√(d/k)" if net == "binary" else "√(d/2)"))
    ax.set_xlabel("d/k (binary) or d (k-class)")
    ax.set_ylabel("critical radius (worst-case attacks)")
    ax.set_title("log-log fits (theory: slope 0.5)", fontsize=9)
    ax.legend(fontsize=7)
    run = (f"T={cfg.T}, η={cfg.eta:g}" if getattr(cfg, "scaling", "fixed") == "fixed" else
           f"gradient flow to ηT = k^{cfg.horizon_power:g}, η = d⁻², σ² = ηk⁻⁵/10, cells with d ≥ k¹⁰")
    fig.suptitle(f"fa-phase: measured / predicted over (k, d), {cfg.seeds} seeds, n={cfg.n}, {run}; red boxes: off "
                 f"by > 20 % (or no classifier)", fontsize=10)
    fig.tight_layout()
    return fig
