"""The record of a power analysis that ``fire-exp freeze power_table=DIR`` puts in a manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from fire_exp.errors import InputError
from fire_exp.files import json_loads

__all__ = ["power_record"]


def power_record(folder: Path | str, *, panel: str, plan_sha256: str) -> dict[str, Any]:
    """What a preregistration says it could detect: the minimum-detectable-effect table,
    the printed sentence, the settings and the SHA-256 of ``power.csv``.

    Raises:
        InputError: the folder lacks an output of ``fire-exp power``, or its table was
            computed for another panel or another analysis plan.
    """
    folder = Path(folder)
    try:
        meta = json_loads((folder / "power.json").read_text(encoding="utf-8"))
        mde = pd.read_csv(folder / "mde.csv")
        table = (folder / "power.csv").read_bytes()
    except (OSError, ValueError) as exc:
        raise InputError(folder, "power_table", f"not a fire-exp power output ({exc})",
                         f"run `fire-exp power panel={panel} out={folder}` first") from exc
    for key, want in (("panel", panel), ("plan_sha256", plan_sha256)):
        if meta.get(key) != want:
            raise InputError(folder / "power.json", key, f"computed for {meta.get(key)!r}, "
                             f"the panel being frozen has {want!r}",
                             f"recompute: fire-exp power panel={panel} out={folder}")
    keep = ("sentence", "tasks_to_preregister", "target_effect_pp", "target_power",
            "power_at_count", "alpha", "seed", "n_sims", "source", "effect_model", "primary",
            "cohort", "secondary")
    return {**{k: meta.get(k) for k in keep},
            "power_csv_sha256": hashlib.sha256(table).hexdigest(),
            "mde": json.loads(mde.to_json(orient="records"))}
