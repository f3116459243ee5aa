"""Committed results: ``featlab report OUT --publish docs/results --preset paper`` writes, from the latest run of each
experiment at one preset, what a reader of the repository sees without running anything:

* ``README.md``: how many claims hold, fail, are inconclusive or unverified, which experiments were never run here
  (and why), one verdict table (paper value, measured, 95 % interval, threshold, verdict, a ✗'s diagnosis) and a
  gallery of the figures;
* ``verdicts.json``: the same table, machine-readable (the test suite checks it against the declared claims, so a
  new claim or a moved threshold makes it stale);
* ``figures/``: each run's figures as small PNGs; ``runs/<experiment>/``: its config (YAML) and provenance.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from ..runs.context import BESIDE_PAPER
from ..runs.index import find_runs
from ..runs.record import RunRecord, bucket, counts_text, is_check, is_uncontrolled, role_text, status
from ..runs.registry import Experiment, list_experiments
from ..text import fmt_value
from ..utils import atomic_write, json_dumps, json_loads
from .headline import headline_lines
from .scorecard import scorecards
from .scorecard_sources import published
from .scorecard_text import card_markdown
from .summary import provenance
from .tables import diagnosis_of, interval_text, matrix_rows, verdict_text

FIGURE_WIDTH = 720  # pixels: small enough to commit, large enough to read
VERDICTS = "verdicts.json"


def _latest(runs, exp: Experiment, preset: str) -> RunRecord | None:
    return next((r for r in runs.of(exp.id) if r.ok and r.summary.get("preset") == preset), None)


def _small_png(src: Path, dest: Path) -> None:
    """A copy of ``src`` at most FIGURE_WIDTH wide (Pillow, which matplotlib already requires)."""
    from PIL import Image

    with Image.open(src) as opened:
        img = opened.convert("RGB")
        if img.width > FIGURE_WIDTH:
            img = img.resize((FIGURE_WIDTH, round(img.height * FIGURE_WIDTH / img.width)), Image.Resampling.LANCZOS)
        # flat plot colours: a palette suffices; the format named, as ``dest`` is a temporary name
        img.quantize(colors=128).save(dest, format="PNG", optimize=True)


def _row(exp: Experiment, preset: str, c: dict[str, Any]) -> dict[str, Any]:
    found = diagnosis_of(exp.id, c["id"], preset) if status(c) in ("failed", "inconclusive") else None
    kind = ("measurement" if c.get("kind") == "measurement" else "check" if is_check(c)
            else "uncontrolled" if is_uncontrolled(c) else "claim")
    return {"experiment": exp.id, "preset": preset, "claim": c["id"], "kind": kind, "role": role_text(c),
            "bucket": bucket(c), "source": c.get("source"),
            "rivals": c.get("rivals") or [], "statement": c.get("statement"),
            "paper_value": c.get("paper_value"), "measured": c.get("measured"), "interval": c.get("interval"),
            "n": c.get("n"), "unit": c.get("unit"), "threshold": c.get("threshold"), "status": status(c),
            "interval_text": interval_text(c), "verdict": verdict_text(c),
            "diagnosis": found.to_dict() if found else None}


def _esc(x: object) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def publish(out: str | Path, dest: str | Path, preset: str = "paper",
            not_run: Callable[[Experiment], str] | None = None) -> dict[str, Any]:
    """Write the results folder ``dest`` from the runs under ``out`` at ``preset``; returns the verdict counts.
    ``not_run(exp)``: why an experiment without a run was not run here (e.g. its estimated time, or the GPU and
    data it needs). Every file is written whole or not at all; an OS error (a full disk, a read-only folder) is
    raised naming the file (the CLI says it in one line)."""
    runs, dest = find_runs(out), Path(dest)
    (dest / "figures").mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    missing: list[tuple[str, str]] = []
    gallery: list[tuple[str, str]] = []
    matrices: list[tuple[str, Any]] = []
    beside: list[tuple[str, str]] = []  # (experiment, a note with the paper's numbers beside the run's)
    latest = {e.id: {p: r for p in e.presets if (r := _latest(runs, e, p)) is not None} for e in list_experiments()}
    for exp in list_experiments():
        if preset not in exp.presets:
            continue
        rec = latest[exp.id].get(preset)
        if rec is None:
            missing.append((exp.id, not_run(exp) if not_run else "no run at this preset under the runs folder"))
            continue
        rows += [_row(exp, preset, c) for c in rec.claims]
        beside += [(exp.id, n) for n in rec.summary.get("notes", []) if n.startswith(BESIDE_PAPER)]
        if (matrix := matrix_rows(rec)) is not None:
            matrices.append((exp.id, matrix))
        folder = dest / "runs" / exp.id
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / "config.yaml", yaml.safe_dump(rec.config, sort_keys=False))
        atomic_write(folder / "metrics.json", json_dumps(rec.summary.get("metrics", {}), indent=1,
                                                         default=str) + "\n")  # e.g. the attack statistics
        atomic_write(folder / "provenance.json", json_dumps(
            _portable({**provenance(rec), "run folder": rec.dir.name, "claims": counts_text(rec.claims)}), indent=1)
            + "\n")
        for fig in rec.figures:
            name = f"{exp.id}__{fig.stem}.png"
            atomic_write(dest / "figures" / name, partial(_small_png, fig))  # whole or absent
            gallery.append((exp.id, name))
    counts = {s: sum(r["bucket"] == s for r in rows) for s in ("held", "failed", "inconclusive", "unverified")}
    counts["never run"] = len(missing)
    headline = headline_lines(latest)
    atomic_write(dest / VERDICTS, json_dumps({"preset": preset, "counts": counts, "headline": headline, "rows": rows,
                                              "not_run": dict(missing)}, indent=1, default=str) + "\n")
    # the scorecards open the results folder's page (every verdicts.json under it); a preset published into a
    # sub-folder of it (docs/results/theory) refreshes them there instead of opening its own page with a part
    top = dest.parent if (dest.parent / VERDICTS).is_file() else None
    cards = scorecards(*published(dest)) if top is None else ()
    atomic_write(dest / "README.md", _page(preset, counts, rows, missing, gallery,
                                           (dest / STABILITY / "README.md").is_file(), headline, matrices,
                                           beside, _shown(dest), cards))
    if top is not None:
        sync_scorecards(top)
    return counts


_README_BLOCK = re.compile(r"(<!-- results: (?P<dir>[^ ]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)
GALLERY = 4  # figures on the README's first screen


def _gallery(figs: list[Path]) -> list[Path]:
    """Up to GALLERY figures, one per experiment, taking the papers (the experiment ids' prefixes) in turn."""
    first: dict[str, Path] = {}
    for f in figs:
        first.setdefault(f.stem.split("__")[0], f)
    by_paper: dict[str, list[Path]] = {}
    for exp, f in first.items():
        by_paper.setdefault(exp.split("-")[0], []).append(f)
    out: list[Path] = []
    while len(out) < GALLERY and any(by_paper.values()):
        for group in by_paper.values():
            if group and len(out) < GALLERY:
                out.append(group.pop(0))
    return out


def sync_readme(readme: str | Path) -> bool:
    """Rewrite the README's ``<!-- results: DIR -->`` block from DIR/verdicts.json (DIR relative to the README):
    the counts, each ✗ with its diagnosis class, and the first figures. False when the README has no block."""
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    m = _README_BLOCK.search(text)
    if m is None:
        return False
    rel = m["dir"]
    data = json_loads((readme.parent / rel / VERDICTS).read_text(encoding="utf-8"))
    sync_scorecards(readme.parent / rel)  # the results page opens with the same scorecards
    cards = scorecards(*published(readme.parent / rel))
    bad = [r for r in data["rows"] if bucket(r) == "failed"]
    lines = [f"**Which numbered results reproduce** (`featlab scorecard`; from the run records committed in "
             f"[{rel}]({rel}/README.md), paper and theory tiers counted, each on its own; demo and quick presets "
             f"never):", "", *(f"- {c.line()}" for c in cards), "",
             "Mechanism claims that failed at the papers' own settings (the diagnosis of each in brackets): "
             + (", ".join(f"`{r['claim']}` ({r['diagnosis']['kind'] if r['diagnosis'] else 'no diagnosis yet'})"
                          for r in bad) or "none") + "."]
    figs = _gallery(sorted((readme.parent / rel / "figures").glob("*.png")))
    body = "\n".join(lines) + "\n\n" + " ".join(
        f'<img src="{rel}/figures/{f.name}" width="24%" alt="{f.stem}">' for f in figs) + "\n"
    atomic_write(readme, text[:m.start()] + m.group(1) + body + m.group(4) + text[m.end():])
    return True


_CARDS_BLOCK = re.compile(r"<!-- scorecards -->\n.*?<!-- /scorecards -->\n", re.S)


def _scorecards_block(cards) -> list[str]:
    """The scorecards section of a results page, between markers so :func:`sync_scorecards` can refresh it."""
    out = ["<!-- scorecards -->", "## Scorecards", "", "Every numbered result of each paper (`featlab scorecard` "
           "prints it), from the verdicts published in this folder and the folders in it: counted at the paper or "
           "theory tier (each on its own), judged but not counted (with why), or not tested (with why). Demo and "
           "quick presets are never counted.", ""]
    for card in cards:
        out += card_markdown(card)
    return out + ["<!-- /scorecards -->", ""]


def sync_scorecards(dest: str | Path) -> bool:
    """Rewrite the scorecards section of ``dest``/README.md from every verdicts.json under ``dest`` (inserted after
    the page's first paragraphs where it has none). False when ``dest`` has no README.md."""
    page = Path(dest) / "README.md"
    if not page.is_file():
        return False
    text = page.read_text(encoding="utf-8")
    block = "\n".join(_scorecards_block(scorecards(*published(dest)))) + "\n"
    if _CARDS_BLOCK.search(text):
        text = _CARDS_BLOCK.sub(lambda _: block, text, count=1)
    else:
        at = text.index("\n\n", text.index("*Generated by")) + 2 if "*Generated by" in text else 0
        text = text[:at] + block + "\n" + text[at:]
    atomic_write(page, text)
    return True


def _matrix(exp_id: str, matrix) -> list[str]:
    header, body = matrix
    return ([f"### `{exp_id}`", "", "| " + " | ".join(map(_esc, header)) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(map(_esc, r)) + " |" for r in body] + [""])


def _portable(prov: dict[str, Any]) -> dict[str, Any]:
    """The provenance as committed: the command's folders are the machine's own, so ``--out DIR`` reads ``--out OUT``
    and a ``key=/a/path`` override ``key=PATH``."""
    cmd = prov.get("command")
    if isinstance(cmd, str):
        cmd = re.sub(r"(--out[ =])\S+", r"\1OUT", cmd)
        prov = {**prov, "command": re.sub(r"(\w=)(/|~)\S*", r"\1PATH", cmd)}
    return prov


def _shown(dest: Path) -> str:
    """The results folder as the page names it: from its ``docs`` folder on (never a path of this machine)."""
    parts = dest.resolve().parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("docs"):]) if "docs" in parts else dest.name


def _page(preset, counts, rows, missing, gallery, stability: bool = False, headline=(), matrices=(),
          beside=(), where: str = "docs/results", cards=()) -> str:
    n = sum(v for k, v in counts.items() if k != "never run")
    lines = [f"# Results at the `{preset}` preset", "",
             f"*Generated by `featlab report OUT --publish {where} --preset {preset}` from the run records; do "
             "not edit by hand.*", ""]
    if cards:
        lines += [*_scorecards_block(cards), f"## This preset (`{preset}`)", ""]
    lines += [
             (f"**{counts['held']} of {n} mechanism claims held, {counts['failed']} failed, {counts['inconclusive']} "
              f"inconclusive, {counts['unverified']} unverified**" if n else "**No mechanism claim counted at this "
              "preset** (every claim judged here is listed below, with why it is not counted)")
             + f"; {len(missing)} experiment(s) never run here at "
             f"this preset. A mechanism claim fails for every rival net (trained as well, by another mechanism) "
             "that must fail it; premises (they also hold for a rival), claims whose rivals were not all run "
             "(unsettled) and checks (identities, properties of the generator) are listed but not counted.", ""]
    if headline:
        lines += ["Per preset kind (the latest run of each experiment under the runs folder; quick presets are never "
                  "counted, each demo preset on its own line, never with the papers'):", "",
                  *(f"- {h}" for h in headline), ""]
    if stability:
        lines += ["Whether each verdict survives the values the papers never give (initialisation, step sizes, "
                  "attack budgets, seeds, test points): [stability/](stability/README.md).", ""]
    if missing:
        lines += ["## Not run here", ""] + [f"- `{e}`: {_esc(why)}" for e, why in missing] + [""]
    lines += ["## Verdicts", "", "| experiment | claim | paper | measured | 95% interval | threshold | verdict |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        tag = {"check": " (check)", "measurement": " (measurement)",
               "uncontrolled": f" ({r.get('role') or 'not counted'})"}.get(r["kind"], "")
        verdict = r["verdict"] + (f" — diagnosis: {r['diagnosis']['kind']}: {r['diagnosis']['why']} (evidence: "
                                  f"{r['diagnosis']['evidence']})" if r["diagnosis"] else "")
        lines.append(f"| `{r['experiment']}` | `{r['claim']}`{tag} | {_esc(fmt_value(r['paper_value']))} | "
                     f"{_esc(fmt_value(r['measured']))} | {_esc(r['interval_text'])} | {_esc(r['threshold'])} | "
                     f"{_esc(verdict)} |")
    if matrices:
        lines += ["", "## Discrimination matrices", "",
                  "Each counted claim on the paper's net and on every rival net (trained as well by another mechanism; "
                  "first row: the rival net's training metrics). exempt: the paper "
                  "does not say this rival fails it (`featlab claims EXP` gives the reason).", ""]
        for exp_id, m in matrices:
            lines += _matrix(exp_id, m)
    if beside:
        lines += ["", "## Beside the paper", "", "The paper's own numbers next to this run's, as each experiment "
                  "prints them (`featlab show RUN`).", ""]
        for exp_id, note in beside:
            title, _, body = note.removeprefix(BESIDE_PAPER + ": ").partition("\n")
            lines += [f"### `{exp_id}`: {_esc(title)}", "", "```", body, "```", ""]
    if gallery:
        lines += ["", "## Figures", ""] + [f"![{e}: {name}](figures/{name})" for e, name in gallery]
    return "\n".join(lines) + "\n"


STABILITY = "stability"  # the sub-folder of the results folder holding the stability studies


def publish_stability(out: str | Path, dest: str | Path) -> list[str]:
    """Copy each experiment's newest stability study (``featlab stability``'s Markdown page under
    ``OUT/<experiment>/stability/``) to ``dest/stability/<experiment>.md`` with an index page; returns the
    experiments published. The pages name their own runs; nothing is recomputed."""
    out, folder = Path(out), Path(dest) / STABILITY
    found = {}
    for exp in list_experiments():
        pages = sorted((out / exp.id / STABILITY).glob("*.md"), key=lambda p: p.stat().st_mtime)
        if pages:
            found[exp.id] = pages[-1].read_text(encoding="utf-8")
    if not found:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Do the verdicts survive the paper-silent choices?", "",
             "*Generated by `featlab report OUT --publish-stability docs/results` from the studies `featlab stability "
             "EXP` wrote under OUT; do not edit by hand.* Each study varies every paper-silent config field over the "
             "range its field declares, one at a time, and the seeds, the noise draw and the test points; per claim "
             "it says whether the verdict is stable over all tried values or where it flips.", ""]
    for exp_id, text in found.items():
        atomic_write(folder / f"{exp_id}.md", text)
        head = next((ln for ln in text.splitlines()[1:] if ln.strip()), "")
        flips = sum("stable over all tried values" not in ln for ln in text.split("## Runs")[0].splitlines()
                    if ln.startswith("| `"))
        lines.append(f"- [{exp_id}]({exp_id}.md): {_esc(head)} — {flips} verdict(s) not stable over every value")
    atomic_write(folder / "README.md", "\n".join(lines) + "\n")
    return list(found)


def stale(dest: str | Path) -> list[str]:
    """Why the published table no longer matches the declared claims ([] when it does): an undeclared claim id, or a
    threshold that has moved since the run (rerun and publish again)."""
    path = Path(dest) / VERDICTS
    if not path.is_file():
        return [f"{path} is missing"]
    data = json_loads(path.read_text(encoding="utf-8"))
    exps = {e.id: e for e in list_experiments()}
    declared = {e.id: {c.id: c.threshold.text() for c in e.claims} for e in exps.values()}
    out = _preset_problems(Path(dest), data, exps)
    for r in data["rows"]:
        known = declared.get(r["experiment"], {})
        if r["claim"] not in known:
            out.append(f"{r['experiment']}: {r['claim']} is no longer declared")
        elif known[r["claim"]] not in str(r["threshold"]):
            out.append(f"{r['experiment']}: {r['claim']}'s threshold moved to {known[r['claim']]}")
    return out


def _preset_problems(dest: Path, data: dict[str, Any], exps: dict[str, Experiment]) -> list[str]:
    """Rows of a preset the experiment no longer has (renamed to what it is), or whose published config no longer
    carries the preset's values."""
    out = []
    for exp_id in dict.fromkeys(r["experiment"] for r in data["rows"]):
        preset = next(r.get("preset", data["preset"]) for r in data["rows"] if r["experiment"] == exp_id)
        exp = exps.get(exp_id)
        if exp is None or preset not in exp.presets:
            out.append(f"{exp_id}: published at preset {preset!r}, which it no longer has")
            continue
        cfg_file = dest / "runs" / exp_id / "config.yaml"
        cfg = yaml.safe_load(cfg_file.read_text(encoding="utf-8")) if cfg_file.is_file() else {}
        moved = [k for k, v in exp.presets[preset].items() if k in (cfg or {}) and cfg[k] != v]
        if moved:
            out.append(f"{exp_id}: preset {preset!r} now sets {', '.join(moved)} differently from the published run")
    return out
