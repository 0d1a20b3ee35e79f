"""The panel's own design, read from its analysis: what each arm changes, which arms run
policies, and the frozen items behind each arm.

The report and the explorer word their pages from this, so a panel speaks of its own arms:
a panel whose arms run no policy shows no funnel, no "fired" and no hook counts; each arm
says what it changes (a declared arm as ``prereg.json`` froze it, a preset as the
registry describes it) with the SHA-256 of every frozen file it depends on.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fire_exp.analysis import AnalysisResult
from fire_exp.errors import InputError
from fire_exp.policies.ablation import ABLATION_PREFIX
from fire_exp.policies.arms import ARM_REGISTRY

__all__ = ["ArmDesign", "arm_designs", "policy_arms", "runs_policies"]

HASH_PREFIX = 12  # hex digits of a SHA-256 shown beside an arm
# The frozen items each preset's policies are built from (prereg.json ``hashes``).
_PRESET_ITEMS = {"real": ("policy:",), "sham": ("policy:", "control:sham_text"),
                 "always_verify": ("control:always_verify",),
                 "reconsider": ("control:reconsider",), "baseline": ()}


@dataclass(frozen=True)
class ArmDesign:
    """One arm as the panel designed it.

    Attributes:
        arm: its name.
        declared: declared in the panel config (``panel.declare``); else a preset.
        policies: the registered arm whose policies it runs (``none``: none; ``unknown``
            for an arm neither declared nor registered, as a CSV's arm can be).
        changes: what it changes against the panel's defaults, one phrase each.
        description: the panel's (or the registry's) one line about it.
        items: ``(item, SHA-256 prefix)`` of each frozen item it depends on.
    """

    arm: str
    declared: bool
    policies: str
    changes: tuple[str, ...]
    description: str
    items: tuple[tuple[str, str], ...]

    @property
    def runs_policies(self) -> bool:
        """Whether its attempts run policies (an unknown arm may)."""
        return self.policies != "none"


def _preset_policies(arm: str) -> tuple[str, str] | None:
    """(policies, description) of a registered arm, None for a name the registry lacks."""
    try:
        spec = ARM_REGISTRY.get(arm)
    except InputError:
        return None
    return (arm if spec.policy_arm else "none"), spec.description


def _items(prereg: pd.DataFrame, prefixes: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    if prereg.empty or not prefixes:
        return ()
    rows = prereg[prereg["item"].astype(str).str.startswith(prefixes)]
    return tuple((str(i), str(h)[:HASH_PREFIX]) for i, h in
                 zip(rows["item"], rows["sha256"], strict=True))


def _declared(result: AnalysisResult, arm: str) -> ArmDesign | None:
    frame = result.arm_changes
    if frame.empty or arm not in set(frame["arm"]):
        return None
    row = frame[frame["arm"] == arm].iloc[0]
    changes = tuple(c.strip() for c in str(row["changes"]).split(";") if c.strip())
    named = [c.split(":", 1)[1].strip() for c in changes if c.startswith("policies:")]
    policies = named[0] if named else "none"
    prefixes: tuple[str, ...] = (f"arm:{arm}", f"arm_file:{arm}:")
    if policies != "none":
        prefixes += _PRESET_ITEMS.get(policies, ("policy:",))
    return ArmDesign(arm, True, policies, changes, str(row["description"]),
                     _items(result.prereg, prefixes))


def _preset(result: AnalysisResult, arm: str) -> ArmDesign:
    found = _preset_policies(arm)
    if found is None:
        return ArmDesign(arm, False, "unknown", ("not declared, not a registered arm",), "", ())
    policies, description = found
    changes = (f"policies: {arm}",) if policies != "none" else ("nothing: no policy runs",)
    base = "real" if arm.startswith(ABLATION_PREFIX) else arm
    return ArmDesign(arm, False, policies, changes, description,
                     _items(result.prereg, _PRESET_ITEMS.get(base, ())))


def arm_designs(result: AnalysisResult) -> list[ArmDesign]:
    """Every arm of the analysis, in its order, as the panel designed it."""
    return [_declared(result, arm) or _preset(result, arm) for arm in result.arms]


def policy_arms(result: AnalysisResult) -> list[str]:
    """The arms that run policies (or may: an arm the run does not describe)."""
    return [d.arm for d in arm_designs(result) if d.runs_policies]


def runs_policies(result: AnalysisResult) -> bool:
    """Whether any arm runs a policy: only then do pages speak of hooks, firing, the
    funnel and near-misses."""
    return bool(policy_arms(result))
