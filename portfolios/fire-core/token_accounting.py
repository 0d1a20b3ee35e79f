"""Token accounting: a subset token count must reconcile field subtotals to the total.

Registered chain (FIRE Table 1): state — stop on a multi-field dataset token-count request
without a reconciliation; intervention — instruct at stop to reconcile subset values,
tokenizer and field subtotals; behavior — subtotals reconciled to the total.
"""

import re

from fire_exp.policies import ALLOW, Coding, Family, instruct, replay, rule, succeeded

COUNT = re.compile(r"\b(count|number of|total)\b[^.]{0,40}\btokens?\b|\btoken counts?\b", re.I)
DATASET = re.compile(r"\b(dataset|corpus|jsonl|parquet|split|records?)\b", re.I)
SUBSET = re.compile(r"\b(domains?|categor(y|ies)|splits?|labels?|subsets?)\b", re.I)
TOKENIZER = re.compile(r"\btokeni[sz]er\b", re.I)
# A reconciliation names its field subtotals (in the command or in what it printed).
RECONCILE = re.compile(r"\bsubtotals?\b|\breconcil\w*", re.I)

TEXT = (
    "Before you report the count, write a reconciliation table: the distinct values the "
    "subset field actually takes in the data and which of them you kept, the exact named "
    "tokenizer you used, the token subtotal of every text field that contributes, and a check "
    "that these subtotals add up to the integer you report. Fix the answer if they do not."
)


def _reconciles(command: str, output: str) -> bool:
    return bool(RECONCILE.search(command) or RECONCILE.search(output))


def _observe(state: dict, step) -> None:
    if succeeded(step.exit_code, step.output) and _reconciles(step.command, step.output):
        state["reconciled"] = True


class TokenAccounting(Family):
    name = "token_accounting"
    description = "reconcile subset values, tokenizer and field subtotals before reporting"

    def eligible(self, task_text):
        return all(p.search(task_text) for p in (COUNT, DATASET, SUBSET, TOKENIZER))

    def track(self, event, state):
        if event.name == "PostToolUse" and succeeded(event.exit_code, event.output) \
                and _reconciles(event.command, event.output):
            state["reconciled"] = True
        elif event.name == "PreToolUse":
            state["worked"] = True

    @rule(events=("Stop",), limit=1)
    def reconcile_at_stop(self, event, state):
        if state.get("worked") and not state.get("reconciled"):
            return instruct(TEXT)
        return ALLOW

    def code(self, trajectory, task_text):
        walk = replay(trajectory, _observe, risky=lambda s: not s.get("reconciled"))
        if not walk.commands:
            return Coding(state=False, behavior=None)
        return Coding(state=walk.risky_at_stop, behavior=bool(walk.state.get("reconciled")))


FAMILIES = [TokenAccounting()]
