"""Typed, validated experiment configs, with Hydra-style ``key=value`` overrides and YAML in and out.

Every experiment declares one :class:`ExperimentConfig` subclass. Its fields are the experiment's knobs, the
paper's value is the default or a preset, and each open decision of the paper is a field whose description says
what was decided. Errors read like scikit-learn's: ``the 'k' field of fa-synthetic must be >= 2; got 1``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError


class ExperimentConfig(BaseModel):
    """Fields every experiment has. Subclasses add the paper's own."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)

    seeds: int = Field(4, ge=1, description="number of replicas (independent seeds) trained at once")
    seed: int = Field(0, ge=0, description="first seed; replica i uses seed + i")
    dtype: Literal["float32", "float64"] = Field("float32", description="float64 for theory-regime runs")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = cuda when present")
    probe_every: int = Field(10, ge=1, description="steps between two measurements during training")

    # ----------------------------------------------------------------------------------------------
    def seed_list(self) -> list[int]:
        return [self.seed + i for i in range(self.seeds)]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def digest(self, experiment_id: str) -> str:
        """Run id: a short hash of the experiment id and the effective config."""
        blob = json.dumps({"experiment": experiment_id, "config": self.to_dict()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


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
            out[key] = yaml.safe_load(raw) if raw.strip() != "" else None
        except yaml.YAMLError:
            out[key] = raw
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist; pass an existing YAML file to --config")
    try:
        data = yaml.safe_load(path.read_text())
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
    for prefix in ("Input should be ", "Value error, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    if err.get("type") in ("greater_than_equal", "greater_than", "less_than", "less_than_equal"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than": "<", "less_than_equal": "<="}[err["type"]]
        bound = next(iter(ctx.values()), "?")
        return f"must be {op} {bound}"
    if err.get("type") == "literal_error":
        return f"must be {msg}"
    if err.get("type", "").endswith("_parsing") or err.get("type", "").endswith("_type"):
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
        got_s = "" if isinstance(got, dict) else f"; got {got!r} instead"
        if err.get("type") == "value_error" and not err.get("loc"):
            # model-level validators name their field themselves
            raise ConfigError(f"{experiment_id}: {_describe(err)}") from None
        raise ConfigError(f"the {loc!r} field of {experiment_id} {_describe(err)}{got_s}") from None


def check(cond: bool, field: str, requirement: str, fix: str = "") -> None:
    """Cross-field validation helper for model validators: raise a message that names the field and the fix."""
    if not cond:
        raise ValueError(f"the {field!r} field {requirement}" + (f"; {fix}" if fix else ""))
