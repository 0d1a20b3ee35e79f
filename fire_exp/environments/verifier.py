"""The verifier, written once on the environment contract, for every backend.

After the agent's session has ended: stale reward files go, ``tests/`` is uploaded (only
now: the agent never saw it), ``tests/test.sh`` runs under the task's verifier timeout as a
process of its own (exit code ignored, output to ``logs/verifier/test-stdout.txt``), the
box's logs come home, and the reward is read there by the one parser
(:func:`fire_exp.environments.reward.read_reward_dir`, the Harbor contract).
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING

from fire_exp.attempt_paths import REWARD_JSON, REWARD_TXT, TEST_STDOUT, VERIFIER_LOGS, in_box
from fire_exp.environments.base import VerifierResult
from fire_exp.environments.reward import read_reward_dir
from fire_exp.records import Cause

if TYPE_CHECKING:
    from fire_exp.environments.base import Environment

STDOUT_KEPT = 4000  # characters of test.sh's output kept in the result
_HOUSEKEEPING_S = 60.0


def run_verifier(env: Environment) -> VerifierResult:
    """Run the task's verifier in ``env``'s box and read its verdict (see the module)."""
    start = time.monotonic()
    box = env.paths
    logs = box.logs
    stale = " ".join(shlex.quote(in_box(logs, name)) for name in (REWARD_TXT, REWARD_JSON))
    env.run(f"rm -f {stale}; mkdir -p {shlex.quote(in_box(logs, VERIFIER_LOGS))}",
            timeout=_HOUSEKEEPING_S, cwd="/")
    env.upload(env.task.tests_dir, box.tests)
    script = shlex.quote(f"{box.tests}/test.sh")
    result = env.run(f"exec bash {script} > {shlex.quote(in_box(logs, TEST_STDOUT))} 2>&1 "
                     "< /dev/null", timeout=env.task.verifier.timeout_sec,
                     env=env.task.verifier.env, cwd=box.workdir)
    env.collect_logs()
    out = env.files.test_stdout
    stdout = out.read_text(errors="replace")[-STDOUT_KEPT:] if out.is_file() else ""
    if result.timed_out:
        return VerifierResult(reward=None, cause=Cause.VERIFIER_TIMEOUT,
                              message="the verifier timed out",
                              duration_s=time.monotonic() - start, stdout=stdout)
    reward, rewards, cause, message = read_reward_dir(env.files.verifier_logs)
    return VerifierResult(reward=reward, rewards=rewards, cause=cause, message=message,
                          duration_s=time.monotonic() - start, stdout=stdout)
