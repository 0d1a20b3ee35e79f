"""Harbor job folders import as valid attempts and analyse correctly."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fire_exp.analysis import analyze, load_attempts
from fire_exp.errors import InputError
from fire_exp.importers import ArmMapping, cause_for, import_harbor, load_mapping
from fire_exp.records import Cause, read_records
from tests.conftest import run_cli
from tests.importers.helpers import REPO, harbor_trial

MAPPING = """\
arm_from: job
arms:
  "*-policy": real
  "*-base": baseline
cohorts:
  fix-git: eligible
  serve-api: eligible
default_cohort: silent
"""


@pytest.fixture
def jobs(tmp_path):
    """Two Harbor jobs (baseline, policy), 3 tasks x 2 trials, with failures of each kind."""
    base, policy = tmp_path / "jobs" / "2026-run-base", tmp_path / "jobs" / "2026-run-policy"
    t = "2026-01-01T00:0{}:00"
    # baseline: fix-git 0/2, serve-api 1/2 (one trial without reward), csv 2/2
    harbor_trial(base, "fix-git", 0, reward=0.0, started=t.format(1))
    harbor_trial(base, "fix-git", 1, reward=0.0, exception="AgentTimeoutError",
                 started=t.format(2))
    harbor_trial(base, "serve-api", 0, reward=1.0, started=t.format(1))
    harbor_trial(base, "serve-api", 1, reward=None, started=t.format(3))
    harbor_trial(base, "csv-stats", 0, reward=1.0, started=t.format(1))
    harbor_trial(base, "csv-stats", 1, reward=1.0, started=t.format(2))
    # policy: fix-git 2/2, serve-api 1/2 (one environment failure), csv 1/2
    harbor_trial(policy, "fix-git", 0, reward=1.0, started=t.format(2))
    harbor_trial(policy, "fix-git", 1, reward=1.0, started=t.format(1))
    harbor_trial(policy, "serve-api", 0, reward=None, exception="DaytonaSandboxError",
                 started=t.format(1))
    harbor_trial(policy, "serve-api", 1, reward=1.0, started=t.format(2))
    harbor_trial(policy, "csv-stats", 0, reward=0.0, started=t.format(1))
    harbor_trial(policy, "csv-stats", 1, reward=1.0, started=t.format(2), cost=0.5)
    (base / "result.json").write_text("{}")  # the job's own summary is not a trial
    (tmp_path / "map.yaml").write_text(MAPPING)
    return [base, policy]


def test_causes_follow_harbor_exception_types():
    assert cause_for(None) is None
    assert cause_for("AgentTimeoutError") is Cause.AGENT_TIMEOUT
    assert cause_for("VerifierTimeoutError") is Cause.VERIFIER_TIMEOUT
    assert cause_for("RewardFileNotFoundError") is Cause.VERIFIER_FAILED
    assert cause_for("EnvironmentStartTimeoutError") is Cause.ENVIRONMENT_FAILED
    assert cause_for("RateLimitError") is Cause.PROVIDER_FAILED
    assert cause_for("ContextLengthExceededError") is Cause.AGENT_STEP_LIMIT
    assert cause_for("ValueError") is Cause.HARNESS_FAILED


def test_import_maps_arms_rewards_causes_and_replicates(jobs, tmp_path):
    records, skipped = import_harbor(jobs, load_mapping(tmp_path / "map.yaml"))
    assert skipped == [] and len(records) == 12
    by = {(r.task, r.arm, r.replicate): r for r in records}
    no_reward = by[("serve-api", "baseline", 1)]
    assert no_reward.reward is None and no_reward.cause is Cause.VERIFIER_FAILED
    assert not no_reward.passed
    timeout = by[("fix-git", "baseline", 1)]
    assert timeout.cause is Cause.AGENT_TIMEOUT and timeout.reward == 0.0
    assert timeout.error == "AgentTimeoutError happened"
    env = by[("serve-api", "real", 0)]
    assert env.cause is Cause.ENVIRONMENT_FAILED and not env.fair
    # replicate = order by start time: policy fix-git trial 1 started first
    assert by[("fix-git", "real", 0)].attempt_id.endswith("fix-git__2020001")
    assert by[("csv-stats", "real", 1)].usage.cost_usd == 0.5
    assert by[("csv-stats", "real", 1)].timings.agent_s == 120.0
    assert by[("fix-git", "real", 0)].cohort == "eligible"
    assert by[("csv-stats", "real", 0)].cohort == "silent"
    assert by[("fix-git", "real", 0)].usage.input_tokens == 1000


def test_imported_attempts_analyse_correctly(jobs, tmp_path, fast_plan):
    out = tmp_path / "attempts.jsonl"
    proc = run_cli("import", "harbor", *map(str, jobs), "--map", str(tmp_path / "map.yaml"),
                   "--out", str(out), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "12 attempts (3 tasks; arms baseline, real)" in proc.stdout
    assert len(read_records(out).finished) == 12
    loaded = load_attempts(out)
    att = loaded.attempts.set_index(["task", "arm", "replicate"])
    # no reward and the environment failure are failures; the timeout keeps its reward
    assert not att.loc[("serve-api", "baseline", 1), "passed"]
    assert att.loc[("serve-api", "real", 0), "no_fair_attempt"]
    plan = fast_plan.model_copy(update={"secondary": [], "interaction": None,
                                        "primary": fast_plan.primary.model_copy(
                                            update={"contrast": "real - baseline"})})
    res = analyze(loaded, plan)
    pr = res.pass_rates.set_index(["cohort", "arm"])["successes"]
    assert pr[("all", "real")] == 4 and pr[("all", "baseline")] == 3
    assert pr[("eligible", "real")] == 3 and pr[("eligible", "baseline")] == 1
    row = res.contrasts.set_index(["contrast", "cohort"]).loc[("real - baseline", "eligible")]
    assert row["estimate_pp"] == pytest.approx(100 * ((1 - 0) + (0.5 - 0.5)) / 2)
    causes = res.errors.set_index("arm")
    assert causes.loc["real", "cause:environment_failed"] == 1
    assert causes.loc["baseline", "cause:verifier_failed"] == 1
    rep = run_cli("report", str(out), "--plan", "default", cwd=REPO)
    assert rep.returncode == 0, rep.stderr
    suite = pd.read_csv(tmp_path / "attempts-report" / "suite.csv").set_index("arm")
    assert suite.loc["baseline", "timeouts"] == 1 and suite.loc["real", "crashes"] == 1


def test_arm_from_agent_and_unmatched_trials(tmp_path):
    job = tmp_path / "job"
    harbor_trial(job, "a", 0, reward=1.0, agent="claude-code")
    harbor_trial(job, "a", 1, reward=0.0, agent="codex")
    records, skipped = import_harbor([job], ArmMapping(arm_from="agent"))
    assert sorted(r.arm for r in records) == ["claude-code", "codex"]
    assert {r.cohort for r in records} == {"all"} and not skipped
    only, skipped = import_harbor([job], ArmMapping(arm_from="agent", arms=(("claude*", "real"),)))
    assert [r.arm for r in only] == ["real"] and len(skipped) == 1


def test_older_flat_verifier_reward(tmp_path):
    folder = harbor_trial(tmp_path / "job", "a", 0, reward=None)
    result = json.loads((folder / "result.json").read_text())
    result["verifier_result"] = {"reward": 1.0}
    (folder / "result.json").write_text(json.dumps(result))
    (record,), _ = import_harbor([tmp_path / "job"], ArmMapping(arm_from="job"))
    assert record.reward == 1.0 and record.passed and record.cause is None


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(InputError, match="no trial result.json"):
        import_harbor([tmp_path], ArmMapping())
    bad = tmp_path / "map.yaml"
    bad.write_text("arm_from: nope\n")
    with pytest.raises(InputError, match="arm_from"):
        load_mapping(bad)
    bad.write_text("arms: [real]\n")
    with pytest.raises(InputError, match="PATTERN: ARM"):
        load_mapping(bad)
    (tmp_path / "j" / "t__1").mkdir(parents=True)
    (tmp_path / "j" / "t__1" / "result.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        import_harbor([tmp_path / "j"], ArmMapping())
