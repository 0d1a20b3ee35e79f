"""Complete enumeration: an all-valid-answers request needs the whole candidate set, tested.

Registered chain (FIRE Table 1): state — stop on an all-valid-answers request before the
candidate set was enumerated and validated; intervention — instruct at stop to enumerate,
test and deduplicate candidates; behavior — the candidate set validated before output.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, replay, rule

ALL_ANSWERS = re.compile(
    r"\b(all|every|multiple)\b[^.]{0,60}\b(valid|winning|possible|correct|satisfying)\b"
    r"[^.]{0,30}\b(answers?|solutions?|moves?|codes?|values?|candidates?|combinations?)\b"
    r"|\bmay be more than one\b", re.I)
ONE_PER_LINE = re.compile(r"\bone per line\b|\bone (answer|solution|code|move|value) per line\b"
                          r"|\beach on its own line\b", re.I)
# Exhaustive search over a candidate space, and a later check of the emitted set.
ENUMERATE = re.compile(r"itertools\.(product|permutations|combinations)|\bproduct\(|"
                       r"\bpermutations\(|\bcombinations\(|\bfor\s+\w+\s+in\s+range\(|\bseq\s+\d")
VALIDATE = re.compile(r"\buniq\s+-d\b|\bsort\s+(-\w+\s+)*-c\b|len\(set\(|\bsort\s+-u\b[^|]*\|\s*wc"
                      r"|\bassert\b.*\ball\(")

TEXT = (
    "The task asks for every valid answer, not one. Enumerate the complete candidate set "
    "systematically, test each candidate against every condition, deduplicate, and write all "
    "survivors, one per line. Then confirm that no further candidate satisfies the condition "
    "and that the output holds no duplicates before you stop."
)


def _track(state: dict, command: str) -> None:
    if ENUMERATE.search(command):
        state["enumerated"] = True
        state["validated"] = bool(VALIDATE.search(command))
    elif state.get("enumerated") and VALIDATE.search(command):
        state["validated"] = True


def _done(state: dict) -> bool:
    return bool(state.get("enumerated") and state.get("validated"))


class Enumeration(Family):
    name = "enumeration"
    description = "enumerate, test and deduplicate the complete candidate set before stopping"

    def eligible(self, task_text):
        return bool(ALL_ANSWERS.search(task_text) and ONE_PER_LINE.search(task_text))

    def track(self, event, state):
        if event.name == "PreToolUse":
            state["worked"] = True
            _track(state, event.command)

    @rule(events=("Stop",), limit=1)
    def enumerate_at_stop(self, event, state):
        if state.get("worked") and not _done(state):
            return instruct(TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        walk = replay(trajectory, lambda s, step: _track(s, step.command),
                      risky=lambda s: not _done(s))
        if not walk.commands:
            return Coding(state=False, behavior=None)
        return Coding(state=walk.risky_at_stop, behavior=_done(walk.state))


FAMILIES = [Enumeration()]
