"""Write real inspect_ai eval logs of a small two-arm panel: ``python -m
tests.importers.inspect_panel OUT_DIR`` (inspect_ai 0.3.285 and later; no server, no network).

The model is inspect_ai's ``mockllm/model`` with fixed outputs and fixed token usage (its
default output counts tokens with tiktoken, which would download an encoding). The arm is
the task argument ``arm``; the scorer ``keyed`` gives each sample and epoch the value
:data:`TABLE` says, so a pass rate can be counted by hand. ``OUT/logs`` holds the panel:
the ``base`` arm as a ``.eval`` log, the ``real`` arm as a ``.json`` log, 4 samples x 3
epochs each; sample ``c`` under ``real`` hits a token limit (and is still scored), sample
``d`` epoch 2 under ``base`` raises in the solver (an errored sample, not scored).
``OUT/errored`` holds one eval that stopped on an error (``fail_on_error``).

``python -m tests.importers.inspect_panel --fixture OUT_DIR`` writes the small log committed
as ``tests/importers/data/`` (samples ``a`` and ``b`` of the ``real`` arm, 2 epochs), which
pins the file format for the reader that works without inspect_ai.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# (sample, arm) -> the scorer's value in epochs 1, 2, 3.
TABLE = {("a", "base"): "CIC", ("a", "real"): "CCC", ("b", "base"): "III",
         ("b", "real"): "CPI", ("c", "base"): "CCC", ("c", "real"): "CCC",
         ("d", "base"): "III", ("d", "real"): "ICC"}
SAMPLES = ("a", "b", "c", "d")
EPOCHS = 3
ERRORED = ("d", 2, "base")  # the (sample, epoch, arm) whose solver raises
LIMITED = ("c", "real")  # the (sample, arm) that runs under a token limit of 5


def _task(arm: str, crash_all: bool = False, samples: tuple[str, ...] = SAMPLES) -> Any:
    """The task ``toy`` with its arguments, as ``inspect eval`` would build it (so the log
    records ``eval.task_args``)."""
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, accuracy, scorer
    from inspect_ai.solver import solver
    from inspect_ai.util import token_limit

    @scorer(metrics=[accuracy()])
    def keyed() -> Any:
        async def score(state: Any, target: Any) -> Score:
            return Score(value=TABLE[(state.sample_id, arm)][state.epoch - 1])
        return score

    @solver
    def act() -> Any:
        async def solve(state: Any, generate: Any) -> Any:
            if crash_all and state.sample_id == "b":
                raise RuntimeError("the solver crashed")
            if (state.sample_id, state.epoch, arm) == ERRORED:
                raise RuntimeError("tool crashed")
            if (state.sample_id, arm) == LIMITED:
                with token_limit(5):
                    return await generate(state)
            return await generate(state)
        return solve

    @task(name="toy")
    def toy(arm: str = "base", crash_all: bool = False) -> Task:
        return Task(dataset=[Sample(id=s, input=f"question {s}", target="ok",
                                    metadata={"arm": arm}) for s in samples],
                    solver=act(), scorer=keyed())

    return toy(arm=arm, crash_all=crash_all)


def _output(*_: Any) -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content(model="mockllm/model", content="ok")
    return out.model_copy(update={"usage": ModelUsage(input_tokens=7, output_tokens=3,
                                                      total_tokens=10)})


def write_panel(out: Path) -> None:
    """Run the evals, writing their logs under ``out``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    model = get_model("mockllm/model", custom_outputs=_output)
    common: dict[str, Any] = {"model": model, "display": "none", "log_realtime": False}
    inspect_eval(_task("base"), epochs=EPOCHS, log_dir=str(out / "logs"),
                 fail_on_error=False, **common)
    inspect_eval(_task("real"), epochs=EPOCHS, log_dir=str(out / "logs"), log_format="json",
                 fail_on_error=False, **common)
    inspect_eval(_task("real", crash_all=True), epochs=1, log_dir=str(out / "errored"),
                 fail_on_error=True, max_samples=1, **common)


def write_fixture(out: Path) -> None:
    """The committed log: 2 samples x 2 epochs of the ``real`` arm, with its token limit."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    inspect_eval(_task("real", samples=("a", "c")), epochs=2, log_dir=str(out),
                 model=get_model("mockllm/model", custom_outputs=_output), display="none",
                 log_realtime=False)


if __name__ == "__main__":
    if sys.argv[1] == "--fixture":
        write_fixture(Path(sys.argv[2]))
    else:
        write_panel(Path(sys.argv[1]))
