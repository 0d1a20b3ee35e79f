"""Import Harbor job folders as a fire-exp attempts file.

A Harbor job folder holds one folder per trial, ``JOB/TASK__ID/result.json`` (format in
``reference/harbor-tasks.md``). Each trial becomes one ``AttemptRecord``:

- arm: from the user's mapping (``ArmMapping``, shared by every importer): patterns over the job folder name, the
  trial name, the agent name, the model name, or any field of ``result.json`` named by a
  dotted path (``config.agent.kwargs.harness``: job folders often share the agent's name
  and differ only in its arguments); cohort per task from the same mapping (default
  ``all``);
- reward: ``verifier_result.rewards.reward``; passed = reward >= ``pass_threshold``
  (1.0); no reward gives reward None and a cause (``verifier_failed`` when Harbor
  recorded no exception);
- cause: from ``exception_info.exception_type`` (``cause_for``);
- replicate: the order of the trials of each (task, arm) by start time, from 0;
- usage and timings from ``agent_result`` and the phases' ``started_at``/``finished_at``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import control_character, load_json
from fire_exp.importers import mapping as _mapping
from fire_exp.importers.contract import Imported
from fire_exp.importers.mapping import ArmFields, ArmMapping, field_value, with_order
from fire_exp.records import AttemptRecord, Cause, Timings, Usage

__all__ = ["FIELDS", "HarborImporter", "HarborTrial", "cause_for", "check_arm_from",
           "import_harbor", "load_mapping", "read_trials", "trials_without_result"]

FIELDS = ArmFields(("job", "trial", "agent", "model"), "result.json",
                   "config.agent.kwargs.harness or agent_result.metadata.harness", "job")


def check_arm_from(value: str, where: Path | str) -> str:
    """``value`` if it names a field (``job``, ``trial``, ``agent``, ``model``) or a dotted
    path into ``result.json``. Raises InputError otherwise."""
    return _mapping.check_arm_from(value, where, FIELDS)


def load_mapping(path: Path) -> ArmMapping:
    """Read a mapping YAML whose ``arm_from`` names a Harbor field (docs/importers.md)."""
    return _mapping.load_mapping(path, FIELDS)

# Harbor exception types → fire-exp causes; names not listed are matched by keyword below.
_EXACT = {"AgentTimeoutError": Cause.AGENT_TIMEOUT,
          "ContextLengthExceededError": Cause.AGENT_STEP_LIMIT,
          "OutputLengthExceededError": Cause.AGENT_STEP_LIMIT,
          "AgentSetupTimeoutError": Cause.ENVIRONMENT_FAILED,
          "VerifierTimeoutError": Cause.VERIFIER_TIMEOUT,
          "CancelledError": Cause.CANCELLED, "KeyboardInterrupt": Cause.CANCELLED}
_KEYWORDS = ((("Verifier", "RewardFile", "Reward"), Cause.VERIFIER_FAILED),
             (("Environment", "Sandbox", "Docker", "Container", "Daytona", "Modal", "Build",
               "Image"), Cause.ENVIRONMENT_FAILED),
             (("RateLimit", "APIError", "APIConnection", "ServiceUnavailable", "Provider",
               "Authentication", "InternalServerError", "BadRequest"), Cause.PROVIDER_FAILED))


def cause_for(exception_type: str | None) -> Cause | None:
    """The fire-exp cause of a Harbor exception type (None: no exception).

    >>> cause_for("AgentTimeoutError"), cause_for("DaytonaSandboxError"), cause_for("Oops")
    (<Cause.AGENT_TIMEOUT: 'agent_timeout'>, <Cause.ENVIRONMENT_FAILED: \
'environment_failed'>, <Cause.HARNESS_FAILED: 'harness_failed'>)
    """
    if not exception_type:
        return None
    if exception_type in _EXACT:
        return _EXACT[exception_type]
    for words, cause in _KEYWORDS:
        if any(w.lower() in exception_type.lower() for w in words):
            return cause
    return Cause.HARNESS_FAILED


@dataclass(frozen=True)
class HarborTrial:
    """One trial's ``result.json``, with where it came from."""

    path: Path
    job: str
    raw: dict[str, Any]

    def get(self, *keys: str) -> Any:
        """A nested value, None when any level is missing or null."""
        node: Any = self.raw
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    def value(self, field: str) -> str:
        """A named field, or a dotted path into ``result.json`` ("" when it is missing)."""
        if field in FIELDS.names:
            return self.values[field]
        return field_value(self.raw, field)

    @property
    def values(self) -> dict[str, str]:
        """The fields an arm can be taken from."""
        return {"job": self.job, "trial": str(self.raw.get("trial_name") or self.path.parent.name),
                "agent": str(self.get("agent_info", "name") or ""),
                "model": str(self.get("agent_info", "model_info", "name") or "")}


def read_trials(job_dirs: Sequence[Path]) -> list[HarborTrial]:
    """Every ``JOB/*/result.json`` of the job folders (the job's own result.json skipped)."""
    trials = []
    for job in job_dirs:
        if not job.is_dir():
            raise InputError(job, "<folder>", "not a Harbor job folder")
        for path in sorted(job.glob("*/result.json")):
            raw = load_json(path, fix="a Harbor trial's result.json is JSON")
            if not isinstance(raw, dict) or "task_name" not in raw:
                raise InputError(path, "task_name", "missing: not a Harbor trial result")
            name = raw["task_name"]
            problem = ("is not a non-empty string" if not isinstance(name, str) or not
                       name.strip() else control_character(name))
            if problem:
                raise InputError(path, "task_name", f"{name!r} {problem}",
                                 "fix the trial's result.json")
            trials.append(HarborTrial(path, job.name, raw))
    if not trials:
        raise InputError(", ".join(map(str, job_dirs)), "<folder>",
                         "no trial result.json found", "pass Harbor job folders (jobs/JOB)")
    return trials


def trials_without_result(job_dirs: Sequence[Path]) -> list[Path]:
    """The trial folders of the jobs that hold no ``result.json``: trials that ended (a
    crash, a kill) without writing their result. Under the panel's rule each is an attempt
    that ended, not one that never ran; its arm is unknown, so it is counted and reported,
    never dropped without a word."""
    return [trial for job in job_dirs if job.is_dir() for trial in sorted(job.iterdir())
            if trial.is_dir() and not (trial / "result.json").is_file()]


def _seconds(trial: HarborTrial, phase: str | None) -> float:
    node = trial.raw if phase is None else (trial.raw.get(phase) or {})
    try:
        start = datetime.fromisoformat(str(node["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(node["finished_at"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return 0.0
    return max(0.0, (end - start).total_seconds())


def _number(trial: HarborTrial, value: Any, field: str) -> float:
    """A finite number of ``result.json``; anything else names the trial and field."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise InputError(trial.path, field, f"expected a finite number, got {value!r:.60}",
                         "fix the trial's result.json, or move the trial out of the job")
    return float(value)


def _count(trial: HarborTrial, agent_result: Any, key: str) -> float:
    """A token count or cost of ``agent_result``: a number of 0 or more (missing: 0)."""
    value = agent_result.get(key) if isinstance(agent_result, dict) else None
    number = 0.0 if value is None else _number(trial, value, f"agent_result.{key}")
    if number < 0:
        raise InputError(trial.path, f"agent_result.{key}", f"{number:g} is negative",
                         "fix the trial's result.json")
    if key.startswith("n_") and not number.is_integer():  # a token count (1.5 read as 1)
        raise InputError(trial.path, f"agent_result.{key}", f"{number:g} is not a whole "
                         "number of tokens", "fix the trial's result.json")
    return number


def _record(trial: HarborTrial, arm: str, replicate: int, mapping: ArmMapping,
            run: str) -> AttemptRecord:
    reward = trial.get("verifier_result", "rewards", "reward")
    if reward is None:  # older Harbor results hold the reward directly
        reward = trial.get("verifier_result", "reward")
    reward = None if reward is None else _number(trial, reward, "verifier_result.rewards.reward")
    exc_type = trial.get("exception_info", "exception_type")
    cause = cause_for(exc_type) or (Cause.VERIFIER_FAILED if reward is None else None)
    task = str(trial.raw["task_name"])
    agent_result = trial.get("agent_result") or {}
    return AttemptRecord(
        run=run, panel="harbor", attempt_id=f"{trial.job}/{trial.values['trial']}", task=task,
        task_digest=str(trial.raw.get("task_checksum") or ""),
        cohort=mapping.cohort(task), arm=arm,
        replicate=replicate, order=0, seed=0,
        agent=trial.values["agent"] or "harbor", environment="harbor", reward=reward,
        passed=reward is not None and reward >= mapping.pass_threshold, cause=cause,
        error=trial.get("exception_info", "exception_message"),
        timings=Timings(environment_s=_seconds(trial, "environment_setup"),
                        agent_s=_seconds(trial, "agent_execution"),
                        verifier_s=_seconds(trial, "verifier"), total_s=_seconds(trial, None)),
        usage=Usage(input_tokens=int(_count(trial, agent_result, "n_input_tokens")),
                    output_tokens=int(_count(trial, agent_result, "n_output_tokens")),
                    cost_usd=_count(trial, agent_result, "cost_usd"),
                    model=trial.values["model"] or None),
        started_at=str(trial.raw.get("started_at") or ""),
        finished_at=str(trial.raw.get("finished_at") or ""),
        log_dir=str(trial.path.parent))


def import_harbor(job_dirs: Sequence[Path], mapping: ArmMapping, run: str = "harbor",
                  ) -> tuple[list[AttemptRecord], list[Path]]:
    """Records of every trial whose arm the mapping names, and the trials it skipped.

    Replicates number the trials of each (task, arm) by ``started_at`` (then trial name);
    ``order`` numbers the arms within each (task, replicate) block by start time.
    """
    chosen: dict[tuple[str, str], list[HarborTrial]] = {}
    skipped = []
    trials = read_trials(job_dirs)
    if not any(trial.value(mapping.arm_from) for trial in trials):
        raise InputError(trials[0].path, mapping.arm_from, "no trial has this field",
                         f"top-level keys: {', '.join(sorted(trials[0].raw))}")
    for trial in trials:
        arm = mapping.arm({mapping.arm_from: trial.value(mapping.arm_from)})
        if arm is None:
            skipped.append(trial.path)
            continue
        chosen.setdefault((str(trial.raw["task_name"]), arm), []).append(trial)
    records = []
    for (_, arm), trials in sorted(chosen.items()):
        trials.sort(key=lambda t: (str(t.raw.get("started_at") or ""), t.values["trial"]))
        records += [_record(t, arm, i, mapping, run) for i, t in enumerate(trials)]
    return with_order(records), skipped


class HarborImporter:
    """``fire-exp import harbor JOB_DIR...``: Harbor job folders, one attempt per trial."""

    kind = "harbor"
    summary = "Harbor job folders (JOB/TASK__ID/result.json per trial)"
    sources = "Harbor job folder(s)"
    arm_fields = FIELDS

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """Harbor needs no options beyond the mapping."""

    def default_run(self, sources: Sequence[Path]) -> str:
        """The first job folder's name."""
        return sources[0].name

    def read(self, sources: Sequence[Path], mapping: ArmMapping, run: str,
             options: argparse.Namespace) -> Imported:
        """Every trial of the job folders (:func:`import_harbor`)."""
        records, skipped = import_harbor(sources, mapping, run)
        unfinished = trials_without_result(sources)
        notes = [f"{len(unfinished)} trial folder(s) hold no result.json, e.g. {unfinished[0]}: "
                 "trials that ended without a result, not imported (their arm is unknown); "
                 "the attempts above undercount the jobs by as many"] if unfinished else []
        return Imported(records, [str(p) for p in skipped], notes)
