"""The analysis plan: which contrasts, cohorts, resample counts and seed (a YAML file)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from fire_exp.errors import InputError

__all__ = ["AnalysisPlan", "Contrast", "load_plan", "parse_contrast"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_contrast(text: str) -> tuple[str, str]:
    """Split ``"real - sham"`` into ``("real", "sham")``.

    >>> parse_contrast("real - always_verify")
    ('real', 'always_verify')
    """
    parts = [p.strip() for p in str(text).split(" - ")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"contrast {text!r} must read 'ARM - ARM' (spaces around the minus)")
    return parts[0], parts[1]


def _checked_contrast(text: str) -> str:
    parse_contrast(text)
    return text


# A contrast as a plan writes it ("real - sham"), checked when the plan is read.
ContrastText = Annotated[str, AfterValidator(_checked_contrast)]


class Contrast(_Model):
    """The primary contrast and the cohort on which it is primary."""

    contrast: ContrastText
    cohort: str = "eligible"



class Bootstrap(_Model):
    n_resamples: int = Field(default=10_000, ge=1)
    confidence_level: float = Field(default=0.95, gt=0, lt=1)


class Permutation(_Model):
    method: Literal["auto", "monte-carlo"] = "auto"  # auto: exact whenever possible
    n_resamples: int = Field(default=100_000, ge=1)
    max_enumeration: int = Field(default=20, ge=0, le=30)


class Multiplicity(_Model):
    method: Literal["holm", "none"] = "holm"
    family: Literal["secondary"] = "secondary"


class MissingData(_Model):
    infrastructure_failures: Literal["failure"] = "failure"
    sensitivity: Literal["exclude", "none"] = "exclude"


class Interaction(_Model):
    contrast: ContrastText
    cohorts: tuple[str, str] = ("eligible", "silent")



class AnalysisPlan(_Model):
    """A validated analysis plan. ``contrasts`` lists primary then secondaries."""

    name: str
    seed: int = Field(ge=0)
    primary: Contrast
    secondary: list[ContrastText] = Field(default_factory=list)
    cohorts: list[str] = Field(default_factory=lambda: ["eligible", "silent", "all"])
    bootstrap: Bootstrap = Field(default_factory=lambda: Bootstrap())
    permutation: Permutation = Field(default_factory=lambda: Permutation())
    multiplicity: Multiplicity = Field(default_factory=lambda: Multiplicity())
    missing_data: MissingData = Field(default_factory=lambda: MissingData())
    interaction: Interaction | None = None

    @property
    def contrasts(self) -> list[str]:
        """Primary contrast first, then the secondaries (duplicates removed)."""
        return list(dict.fromkeys([self.primary.contrast, *self.secondary]))

    def plan_hash(self) -> str:
        """SHA-256 of the plan's canonical JSON (what a preregistration freezes)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def load_plan(path: Path | str) -> AnalysisPlan:
    """Read and validate a plan; errors name the file and the field.

    Raises:
        InputError: missing file, invalid YAML, or a field that fails validation.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(path, "<file>", "analysis plan not found",
                         "pass --plan analysis/NAME.yaml") from exc
    except yaml.YAMLError as exc:
        raise InputError(path, "<yaml>", f"not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise InputError(path, "<plan>", "expected a mapping of plan fields")
    try:
        return AnalysisPlan.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "<plan>"
        raise InputError(path, field, err["msg"], "see analysis/default.yaml") from exc
