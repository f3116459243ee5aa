"""rfa-phase (beyond the paper): test error after early stopping (Thm 1's T) and after long training, over the
noise rate η and the ratio d/n — where interpolation is benign (d ≫ n: the error stays ≈ η) and where it harms
(n ≫ d: fitting the noise costs test accuracy), Fig 2's two regimes as a map.

Every (η, seed) pair of one d trains in ONE batched run (as rfa-theorem1), probed log-spaced in t (as rfa-fig2);
the measurements are in phase_measure.py.

Decisions where the issue is silent [paper silent]:
* n fixed, d varied (so d/n moves with d); σ² = d^-1.2 and ω² = 0.01/(md) (App. E) at every d unless the preset
  sets σ, ω; exact η-fraction flips per cluster, µ = e1, e2 (rfa-fig2's choices);
* "tracks η": the net's errors against those of f* = |<µ1,x>| − |<µ2,x>| on the same test points and observed
  labels (mean η + (1 − 2η)·e*, e* f*'s clean error: η is reachable only up to the clusters' own overlap), paired;
* each claim is judged only where its premises hold. The early-stopping claim (Thm 1 (2)) on the cells that meet
  the premises the grid varies, (A1) d ≥ C·log²(n/δ) and (A4) η ≤ 1/C at the run's C; the other assumptions are
  the preset's and are declared per preset. The interpolation claims (Fig 2) only in Fig 2's setting (App. E's σ),
  on the grid's largest d/n (benign) and smallest d/n (harmful) columns, whose regime (a factor ≥ 10 either way)
  each preset declares; the harmful reading is Fig 2's: the error at the end against the error at the step of the
  lowest validation error (chosen per replica on separate points), not against the error at T;
* the theory's boundaries drawn on the maps: d = n (Fig 2's d ≫ n vs n ≫ d) and (A1) at the run's C.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from ...config import check
from ...runs.claims import Assumption, AtLeast, AtMost, Claim, Control
from ...runs.registry import experiment
from . import fig_regime, rivals
from .common import RFABase
from .diagnoses import diagnosed
from .phase_measure import mean_gap, pooled, run_d, worst_cell_gap
from .phase_plots import phase_figure


class RFAPhaseConfig(RFABase):
    AUTO_DEVICE: ClassVar[str] = "cpu"  # small launch-bound nets: slower on an H200 than here
    etas: list[float] = Field([0.0, 0.1, 0.2, 0.3], min_length=1, description="noise rates η")
    n: int = Field(40, ge=1, description="training points n (fixed; d/n moves with d)")
    ds: list[int] = Field([4, 13, 40, 130, 400], min_length=2, description="input dimensions d")
    steps_long: int = Field(20_000, ge=0, description="GD iterations of the long run (interpolation); 0 = the "
                            "untrained net, a control (then 'at T' reads the init too)")
    per_decade: int = Field(4, ge=1, description="probes per decade of iterations (log-spaced)")

    def estimate(self) -> list:
        """Every (η, seed) of one d in one batched run of steps_long iterations, one d after another."""
        return self.sequential([self.gd_needs(E=self.seeds * len(self.etas), n=self.n, d=d, tag=f"d={d}: ",
                                              steps=max(self.steps_long, self.T()), step_field="steps_long",
                                              fields=("seeds", "etas", "n", "ds")) for d in self.ds])

    @model_validator(mode="after")
    def _valid(self):
        for e in self.etas:
            check(0 <= e < 0.5, "etas", f"must hold noise rates in [0, 1/2); got {e!r}", "e.g. 0.15")
        check(self.steps_long == 0 or self.steps_long >= self.T(), "steps_long",
              f"must be 0 (untrained) or >= Thm 1's T = {self.T()}")
        return self

    def early_cells(self) -> list[tuple[float, int]]:
        """(η, d) cells meeting the premises the grid varies, (A1) and (A4), at the run's C."""
        out = []
        for d in self.ds:
            for e in self.etas:
                h = fig_regime.check_setting(self, self.n, d, e)
                if h["A1"] and h["A4"]:
                    out.append((e, d))
        return out

    def fig2_setting(self) -> bool:
        """Fig 2's setting: App. E's σ² = d^-1.2 (the interpolation claims are Fig 2's, outside the theory)."""
        return self.sigma is None


PAIRED = "judged by the paired 95 % bootstrap interval over the cells' test points pooled over seeds"
CLAIMS = [
    Claim("rfa.phase_early_tracks_eta", "early-stopped (t = T) test error minus f*'s on the same points and labels "
          "(η + (1 − 2η)·e* in expectation), worst cell meeting (A1) and (A4)", "Thm 1 (2)", AtMost(hi=0),
          why="Thm 1 (2): test error ≤ η + C√(log(1/δ)/n), C unspecified; its limit is the noise rate over f*'s own "
              "error; " + PAIRED + " (was ≤ 3 s.e. on the value, over every cell)"),
    Claim("rfa.phase_benign", "d ≫ n (largest d/n): error after long training minus f*'s on the same points and "
          "labels, worst η", "Fig 2 (high-dim)", AtMost(hi=0),
          why="Fig 2: 'remains at the optimal 85 %' after interpolating; " + PAIRED + " (was ≤ 3 s.e.)"),
    Claim("rfa.phase_harmful", "n ≫ d (smallest d/n): error after long training minus at the step of the lowest "
          "validation error, mean over η > 0", "Fig 2 (low-dim)", AtLeast(lo=0, strict=True),
          why="Fig 2: 'the test accuracy decreases after the network overfits'; read from the peak as in Fig 2 "
              "(was: minus the error at T); " + PAIRED + " (was ≥ 3√2 s.e.)"),
]

THEORY: dict[str, Any] = {
    "seeds": 2, "n": 80, "m": 32, "alpha": 0.2, "sigma": 0.002, "omega": 5e-5, "etas": [0.0, 0.05, 0.1],
    "ds": [8, 80, 800], "steps_long": 100, "n_test": 2000, "noise": "exact", "means": "axis", "dtype": "float64"}
_EARLY_ANY_D = ("Thm 1 (2) bounds the error at T for every d meeting (A1) d ≳ log²(n/δ), with no n ≫ d or d ≫ n "
                "condition, and Fig 2 shows both regimes near 1 − η early on: the paper says a rival of the regime "
                "holds this")
_NOT_FIG2 = (rivals.NO_INIT_CLAIM + "; besides, the rival runs the theory preset's σ, not Fig 2's setting, where the "
             "interpolation claims are judged")
CONTROLS = [
    Control("untrained", {"steps_long": 0}, "the network at its random init: test error ≈ 1/2 at every η, far from "
            "f*'s", claims=("rfa.phase_benign",)),
    Control("benign-regime", {"ds": [400, 4000]},
            "the map's smallest column at d = 400 = 10·n instead of d = 4: the same long run fits the noise there "
            "too, but benignly, so the error must not rise from its peak (at d = 130 = 3.25·n it still rises, by "
            "0.55 points)",
            claims=("rfa.phase_harmful",), premise="n ≫ d (Fig 2's low-dimensional regime)",
            trained=("harmful_column.train_acc@end",),
            exempt={"rfa.phase_early_tracks_eta": _EARLY_ANY_D,
                    "rfa.phase_benign": "the rival's largest column, d = 4000 = 100·n, is Fig 2's high-dimensional "
                                        "regime, where the paper says interpolation is benign"}),
    Control("harmful-regime", {"ds": [4, 13]},
            "the map's largest column at d = 13 < n = 40 instead of d = 400: fitting the noise there costs test "
            "accuracy (judged against f*'s errors on the same points, so the clusters' overlap at d = 13 is "
            "discounted)", claims=("rfa.phase_benign",), premise="d ≫ n (Fig 2's high-dimensional regime)",
            trained=("benign_column.train_acc@end",),
            exempt={"rfa.phase_early_tracks_eta": _EARLY_ANY_D,
                    "rfa.phase_harmful": "the rival's smallest column is the paper net's own d = 4 (n ≫ d), where "
                                         "Fig 2 says fitting the noise harms"}),
    Control("large-init", {**THEORY, "omega": 0.05, "steps_long": 2000},
            "the theory preset's map with ω = 0.05 (ω√(md) = 8 at d = 800): at T the random init still dominates "
            "and the net is at chance; the long run (2000 steps instead of 100: the lazy net needs them to fit) "
            "fits every clean training point",
            claims=("rfa.phase_early_tracks_eta",), premise="(A6) ω√(md) ≤ 1/C²: a small initialisation, so that "
            "the first steps amplify the weak random features within T = O(1) steps",
            trained=("train_clean_correct@end",), tiny={"seeds": 1, "steps_long": 30, "n_test": 100},
            exempt={"rfa.phase_benign": _NOT_FIG2, "rfa.phase_harmful": _NOT_FIG2}),
    Control("no-noise", {"train_labels": "clean"},
            "every cell trained on the clean labels ỹ of its points (η = 0 in training), judged on the same observed "
            "labels: with no noisy label to fit, the n ≫ d column has nothing to overfit, so its error must not rise",
            claims=("rfa.phase_harmful",),
            premise="label noise in training: Fig 2's rise comes 'after the network overfits to the noisy training "
                    "data' (§5)",
            trained=("train_clean_correct@end",),
            exempt={"rfa.phase_early_tracks_eta": rivals.CLEAN_REFERENCE,
                    "rfa.phase_benign": "Fig 2: the d ≫ n net stays at the optimum after interpolating its noisy "
                                        "labels; a net with none to interpolate stays there as f* does"}),
]

PRESETS: dict[str, dict[str, Any]] = {
    # Fig 2's setting (App. E's σ, ω, α): (A2) fails at every d; the early claim has no cell here
    "quick": {"seeds": 2, "n": 40, "ds": [4, 13, 40, 400], "etas": [0.0, 0.15, 0.3], "m": 100,
              "steps_long": 20_000, "n_test": 2000, "noise": "exact", "means": "axis"},
    # the paper has no phase diagram, so no paper preset: Fig 2's setting (App. E) over a larger grid (a demo)
    "full-grid": {"seeds": 3, "n": 100, "ds": [10, 30, 100, 300, 1000, 3000], "m": 400,
                  "etas": [0.0, 0.05, 0.1, 0.15, 0.2, 0.3], "steps_long": 100_000, "n_test": 6000,
                  "noise": "exact", "means": "axis"},
    # (A1)–(A7) at C = 10 in the d = 800 column (rfa-theorem1's theory setting at n = 80, η ≤ 1/C): the early
    # claim's preset; not Fig 2's setting, so the interpolation claims are not judged here (a few seconds)
    "theory": THEORY,
}


def _best_cell(c: RFAPhaseConfig) -> list[tuple[int, int, float]]:
    return [(c.n, max(c.ds), min(c.etas))]


def _regime(p: dict) -> tuple[bool, bool]:
    c = RFAPhaseConfig(**p)
    return c.n >= 10 * min(c.ds), max(c.ds) >= 10 * c.n


ASSUMPTIONS = [
    Assumption("Fig 2 setting", "App. E's σ² = d^-1.2, where Fig 2 shows its two regimes (the interpolation "
               "claims are judged only here)", {p: v.get("sigma") is None for p, v in PRESETS.items()}),
    Assumption("n ≫ d column", "the smallest d/n column is in Fig 2's low-dimensional regime, n ≥ 10·d",
               {p: _regime(v)[0] for p, v in PRESETS.items()}),
    Assumption("d ≫ n column", "the largest d/n column is in Fig 2's high-dimensional regime, d ≥ 10·n",
               {p: _regime(v)[1] for p, v in PRESETS.items()}),
    *fig_regime.declared(RFAPhaseConfig, PRESETS, _best_cell,
                         notes={k: "at the grid's most favourable cell (largest d, smallest η); the early claim is "
                                   "judged on the cells meeting (A1) and (A4)" for k in ("A1", "A4")}),
]


@experiment(
    "rfa-phase", paper="feature-amplification", reference="Thm 1, Fig 2 (beyond the paper: phase diagram)",
    summary="test error at T and after long training over η and d/n: benign (d ≫ n) vs harmful (n ≫ d)",
    config=RFAPhaseConfig, claims=diagnosed(CLAIMS, "rfa-phase"), controls=CONTROLS, presets=PRESETS,
    assumptions=ASSUMPTIONS,
    tiny={"seeds": 1, "ds": [4, 40], "n": 20, "m": 20, "steps_long": 30, "n_test": 100, "etas": [0.0, 0.2]})
def rfa_phase(ctx) -> None:
    cfg: RFAPhaseConfig = ctx.cfg
    etas, ds = list(cfg.etas), list(cfg.ds)
    early_cells = cfg.early_cells()
    fig2 = cfg.fig2_setting()
    lo_d, hi_d = min(ds), max(ds)
    if ctx.is_control and not ctx.judges("rfa.phase_early_tracks_eta"):  # only the judged column trains
        need = {d for d, cid in ((lo_d, "rfa.phase_harmful"), (hi_d, "rfa.phase_benign")) if ctx.judges(cid)}
    else:  # the map, and the large-init control's trained metric over every cell
        need = set(ds)
    cells: dict[tuple[float, int], dict] = {}
    for d in ds:
        if d not in need:
            continue
        res, by_eta = run_d(cfg, ctx.seeds, d, ctx.dtype, ctx.device)
        ctx.trained(res)
        for e, c in by_eta.items():
            cells[(e, d)] = c
            pre = f"d={d}.eta={e:g}."
            for name, v in (("test_err@T", c["T"]), ("test_err@val_peak", c["peak"]), ("test_err@end", c["end"]),
                            ("fstar_err", c["fstar"])):
                ctx.metric(pre + name, float(v.double().mean()))
            for name in ("train_acc", "train_clean"):
                ctx.metric(pre + name + "@end", c[name])
            ctx.metric(pre + "fstar_clean_err", c["e_star"])
            ctx.metric(pre + "val_peak_step", c["peak_step"])
    ctx.metric("train_clean_correct@end", float(np.mean([c["train_clean"] for c in cells.values()])))
    for col, d in (("harmful_column", lo_d), ("benign_column", hi_d)):
        if any(k[1] == d for k in cells):
            ctx.metric(f"{col}.train_acc@end", float(np.mean([cells[(e, d)]["train_acc"] for e in etas])))
    if not ctx.is_control:
        def grid(k):
            return np.array([[float(cells[(e, d)][k].double().mean()) if k in ("T", "end", "fstar")
                              else cells[(e, d)][k] for d in ds] for e in etas])

        M = {k: grid(k) for k in ("T", "end", "fstar", "train_acc")}
        ctx.figure(phase_figure(cfg, M["T"], M["end"], M["train_acc"], M["fstar"]), "phase_test_error")
    _judge(ctx, cfg, cells, early_cells, fig2)


def _judge(ctx, cfg: RFAPhaseConfig, cells: dict, early_cells: list, fig2: bool) -> None:
    lo_d, hi_d = min(cfg.ds), max(cfg.ds)
    if early_cells and ctx.judges("rfa.phase_early_tracks_eta"):
        s = pooled([cells[k] for k in early_cells], "T", "fstar")
        ctx.claim("rfa.phase_early_tracks_eta", worst_cell_gap(*s), samples=s, statistic=worst_cell_gap,
                  unit="test points")
    elif not early_cells:
        ctx.note("rfa.phase_early_tracks_eta not judged: no cell of this grid meets (A1) and (A4) at "
                 f"C = {max(cfg.check_C, 1 / (4 * cfg.alpha ** 2)):g} (see the theory preset)")
    if not fig2:
        ctx.note("rfa.phase_benign, rfa.phase_harmful not judged: σ is set, not App. E's σ² = d^-1.2 (Fig 2's "
                 "setting, where its two regimes are shown)")
        return
    if ctx.judges("rfa.phase_benign"):
        s = pooled([cells[(e, hi_d)] for e in cfg.etas], "end", "fstar")
        ctx.claim("rfa.phase_benign", worst_cell_gap(*s), samples=s, statistic=worst_cell_gap, unit="test points")
    if ctx.judges("rfa.phase_harmful"):
        noisy = [e for e in cfg.etas if e > 0] or list(cfg.etas)
        s = pooled([cells[(e, lo_d)] for e in noisy], "end", "peak")
        ctx.claim("rfa.phase_harmful", mean_gap(*s), samples=s, statistic=mean_gap, unit="test points")
