"""The attack fields of the image experiments (Fig 3 middle/right): radii, points, the ensemble's budgets, its
schedule and the convergence check. The paper says only "ℓ2 PGD": every budget is AutoAttack's or featlab's."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field


class AttackFields(BaseModel):
    ATTACK_FIELDS: ClassVar[frozenset[str]] = frozenset({
        "radii", "n_attack", "pgd_steps", "pgd_step_factor", "pgd_restarts", "attack", "apgd_steps", "apgd_restarts",
        "apgd_targets", "square_queries", "ddn_steps", "check_factor", "check_seeds", "attack_schedule",
        "check_points", "boundary_steps", "boundary_step", "fmn_steps", "alma_steps", "min_norm_starts",
        "check_family", "min_norm_attacks"})

    radii: list[float] = Field([round(0.08 * i, 2) for i in range(11)], description="ℓ2 radii in [0,1] pixel units")
    n_attack: int | None = Field(None, ge=1, description="attack the first n test images (None: all)")
    pgd_steps: int = Field(20, ge=1, description="PGD iterations per radius")
    pgd_step_factor: float = Field(2.5, gt=0, description="PGD step = factor·δ/steps")
    pgd_restarts: int = Field(1, ge=1, description="PGD restarts")
    attack: Literal["ensemble", "pgd"] = Field(
        "ensemble", description="[paper silent: §6.2 says ℓ2 PGD] 'ensemble': the worst case per point over margin "
        "PGD, APGD-CE, APGD-T, DDN and Square with the attack-failure indicators; 'pgd': margin PGD alone (the "
        "former protocol, whose curve the ensemble also keeps)", json_schema_extra={"range": ["ensemble", "pgd"]})
    apgd_steps: int = Field(100, ge=1, description="[paper silent: AutoAttack's 100] APGD-CE and APGD-T iterations "
                            "per radius (and per target)", json_schema_extra={"range": [100, 50, 200]})
    apgd_restarts: int = Field(1, ge=1, description="[paper silent: AutoAttack's 1] APGD-CE random restarts",
                               json_schema_extra={"range": [1, 5]})
    apgd_targets: int = Field(5, ge=1, description="[paper silent] APGD-T targets: the most likely classes of the "
                              "other group (all 5 with J+ = 0–4, as AutoAttack's 9 are all other classes); the 2-class "
                              "net has one, the other logit", json_schema_extra={"range": [5, 1, 3]})
    square_queries: int = Field(5000, ge=1, description="[paper silent: AutoAttack's 5000] Square-L2 queries per "
                                "radius", json_schema_extra={"range": [5000, 2500, 10000]})
    ddn_steps: int = Field(100, ge=1, description="[paper silent] DDN (minimum-norm) iterations, once per point",
                           json_schema_extra={"range": [100, 50, 200]})
    min_norm_attacks: list[Literal["ddn", "fmn", "alma"]] = Field(
        ["ddn", "fmn", "alma"], min_length=1, description="[paper silent; our choice] the minimum-norm stage's "
        "attacks (probes/min_norm.py): DDN, FMN, ALMA; ['ddn'] is the former stage", json_schema_extra={
            "range": [["ddn", "fmn", "alma"], ["ddn"]]})
    fmn_steps: int = Field(100, ge=1, description="[paper silent; our choice] FMN "
                           "(minimum-norm, Pintor et al. 2021) iterations per start",
                           json_schema_extra={"range": [100, 50, 300]})
    alma_steps: int = Field(100, ge=1, description="[paper silent; our choice] ALMA (augmented-Lagrangian minimum "
                            "norm, Rony et al. 2021) iterations per start", json_schema_extra={"range": [100, 50, 300]})
    min_norm_starts: int = Field(2, ge=1, description="[paper silent; our choice] FMN's and ALMA's starts: from the "
                                 "image, then from random points of the ball of half the largest radius",
                                 json_schema_extra={"range": [2, 1, 4]})
    check_family: Literal["auto", "ddn", "fmn", "alma", "apgd-dlr", "none"] = Field(
        "auto", description="[paper silent; our choice] the convergence check's other attack family, run on the "
        "stronger budget's subsample from what the ensemble left (probes/family_check.py): 'auto' a minimum-norm "
        "family the schedule did not use, else APGD with the targeted DLR loss against every class of the other "
        "group; a point it moves at a transition radius flags the curve", json_schema_extra={
            "range": ["auto", "apgd-dlr", "none"]})
    check_factor: int = Field(2, ge=2, description="[paper silent] the convergence indicator's stronger budget: this "
                              "many times the steps, restarts and queries of every attack but margin PGD",
                              json_schema_extra={"range": [2, 4]})
    check_seeds: int | None = Field(None, ge=1, description="[paper silent] the stronger budget's check runs on the "
                                    "curves of the first this-many seeds (None: all)",
                                    json_schema_extra={"range": [None, 1]})

    attack_schedule: Literal["min-norm-first", "full"] = Field(
        "min-norm-first", description="[paper silent] the ensemble's schedule: 'min-norm-first' (DDN once per point, "
        "then PGD alone walking the grid from DDN's boundary, then APGD-CE, APGD-T and Square descending from each "
        "point's break radius: probes/schedule.py) or 'full' (PGD over every radius, then the rest descending: the "
        "former schedule, kept as the reference)", json_schema_extra={"range": ["min-norm-first", "full"]})
    boundary_steps: int = Field(
        5, ge=0, description="[paper silent; our choice] min-norm-first: margin PGD steps at the grid radius just "
        "below each point's DDN distance, warm-started from DDN's closest adversarial point scaled into that ball "
        "(0: none)", json_schema_extra={"range": [5, 0, 10]})
    boundary_step: float = Field(0.125, gt=0, description="[paper silent; our choice: Madry et al.'s 2.5·δ/20] that "
                                 "PGD's step, in units of the radius", json_schema_extra={"range": [0.125, 0.05]})
    check_points: int | None = Field(
        100, ge=1, description="[paper silent] the stronger budget's check runs on a fixed random subsample of this "
        "many attacked points (None: all), its drop reported with a Clopper-Pearson interval",
        json_schema_extra={"range": [100, None]})

    def predicted_passes(self, n: int, seeds: int | None = None) -> dict[str, float]:
        """The attack's forward + backward point-passes over ``n`` points, both nets and all seeds, by stage, as
        the schedule spends them (probes/passes.py counts the same): each fixed-radius attack visits about one
        radius per point (its boundary: measured 1.0–1.1 visits on fa-resnet-digits quick), the clean pass and
        re-verifications one forward each, APGD-CE at the large radius only on what survives the largest radius
        (taken as 1 %), the stronger budget on ``check_points`` of the first ``check_seeds`` seeds' curves (its
        APGD-CE, first on what the result left, visits two radii: measured). APGD-T runs ``apgd_targets`` targets on
        the k-class net and one (the other logit) on the 2-class net: their mean per arm."""
        if seeds is None:
            seeds = int(getattr(self, "seeds", 1))
        t = (self.apgd_targets + 1) / 2
        grad = {"pgd": 2 * self.pgd_steps * self.pgd_restarts + 1, "apgd-ce": 2 * self.apgd_steps * self.apgd_restarts
                + 1, "apgd-t": 2 * self.apgd_steps * t + 1, "square": self.square_queries + 1}
        if self.attack == "pgd":
            per = {"clean": 3, "pgd": grad["pgd"] * (len(self.radii) + 1) / 2}  # ascending on survivors
        elif self.attack_schedule == "full":
            per = {"clean": 3, **self._min_norm_passes(),
                   "pgd": grad["pgd"] * (len(self.radii) + 1) / 2,
                   **{k: v for k, v in grad.items() if k != "pgd"}, "large": 0.01 * grad["apgd-ce"]}
        else:  # the boundary stage: one warm-started PGD per point DDN broke (taken as all), plus its re-check
            per = {"clean": 3, **self._min_norm_passes(), "boundary": 2 *
                   self.boundary_steps + 4 if self.boundary_steps else 0,
                   **{k: v for k, v in grad.items() if k != "pgd"}, "large": 0.01 * grad["apgd-ce"]}
        f = self.check_factor
        check = {"check." + k: v for k, v in {"apgd-ce": 2 * (2 * f * self.apgd_steps
                 * self.apgd_restarts + 1), "apgd-t": 2 * f * self.apgd_steps * t + 1,
                 "square": f * self.square_queries + 1, **self._min_norm_passes(f)}.items()} \
            if self.attack == "ensemble" else {}
        if self.attack == "ensemble" and self.check_family != "none":  # apgd-dlr at about one grid radius per point
            check["check.family"] = 2 * self.apgd_steps * 3 + 1  # against 1 class (2-class net) or 5 (10-class)
        m = n if self.check_points is None else min(self.check_points, n)
        checked = min(int(self.check_seeds or seeds), seeds)
        arms = 2
        out = {k: arms * seeds * n * v for k, v in per.items()}
        out.update({k: arms * checked * m * v for k, v in check.items()})
        return out

    def _min_norm_passes(self, f: int = 1) -> dict[str, float]:
        """The minimum-norm stage's point-passes per point (``f``: the stronger budget's factor on steps and
        starts): per start (DDN: one) a clean forward, 2 per step, a last forward (ALMA: one more, its margin's
        scale at x), then one re-verification."""
        s = self.min_norm_starts * f
        per = {"ddn": 2 * f * self.ddn_steps + 3, "fmn": s * (2 * f * self.fmn_steps + 2) + 1,
               "alma": s * (2 * f * self.alma_steps + 3) + 1}
        return {k: v for k, v in per.items() if k in self.min_norm_attacks}
