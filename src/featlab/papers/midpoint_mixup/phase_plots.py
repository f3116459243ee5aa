"""mm-phase's figure: per k, one heat map per method of the share of classes with both features over (d, δ3),
with the theory's predictions drawn on it (Thm 4.6: ERM → 0, Thm 4.7: Midpoint → 1; the theory's δ3 = k^-1.5 row
marked)."""

from __future__ import annotations

import math

from ...plotting import get_cmap, subplots

NAMES = {"erm": "ERM", "midpoint": "Midpoint Mixup", "mixup": "uniform Mixup"}
PREDICTED = {"erm": "Thm 4.6: → 0", "midpoint": "Thm 4.7: → 1", "mixup": "no theorem (§5: ≥ Midpoint)"}


def phase_figure(cfg, share: dict, ds: list, levels: dict):
    """share[(k, method)]: (len(levels[k]), len(ds)) shares; rows of the figure are k, columns methods."""
    ks, methods = list(cfg.ks), list(cfg.methods)
    fig, axes = subplots(len(ks), len(methods), figsize=(4.2 * len(methods), 0.9 + 1.1 * max(
        len(v) for v in levels.values()) * len(ks) + 0.8), squeeze=False)
    cmap = get_cmap("viridis")
    for r, k in enumerate(ks):
        lv = levels[k]
        theory = round(k ** -1.5, 6)
        for c, m in enumerate(methods):
            ax, z = axes[r, c], share[k, m]
            ax.imshow(z, cmap=cmap, vmin=0, vmax=1, aspect="auto", origin="lower")
            for i in range(z.shape[0]):
                for j in range(z.shape[1]):
                    ax.text(j, i, f"{z[i, j]:.2f}", ha="center", va="center", fontsize=8,
                            color="black" if z[i, j] > 0.6 else "white")
            if theory in lv:  # the theory's noise level (Assumption 4.3)
                i = lv.index(theory)
                ax.add_patch(_box(i, len(ds), "#ff7f0e"))
            lo = [j for j, d in enumerate(ds) if cfg.region_d_lo <= d <= cfg.region_d_hi]
            if lo and m in ("erm", "midpoint"):  # the region of the advantage claim (smallest δ3)
                ax.add_patch(_box(0, len(ds), "white", lo[0], lo[-1], "--"))
            ax.set_xticks(range(len(ds)), [_sci(d) for d in ds], fontsize=8)
            ax.set_yticks(range(len(lv)), [f"{v:g}" + (" (k$^{-1.5}$)" if v == theory else "") for v in lv],
                          fontsize=8)
            ax.set_title(f"{NAMES[m]}, k={k} — {PREDICTED[m]}", fontsize=9)
            ax.set_xlabel("d")
            if c == 0:
                ax.set_ylabel("feature noise δ3 (= δ4)")
    fig.suptitle(f"Share of classes that learn both features (Def 4.5), {cfg.steps} GD steps, η={cfg.eta:g}, "
                 f"N={cfg.n_per_class}·k, mean of {cfg.seeds} seed(s); orange: the theory's δ3, "
                 "dashed: the claim's region",
                 fontsize=9)
    fig.tight_layout()
    return fig


def _sci(d: float) -> str:
    e = math.floor(math.log10(d))
    c = d / 10**e
    return f"$10^{{{e}}}$" if abs(c - 1) < 1e-9 else f"${c:g}\\cdot10^{{{e}}}$"


def _box(i: int, ncols: int, color: str, j0: int = 0, j1: int | None = None, style: str = "-"):
    from matplotlib.patches import Rectangle

    j1 = ncols - 1 if j1 is None else j1
    return Rectangle((j0 - 0.5, i - 0.5), j1 - j0 + 1, 1, fill=False, edgecolor=color, lw=2, ls=style)
