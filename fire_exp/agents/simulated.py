"""The simulated agent: a seeded, scripted stand-in for a model, for demos, tests and power
analysis. It is NOT evidence about real models.

It acts only by running real commands in the environment, following the task's bundled
script (``simulated.yaml``). The script lists steps and *failure modes*; each mode is drawn
once per attempt with a tier-dependent rate (``weak``, ``mid``, ``strong``). A drawn mode
replaces a step's commands with its slip (e.g. a server launched with a plain ``&``) or
ends the run early. When text reaches the agent (a denial, or an instruction at stop), it
looks for the cues of a drawn mode's remedy in the *text* and applies the remedy with the
tier's uptake probability; text without a cue (generic review) triggers a remedy only at
the tier's low self-check rate. Policies never see its internals, only its commands.
It writes what it "said" to ``logs/agent/transcript.jsonl`` in the shapes of
``agent=openai`` (a note and a tool call per command, the tool result, its stops); the
transcript draws nothing and changes no outcome.

An instruction file its arm placed in the working folder (``AGENTS.md``, ``CLAUDE.md``, as
Codex and Claude Code read them) is read first, with ``cat``; a drawn mode whose remedy's
cue is in the file is avoided before it happens, with the tier's uptake probability, and
a file without any cue avoids one at the self-check rate. Without such a file nothing is
read and nothing more is drawn.

Script format::

    steps:
      - id: launch
        run: ["setsid nohup python3 server.py > server.log 2>&1 < /dev/null &"]
        slip: {mode: skip_detach, run: ["python3 server.py &"]}
    failure_modes:
      skip_detach:
        rate: {weak: 0.8, mid: 0.6, strong: 0.4}
        remedy: {cues: ["setsid", "new session"], run: ["..."]}
      stop_early:
        rate: {weak: 0.2, mid: 0.1, strong: 0.05}
        stop_after: write         # ends the run after this step; the remedy resumes it
        remedy: {cues: [], resume: true}
"""

from __future__ import annotations

import json
import time
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from fire_exp.agents.base import AgentOutcome
from fire_exp.agents.session import AgentSession
from fire_exp.agents.transcript import Transcript
from fire_exp.environments.base import Capability
from fire_exp.errors import InputError
from fire_exp.files import load_yaml
from fire_exp.records import Usage
from fire_exp.settings import Seconds, Settings, one_of

TIERS = ("weak", "mid", "strong")
# Per tier: probability of applying a remedy whose cue is in the text, and of catching a
# slip from generic text alone.
DEFAULT_UPTAKE = {"weak": 0.6, "mid": 0.8, "strong": 0.95}
DEFAULT_SELF_CHECK = {"weak": 0.05, "mid": 0.1, "strong": 0.15}
# Files an agent reads as standing instructions when its arm placed them in the working folder.
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
# Modelled prices, USD per million tokens (input, output).
PRICES = {"weak": (0.25, 2.0), "mid": (1.25, 10.0), "strong": (5.0, 25.0)}


@dataclass(frozen=True)
class Remedy:
    cues: tuple[str, ...] = ()
    run: tuple[str, ...] = ()
    resume: bool = False  # continue with the steps the run skipped


@dataclass(frozen=True)
class FailureMode:
    name: str
    rate: dict[str, float]
    remedy: Remedy | None = None
    stop_after: str | None = None


@dataclass(frozen=True)
class ScriptStep:
    id: str
    run: tuple[str, ...]
    slip_mode: str | None = None
    slip_run: tuple[str, ...] = ()


@dataclass(frozen=True)
class Script:
    steps: tuple[ScriptStep, ...]
    modes: dict[str, FailureMode] = field(default_factory=dict)


def _commands(value: Any, path: Path, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
        raise InputError(path, where, "expected a command or a list of commands")
    return tuple(value)


def _rate(value: Any, path: Path, where: str) -> dict[str, float]:
    if not isinstance(value, dict) or set(value) != set(TIERS):
        raise InputError(path, where, f"expected a rate for each tier {TIERS}")
    for tier, p in value.items():
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise InputError(path, f"{where}.{tier}", f"expected a probability, got {p!r}")
    return {k: float(v) for k, v in value.items()}


def load_script(path: Path) -> Script:
    """Parse and check a ``simulated.yaml``; errors name the file and the field."""
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or \
            not data["steps"]:
        raise InputError(path, "steps", "expected a non-empty list of steps")
    modes: dict[str, FailureMode] = {}
    for name, spec in (data.get("failure_modes") or {}).items():
        where = f"failure_modes.{name}"
        if not isinstance(spec, dict):
            raise InputError(path, where, "expected a mapping")
        remedy = None
        if spec.get("remedy") is not None:
            r = spec["remedy"]
            if not isinstance(r, dict):
                raise InputError(path, f"{where}.remedy", "expected a mapping")
            cues = r.get("cues") or []
            if not isinstance(cues, list) or not all(isinstance(c, str) for c in cues):
                raise InputError(path, f"{where}.remedy.cues", "expected a list of strings")
            run = _commands(r["run"], path, f"{where}.remedy.run") if r.get("run") else ()
            remedy = Remedy(tuple(c.lower() for c in cues), run, bool(r.get("resume", False)))
        modes[name] = FailureMode(name, _rate(spec.get("rate"), path, f"{where}.rate"),
                                  remedy, spec.get("stop_after"))
    steps = []
    for i, spec in enumerate(data["steps"]):
        where = f"steps[{i}]"
        if not isinstance(spec, dict) or "run" not in spec:
            raise InputError(path, where, "expected a mapping with 'run'")
        slip = spec.get("slip") or {}
        mode = slip.get("mode")
        if mode is not None and mode not in modes:
            raise InputError(path, f"{where}.slip.mode", f"unknown failure mode {mode!r}")
        steps.append(ScriptStep(str(spec.get("id", i)), _commands(spec["run"], path,
                                f"{where}.run"), mode,
                                _commands(slip["run"], path, f"{where}.slip.run")
                                if mode else ()))
    ids = {s.id for s in steps}
    for mode in modes.values():
        if mode.stop_after is not None and mode.stop_after not in ids:
            raise InputError(path, f"failure_modes.{mode.name}.stop_after",
                             f"no step with id {mode.stop_after!r}")
    return Script(tuple(steps), modes)


class SimulatedSettings(Settings):
    """``configs/agent/simulated.yaml`` (see :class:`SimulatedAgent`)."""

    tier: Annotated[str, one_of(*TIERS)] = "mid"
    uptake: dict[str, float] | None = None
    self_check: dict[str, float] | None = None
    think_s: Seconds = 0.0


_DEFAULT = SimulatedSettings()


class SimulatedAgent:
    """A scripted agent with tier-dependent failure modes and a response to text.

    Args:
        tier: ``weak``, ``mid`` or ``strong``.
        uptake: per tier, probability of applying a cued remedy.
        self_check: per tier, probability that uncued text makes it fix a slip anyway.
        think_s: seconds to wait before each command (0: as fast as the machine allows).
    """

    name = "simulated"
    settings_model = SimulatedSettings

    def __init__(self, tier: str = _DEFAULT.tier, uptake: dict[str, float] | None = None,
                 self_check: dict[str, float] | None = None,
                 think_s: float = _DEFAULT.think_s) -> None:
        self.tier = tier
        self.uptake = (uptake or DEFAULT_UPTAKE)[tier]
        self.self_check = (self_check or DEFAULT_SELF_CHECK)[tier]
        self.think_s = think_s

    def preflight(self, capabilities: Set[Capability]) -> None:
        """Nothing to check: the scripts were checked when the panel was built."""

    def run(self, session: AgentSession, *, rng: np.random.Generator) -> AgentOutcome:
        script_path = session.env.task.simulation_script
        if script_path is None:
            raise InputError(session.env.task.path, "simulated.yaml", "missing",
                             "the simulated agent needs a script beside the task")
        script = load_script(script_path)
        transcript = Transcript(session.env.files.transcript)
        try:
            return _Run(self, script, session, rng, transcript).play()
        finally:
            transcript.close()


class _Run:
    """One simulated attempt's state."""

    def __init__(self, agent: SimulatedAgent, script: Script, session: AgentSession,
                 rng: np.random.Generator, transcript: Transcript) -> None:
        self.agent, self.script, self.session, self.rng = agent, script, session, rng
        self.transcript = transcript
        self.said = ""  # what the agent says with its next command or stop
        # One draw per mode, in name order, so the same seed gives the same slips.
        self.drawn = {m for m in sorted(script.modes)
                      if rng.random() < script.modes[m].rate[agent.tier]}
        self.remedied: set[str] = set()
        self.skipped: list[ScriptStep] = []
        self.tokens_in = self.tokens_out = 0

    def play(self) -> AgentOutcome:
        context = self.session.begin()
        self.transcript.write({"role": "system", "content": f"simulated agent, tier "
                               f"{self.agent.tier}: follows the task's script (not a model)"})
        self.transcript.write({"role": "user", "content": "\n\n".join(
            t for t in (self.session.instruction, context) if t)})
        if context:
            self.respond(context)
        for name in (f for f in self.session.context.files if f in INSTRUCTION_FILES):
            self.said = f"Reading the instructions in {name} first."
            self.heed(self.bash(f"cat {name}").output)
        stop_after = {m.stop_after for n, m in self.script.modes.items()
                      if n in self.drawn and m.stop_after}
        for i, step in enumerate(self.script.steps):
            self.do_step(step)
            if step.id in stop_after:
                self.skipped = list(self.script.steps[i + 1:])
                break
        while (text := self._stop()) is not None:
            self._turn(len(text))
            self.respond(text)
        gave_up = bool(self.skipped)
        return AgentOutcome(gave_up=gave_up, usage=self.usage())

    def _stop(self) -> str | None:
        self.transcript.write({"role": "assistant", "content": self._say("I am done.")})
        text = self.session.stop()
        self.transcript.write({"role": "user", "content": text, "source": "policy"}
                              if text is not None else {"role": "harness", "event": "stopped"})
        return text

    def _say(self, default: str) -> str:
        said, self.said = self.said or default, ""
        return said

    def do_step(self, step: ScriptStep) -> None:
        slipped = step.slip_mode in self.drawn and step.slip_mode not in self.remedied
        self.said = self.said or f"Step {step.id}."
        for command in step.slip_run if slipped else step.run:
            result = self.bash(command)
            if result.denied:
                # A remedy replaces the step; without one the agent abandons the step.
                self.respond(result.output)
                return
            if result.context:
                self.respond(result.context)

    def bash(self, command: str):  # type: ignore[no-untyped-def]
        if self.agent.think_s:
            time.sleep(self.agent.think_s)
        self._turn(len(command))
        call = f"call_{len(self.session.trajectory) + 1}"
        self.transcript.write({"role": "assistant", "content": self._say(""), "tool_calls": [
            {"id": call, "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]})
        result = self.session.bash(command)
        self.transcript.write({"role": "tool", "tool_call_id": call, "content": result.as_text()})
        return result

    def respond(self, text: str) -> bool:
        """React to text from a policy; returns whether a remedy was applied."""
        lowered = text.lower()
        open_modes = [m for m in sorted(self.drawn - self.remedied)
                      if self.script.modes[m].remedy is not None]
        cued = [m for m in open_modes
                if any(cue in lowered for cue in self.script.modes[m].remedy.cues)]  # type: ignore[union-attr]
        applied = False
        self.said = "I read the policy's text and carry on."
        if cued:
            for mode in cued:
                if self.rng.random() < self.agent.uptake:
                    self.said = f"The policy's text names what I missed: fixing {mode}."
                    self.apply(mode)
                    applied = True
        elif open_modes and self.rng.random() < self.agent.self_check:
            mode = open_modes[int(self.rng.integers(len(open_modes)))]
            self.said = f"Checking my work again, I find and fix {mode}."
            self.apply(mode)
            applied = True
        return applied

    def heed(self, text: str) -> None:
        """Read standing instructions before acting: a drawn mode they cue is avoided."""
        self.tokens_in += len(text) // 4
        lowered = text.lower()
        open_modes = [m for m in sorted(self.drawn - self.remedied)
                      if self.script.modes[m].remedy is not None
                      and self.script.modes[m].stop_after is None]
        cued = [m for m in open_modes
                if any(cue in lowered for cue in self.script.modes[m].remedy.cues)]  # type: ignore[union-attr]
        if cued:
            avoided = [m for m in cued if self.rng.random() < self.agent.uptake]
        elif open_modes and self.rng.random() < self.agent.self_check:
            avoided = [open_modes[int(self.rng.integers(len(open_modes)))]]
        else:
            avoided = []
        self.drawn -= set(avoided)

    def apply(self, mode: str) -> None:
        remedy = self.script.modes[mode].remedy
        assert remedy is not None
        self.remedied.add(mode)
        for command in remedy.run:
            if self.bash(command).denied:
                break
        if remedy.resume:
            skipped, self.skipped = self.skipped, []
            for step in skipped:
                self.do_step(step)

    def _turn(self, chars: int) -> None:
        # A modelled model call: the prompt grows with the session, the answer is short.
        self.tokens_in += 900 + 60 * len(self.session.trajectory)
        self.tokens_out += 80 + chars // 4

    def usage(self) -> Usage:
        price_in, price_out = PRICES[self.agent.tier]
        cost = (self.tokens_in * price_in + self.tokens_out * price_out) / 1e6
        return Usage(input_tokens=self.tokens_in, output_tokens=self.tokens_out,
                     cost_usd=round(cost, 6), model=f"simulated-{self.agent.tier}",
                     route=f"simulated/{self.agent.tier}")
