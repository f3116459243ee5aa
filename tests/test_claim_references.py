"""A claim is declared once (its ``Claim`` in the registry) and every other place that names it by id — the judge
calls in the experiments' code, the rivals that must fail it or exempt it, its diagnoses, the paper's result table,
the threshold log, the docs — must name a declared claim: a renamed or removed claim cannot leave a stale reference
anywhere. Every counted claim a rival does not target carries the paper's reason for the exemption."""

import re
from pathlib import Path

import pytest

from featlab.runs.registry import list_experiments, paper_results, papers
from featlab.runs.threshold_log import load_log

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "featlab" / "papers"
ID = r"(?:fa|mm|rfa)\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*"
LITERAL = re.compile(r"""(?<![\w{])f?["'](""" + ID + r"""|(?:fa|mm|rfa)\.[A-Za-z0-9_.{}]*\{[^"']*)["']""")


def declared() -> dict[str, set[str]]:
    return {e.id: {c.id for c in e.claims} for e in list_experiments()}


def all_ids() -> set[str]:
    return set().union(*declared().values())


def template(text: str) -> re.Pattern:
    """An f-string id ('mm.{m}_below_erm') as the pattern of the ids it can make."""
    parts = re.split(r"\{[^}]*\}", text)
    return re.compile("[A-Za-z0-9_]+".join(map(re.escape, parts)) + "$")


def references_in_code() -> list[tuple[str, str]]:
    """Every claim id written in the papers' code (quoted, or an f-string template), with its file."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for m in LITERAL.finditer(path.read_text(encoding="utf-8")):
            found.append((path.relative_to(ROOT).as_posix(), m.group(1)))
    return found


def test_every_claim_id_in_the_code_names_a_declared_claim():
    ids = all_ids()
    stale = []
    for where, ref in references_in_code():
        ok = any(template(ref).match(i) for i in ids) if "{" in ref else ref in ids
        if not ok and not any(i.startswith(ref + ".") for i in ids):  # a prefix such as "fa.ablation_n"
            stale.append(f"{where}: {ref}")
    assert stale == [], "claim ids in the code that no experiment declares:\n" + "\n".join(stale)


def test_every_declared_claim_is_judged_somewhere_in_the_code():
    refs = [r for _, r in references_in_code()]
    literal = {r for r in refs if "{" not in r}
    patterns = [template(r) for r in refs if "{" in r]
    unjudged = sorted(i for i in all_ids() if i not in literal and not any(p.match(i) for p in patterns)
                      and not any(i.startswith(r + ".") for r in literal))
    assert unjudged == [], f"declared claims whose id the code never writes: {unjudged}"


@pytest.mark.parametrize("exp", list_experiments(), ids=lambda e: e.id)
def test_rivals_name_declared_claims_and_give_a_reason_for_every_exemption(exp):
    ids = {c.id for c in exp.claims}
    counted = [c.id for c in exp.claims if c.kind == "claim"]
    for ctl in exp.controls:
        assert set(ctl.claims) <= ids, f"{exp.id} control {ctl.name}: unknown claims {set(ctl.claims) - ids}"
        assert set(ctl.exempt) <= ids, f"{exp.id} control {ctl.name}: exempts unknown {set(ctl.exempt) - ids}"
        if ctl.kind != "mechanism":
            continue
        targets = set(ctl.targets(exp.claims))
        assert not targets & set(ctl.exempt), f"{exp.id} rival {ctl.name} both targets and exempts " \
            f"{sorted(targets & set(ctl.exempt))}"
        silent = [i for i in counted if i not in targets and not ctl.exempt.get(i, "").strip()]
        assert silent == [], f"{exp.id} rival {ctl.name}: no reason written for exempting {silent}"


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


def test_the_reference_check_catches_a_stale_id(tmp_path):
    """The code check can fail: a quoted id nobody declares is found, an f-string template that makes none too."""
    ids = all_ids()
    assert LITERAL.findall('ctx.claim("fa.binary_clean_renamed", 1.0)') == ["fa.binary_clean_renamed"]
    assert "fa.binary_clean_renamed" not in ids
    assert not any(template("mm.{m}_above_everything").match(i) for i in ids)
    assert any(template("mm.{m}_below_erm").match(i) for i in ids)
