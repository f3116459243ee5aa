"""No page shows a claim's statement with a config field left unfilled (`{T}`, `{long_eta}`, `{grad_C}`): the
measured sections are generated from run records, and a record of an older featlab could carry them."""

import re
from pathlib import Path

import featlab

ROOT = Path(__file__).resolve().parents[1]
LITERAL = {("feature-amplification.md", "{n}")}  # 'n ∈ n_sweep ∪ {n}': the set of one value, written as such


def test_no_page_shows_an_unfilled_config_field():
    fields = {f for e in featlab.list_experiments() for f in e.config.model_fields}
    found = [f"{p.relative_to(ROOT)}:{i}: {m.group(0)}"
             for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             for m in re.finditer(r"(?<![_^\\$])\{(\w+)\}", line)
             if m.group(1) in fields and (p.name, m.group(0)) not in LITERAL]
    assert not found, found
