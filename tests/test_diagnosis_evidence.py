"""A diagnosis quotes its claim's own record: every number it gives for a published preset ("--preset paper: 0.840
[0.824, 0.856]", "0.840 [0.824, 0.856] at paper") is that row's measured value and 95 % interval, at the quoted
precision (issue 44: two diagnoses quoted pooled intervals beside their verdicts' clustered ones)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from featlab.runs.registry import list_experiments

RESULTS = Path(__file__).parents[1] / "docs" / "results"
_NUM = r"(-?\d+(?:\.\d+)?)"
_IV = rf"(?: \[{_NUM}, {_NUM}\])?"


def _close(quoted: str, value: float) -> bool:
    dec = len(quoted.partition(".")[2])
    return abs(float(quoted) - value) <= 0.5 * 10 ** -dec + 1e-12


def _quotes(text: str, preset: str) -> list[tuple[str, str | None, str | None]]:
    after = re.finditer(rf"--preset {preset}(?: \([^)]*\))?: {_NUM}{_IV}", text)
    before = re.finditer(rf"{_NUM}{_IV} at {preset}\b", text)
    return [m.groups() for m in (*after, *before)]


def test_every_number_a_diagnosis_quotes_is_its_claims_record():
    rows = {(r["experiment"], r["claim"], r["preset"]): r for f in RESULTS.rglob("verdicts.json")
            for r in json.loads(f.read_text(encoding="utf-8"))["rows"]}
    checked, wrong = 0, []
    for exp in list_experiments():
        for claim in exp.claims:
            for d in claim.diagnoses:
                for preset in d.presets:
                    row = rows.get((exp.id, claim.id, preset))
                    if row is None or not isinstance(row.get("measured"), (int, float)):
                        continue
                    for value, lo, hi in _quotes(f"{d.why} {d.evidence}", preset):
                        checked += 1
                        iv = row.get("interval")
                        if not _close(value, row["measured"]) or (lo is not None and not (
                                iv and _close(lo, iv[0]) and _close(hi, iv[1]))):
                            wrong.append(f"{claim.id} at {preset}: quotes {value} [{lo}, {hi}], record "
                                         f"{row['measured']:.4g} {iv}")
    assert checked >= 4 and wrong == [], wrong
