"""Reconsider control: a generic stop-time request to reconsider the solution."""

from fire_exp.policies import Family, instruct, rule

TEXT = (
    "Before you finish, reconsider your solution. Think again about whether it does what "
    "the task asks, whether a different approach would be more robust, and whether anything "
    "is missing or wrong. Make any changes you judge necessary, then stop."
)


class Reconsider(Family):
    name = "reconsider"
    description = "reconsider the solution before stopping, on every task"

    def eligible(self, task_text):
        return True

    @rule(events=("Stop",), limit=1)
    def reconsider(self, event, state):
        return instruct(TEXT)


FAMILIES = [Reconsider()]
