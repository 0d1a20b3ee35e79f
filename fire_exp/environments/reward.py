"""Reading the verifier's reward by the Harbor contract.

``reward.json`` (a flat object of finite numbers) wins over ``reward.txt`` (one number).
Neither file, an empty file or a malformed one is a verifier failure, not a zero. So is a
reward outside [0, 1]: the raw value is kept in the rewards and the message, never scored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from fire_exp.records import Cause

REWARD_RANGE = (0.0, 1.0)
_Parsed = tuple[float | None, dict[str, float], Cause | None, str]


def _in_range(reward: float, rewards: dict[str, float], source: str) -> _Parsed:
    low, high = REWARD_RANGE
    if low <= reward <= high:
        return reward, rewards, None, source
    return None, rewards, Cause.VERIFIER_FAILED, \
        f"{source}: reward {reward:g} lies outside [{low:g}, {high:g}] (raw value kept)"


def parse_reward(json_text: str | None, txt_text: str | None) -> _Parsed:
    """Decide the reward from the contents of reward.json and reward.txt (None: absent).

    Returns:
        (reward, all rewards, failure cause or None, message). A reward outside [0, 1]
        gives (None, the raw rewards, ``verifier_failed``, a message naming the value).

    >>> parse_reward(None, "5")[2:]
    (<Cause.VERIFIER_FAILED: 'verifier_failed'>, 'reward.txt: reward 5 lies outside [0, 1] (raw value kept)')
    """
    if json_text is not None:
        try:
            data = json.loads(json_text)
        except json.JSONDecodeError as exc:
            return None, {}, Cause.VERIFIER_FAILED, f"reward.json is not JSON: {exc.msg}"
        if not isinstance(data, dict) or not data:
            return None, {}, Cause.VERIFIER_FAILED, "reward.json must be a non-empty object"
        rewards: dict[str, float] = {}
        for key, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value):
                return None, {}, Cause.VERIFIER_FAILED, \
                    f"reward.json: {key!r} is not a finite number"
            rewards[key] = float(value)
        reward = rewards.get("reward", next(iter(rewards.values())))
        return _in_range(reward, rewards, "reward.json")
    if txt_text is not None:
        text = txt_text.strip()
        if not text:
            return None, {}, Cause.VERIFIER_FAILED, "reward.txt is empty"
        try:
            value = float(text.split()[0])
        except ValueError:
            return None, {}, Cause.VERIFIER_FAILED, f"reward.txt holds {text[:40]!r}"
        if not math.isfinite(value):
            return None, {}, Cause.VERIFIER_FAILED, "reward.txt is not finite"
        return _in_range(value, {"reward": value}, "reward.txt")
    return None, {}, Cause.VERIFIER_FAILED, "the verifier wrote no reward.json or reward.txt"


def read_reward_dir(verifier_dir: Path) -> tuple[float | None, dict[str, float], Cause | None, str]:
    """Read the reward files from a host folder (``logs/verifier``)."""
    def text(name: str) -> str | None:
        path = verifier_dir / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    return parse_reward(text("reward.json"), text("reward.txt"))
