"""Import Harbor job folders as a fire-exp attempts file.

A Harbor job folder holds one folder per trial, ``JOB/TASK__ID/result.json`` (format in
``reference/harbor-tasks.md``). Each trial becomes one ``AttemptRecord``:

- arm: from the user's mapping (``ArmMapping``): patterns over the job folder name, the
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

import fnmatch
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import control_character, load_json, parse_yaml, read_text
from fire_exp.records import AttemptRecord, Cause, Timings, Usage

__all__ = ["ArmMapping", "HarborTrial", "cause_for", "import_harbor", "load_mapping",
           "read_trials", "trials_without_result"]

FIELDS: tuple[str, ...] = ("job", "trial", "agent", "model")
_DOTTED = re.compile(r"^[A-Za-z_][\w-]*(\.[\w-]+)+$")


def check_arm_from(value: str, where: Path | str) -> str:
    """``value`` if it names a field (``job``, ``trial``, ``agent``, ``model``) or a dotted
    path into ``result.json``. Raises InputError otherwise."""
    if value in FIELDS or _DOTTED.match(value):
        return value
    raise InputError(where, "arm_from", f"{value!r} is neither one of {', '.join(FIELDS)} "
                     "nor a dotted path into result.json",
                     "e.g. config.agent.kwargs.harness or agent_result.metadata.harness")

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
class ArmMapping:
    """How trials map to arms and tasks to cohorts.

    Attributes:
        arm_from: what the patterns match: ``job`` (folder name), ``trial``, ``agent``,
            ``model``, or a dotted path into the trial's ``result.json``.
        arms: ``(pattern, arm)`` pairs, fnmatch patterns tried in order; the first match
            wins. Empty: the field's value itself is the arm.
        cohorts: task name → cohort.
        default_cohort: cohort of tasks not in ``cohorts``.
        pass_threshold: a reward at or above it passes.
    """

    arm_from: str = "job"
    arms: tuple[tuple[str, str], ...] = ()
    cohorts: dict[str, str] = field(default_factory=dict)
    default_cohort: str = "all"
    pass_threshold: float = 1.0

    def arm(self, values: dict[str, str]) -> str | None:
        """The arm of a trial, given its :meth:`HarborTrial.value` of ``arm_from`` in
        ``values`` (None when no pattern matches)."""
        value = values.get(self.arm_from, "")
        if not self.arms:
            return value or None
        return next((arm for pattern, arm in self.arms if fnmatch.fnmatchcase(value, pattern)),
                    None)


def load_mapping(path: Path) -> ArmMapping:
    """Read a mapping YAML (see docs/report.md, "Importing Harbor jobs").

    Raises:
        InputError: missing file, bad YAML, or a field of the wrong shape.
    """
    try:
        raw = parse_yaml(read_text(path), path) or {}
    except FileNotFoundError:
        raise InputError(path, "<file>", "mapping file not found") from None
    if not isinstance(raw, dict):
        raise InputError(path, "<mapping>", "expected a mapping with arm_from, arms, cohorts")
    unknown = set(raw) - {"arm_from", "arms", "cohorts", "default_cohort", "pass_threshold"}
    if unknown:
        raise InputError(path, sorted(unknown)[0], "unknown key",
                         "keys: arm_from, arms, cohorts, default_cohort, pass_threshold")
    source = check_arm_from(str(raw.get("arm_from", "job")), path)
    arms, cohorts = raw.get("arms") or {}, raw.get("cohorts") or {}
    if not isinstance(arms, dict) or not all(isinstance(v, str) for v in arms.values()):
        raise InputError(path, "arms", "expected PATTERN: ARM pairs", "e.g. '*-real-*': real")
    if not isinstance(cohorts, dict):
        raise InputError(path, "cohorts", "expected TASK: COHORT pairs")
    return ArmMapping(source, tuple((str(k), v) for k, v in arms.items()),
                      {str(k): str(v) for k, v in cohorts.items()},
                      str(raw.get("default_cohort", "all")),
                      _threshold(raw.get("pass_threshold", 1.0), path))


def _threshold(value: Any, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise InputError(path, "pass_threshold", f"expected a finite number, got {value!r:.60}",
                         "e.g. pass_threshold: 1.0")
    return float(value)


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
        if field in FIELDS:
            return self.values[field]
        node: Any = self.raw
        for key in field.split("."):
            if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return ""
        return node if isinstance(node, str) else json.dumps(node, sort_keys=True)

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
        cohort=mapping.cohorts.get(task, mapping.default_cohort), arm=arm,
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
    return _with_order(records), skipped


def _with_order(records: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    blocks: dict[tuple[str, int], list[AttemptRecord]] = {}
    for r in records:
        blocks.setdefault((r.task, r.replicate), []).append(r)
    out = []
    for block in blocks.values():
        block.sort(key=lambda r: (r.started_at, r.arm))
        out += [r.model_copy(update={"order": i}) for i, r in enumerate(block)]
    return out
