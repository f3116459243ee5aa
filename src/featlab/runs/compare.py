"""Two run records side by side: the config fields that differ, the metrics that changed (largest relative change
first) and the claims whose verdict changed between the four (held / failed / inconclusive / unverified).
``featlab compare`` prints it; it is plain data for any other use."""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from .index import overrides_text
from .record import RunRecord, counts_text, status, tally_short


def _number(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _side(rec: RunRecord) -> dict[str, Any]:
    ctl = rec.summary.get("control") or {}
    return {"dir": str(rec.dir), "experiment": rec.experiment, "preset": rec.summary.get("preset"),
            "control": ctl.get("name", "?") if ctl else None, "claims_held": tally_short(rec.tally),
            "claims": counts_text(rec.claims), "verdicts": rec.statuses, "overrides": overrides_text(rec)}


def compare(a: RunRecord, b: RunRecord) -> dict[str, Any]:
    ca, cb = a.summary.get("config") or {}, b.summary.get("config") or {}
    config = [{"field": k, "a": ca.get(k), "b": cb.get(k)} for k in dict.fromkeys([*ca, *cb]) if ca.get(k) != cb.get(k)]
    ma, mb = a.summary.get("metrics") or {}, b.summary.get("metrics") or {}
    metrics = []
    for k in ma:
        x, y = ma.get(k), mb.get(k)
        if not (_number(x) and _number(y)):
            continue
        if x == y or (x != x and y != y):  # unchanged (nan on both sides included)
            continue
        rel = (y - x) / abs(x) if x != 0 and math.isfinite(x) and math.isfinite(y) else None  # no size from ±inf
        metrics.append({"metric": k, "a": x, "b": y, "delta": y - x, "relative": rel})
    # largest relative change first; a change from 0 or nan has no relative size and goes first too
    metrics.sort(key=lambda r: -float("inf") if r["relative"] is None else -abs(r["relative"]))
    cla = {c.get("id", c["statement"]): c for c in a.claims}
    clb = {c.get("id", c["statement"]): c for c in b.claims}
    claims = []
    for i in dict.fromkeys([*cla, *clb]):
        x, y = cla.get(i), clb.get(i)
        va, vb = (status(x) if x else None), (status(y) if y else None)  # the four verdicts; None: not judged
        if va != vb:
            claims.append({"id": i, "a": va, "b": vb, "a_measured": (x or {}).get("measured"),
                           "b_measured": (y or {}).get("measured"), "a_interval": (x or {}).get("interval"),
                           "b_interval": (y or {}).get("interval")})
    sa, sb = _side(a), _side(b)
    return {"a": sa, "b": sb, "config": config, "metrics": metrics, "claims_changed": claims,
            "same_experiment": sa["experiment"] == sb["experiment"], "same_preset": sa["preset"] == sb["preset"],
            "same_kind": sa["control"] == sb["control"]}  # a control against a plain run: a different question
