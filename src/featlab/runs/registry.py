"""The experiment registry: ``featlab list``, ``get_experiment(id)`` (cf. timm's ``list_models``).

A leaf of the core: it imports no paper. Papers register into it (``register_paper``, ``@experiment``) when
their module is imported, and the registry imports them on first use through the entry-point group
``featlab.experiments`` — featlab's own papers are declared there too, so outside packages add experiments the
same way, without a fork::

    [project.entry-points."featlab.experiments"]
    my-paper = "my_package.my_paper"

When featlab runs from a source tree that was never installed (no entry points), its own catalogue
``featlab.papers`` is imported by name instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import entry_points
from typing import Any

from ..config import ExperimentConfig, build_config
from ..data.images import SPECS, locate, where_to_get
from ..errors import ConfigError, UnknownExperimentError
from .claims import Assumption, Claim, Control, PaperResult, fill_fields

ENTRY_POINT_GROUP = "featlab.experiments"
BUILTIN_CATALOGUE = "featlab.papers"
# What a preset is, by its name: ``quick`` the CPU smoke-level default; ``paper`` the paper's own settings, only where
# the paper ran the experiment, each value that differs from the config's default citing its source (``cites``);
# ``theory`` the theorem's assumptions as far as this machine allows; any other name a demo preset, named for what
# it shows (``demo``, ``cpu-long``, ``full-grid``, ...): run and shown, never the paper's settings.
PRESET_KINDS = ("quick", "paper", "theory", "demo")
NO_PAPER_PRESET = "no paper preset: the paper did not run it"


@dataclass
class Experiment:
    id: str
    paper: str  # a registered paper key
    reference: str  # "Fig 2a/2b, Fig 3 left"
    summary: str  # one line: what it shows
    config: type[ExperimentConfig]
    fn: Callable[..., None]
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    controls: list[Control] = field(default_factory=list)  # settings where the paper's statements should fail
    tiny: dict[str, Any] | None = None  # overrides of the quick preset that run in about a second (the device test)
    assumptions: list[Assumption] = field(default_factory=list)  # the theorem's premises, met or broken per preset
    cites: dict[str, str] = field(default_factory=dict)  # paper-preset field → where in the paper its value is from

    def preset_kind(self, name: str) -> str:
        """"quick", "paper" or "theory" for the presets of those names; "demo" for any other (PRESET_KINDS)."""
        self.preset(name)  # an unknown preset is refused as everywhere
        return name if name in PRESET_KINDS[:3] else "demo"

    def preset_kinds(self) -> dict[str, str]:
        return {p: self.preset_kind(p) for p in self.presets}

    def regime(self, preset: str) -> list[dict[str, Any]]:
        """The assumptions as met or broken by ``preset`` (only those that say): for run records and pages."""
        return [dict(ref=a.ref, text=a.text, met=a.met[preset], why=a.why) for a in self.assumptions
                if preset in a.met]

    def preset(self, name: str) -> dict[str, Any]:
        if name not in self.presets:
            why = f" ({NO_PAPER_PRESET})" if name == "paper" else ""
            raise UnknownExperimentError(
                f"{self.id} has no preset {name!r}{why}; choose one of: {', '.join(self.presets)}")
        return dict(self.presets[name])

    def listed(self, preset: str = "quick") -> Experiment:
        """A copy whose claims' ``{field}`` statements are filled from ``preset``'s config (the defaults where it has
        no such preset), as a run fills them: what ``featlab claims`` and docs/claims.md show without a run."""
        if self.is_smoke(preset) and "paper" in self.presets:  # a pipeline smoke test (digits for CIFAR-10): the
            preset = "paper"  # claims speak of the paper's
        cfg: dict[str, Any] = {}
        for layer in (self.presets.get(preset, {}), {}):
            try:
                cfg = build_config(self.config, self.id, layer).to_dict()
                break
            except ConfigError:  # a preset that needs more than the defaults: try the defaults alone
                continue
        return replace(self, claims=[replace(c, statement=fill_fields(c.statement, cfg)) for c in self.claims])

    def is_smoke(self, preset: str = "quick") -> bool:
        """Whether ``preset`` is a pipeline smoke test (the CPU preset of a real-data experiment): it shows that the
        code runs, not a result, so ``reproduce`` skips it and the report says why."""
        return bool(self.presets.get(preset, {}).get("smoke"))

    def smoke_reason(self, preset: str = "quick") -> str:
        """Why ``reproduce`` skips a smoke preset, and the command of each preset that gives a result: the paper's
        (data and a GPU) and a CPU preset on the real data where there is one (e.g. cpu-real on FashionMNIST)."""
        real = [p for p in self.presets if p != preset and not self.is_smoke(p)]
        runs = " or ".join(f"featlab run {self.id} --preset {p}" for p in real)
        smoke_data = self.presets.get(preset, {}).get("dataset")
        on = " on 8×8 digits" if smoke_data == "digits" else f" on {smoke_data}" if smoke_data else ""
        found = self._real_data_found(real)
        if found:  # the data are here (the one resolver says where): only the preset stands between
            gpu = "; the paper preset needs a GPU" if "paper" in real else ""
            return f"not run here: its {preset} preset is a pipeline smoke test{on}; {found}{gpu}; {runs}"
        needs = "data and a GPU" if real == ["paper"] else "its dataset" + (", and a GPU for the paper preset"
                                                                           if "paper" in real else "")
        return f"not run here: needs {needs}; its {preset} preset is a pipeline smoke test{on}; {runs}"

    def stand_in(self, preset: str = "quick") -> str:
        """Why ``featlab run ID`` refuses ``preset`` when it was not asked for by name, or '': a smoke preset that
        trains on another dataset (8×8 digits) than the one its experiment is named after (mm-spurious-fmnist) must
        never file a digits result under the FashionMNIST experiment by default. The text says where the real data
        are (or how to get them) and the explicit way to run the smoke test anyway."""
        if not self.is_smoke(preset):
            return ""
        real = [p for p in self.presets if p != preset and not self.is_smoke(p)]
        named = next((self.presets[p]["dataset"] for p in real if self.presets[p].get("dataset") in SPECS), None)
        smoke = self.presets[preset].get("dataset")
        if named is None or smoke == named:
            return ""
        smoke = "8×8 digits" if smoke == "digits" else smoke
        found = self._real_data_found(real)
        where = found or f"{named} is not here ({where_to_get(SPECS[named], 'data')})"
        runs = " or ".join(f"--preset {p}" for p in real)
        return (f"{self.id}'s default preset {preset!r} is a pipeline smoke test on {smoke}, not {named}: {where}; "
                f"run {runs} for {named}, or pass --preset {preset} to run the smoke test on {smoke} anyway")

    def _real_data_found(self, presets: list[str]) -> str:
        """'fashionmnist is found in /usr/share/datasets/fashion-mnist' for the first of ``presets`` that reads a
        dataset file set present here (featlab.data.images.locate), else ''."""
        for p in presets:
            values = self.presets.get(p, {})
            name = values.get("dataset")
            if name and name in SPECS:
                loc = locate(name, values.get("data_root") or "data")
                if loc.found:
                    return f"{name} is found in {loc.found}"
        return ""

    def control(self, name: str | Control | None = None) -> Control:
        """The control called ``name`` (default: the first declared); a Control passes through (a variant of a
        declared one, e.g. the device check's cheaper sizes)."""
        if isinstance(name, Control):
            return name
        if not self.controls:
            raise ConfigError(f"{self.id} declares no control setting; run it without --control")
        for c in self.controls:
            if name is None or c.name == name:
                return c
        raise ConfigError(f"{self.id} has no control {name!r}; choose one of: "
                                     f"{', '.join(c.name for c in self.controls)}")


_PAPERS: dict[str, tuple[str, str]] = {}  # key -> (title, claim-id prefix)
_RESULTS: dict[str, list[PaperResult]] = {}  # key -> the paper's numbered results and what checks each
_REGISTRY: dict[str, Experiment] = {}
_loaded = False


def register_paper(key: str, title: str, prefix: str, results: Sequence[PaperResult] = ()) -> None:
    """Declare a paper: its key (``feature-averaging``), title, the prefix of its claim ids (``fa``) and its
    numbered results with the claims that check each (the coverage table of docs/claims.md)."""
    _PAPERS[key] = (title, prefix)
    _RESULTS[key] = list(results)


def paper_results(key: str) -> list[PaperResult]:
    _load_all()
    return list(_RESULTS.get(key, []))


def experiment(id: str, *, paper: str, reference: str, summary: str, config: type[ExperimentConfig],
               presets: dict[str, dict[str, Any]], claims: Sequence[Claim] = (), controls: Sequence[Control] = (),
               tiny: dict[str, Any] | None = None, assumptions: Sequence[Assumption] = (),
               cites: dict[str, str] | None = None):
    """Decorator registering ``fn(ctx)`` as an experiment. Presets must include ``quick``; ``paper`` only where the
    paper ran the experiment, ``theory`` where the theorem's assumptions can be met, any other name is a demo
    preset (``Experiment.preset_kind``).

    ``cites``: for the ``paper`` preset, each config field whose value differs from the config's default → where
    the paper gives it ("§6.1: d = 3072", "App. E.1, Fig 5", a line of the authors' code); a value the paper does
    not give is the config's default (its description says so), never a paper-preset value. tests/test_presets.py
    checks every such field is cited (:func:`citation_problems`).

    ``claims`` declares every claim the experiment judges; their ids must start with the paper's prefix.
    ``controls``: settings where the paper's statements should be false (an untrained net, the other method,
    shuffled labels, the null setting), each naming the claims it must defeat; ``featlab run ID --control``
    runs them, and no targeted claim may hold there.
    ``tiny``: overrides of the ``quick`` preset that run the experiment end to end in about a second;
    featlab's common checks run each registered experiment at it (tests/test_common_checks.py), so every
    experiment declares one.
    ``assumptions``: the premises of the theorems its claims test, and which presets meet each (a ``theory`` preset
    meets them as far as the CPU allows; ``quick`` may leave some on purpose, and says so).
    """
    if paper not in _PAPERS:
        raise ValueError(f"experiment {id!r}: paper {paper!r} is not registered; call register_paper first")
    if "quick" not in presets:
        raise ValueError(f"experiment {id!r}: presets must include 'quick'; got {list(presets)}")
    bad_cites = sorted(set(cites or {}) - set(config.model_fields))
    if bad_cites:
        raise ValueError(f"experiment {id!r}: cites names fields its config does not have: {bad_cites}")
    if cites and "paper" not in presets:
        raise ValueError(f"experiment {id!r}: cites are for the paper preset, and it has none")
    prefix = _PAPERS[paper][1] + "."
    bad = [c.id for c in claims if not c.id.startswith(prefix)]
    if bad:
        raise ValueError(f"experiment {id!r}: claim ids must start with {prefix!r}; got {bad}")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"experiment {id!r}: duplicate claim ids in {ids}")
    names = [c.name for c in controls]
    if len(set(names)) != len(names):
        raise ValueError(f"experiment {id!r}: duplicate control names in {names}")
    unknown = [t for c in controls for t in c.claims if t not in ids]
    if unknown:
        raise ValueError(f"experiment {id!r}: controls target undeclared claims {unknown}")
    odd = [f"{a.ref}: {p}" for a in assumptions for p in a.met if p not in presets]
    if odd:
        raise ValueError(f"experiment {id!r}: assumptions name presets it does not have: {odd}")
    stray = sorted(set(tiny or {}) - set(config.model_fields))
    if stray:
        raise ValueError(f"experiment {id!r}: tiny sets fields its config does not have: {stray}")

    def deco(fn):
        _REGISTRY[id] = Experiment(id, paper, reference, summary, config, fn, presets, list(claims), list(controls),
                                   dict(tiny) if tiny is not None else None, list(assumptions), dict(cites or {}))
        return fn

    return deco


def uncited(exp: Experiment) -> list[str]:
    """The fields of ``exp``'s paper preset whose value differs from the config's default and that cite no source
    ([] without a paper preset). Values are compared as the config validates them (1e4 == 10000)."""
    if "paper" not in exp.presets:
        return []
    values = build_config(exp.config, exp.id, exp.presets["paper"])
    out = []
    for name in exp.presets["paper"]:
        f = exp.config.model_fields[name]
        default = None if f.is_required() else f.get_default(call_default_factory=True, validated_data={})
        if (f.is_required() or getattr(values, name) != default) and not exp.cites.get(name, "").strip():
            out.append(name)
    return out


def citation_problems(exp: Experiment) -> list[str]:
    """What is wrong with ``exp``'s citations, one line each ([] when nothing): a paper-preset field that differs
    from the default without a citation, or a citation of a field the paper preset does not set."""
    out = [f"{exp.id}: paper preset sets {name} = {exp.presets['paper'][name]!r} (default differs) and cites no "
           f"source" for name in uncited(exp)]
    stray = sorted(set(exp.cites) - set(exp.presets.get("paper", {})))
    out += [f"{exp.id}: cites {name!r}, which its paper preset does not set" for name in stray]
    return out


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    found = entry_points(group=ENTRY_POINT_GROUP)
    for ep in found:
        importlib.import_module(ep.value)
    if not any(ep.value.startswith(BUILTIN_CATALOGUE) for ep in found):
        importlib.import_module(BUILTIN_CATALOGUE)


def papers() -> dict[str, str]:
    """Registered papers: key → title, in registration order."""
    _load_all()
    return {k: t for k, (t, _) in _PAPERS.items()}


def list_experiments(paper: str | None = None) -> list[Experiment]:
    _load_all()
    order = list(_PAPERS)
    exps = sorted(_REGISTRY.values(), key=lambda e: order.index(e.paper))  # stable: registration order per paper
    return [e for e in exps if paper is None or e.paper == paper]


def get_experiment(id: str) -> Experiment:
    _load_all()
    if id not in _REGISTRY:
        import difflib

        close = difflib.get_close_matches(id, list(_REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownExperimentError(
            f"unknown experiment {id!r}{hint}; run 'featlab list' to see: {', '.join(_REGISTRY)}")
    return _REGISTRY[id]
