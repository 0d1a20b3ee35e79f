"""LaTeX final log: under a no-overfull-box contract, read the final log, not the exit status.

Registered chain (FIRE Table 1): state — stop after a build under an explicit
no-overfull-box contract without a later search of the log; intervention — instruct at stop
to search the final compile's log for the literal warning; behavior — a literal log search
after the final compile.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, replay, rule

CONTRACT = re.compile(r"\bno\s+overfull\b|\boverfull\s+\\?hbox|\bwithout\s+(any\s+)?overfull\b",
                      re.I)
# A document build: a TeX engine, latexmk, make, or a script whose name says build.
BUILD = re.compile(
    r"\b(pdf|xe|lua)latex\b|\blatexmk\b|(^|[\s;&|(])make\b"
    r"|(^|[\s;&|(])(python3?\s+|bash\s+|sh\s+|\./)\S*build\w*(\.py|\.sh)?(?=$|[\s;&|)])")
SEARCH = re.compile(r"overfull", re.I)
LOG = re.compile(r"\.log\b")

TEXT = (
    "The build finished, but a zero exit status does not mean the layout contract holds: "
    "overfull boxes are only warnings. Search the log of the final compile for the literal "
    "string `Overfull \\hbox` (for example `grep -n 'Overfull \\\\hbox' NAME.log`). If it "
    "occurs, make only the fixes the task authorizes, then rerun the compile and search the "
    "new log again before you stop."
)


def _searches_log(command: str) -> bool:
    return bool(SEARCH.search(command) and LOG.search(command))


def _track(state: dict, command: str) -> None:
    if BUILD.search(command):
        state["built"] = True
        state["searched"] = False
    elif state.get("built") and _searches_log(command):
        state["searched"] = True


class LatexFinalLog(Family):
    name = "latex_final_log"
    description = "search the final build log for the literal overfull-box warning"

    def eligible(self, task_text):
        return bool(CONTRACT.search(task_text))

    def track(self, event, state):
        if event.name == "PreToolUse":
            _track(state, event.command)

    @rule(events=("Stop",), limit=1)
    def search_final_log(self, event, state):
        if state.get("built") and not state.get("searched"):
            return instruct(TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        walk = replay(trajectory, lambda s, step: _track(s, step.command),
                      risky=lambda s: bool(s.get("built")) and not s.get("searched"))
        built = bool(walk.state.get("built"))
        return Coding(state=walk.risky_at_stop,
                      behavior=bool(walk.state.get("searched")) if built else None)


FAMILIES = [LatexFinalLog()]
