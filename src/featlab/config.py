"""Typed, validated experiment configs, with Hydra-style ``key=value`` overrides and YAML in and out.

Every experiment declares one :class:`ExperimentConfig` subclass. Its fields are the experiment's knobs, the
paper's value is the default or a preset, and each open decision of the paper is a field whose description says
what was decided. Errors read like scikit-learn's: ``the 'k' field of fa-synthetic must be >= 2; got 1``.
"""

from __future__ import annotations

import hashlib
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from . import yaml_input
from .errors import ConfigError
from .utils import resolve_device

INT64_MAX = 2**63 - 1  # what parquet, JSON readers and torch hold exactly
BIG_INT_MAX = 10**30  # fields in BIG_INTS (a dimension that only scales a simulation) may go beyond int64
STEP_FIELDS = ("T", "steps", "epochs")  # plus every field ending in "_steps": iteration counts of the run


REPLICA_BYTES = 32 * 1024  # per replica beyond its data (generators, per-replica objects), measured on fa-synthetic


@dataclass
class Need:
    """One term of what a run needs, estimated before anything is allocated: ``bytes`` held at once, ``flops`` of
    work and ``steps`` (iterations, each paying a fixed launch cost), ``what`` in words, and the ``fields`` a user
    lowers to shrink it (named in a refusal)."""

    what: str
    fields: tuple[str, ...]
    bytes: float = 0.0
    flops: float = 0.0
    steps: float = 0.0
    missing: str = ""  # a requirement this machine lacks (data files): the run would stop at once; reproduce skips it
    host: bool = False  # drawn or read on the host first (data): a GPU run needs it in host memory too


def _allows(annotation: Any, kind: type) -> bool:
    return annotation is kind or any(_allows(a, kind) for a in typing.get_args(annotation))


def _bad_value(v: Any, allow_bool: bool, int_max: int) -> str | None:
    """Why a (possibly nested) value is unacceptable for any field, or None."""
    if isinstance(v, (list, tuple)):
        return next((r for r in (_bad_value(x, allow_bool, int_max) for x in v) if r), None)
    if isinstance(v, bool):
        return None if allow_bool else "must be a number, not a boolean (true/false)"
    if isinstance(v, int) and abs(v) > int_max:
        return f"must be at most {int_max:.3g} in absolute value"
    if isinstance(v, str) and "\x00" in v:
        return "must not contain a NUL character"
    return None


class ExperimentConfig(BaseModel):
    """Fields every experiment has. Subclasses add the paper's own."""

    # inf/nan are refused for every float field (learning rates, scales, radii): they only end in failed runs
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False)
    BIG_INTS: ClassVar[frozenset[str]] = frozenset({"d"})  # may exceed int64: d = k^20 in a reduced simulation
    # what device=auto picks on a machine with CUDA: "cpu" for an experiment of small launch-bound nets measured
    # slower on a GPU than on a 2-core CPU (docs/performance.md, "device=auto"); "cuda" for the rest
    AUTO_DEVICE: ClassVar[str] = "cuda"
    # fields added after run records (and budgeted units) were kept whose default leaves a run's computation as it
    # was: left out of the run id at their default, so those records keep their id (any other value is in it)
    NEUTRAL_AT_DEFAULT: ClassVar[tuple[str, ...]] = ()

    seeds: int = Field(4, ge=1, description="number of replicas (independent seeds) trained at once")
    seed: int = Field(0, ge=0, le=2**62, description="first seed; replica i uses seed + i")
    dtype: Literal["float32", "float64"] = Field("float32", description="float64 for theory-regime runs")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = cuda when present (unless this "
                                                   "experiment's small nets were measured faster on the CPU)")
    probe_every: int = Field(10, ge=1, description="steps between two measurements during training")

    @field_validator("*", mode="before")
    @classmethod
    def _sane(cls, v: Any, info: ValidationInfo) -> Any:
        """Every field: booleans are not numbers (seeds=true is not 1), integers are bounded (a 20-digit value
        would train and then overflow when saved)."""
        assert info.field_name is not None  # a field validator always runs for a named field
        ann = cls.model_fields[info.field_name].annotation
        if isinstance(v, bool) and ("on" if v else "off") in typing.get_args(ann):
            return "on" if v else "off"  # YAML 1.1 reads the words on / off as booleans: autocast=off means "off"
        why = _bad_value(v, _allows(ann, bool), BIG_INT_MAX if info.field_name in cls.BIG_INTS else INT64_MAX)
        if why:
            raise ValueError(why)
        return v

    # ----------------------------------------------------------------------------------------------
    def estimate(self) -> list[Need]:
        """Rough estimates of the memory and work this run needs, checked before it starts: ``featlab run``
        refuses a run whose memory exceeds what the machine has available, or whose work would take months.

        The default covers configs whose data are ``seeds × points × d`` tensors (fields ``n``, ``n_test``, ``d``),
        held about twice (drawn, then cast and moved; measured on fa-synthetic), trained for the step fields (``T``,
        ``steps``, ``epochs``, ``*_steps``; work is a lower bound). An experiment adds its own terms (attack batches,
        all-pairs chunks) by overriding this and extending ``super().estimate()``; one that simulates in reduced
        coordinates (where d is only a scale) overrides it to leave d out. ``featlab.runs.resources`` has the
        builders (dense tensors, image networks and batches, runs made one after another); a term with ``missing``
        set says a requirement is absent (data files), so ``featlab reproduce`` skips the run with that line."""
        f = type(self).model_fields
        if "d" not in f or "n" not in f:
            return []
        dn: Any = self  # a subclass with the fields d and n (checked above)
        E, d = int(self.seeds), int(dn.d)
        points = int(dn.n) + int(getattr(self, "n_test", 0) or 0)
        item = 8 if self.dtype == "float64" else 4
        sized = ("seeds", "n", "n_test", "d") if "n_test" in f else ("seeds", "n", "d")
        needs = [Need(f"{E} replicas × {points} points × d={d}, {item}-byte floats, held twice", sized,
                      bytes=float(E) * (2.0 * points * d * item + REPLICA_BYTES), host=True)]
        steps = [k for k in f if k in STEP_FIELDS or k.endswith("_steps")]
        steps = sorted((k for k in steps if isinstance(getattr(self, k), int)), key=lambda k: -getattr(self, k))
        if steps:
            n_steps = sum(int(getattr(self, k)) for k in steps)
            # a GD step reads the data twice, bound by memory bandwidth (≈ 1 ns per value on 2 cores, measured on
            # fa-synthetic): 32 flop-equivalents per value at a quarter of a CPU's matmul peak
            needs.append(Need(f"{n_steps} steps over {E} × {points} × {d} data", tuple(steps),
                              flops=32.0 * E * points * d * n_steps, steps=n_steps))
        return needs

    def seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.seeds)]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def digest(self, experiment_id: str, device: str | None = None) -> str:
        """Run id: a short hash of the experiment id, the effective config and the kind of device the run resolves
        to (``device``: "cpu" or "cuda"; default: what ``device`` resolves to here). A CUDA request never reuses a
        CPU run, nor the reverse: their kernels sum in another order, their numbers differ."""
        cfg = self.to_dict()
        for name in self.NEUTRAL_AT_DEFAULT:  # a field added after runs were kept: at its default, not in the id
            if name in cfg and cfg[name] == type(self).model_fields[name].default:
                del cfg[name]
        if "device" in cfg:
            cfg["device"] = device or self.device_kind()
        blob = json.dumps({"experiment": experiment_id, "config": cfg}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


    def device_kind(self) -> str:
        """The kind of device this config's ``device`` resolves to here (auto: see ``AUTO_DEVICE``)."""
        if self.device == "auto" and self.AUTO_DEVICE == "cpu":
            return "cpu"
        return device_kind(str(self.device))

    def run_device(self) -> torch.device:
        """``device`` resolved for a run: auto is CUDA when present unless ``AUTO_DEVICE`` is "cpu"; a CUDA device
        the machine lacks is refused (one line)."""
        return resolve_device("cpu" if self.device == "auto" and self.AUTO_DEVICE == "cpu" else str(self.device))


def device_kind(device: str) -> str:
    """The kind of device ``device`` (auto | cpu | cuda[:i]) resolves to on this machine, without refusing one it
    lacks (a run refuses it in its preflight)."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device.split(":")[0]


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["k=20", "lr=1e-4", "radii=[0,2,4]"]`` → dict. Values are parsed as YAML scalars/lists."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key=value (e.g. seeds=8)")
        key, _, raw = item.partition("=")
        key = key.strip().lstrip("+")
        if not key:
            raise ConfigError(f"override {item!r} has an empty key; write key=value (e.g. seeds=8)")
        try:
            out[key] = yaml_input.load(raw) if raw.strip() != "" else None
        except yaml_input.YamlRefused as e:
            raise ConfigError(f"the {key!r} value {e.reason}; {e.fix}") from None
        except yaml.YAMLError:
            out[key] = raw
        except ValueError:  # an integer of thousands of digits: Python refuses to parse it
            raise ConfigError(f"the {key!r} value is not a number featlab can use ({len(raw)} characters); "
                              f"give a smaller value") from None
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's mapping, read with featlab's limits (:mod:`featlab.yaml_input`: size, aliases, tags, unique
    keys); every refusal one line naming the file and the fix."""
    path = Path(path)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise ConfigError(f"config file {str(path)!r} {what}; pass an existing YAML file to --config")
    try:
        with open(path, "rb") as f:
            raw = f.read(yaml_input.MAX_BYTES + 1)  # never more: a config is small
        if len(raw) > yaml_input.MAX_BYTES:
            raise yaml_input.YamlRefused(f"is larger than {yaml_input.MAX_BYTES // 2**20} MiB",
                                         fix=yaml_input.SMALL)
        data = yaml_input.load(raw.decode("utf-8"))
    except yaml_input.YamlRefused as e:
        where = f" (line {e.line})" if e.line else ""
        raise ConfigError(f"config file {str(path)!r} {e.reason}{where}; {e.fix}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text (binary?); pass a YAML text file") from None
    except OSError as e:
        raise ConfigError(f"config file {str(path)!r} cannot be read ({e.strerror or e}); check its permissions") \
            from None
    except ValueError:  # e.g. an integer of thousands of digits (Python refuses to parse it)
        raise ConfigError(f"config file {str(path)!r} holds a value featlab cannot parse (a number with thousands "
                          f"of digits?); fix that value") from None
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise ConfigError(f"config file {str(path)!r} is not valid YAML{where}; fix its syntax") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of field: value, not {type(data).__name__}")
    return data


def _describe(err: Mapping[str, Any]) -> str:
    msg = str(err.get("msg", "is invalid"))
    ctx = err.get("ctx") or {}
    should = msg.startswith("Input should be ")  # pydantic's 'Input should be X': featlab's 'must be X'
    for prefix in ("Input should be ", "Value error, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if err.get("type") in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than": "<", "less_than_equal": "<="}[err["type"]]
        bound = next(iter(ctx.values()), "?")
        return f"must be {op} {bound}"
    if err.get("type") == "finite_number":
        return "must be a finite number (not inf or nan)"
    if err.get("type") == "literal_error":
        return f"must be {msg}"
    if should or err.get("type", "").endswith("_parsing") or err.get("type", "").endswith("_type"):
        return f"must be {msg}"
    return msg


def build_config(cls: type[ExperimentConfig], experiment_id: str, *layers: Mapping[str, Any]) -> ExperimentConfig:
    """Merge layers (defaults < preset < YAML < CLI) and validate, turning errors into one-line ConfigErrors."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    valid = list(cls.model_fields)
    unknown = [k for k in merged if k not in cls.model_fields]
    if unknown:
        raise ConfigError(
            f"unknown field {unknown[0]!r} for {experiment_id}; valid fields are: {', '.join(valid)}"
        )
    try:
        return cls(**merged)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()) if not isinstance(p, int)) or "config"
        got = err.get("input")
        got_s = "" if isinstance(got, dict) else f"; got {_short_repr(got)} instead"
        if err.get("type") == "value_error" and not err.get("loc"):
            # model-level validators name their field themselves
            raise ConfigError(f"{experiment_id}: {_describe(err)}") from None
        raise ConfigError(f"the {loc!r} field of {experiment_id} {_describe(err)}{got_s}") from None


def _short_repr(v: Any, limit: int = 80) -> str:
    try:
        r = repr(v)
    except ValueError:  # an int too long to print
        return "a number with thousands of digits"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def check(cond: bool, field: str, requirement: str, fix: str = "") -> None:
    """Cross-field validation helper for model validators: raise a message that names the field and the fix."""
    if not cond:
        raise ValueError(f"the {field!r} field {requirement}" + (f"; {fix}" if fix else ""))


# ------------------------------------------------------------------------------------------ open decisions
SILENT = "[paper silent"  # in a field's description: an open decision of the paper (the default is ours)
# Each such field declares the values a stability study tries, the default among them, beside its description:
# ``Field(1e-5, description="... [paper silent]", json_schema_extra={"range": [1e-5, 5e-6, 2e-5]})`` (numbers: e.g.
# half and twice the default, or the literature's values; booleans and literals: their alternatives).


def silent_fields(cls: type[ExperimentConfig]) -> list[str]:
    """The fields of ``cls`` whose description marks them an open decision of the paper ("[paper silent…]")."""
    return [k for k, f in cls.model_fields.items() if SILENT in (f.description or "")]


def field_range(cls: type[ExperimentConfig], name: str) -> list[Any] | None:
    """The values declared for field ``name`` (``json_schema_extra={"range": [...]}``), or None when it has none."""
    extra = cls.model_fields[name].json_schema_extra
    values = extra.get("range") if isinstance(extra, dict) else None
    return list(values) if isinstance(values, list) else None
