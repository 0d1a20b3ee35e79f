"""Layer 1: one attempt, from an environment coming up to a verifier reward.

``run_attempt`` takes objects, not config: a task, an environment, an agent, the arm's
families and the coding portfolio. It writes only into the attempt's own log folder and
returns an :class:`AttemptRecord`; it never raises for a failure of the attempt (the
failure is the record's ``cause``), only a :class:`~fire_exp.errors.ProtocolError`, which
stops the run. The record's run-level fields (log folder, lineage) are filled in by the
runner when it writes it (:func:`fire_exp.runner.job_records.finish_record`).
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fire_exp.agents.base import Agent, AgentOutcome, BoxedAgent, ProviderError
from fire_exp.agents.session import AgentSession, AgentTimeout, AttemptContext
from fire_exp.arms.place import ArmSetup, compose_instruction, place_files
from fire_exp.attempt_paths import AttemptPaths
from fire_exp.environments.base import Environment, EnvironmentFailure, VerifierResult
from fire_exp.environments.redaction import Redactor
from fire_exp.errors import ProtocolError
from fire_exp.policies.arms import ARM_REGISTRY
from fire_exp.policies.model import Family, Step
from fire_exp.policies.runtime import PolicyRuntime
from fire_exp.records import (
    NO_VERIFIER_CAUSES,
    AttemptRecord,
    Cause,
    FamilyFunnel,
    Funnel,
    Timings,
    Usage,
    now_iso,
)
from fire_exp.runner.validity import check_attempt


@dataclass(frozen=True)
class AttemptSpec:
    """Who and what an attempt is: its place in the schedule and the run."""

    run: str
    panel: str
    attempt_id: str
    task: str
    cohort: str
    arm: str
    replicate: int
    order: int
    seed: int
    config_hash: str = ""
    portfolio: str | None = None  # the real portfolio's folder (agents running hooks need it)
    controls: str | None = None  # the control sources' folder
    policy_arm: bool | None = None  # whether the arm runs policies (None: the registry's)
    policies: str = ""  # the registered arm its policies are built as ("": the arm itself)
    agent_timeout_multiplier: float = 1.0  # the panel's factor on the task's agent time budget

    def context(self, files: tuple[str, ...] = ()) -> AttemptContext:
        """What the agent is told about this attempt (``files``: what its arm placed)."""
        policy_arm = self.policy_arm
        if policy_arm is None:
            policy_arm = ARM_REGISTRY.get(self.arm).policy_arm
        return AttemptContext(attempt_id=self.attempt_id, arm=self.arm,
                              policy_arm=policy_arm, portfolio=self.portfolio,
                              controls=self.controls, policies=self.policies or self.arm,
                              files=files)


class _Cancelled(Exception):
    """The run was interrupted before this attempt's environment started."""


@dataclass(frozen=True)
class CodedFunnel:
    """The funnel of one attempt, as the coding portfolio's extractors saw it."""

    funnel: Funnel
    per_family: list[FamilyFunnel]
    errors: dict[str, str]  # family -> the error its eligibility or extractor raised


def code_funnel(trajectory: Sequence[Step], task_text: str, coding: Sequence[Family],
                runtime: PolicyRuntime, passed: bool, policy_arm: bool) -> CodedFunnel:
    """Apply the coding portfolio's extractors to the command log (identically in every arm).

    A family whose eligibility or extractor raises stays in the funnel, uncoded (state and
    behavior None), and its error is returned, so the record shows it.
    """
    fired_families = runtime.fired_families()
    per_family, errors = [], {}
    for family in coding:
        state = behavior = None
        try:
            if not family.eligible(task_text):
                continue
            codes = family.code(trajectory, task_text)
            state, behavior = codes.state, codes.behavior
        except Exception as exc:  # noqa: BLE001 - recorded in the record's coding_errors
            errors[family.name] = f"{type(exc).__name__}: {exc}"
        per_family.append(FamilyFunnel(family=family.name, state=state,
                                       fired=family.name in fired_families,
                                       behavior=behavior, passed=passed))
    states = [f.state for f in per_family if f.state is not None]
    behaviors = [f.behavior for f in per_family if f.behavior is not None]
    funnel = Funnel(state=any(states) if states else None,
                    fired=runtime.fired if policy_arm else False,
                    behavior=all(behaviors) if behaviors else None, passed=passed)
    return CodedFunnel(funnel, per_family, errors)


def _write_logs(files: AttemptPaths, session: AgentSession | None, runtime: PolicyRuntime,
                verifier: VerifierResult | None) -> None:
    files.agent_logs.mkdir(parents=True, exist_ok=True)
    if session is not None:
        with open(files.commands, "w", encoding="utf-8") as fh:
            for step in session.trajectory:
                fh.write(json.dumps(step.__dict__) + "\n")
    with open(files.policy_events, "w", encoding="utf-8") as fh:
        for entry in runtime.log:
            fh.write(json.dumps(entry.to_dict()) + "\n")
    if verifier is not None:
        files.verifier_logs.mkdir(parents=True, exist_ok=True)
        files.verifier_result.write_text(json.dumps(
            {"reward": verifier.reward, "rewards": verifier.rewards,
             "cause": verifier.cause.value if verifier.cause else None,
             "message": verifier.message}, indent=1))


def _run_agent(agent: Agent, session: AgentSession, rng: np.random.Generator
               ) -> tuple[AgentOutcome, Cause | None, str | None]:
    """Run the agent; map how it ended to a cause (None: it ended normally)."""
    try:
        outcome = agent.run(session, rng=rng)
        return outcome, outcome.cause, outcome.error
    except AgentTimeout as exc:
        return AgentOutcome(), Cause.AGENT_TIMEOUT, str(exc)
    except ProviderError as exc:
        before = exc.before_action or session.n_commands == 0
        return AgentOutcome(tamper=exc.tamper), \
            (Cause.PROVIDER_FAILED if before else Cause.AGENT_ERROR), str(exc)
    except EnvironmentFailure as exc:  # the box's failure, or the agent's own sabotage
        return AgentOutcome(), exc.cause, str(exc)
    except ProtocolError:
        raise  # no attempt can succeed: the run stops
    except Exception as exc:  # noqa: BLE001 - a crash of the agent is the attempt's failure
        cause = Cause.AGENT_ERROR if session.n_commands else Cause.HARNESS_FAILED
        return AgentOutcome(), cause, f"{type(exc).__name__}: {exc}"


def run_attempt(spec: AttemptSpec, env: Environment, agent: Agent, arm_families: Sequence[Family],
                coding: Sequence[Family], *, rng: np.random.Generator,
                versions: dict[str, str] | None = None,
                setup: ArmSetup | None = None) -> AttemptRecord:
    """Run one attempt and return its record. Never raises for an attempt's failure.

    ``setup`` is what the arm changes besides its policies: its files are placed in the
    working folder once the environment started, its text follows the task's instruction.
    """
    started_at, t0 = now_iso(), time.monotonic()
    task = env.task
    context = spec.context(setup.placed if setup is not None else ())
    instruction = task.instruction if setup is None else \
        compose_instruction(task.instruction, setup.spec)
    runtime = PolicyRuntime(arm_families, task.instruction)
    session: AgentSession | None = None
    outcome, cause, error = AgentOutcome(), None, None
    verifier: VerifierResult | None = None
    t_env = t_agent = t_ver = 0.0
    interrupted = False
    try:
        if env.cancelled.is_set():
            raise _Cancelled
        try:
            if isinstance(agent, BoxedAgent):  # it runs inside the box (a CLI in a container)
                agent.place(env)
            env.start()
            if setup is not None:
                place_files(env, setup.files)
        except EnvironmentFailure as exc:
            cause, error = Cause.ENVIRONMENT_FAILED, str(exc)
        t_env = time.monotonic() - t0
        if cause is None:
            budget = task.agent.timeout_sec * spec.agent_timeout_multiplier
            session = AgentSession(env, runtime, instruction, budget,
                                   context, task_text=task.instruction)
            outcome, cause, error = _run_agent(agent, session, rng)
            t_agent = time.monotonic() - t0 - t_env
            if not env.cancelled.is_set() and cause not in NO_VERIFIER_CAUSES:
                env.end_command_session()
                verifier = env.run_verifier()  # runs after an agent timeout too
                t_ver = time.monotonic() - t0 - t_env - t_agent
                if cause is None and verifier.cause is not None:
                    cause, error = verifier.cause, verifier.message
    except _Cancelled:
        pass
    except ProtocolError:
        raise
    except EnvironmentFailure as exc:
        cause, error = exc.cause, str(exc)
    except Exception as exc:  # noqa: BLE001 - a harness fault is recorded, not raised
        cause, error = Cause.HARNESS_FAILED, f"{type(exc).__name__}: {exc}\n" + \
            traceback.format_exc(limit=4)
    finally:
        # Read before stop(): the driver sets the flag before it tears the box down, so
        # whatever its teardown broke is marked cancelled, never scored.
        interrupted = env.cancelled.is_set()
        env.stop()
    if interrupted:
        cause, error, verifier = Cause.CANCELLED, "interrupted by the user", None
    reward = verifier.reward if verifier is not None else None
    passed = reward is not None and reward >= 1.0
    trajectory = session.trajectory if session is not None else []
    coded = code_funnel(trajectory, task.instruction, coding, runtime, passed,
                        policy_arm=context.policy_arm)
    _write_logs(env.files, session, runtime, verifier)
    # The last writer is done: every file of the attempt's folder (logs, hook state and
    # activity, the CLI's settings) passes through the redactor, as the transcript did.
    env.redactor.tree(env.files.root)
    usage = outcome.usage if outcome.usage is not None else Usage()
    validity = check_attempt(context.policy_arm, arm_families, runtime.events,
                             agent_ran=session is not None, tamper=outcome.tamper)
    return _redacted(env.redactor, AttemptRecord(
        run=spec.run, panel=spec.panel, attempt_id=spec.attempt_id, task=spec.task,
        task_digest=task.digest, cohort=spec.cohort,
        families=[f.family for f in coded.per_family], arm=spec.arm, replicate=spec.replicate,
        order=spec.order, seed=spec.seed, agent=agent.name, tier=agent.tier,
        environment=env.name, reward=reward, passed=passed, cause=cause, error=error,
        gave_up=outcome.gave_up, valid=validity.valid, invalid_reason=validity.reason,
        funnel=coded.funnel, family_funnel=coded.per_family, coding_errors=coded.errors,
        events=runtime.events, decisions=sum(1 for e in runtime.log if e.decision != "error"),
        n_commands=session.n_commands if session is not None else 0,
        timings=Timings(environment_s=round(t_env, 3), agent_s=round(t_agent, 3),
                        verifier_s=round(t_ver, 3), total_s=round(time.monotonic() - t0, 3)),
        usage=usage, config_hash=spec.config_hash, versions=versions or {},
        started_at=started_at, finished_at=now_iso(), log_dir="",
        withheld=env.withheld + _renamed(env), network_not_enforced=env.network_not_enforced))


def _renamed(env: Environment) -> list[str]:
    """What the redaction renamed under the attempt's folder, one line each."""
    root = env.files.root
    return [f"{path.relative_to(root) if path.is_relative_to(root) else path}: {what}"
            for path, what in env.redactor.renamed]


def _redacted(redactor: Redactor, record: AttemptRecord) -> AttemptRecord:
    """``record`` with every secret (and encoding of one) in any of its fields masked: an
    error message or an event may quote a command the agent typed."""
    line = record.model_dump_json()
    clean = redactor.text(line)
    return record if clean == line else AttemptRecord.model_validate_json(clean)
