"""A claim is declared once (its ``Claim`` in the registry) and every other place that names it by id — the judge
calls in the experiments' code, the rivals that must fail it or exempt it, its diagnoses, the paper's result table,
the threshold log, the docs — must name a declared claim: a renamed or removed claim cannot leave a stale reference
anywhere. Every counted claim a rival does not target carries the paper's reason for the exemption.

The checks of each paper's own code, rivals and results table are in the common battery over the registry
(tests/test_common_checks.py); here are the project-wide places: the threshold log and the docs, with the claim-id
prefixes of every registered paper."""

import re
from pathlib import Path

from featlab.runs import registry
from featlab.runs.registry import list_experiments, paper_results, papers
from featlab.runs.threshold_log import load_log

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = "|".join(re.escape(p) for p in sorted({registry._PAPERS[k][1] for k in papers()}))
ID = r"(?:" + PREFIXES + r")\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*"


def declared() -> dict[str, set[str]]:
    return {e.id: {c.id for c in e.claims} for e in list_experiments()}


def all_ids() -> set[str]:
    return set().union(*declared().values())


def test_the_paper_tables_and_the_threshold_log_name_declared_claims():
    ids = all_ids()
    for key in papers():
        for r in paper_results(key):
            assert set(r.claims) <= ids, f"{key} {r.ref}: unknown claims {set(r.claims) - ids}"
    by_exp = declared()
    retired = retired_ids()
    for key in load_log(ROOT / "docs" / "thresholds.json"):
        exp_id, claim_id = key.split("/", 1)
        assert key in retired or claim_id in by_exp.get(exp_id, set()), f"docs/thresholds.json: {key} is " \
            f"neither declared nor retired (a last entry with new: null)"


def retired_ids() -> set[str]:
    """'experiment/claim' keys whose log ends in a retirement (the docs may name a former claim as such)."""
    return {k for k, e in load_log(ROOT / "docs" / "thresholds.json").items() if e["history"][-1]["new"] is None}


def test_the_docs_name_only_declared_claims():
    ids = all_ids() | {k.split("/", 1)[1] for k in retired_ids()}
    pages = [p for p in (ROOT / "docs").rglob("*.md") if p.name != "claims-changelog.md"] + [ROOT / "README.md"]
    stale = []
    for page in pages:
        for ref in set(re.findall(r"`(" + ID + r")`", page.read_text(encoding="utf-8"))):
            if ref not in ids and not any(i.startswith(ref + ".") for i in ids):
                stale.append(f"{page.relative_to(ROOT)}: {ref}")
    assert stale == [], "the docs name claims no experiment declares:\n" + "\n".join(sorted(stale))


def test_the_docs_check_knows_every_papers_prefix():
    """The docs' pattern is built from the registry: each paper's prefix is in it (a fourth paper's too)."""
    for key in papers():
        some = next(iter(sorted(c.id for e in list_experiments(key) for c in e.claims)))
        assert re.fullmatch(ID, some), (key, some)
    assert not re.fullmatch(ID, "zz.not_a_paper")
