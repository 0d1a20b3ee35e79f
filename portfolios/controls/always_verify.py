"""Always-verify control: a stop-time request to verify the evaluator-facing artifact."""

from fire_exp.policies import Family, instruct, rule

TEXT = (
    "Before you finish, verify the evaluator-facing artifact: check that what the task asks "
    "for exists where the task says, in the exact form it asks for, and that it will still "
    "hold when the evaluator looks at it after your session ends. Fix anything that does "
    "not hold, then stop."
)


class AlwaysVerify(Family):
    name = "always_verify"
    description = "verify the evaluator-facing artifact before stopping, on every task"

    def eligible(self, task_text):
        return True

    @rule(events=("Stop",), limit=1)
    def verify_artifact(self, event, state):
        return instruct(TEXT)


FAMILIES = [AlwaysVerify()]
