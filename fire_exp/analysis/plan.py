"""The analysis plan: which contrasts, cohorts, resample counts and seed (a YAML file).

A plan is checked when it is read (its primary and interaction cohorts are among its
cohorts), and against a panel at ``freeze`` and ``run`` (``check_plan_for_panel``: every arm
it names is an arm the harness or the panel knows, every cohort one the panel makes, every
panel arm analysed), so a typo stops the panel before its first attempt.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictStr,
    ValidationError,
    model_validator,
)

from fire_exp.analysis.plan_sequential import SequentialPlan
from fire_exp.errors import InputError
from fire_exp.files import parse_yaml, read_text, unknown_key_message
from fire_exp.policies.ablation import is_ablation_arm

__all__ = ["PANEL_COHORTS", "AnalysisPlan", "Contrast", "check_plan_for_panel",
           "did_you_mean", "load_plan", "parse_contrast"]

PANEL_COHORTS = ("eligible", "silent")  # the cohorts a fire-exp panel assigns tasks to


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A hint naming the closest known names, or listing them all.

    >>> did_you_mean("shamm", ["real", "sham", "baseline"])
    "did you mean 'sham'? (known: baseline, real, sham)"
    """
    ordered = sorted(set(known))
    close = difflib.get_close_matches(name, ordered, n=2, cutoff=0.6)
    close += [k for k in ordered if k.lower() == name.lower() and k not in close]
    listing = f"known: {', '.join(ordered) or 'none'}"
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close[:2])}? ({listing})"
    return listing


class _Model(BaseModel):
    # strict: a count is a whole number (``n_resamples: true`` is not 1, ``"200"`` is not
    # 200), a level a number, a flag true or false
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, strict=True)


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



# Resample ceilings: 10^7 and more run for minutes and exhaust a machine's memory; a plan
# lifts them on purpose with ``ceilings: false``.
RESAMPLE_CEILING = 1_000_000


# A percentile interval reads the resamples beyond each of its ends: fewer than this many
# on a side and the end is one or two resamples, not an interval (5 at 95 %: 200 resamples).
MIN_TAIL_RESAMPLES = 5
# A Monte Carlo p-value is at least 1/(n+1): 100 resamples let it reach 0.01, below a
# Holm-adjusted 0.05 over five contrasts.
MIN_PERMUTATION_RESAMPLES = 100


class Bootstrap(_Model):
    n_resamples: int = Field(default=10_000, ge=1)
    confidence_level: float = Field(default=0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _enough(self) -> Bootstrap:
        least = math.ceil(2 * MIN_TAIL_RESAMPLES / (1 - self.confidence_level) - 1e-9)
        if self.n_resamples < least:
            raise ValueError(f"bootstrap.n_resamples: {self.n_resamples} resamples leave fewer "
                             f"than {MIN_TAIL_RESAMPLES} beyond each end of a "
                             f"{self.confidence_level:.0%} interval; use at least {least}")
        return self


class Permutation(_Model):
    method: Literal["auto", "monte-carlo"] = "auto"  # auto: exact whenever possible
    n_resamples: int = Field(default=100_000, ge=MIN_PERMUTATION_RESAMPLES)
    max_enumeration: int = Field(default=20, ge=0, le=30)


class Multiplicity(_Model):
    method: Literal["holm", "none"] = "holm"
    family: Literal["secondary"] = "secondary"


class MissingData(_Model):
    infrastructure_failures: Literal["failure"] = "failure"
    sensitivity: Literal["exclude", "none"] = "exclude"


class Interaction(_Model):
    contrast: ContrastText
    cohorts: tuple[StrictStr, StrictStr] = Field(default=("eligible", "silent"), strict=False)



class AnalysisPlan(_Model):
    """A validated analysis plan. ``contrasts`` lists primary then secondaries.

    ``arms`` names arms analysed beyond those of the contrasts; ``reward_scale`` is the
    range a reward may take (verifier rewards lie in [0, 1]).
    """

    name: str
    seed: int = Field(ge=0)
    primary: Contrast
    secondary: list[ContrastText] = Field(default_factory=list)
    arms: list[str] = Field(default_factory=list)
    cohorts: list[str] = Field(default_factory=lambda: ["eligible", "silent", "all"])
    # strict=False: YAML gives a list; each end is still strictly a number
    reward_scale: tuple[StrictFloat, StrictFloat] = Field(default=(0.0, 1.0), strict=False)
    bootstrap: Bootstrap = Field(default_factory=lambda: Bootstrap())
    permutation: Permutation = Field(default_factory=lambda: Permutation())
    multiplicity: Multiplicity = Field(default_factory=lambda: Multiplicity())
    missing_data: MissingData = Field(default_factory=lambda: MissingData())
    interaction: Interaction | None = None
    sequential: SequentialPlan | None = None  # analysis/plan_sequential.py
    # Lifts the resample ceilings; a permission, not part of the analysis (not hashed).
    ceilings: bool = Field(default=True, exclude=True)

    @model_validator(mode="after")
    def _meaningful(self) -> AnalysisPlan:
        check_plan_meaning(self)
        return self

    @model_validator(mode="after")
    def _cohorts_named(self) -> AnalysisPlan:
        named = [("primary.cohort", self.primary.cohort)]
        if self.interaction is not None:
            named += [("interaction.cohorts", c) for c in self.interaction.cohorts]
        for field, cohort in named:
            if cohort not in self.cohorts:
                raise ValueError(f"{field}: cohort {cohort!r} is not among the plan's cohorts "
                                 f"{self.cohorts}; {did_you_mean(cohort, self.cohorts)}")
        low, high = self.reward_scale
        if not low < high:
            raise ValueError(f"reward_scale: {low} is not below {high}")
        return self

    @property
    def arm_names(self) -> list[str]:
        """Every arm the plan names: the contrasts' arms, then ``arms``, in order."""
        names = [arm for c in self.contrasts for arm in parse_contrast(c)]
        if self.interaction is not None:
            names += parse_contrast(self.interaction.contrast)
        return list(dict.fromkeys([*names, *self.arms]))

    def analyses_arm(self, arm: str) -> bool:
        """Whether attempts of ``arm`` belong to this plan's analysis: an arm it names, or
        a leave-one-family-out arm ``real-minus-F`` when it names ``real`` (the ablation
        table analyses those against ``real``, docs/ablation.md)."""
        names = self.arm_names
        return arm in names or is_ablation_arm(arm) and "real" in names

    @property
    def cohort_names(self) -> list[str]:
        """The cohorts attempts may carry (``all`` is every task, never a label)."""
        return [c for c in self.cohorts if c != "all"]

    @property
    def contrasts(self) -> list[str]:
        """Primary contrast first, then the secondaries (duplicates removed)."""
        return list(dict.fromkeys([self.primary.contrast, *self.secondary]))

    def plan_hash(self) -> str:
        """SHA-256 of the plan's canonical JSON (what a preregistration freezes)."""
        # A plan without a sequential section hashes as it did before the section existed.
        dumped = self.model_dump(mode="json", exclude={"sequential"} if self.sequential is None
                                 else None)
        text = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def check_plan_meaning(plan: AnalysisPlan) -> None:
    """Refuse a plan that validates field by field yet means nothing, or would fail only
    when the analysis runs: a contrast of an arm with itself, a cohort listed twice,
    interaction cohorts that coincide or overlap (``all`` holds both), a reward scale
    that is not finite, resamples above the ceiling.

    Raises:
        ValueError: ``FIELD: what is wrong`` (pydantic reports it with the plan's file).
    """
    named = [("primary.contrast", plan.primary.contrast)]
    named += [(f"secondary.{i}", c) for i, c in enumerate(plan.secondary)]
    if plan.interaction is not None:
        named.append(("interaction.contrast", plan.interaction.contrast))
    pairs: dict[frozenset[str], str] = {}
    for field, text in named[:1 + len(plan.secondary)]:
        left, right = parse_contrast(text)
        if left == right:
            raise ValueError(f"{field}: {text!r} contrasts arm {left!r} with itself")
        seen = pairs.setdefault(frozenset((left, right)), text)
        if seen != text:  # the same pair reversed: one test counted twice (Holm)
            raise ValueError(f"{field}: {text!r} is {seen!r} reversed; list each pair once")
    for field, text in named[1 + len(plan.secondary):]:
        left, right = parse_contrast(text)
        if left == right:
            raise ValueError(f"{field}: {text!r} contrasts arm {left!r} with itself")
    twice = sorted({c for c in plan.cohorts if plan.cohorts.count(c) > 1})
    if twice:
        raise ValueError(f"cohorts: {twice[0]!r} is listed twice; list each cohort once")
    if plan.interaction is not None:
        a, b = plan.interaction.cohorts
        if a == b or "all" in (a, b):
            raise ValueError(f"interaction.cohorts: {a!r} and {b!r} share tasks; an "
                             "interaction compares two disjoint cohorts: [eligible, silent]")
    if not all(math.isfinite(v) for v in plan.reward_scale):
        raise ValueError(f"reward_scale: {list(plan.reward_scale)} is not finite")
    for field, n in (("bootstrap.n_resamples", plan.bootstrap.n_resamples),
                     ("permutation.n_resamples", plan.permutation.n_resamples)):
        if n > RESAMPLE_CEILING and plan.ceilings:
            raise ValueError(f"{field}: {n:,} is above the ceiling {RESAMPLE_CEILING:,}; "
                             "use fewer, or set ceilings: false in the plan on purpose")


def load_plan(path: Path | str) -> AnalysisPlan:
    """Read and validate a plan; errors name the file and the field.

    Raises:
        InputError: missing file, invalid YAML, or a field that fails validation.
    """
    path = Path(path)
    try:
        text = read_text(path)
    except FileNotFoundError as exc:
        raise InputError(path, "<file>", "analysis plan not found",
                         "pass --plan analysis/NAME.yaml") from exc
    raw = parse_yaml(text, path, "see analysis/default.yaml")  # a key twice is refused
    if not isinstance(raw, dict):
        raise InputError(path, "<plan>", "expected a mapping of plan fields")
    try:
        return AnalysisPlan.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        # a misspelt key is both missing and unknown: name the typo and the key meant
        err = next((e for e in errors if e["type"] == "extra_forbidden" and "did you mean"
                    in unknown_key_message(str(e["loc"][-1]), _keys_at(e["loc"]))), errors[0])
        field = ".".join(str(p) for p in err["loc"]) or "<plan>"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":  # a typo of a key: name the key meant
            message = unknown_key_message(str(err["loc"][-1]), _keys_at(err["loc"]))
        named = re.match(r"([a-z_]+(?:\.[a-z_0-9]+)*): (.*)", message, re.S)
        if named and (field == "<plan>" or named.group(1).startswith(f"{field}.")):
            field, message = named.groups()  # a whole-section check names its own field
        if err["type"].endswith("_type"):  # strict types: say what was given
            message += f", got {err['input']!r}"
        example = "sequential" if field.startswith("sequential") else "default"
        raise InputError(path, field, message, f"see analysis/{example}.yaml") from exc


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys of the plan section an error location points into."""
    model: type[BaseModel] = AnalysisPlan
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        inner = getattr(field, "annotation", None) if field is not None else None
        inner = next((a for a in getattr(inner, "__args__", ()) if isinstance(a, type)
                      and issubclass(a, BaseModel)), inner)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return []
        model = inner
    return list(model.model_fields)


def check_plan_for_panel(plan: AnalysisPlan, path: Path | str, panel_arms: Iterable[str],
                         known_arms: Iterable[str]) -> None:
    """Refuse a plan that names an arm or cohort the panel cannot produce.

    Args:
        plan: the panel's analysis plan, read from ``path``.
        panel_arms: the arms the panel runs (each must be analysed by the plan).
        known_arms: every arm the harness knows (a plan may name one the panel lacks:
            its contrasts are then skipped, with a note).

    Raises:
        InputError: naming the plan file, the field and the closest known name.
    """
    panel = list(panel_arms)
    known = {*known_arms, *panel}
    for arm in plan.arm_names:
        if arm not in known:
            raise InputError(path, "arms", f"arm {arm!r} is not an arm of fire-exp or of "
                             "this panel", did_you_mean(arm, known))
    for cohort in plan.cohort_names:
        if cohort not in PANEL_COHORTS:
            raise InputError(path, "cohorts", f"cohort {cohort!r} is not a panel cohort",
                             did_you_mean(cohort, [*PANEL_COHORTS, "all"]))
    missing = [arm for arm in panel if not plan.analyses_arm(arm)]
    if missing:
        raise InputError(path, "arms", f"the panel's arm(s) {missing} are not in the plan",
                         "add them to a contrast or to the plan's arms: list; an ablation "
                         "arm real-minus-F needs the plan to name real")
