"""Reading the verifier's reward by the Harbor contract.

A reward is exactly one number in ``reward.txt``, or a JSON object of numbers in
``reward.json`` (its ``"reward"`` key when it has several keys, its only value when it has
one). ``reward.json`` wins over ``reward.txt`` when both exist. Anything else is a verifier
failure, never a zero and never a guess: no file, an empty file, words around the number
(``1 of 5 checks passed``), several numbers, booleans, strings, ``null``, NaN and infinities,
a JSON that is not an object, an object of several keys without ``"reward"``. The message
quotes what the verifier wrote. A reward outside [0, 1] is a verifier failure too: the raw
value is kept in the rewards and the message, never scored.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from fire_exp.files import DuplicateKeyError, json_loads
from fire_exp.records import Cause

REWARD_RANGE = (0.0, 1.0)
_Parsed = tuple[float | None, dict[str, float], Cause | None, str]

# One decimal number, as a verifier prints it: 1, 0.5, .5, 1e-3, -0.3. Not Python's wider
# float() syntax (underscores, "inf", "nan", "infinity").
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_QUOTE_CHARS = 60


def _quote(text: str) -> str:
    """The verifier's text as the record quotes it: stripped, at most 60 characters."""
    text = text.strip()
    return repr(text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "…")


def _failed(message: str) -> _Parsed:
    return None, {}, Cause.VERIFIER_FAILED, message


def _in_range(reward: float, rewards: dict[str, float], source: str) -> _Parsed:
    low, high = REWARD_RANGE
    if low <= reward <= high:
        return reward, rewards, None, source
    return None, rewards, Cause.VERIFIER_FAILED, \
        f"{source}: reward {reward:g} lies outside [{low:g}, {high:g}] (raw value kept)"


def _is_number(value: object) -> bool:
    """A JSON number that is a finite float (``true``/``false`` are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer too large for a float
        return False


def _from_json(text: str) -> _Parsed:
    try:
        data = json_loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, nesting
        reason = (exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                  if isinstance(exc, DuplicateKeyError) else "unreadable")
        return _failed(f"reward.json is not JSON ({reason}): it holds {_quote(text)}")
    if not isinstance(data, dict) or not data:
        return _failed(f"reward.json must be a JSON object of numbers such as "
                       f'{{"reward": 1}}; it holds {_quote(text)}')
    for key, value in data.items():
        if not _is_number(value):
            return _failed(f"reward.json: {key!r} is {_quote(json.dumps(value))}, not a "
                           "finite number")
    rewards = {key: float(value) for key, value in data.items()}
    if "reward" in rewards:
        return _in_range(rewards["reward"], rewards, "reward.json")
    if len(rewards) == 1:
        return _in_range(next(iter(rewards.values())), rewards, "reward.json")
    return _failed(f"reward.json has several keys ({', '.join(sorted(rewards))}) and no "
                   f'"reward": it holds {_quote(text)}')


def _from_txt(text: str) -> _Parsed:
    stripped = text.strip()
    if not stripped:
        return _failed("reward.txt is empty")
    if not _NUMBER.fullmatch(stripped):
        return _failed(f"reward.txt must hold exactly one number; it holds {_quote(text)}")
    value = float(stripped)
    if not math.isfinite(value):  # 1e999
        return _failed(f"reward.txt: {_quote(text)} is not a finite number")
    return _in_range(value, {"reward": value}, "reward.txt")


def parse_reward(json_text: str | None, txt_text: str | None) -> _Parsed:
    """Decide the reward from the contents of reward.json and reward.txt (None: absent).

    Returns:
        (reward, all rewards, failure cause or None, message). A failure gives reward None
        and ``verifier_failed`` with a message quoting what the verifier wrote; a reward
        outside [0, 1] keeps the raw value in the rewards.

    >>> parse_reward(None, "5")[2:]
    (<Cause.VERIFIER_FAILED: 'verifier_failed'>, 'reward.txt: reward 5 lies outside [0, 1] (raw value kept)')
    >>> parse_reward(None, "1 of 5 checks passed")[3]
    "reward.txt must hold exactly one number; it holds '1 of 5 checks passed'"
    >>> parse_reward('{"reward": 0, "tests": 1}', "1")[:2]
    (0.0, {'reward': 0.0, 'tests': 1.0})
    """
    if json_text is not None:
        return _from_json(json_text)
    if txt_text is not None:
        return _from_txt(txt_text)
    return _failed("the verifier wrote no reward.json or reward.txt")


def read_reward_dir(verifier_dir: Path) -> _Parsed:
    """Read the reward files from a host folder (``logs/verifier``)."""
    def text(name: str) -> str | None:
        path = verifier_dir / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    return parse_reward(text("reward.json"), text("reward.txt"))
