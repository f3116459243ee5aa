"""Figures of the Random Feature Amplification experiments (Thm 1 sweep, the lemmas over time, Figs 1–2).

Each function returns a matplotlib Figure; RunContext.figure saves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.colors import ListedColormap

from ...placement import to_numpy
from ...plotting import Figure, get_cmap, subplots

RED, BLUE, GREEN, GRAY, ORANGE = "#d62728", "#1f77b4", "#2ca02c", "#7f7f7f", "#ff7f0e"


def _style(ax, title=None, xlabel=None, ylabel=None):
    if title:
        ax.set_title(title, fontsize=10)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def _finish(fig: Figure, title: str) -> Figure:
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def theorem1_figure(etas, per_eta, n_rows, base, oracle, title="") -> Figure:
    """(a) test error vs η against observed and clean labels, with baselines; (b) the training pattern;
    (c) test error − η vs n."""
    ns_ = {r[0] for r in n_rows}
    fig, axes = subplots(1, 3 if len(ns_) > 1 else 2, figsize=(15 if len(ns_) > 1 else 10, 4.3))
    e = np.asarray(etas)

    def ms(name):
        v = [to_numpy(per_eta[x][name], float) for x in etas]
        return np.array([a.mean() for a in v]), np.array([a.std() for a in v])

    ax = axes[0]
    ax.plot(e, e, ":", color=GRAY, label="η (Bayes error)")
    for name, lab, c, st in (("test_err", "net, observed labels", RED, "o-"),
                             ("clean_test_err", "net, clean labels", BLUE, "s-"),
                             ("fstar_test_err", "f*, observed labels", ORANGE, "^--")):
        mu, sd = ms(name)
        ax.errorbar(e, mu, sd, fmt=st, color=c, label=lab, ms=4, capsize=2, lw=1.4)
    ax.axhline(1 - float(base["linear_nobias.clean_test_acc"].mean()), color=GREEN, ls="--", lw=1,
               label="linear, no bias (clean)")
    ax.axhline(1 - oracle, color=GREEN, ls="-.", lw=1, label="best halfspace with bias (clean)")
    ax.set_ylim(-0.02, 0.85)
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    _style(ax, "(a) test error at T", "label noise rate η", "test error")

    ax = axes[1]
    for name, lab, c, st in (("train_clean_correct", "clean points classified with their label", BLUE, "s-"),
                             ("train_noisy_fit", "noisy points classified with their flipped label", RED, "o-"),
                             ("pattern_exact", "runs where the pattern holds exactly", GRAY, "d--")):
        mu, sd = ms(name)
        ax.errorbar(e, mu, sd, fmt=st, color=c, label=lab, ms=4, capsize=2, lw=1.4)
    ax.set_ylim(-0.05, 1.1)
    ax.legend(fontsize=7, loc="center right")
    _style(ax, "(b) training set at T (Thm 1 (1))", "label noise rate η", "share")

    if len(axes) < 3:
        return _finish(fig, title)
    ax = axes[2]
    rows = np.array(n_rows, dtype=float)
    cmap = get_cmap("viridis")
    for k, eta in enumerate(etas):
        r = rows[rows[:, 1] == eta]
        r = r[np.argsort(r[:, 0])]
        c = cmap(k / max(1, len(etas) - 1))
        ax.plot(r[:, 0], r[:, 2], "o-", color=c, ms=4, label=f"η={eta:g}")
        ax.plot(r[:, 0], 1 - r[:, 3], "x:", color=c, ms=5)
    ax.plot([], [], "o-", color="black", label="clean test error")
    ax.plot([], [], "x:", color="black", label="share of runs without the exact pattern")
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=7)
    _style(ax, "(c) vs the number of training points", "training points n", "share")
    return _finish(fig, title)


def amplification_figure(f, T, alpha, hist, sweep, title="") -> Figure:
    """The lemmas' measurements over t, with their thresholds; ρ histograms; ρ(0), ρ(1) vs d."""
    fig, axes = subplots(2, 4, figsize=(18, 8))
    curves = _Curves(f.groupby("step"), np.asarray(sorted(f["step"].unique())), T)
    _rho_histograms(axes[0, 0], hist, T)
    _alignment_panels(axes[0, 1:], curves, f)
    _growth_panels(axes[1, :3], curves, f, alpha)
    _sweep_panel(axes[1, 3], sweep)
    return _finish(fig, title)


@dataclass
class _Curves:
    """Per-step measurements over seeds (mean line, min-max band) with Thm 1's T marked."""

    g: Any
    t: np.ndarray
    T: float

    def band(self, ax, col, color, label, style="-"):
        mu, lo, hi = self.g[col].mean().values, self.g[col].min().values, self.g[col].max().values
        ax.plot(self.t, mu, style, color=color, label=label, lw=1.6, marker="o", ms=3)
        ax.fill_between(self.t, lo, hi, color=color, alpha=0.15, lw=0)

    def mark_T(self, ax):
        ax.axvline(self.T, color=GRAY, ls=":", lw=1)
        ax.text(self.T, 0.97, " T", va="top", fontsize=8, color=GRAY, transform=ax.get_xaxis_transform())


def _rho_histograms(ax, hist, T) -> None:
    """(a) histograms of ρ at t = 0, 1, T."""
    cols = {0: GRAY, 1: BLUE, T: RED}
    allv = np.concatenate([v for v in hist.values()]) if hist else np.zeros(1)
    bins = np.linspace(min(0.0, allv.min()), 1.0, 60)
    for tt, v in hist.items():
        ax.hist(v, bins=bins, color=cols.get(tt, GREEN), alpha=0.55, label=f"t = {tt}", density=True)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    _style(ax, "(a) ρ_{j,µ} = <w_j/‖w_j‖, µ>, j ∈ J_µ", "normalised correlation", "density")


def _alignment_panels(axes, c: _Curves, f) -> None:
    """(b) own-mean correlation (eq. 40), (c) alignment (Cond 9), (d) almost-orthogonality (Cond 10)."""
    ax = axes[0]
    c.band(ax, "rho_median", BLUE, "median over J")
    c.band(ax, "rho_min", RED, "min over J", "--")
    ax.axhline(math.exp(-2) / 256, color="black", ls="--", lw=1, label="e^-2/256 (eq. 40)")
    if f["rho_min"].min() > 0:
        ax.set_yscale("log")
    else:
        ax.set_yscale("symlog", linthresh=1e-3)
    ax.legend(fontsize=7)
    c.mark_T(ax)
    _style(ax, "(b) own-mean correlation ρ_{j,µ}(t)", "GD step t", "ρ")

    ax = axes[1]
    c.band(ax, "cond9_share", BLUE, "Condition 9 share of J")
    c.band(ax, "fstar_agreement", GREEN, "agreement with sgn f*", "--")
    c.band(ax, "span_share", ORANGE, "share of ‖W‖²_F in span{µ1,µ2}", "-.")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=7, loc="lower right")
    c.mark_T(ax)
    _style(ax, "(c) alignment (Cond 9)", "GD step t", "share")

    ax = axes[2]
    c.band(ax, "cond10_max_ao", RED, "max_j |<w_j, µ_other>|/(α|a_j|)")
    ax.axhline(3, color="black", ls="--", lw=1, label="3 (Cond 10)")
    ax.legend(fontsize=7)
    c.mark_T(ax)
    _style(ax, "(d) almost-orthogonality (Cond 10)", "GD step t", "ratio")


def _growth_panels(axes, c: _Curves, f, alpha) -> None:
    """(e) per-step growth (eq. 39), (f) norm growth (Lemma 14), (g) smallest loss derivative (eq. 37)."""
    ax = axes[0]
    gg = f[f["step"] >= 1].groupby("step")["growth_min"]
    ax.plot(gg.mean().index, gg.mean().values, "o-", color=BLUE, ms=3, label="min_j growth/(α|a_j|)")
    ax.fill_between(gg.mean().index, gg.min().values, gg.max().values, color=BLUE, alpha=0.15, lw=0)
    ax.axhline(math.exp(-2) / 64, color="black", ls="--", lw=1, label="e^-2/64 (eq. 39)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    c.mark_T(ax)
    _style(ax, "(e) per-step growth along own mean", "GD step t (increment t−1 → t)", "growth / (α|a_j|)")

    ax = axes[1]
    c.band(ax, "frob", BLUE, "‖W^(t)‖_F")
    t1 = c.t[c.t >= 1]
    ax.plot(t1, 2 * alpha * t1, "--", color="black", lw=1, label="2αt (Lemma 14, t ≥ 1)")
    ax.legend(fontsize=7)
    c.mark_T(ax)
    _style(ax, "(f) norm growth", "GD step t", "‖W‖_F")

    ax = axes[2]
    c.band(ax, "min_neg_lprime", BLUE, "min_i −ℓ'(y_i f(x_i))")
    ax.axhline(math.exp(-2) / 2, color="black", ls="--", lw=1, label="e^-2/2 (eq. 37)")
    ax.set_ylim(0, 0.55)
    ax.legend(fontsize=7)
    c.mark_T(ax)
    _style(ax, "(g) smallest loss derivative", "GD step t", "−ℓ'")


def _sweep_panel(ax, sweep) -> None:
    """(h) one-step amplification vs d (Lemmas 4, 12)."""
    if sweep:
        ds = np.array([s[0] for s in sweep], dtype=float)
        r0 = np.array([s[1].mean() for s in sweep])
        r1 = np.array([s[2].mean() for s in sweep])
        ax.loglog(ds, r0, "o-", color=GRAY, label="median ρ at t = 0")
        ax.loglog(ds, r1, "s-", color=BLUE, label="median ρ at t = 1")
        ax.loglog(ds, np.sqrt(2 / np.pi) / np.sqrt(ds) * 0.85, ":", color="black", lw=1, label="∝ 1/√d")
        ax.legend(fontsize=7)
    _style(ax, "(h) one-step amplification vs d (Lemmas 4, 12)", "dimension d", "median ρ over J")


def boundary_figure(U, V, F, Fs, proj, y, noisy, pred, title="") -> Figure:
    """Fig 1: sgn f on the plane x = uµ1 + vµ2 with the training points (projected), beside sgn f*."""
    fig, axes = subplots(1, 2, figsize=(11, 5.2))
    cmap = ListedColormap(["#c6dbef", "#fcbba1"])  # −1 blue, +1 red
    for ax, Z, name in ((axes[0], F, "network f(x; W^(T))"), (axes[1], Fs, "f*(x) = |<µ1,x>| − |<µ2,x>|")):
        ax.contourf(U, V, (Z > 0).astype(float), levels=[-0.5, 0.5, 1.5], cmap=cmap)
        ax.contour(U, V, Z, levels=[0], colors="black", linewidths=1.2)
        clean = ~noisy.astype(bool)
        for lab, c in ((1, RED), (-1, BLUE)):
            s = clean & (y == lab)
            ax.scatter(proj[s, 0], proj[s, 1], s=10, c=c, marker="o", edgecolors="none", alpha=0.7,
                       label=f"clean, y = {lab:+d}")
            s = noisy.astype(bool) & (y == lab)
            ax.scatter(proj[s, 0], proj[s, 1], s=28, c=c, marker="x", linewidths=1.1,
                       label=f"noisy (flipped), y = {lab:+d}")
        ax.set_aspect("equal")
        ax.set_xlim(U.min(), U.max())
        ax.set_ylim(V.min(), V.max())
        _style(ax, f"sgn of {name}", "<x, µ1>", "<x, µ2>")
    wrong_clean = int(((pred != y) & ~noisy.astype(bool)).sum())
    right_noisy = int(((pred == y) & noisy.astype(bool)).sum())
    axes[0].text(0.02, 0.02, f"clean misclassified: {wrong_clean}\nnoisy fitted: {right_noisy}",
                 transform=axes[0].transAxes, fontsize=8, va="bottom",
                 bbox=dict(facecolor="white", alpha=0.8, edgecolor="none"))
    axes[1].legend(fontsize=7, loc="upper right", framealpha=0.9)
    return _finish(fig, title)


def fig2_figure(curves, T, eta, title="") -> Figure:
    """Fig 2: train / test accuracy vs GD iteration (log axis) in the n ≫ d and d ≫ n regimes."""
    fig, axes = subplots(1, len(curves), figsize=(6.2 * len(curves), 4.4), squeeze=False)
    for ax, (name, (n, d, f)) in zip(axes[0], curves.items()):
        g = f.groupby("step")
        t = np.asarray(g.mean(numeric_only=True).index, dtype=float)
        x = np.maximum(t, 0.5)
        for col, lab, c, st in (("train_acc", "train accuracy", GRAY, "-"),
                                ("test_acc", "test accuracy (noisy labels)", RED, "-"),
                                ("clean_test_acc", "test accuracy (clean labels)", BLUE, "--")):
            mu = 100 * g[col].mean().values
            ax.plot(x, mu, st, color=c, label=lab, lw=1.7)
            ax.fill_between(x, 100 * g[col].min().values, 100 * g[col].max().values, color=c, alpha=0.15, lw=0)
        ax.axhline(100 * (1 - eta), color="black", ls=":", lw=1, label=f"optimal {100 * (1 - eta):.0f}%")
        ax.axvline(T, color=GREEN, ls=":", lw=1)
        ax.text(T, 0.97, " T", color=GREEN, fontsize=8, va="top", transform=ax.get_xaxis_transform())
        tr = g["train_acc"].mean()
        hit = tr.index[tr.values >= 1.0]
        if len(hit):
            ax.axvline(hit[0], color=ORANGE, ls="--", lw=1)
            ax.text(hit[0], 0.03, "interpolation ", color=ORANGE, fontsize=8, ha="right",
                    transform=ax.get_xaxis_transform())
        ax.set_xscale("log")
        ax.set_ylim(50, 101)
        regime = "low-dimensional (n ≫ d)" if name == "low" else "high-dimensional (d ≫ n)"
        _style(ax, f"{regime}: n={n}, d={d}", "GD iteration", "accuracy (%)")
        ax.legend(fontsize=7, loc="lower center")
    return _finish(fig, title)
