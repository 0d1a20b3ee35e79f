"""Binary equivalence: a reimplementation must be measured against the original, not trusted.

Registered chain (FIRE Table 1, two rules): state — a first run of a candidate
reimplementation (and a stop without a measured comparison); interventions — instruct at
the first candidate run to compare with the original byte for byte right away, and at stop
to validate over diverse inputs and measure the size; behavior — an output comparison and a
size measurement after the last candidate write, before stopping.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, replay, rule

REIMPLEMENT = re.compile(r"\b(re-?implement\w*|rewrite|recreate|clone)\b", re.I)
IDENTICAL = re.compile(r"\b(identical|byte-for-byte|bit-for-bit|exactly the same|same)\b"
                       r"[^.]{0,40}\boutputs?\b|\boutputs?\b[^.]{0,40}\b(identical|byte-for-byte"
                       r"|bit-for-bit|exactly)\b", re.I)
SIZE_BAR = re.compile(r"\b(at most|no more than|under|smaller than|less than|below)\b[^.]{0,40}"
                      r"\b(bytes|kb|kib|kilobytes?)\b", re.I)
PROGRAM = re.compile(r"\b(binary|executable|compiled|program|tool)\b", re.I)
# Files the agent writes, and commands that run one of them.
WRITTEN = re.compile(r"(?:\bcat|\btee|\bprintf\b[^>]*|\becho\b[^>]*)\s*>{1,2}\s*['\"]?([\w.$/{}-]+)"
                     r"|\b(?:gcc|cc|clang|g\+\+)\b[^;&|]*\s-o\s+(\S+)"
                     r"|open\(\s*['\"]([^'\"]+)['\"]\s*,\s*['\"]w")
PROGRAM_NAME = re.compile(r"^[\w-]+(\.(py|sh|pl|js|rb))?$")
RUNNER = r"(?:\b(?:python3?|bash|sh|perl|node)\s+(?:\S*/)?|\./|/)"
NOT_A_RUN = re.compile(r"^\s*(chmod|ls|cat|wc|gzip|stat|du|head|tail|file|rm|cp|mv)\b")
COMPARE = re.compile(r"\bcmp\b|\bdiff\b|\bsha256sum\b|\bmd5sum\b|\bfilecmp\b")
SIZE = re.compile(r"\bwc\s+-c\b|\bstat\b[^|;&]*%s|\bls\s+-l|\bdu\b|\bgzip\b[^|;&]*-c"
                  r"|\bgetsize\b|\bst_size\b")

FIRST_RUN_TEXT = (
    "This is the first run of your reimplementation. Measure it against the original right "
    "away: run both on the same inputs, compare the outputs byte for byte (cmp), and note "
    "the size the task bounds. Do not build further on a candidate you have not compared."
)
STOP_TEXT = (
    "Before you stop, validate the reimplementation over diverse inputs (empty input, long "
    "runs, every byte value, a large file) with the exact build and invocation the checker "
    "will use: compare each output with the original's byte for byte, record every "
    "difference and the compressed size, and if anything differs or the size is over the "
    "bar, change method rather than patching one case."
)


def _names(command: str) -> set[str]:
    names = set()
    for match in WRITTEN.finditer(command):
        target = next(g for g in match.groups() if g)
        name = target.rstrip("'\"").split("/")[-1]
        if PROGRAM_NAME.search(name) and "$" not in name:
            names.add(name)
    return names


def _runs_candidate(command: str, candidates: set[str]) -> bool:
    if NOT_A_RUN.search(command):
        return False
    return any(re.search(RUNNER + re.escape(n) + r"(?=$|[\s<>|;&)'\"])", command)
               for n in candidates)


def _track(state: dict, command: str, paths: tuple = ()) -> None:
    """Update the state for one executed command or file edit (``paths``: the files a CLI's
    edit tool wrote); state['now']: it ran a candidate."""
    candidates = state.setdefault("candidates", set())
    written = _names(command) | {name for name in (p.rstrip("/").split("/")[-1] for p in paths)
                                 if PROGRAM_NAME.search(name)}
    state["now"] = False
    if written:
        candidates.update(written)
        state["compared"] = state["sized"] = False
        return
    if _runs_candidate(command, candidates):
        state["now"] = True
        state["runs"] = state.get("runs", 0) + 1
    if state.get("runs"):
        state["compared"] = state.get("compared") or bool(COMPARE.search(command))
        state["sized"] = state.get("sized") or bool(SIZE.search(command))


def _measured(state: dict) -> bool:
    return bool(state.get("compared") and state.get("sized"))


class BinaryEquivalence(Family):
    name = "binary_equivalence"
    description = "compare a reimplementation with the original byte for byte and by size"

    def eligible(self, task_text):
        return all(p.search(task_text) for p in (REIMPLEMENT, IDENTICAL, SIZE_BAR, PROGRAM))

    def track(self, event, state):
        if event.name == "PreToolUse":
            _track(state, event.command, event.paths)

    @rule(events=("PreToolUse",), limit=1)
    def measure_first_run(self, event, state):
        if state.get("now") and state.get("runs") == 1:
            return instruct(FIRST_RUN_TEXT)
        return ALLOW

    @rule(events=("Stop",), limit=1)
    def validate_at_stop(self, event, state):
        if state.get("runs") and not _measured(state):
            return instruct(STOP_TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        state = replay(trajectory, lambda s, step: _track(
            s, "" if step.kind == "edit" else step.command, step.paths)).state
        ran = bool(state.get("runs"))
        return Coding(state=ran, behavior=_measured(state) if ran else None)


FAMILIES = [BinaryEquivalence()]
