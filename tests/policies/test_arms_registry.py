"""The arms registry and the sham, piece by piece: what is registered and in which order,
which names are refused and with what message, what an arm's build records, and how a
sham family wraps a real one (its timing, its text, never a denial)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.paths import PORTFOLIOS_DIR
from fire_exp.policies import Event
from fire_exp.policies.arms import (
    ARM_REGISTRY,
    ARMS,
    Arm,
    ArmRegistry,
    ShamFamily,
    build_arm,
    generic_sentences,
    generic_text,
    load_controls,
)
from fire_exp.policies.loader import load_portfolio
from fire_exp.policies.model import Coding, Decision, Family, Step, deny, instruct, rule

POOL = ["One two three.", "Four five six seven.", "Eight nine ten eleven twelve.",
        "Thirteen fourteen."]


def start_of(key: str, pool: list[str]) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(pool)


# ---------------------------------------------------------------- the sentence pool
def test_the_pool_skips_comments_and_blank_lines_and_strips_each_sentence(tmp_path: Path) -> None:
    (tmp_path / "sham_text.md").write_text("# a heading\n\n  First one.  \n#x\nSecond.\n\n"
                                           "\tThird.\n", encoding="utf-8")
    assert generic_sentences(tmp_path) == ["First one.", "Second.", "Third."]


def test_a_missing_or_short_pool_is_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        generic_sentences(tmp_path)
    assert str(err.value) == (f"{tmp_path / 'sham_text.md'}: <file>: missing (the sham needs "
                              "its generic text pool)")
    (tmp_path / "sham_text.md").write_text("A.\n# B.\nC.\n")
    with pytest.raises(InputError) as err:
        generic_sentences(tmp_path)
    assert str(err.value) == (f"{tmp_path / 'sham_text.md'}: <sentences>: needs at least 3 "
                              "generic sentences")


def test_the_pool_is_read_as_utf8(tmp_path: Path) -> None:
    (tmp_path / "sham_text.md").write_bytes("Prüfe es.\nÉcris.\nNoch einmal — bitte.\n"
                                            .encode())
    assert generic_sentences(tmp_path)[0] == "Prüfe es."


# ---------------------------------------------------------------- the sham's text
@pytest.mark.parametrize("key", ["a.r", "database_evidence.preserve", "x.y", "enumeration.z"])
def test_the_text_starts_at_the_rules_sentence_and_takes_the_rotation(key: str) -> None:
    start = start_of(key, POOL)
    rotation = [POOL[(start + i) % len(POOL)] for i in range(8)]
    whole = " ".join(rotation)
    for target in (30, 45, 60, 90):
        text = generic_text(target, key, POOL)
        assert 0.8 * target <= len(text) <= 1.2 * target, (target, text)
        assert whole.startswith(text) or whole.startswith(text[:-1] + " "), text
        assert text.endswith(".")


def test_a_sentence_that_overshoots_is_cut_at_a_word_and_closed() -> None:
    pool = ["Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."] * 3
    text = generic_text(20, "k", pool)
    # the most words within 1.2 x 20 = 24 characters (23; one word more is 31), and a period
    assert text == "Alpha beta gamma delta."


def test_the_bounds_are_inclusive_and_the_cut_closes_with_one_period() -> None:
    """At 1.2 x 20 = 24 characters exactly: a whole sentence of 24 is kept, a cut of 24 with
    its period is kept; a sentence ending in '..' loses its own periods before the cut
    (nothing else: not a trailing letter), so it fits with one."""
    exact = "Twenty four characters!!"
    assert len(exact) == 24
    assert generic_text(20, "k", [exact] * 3) == exact
    assert generic_text(20, "k", ["Aaaaa bbbbb ccccc ddddd eeeee."] * 3) == \
        "Aaaaa bbbbb ccccc ddddd."  # 24 with its period; one word more is 30
    assert generic_text(20, "k", ["Aaaaa bbbbb ccccc ddddX.."] * 3) == \
        "Aaaaa bbbbb ccccc ddddX."  # 25 as written, 24 closed with one period


def test_text_already_long_enough_is_not_extended() -> None:
    pool = ["Exactly twenty chars", "x x x x x x x x x x.", "y y y y y y y y y y."]
    key = next(k for k in map(str, range(100)) if start_of(k, pool) == 0)
    assert generic_text(20, key, pool) == "Exactly twenty chars"
    assert generic_text(25, key, pool) == "Exactly twenty chars"  # 20 >= 0.8·25


def test_a_first_sentence_that_cannot_be_cut_short_enough_gives_no_text() -> None:
    pool = ["Incomprehensibilities notwithstanding.", "B b.", "C c."]
    key = next(k for k in map(str, range(100)) if start_of(k, pool) == 0)
    assert generic_text(5, key, pool) == ""


# ---------------------------------------------------------------- the sham family
class Counting(Family):
    """A real family with one deny rule, one instruct rule and a tracker."""

    name = "counting"
    description = "counts"

    def eligible(self, task_text: str) -> bool:
        return "count" in task_text

    def track(self, event: Event, state: dict) -> None:  # type: ignore[override]
        state["seen"] = state.get("seen", 0) + 1

    @rule(["PreToolUse"], limit=None)
    def guard(self, event: Event, state: dict) -> Decision:  # type: ignore[type-arg]
        return deny("Do not run rm; copy first, please.") if "rm" in event.command \
            else Decision("allow")

    @rule(["Stop"], limit=2)
    def nudge(self, event: Event, state: dict) -> Decision:  # type: ignore[type-arg]
        return instruct("Check the count before you stop, twice if needed.")

    def code(self, trajectory, task_text):  # type: ignore[no-untyped-def]
        return Coding(state=bool(trajectory), behavior="count" in task_text)


def test_a_sham_family_keeps_the_real_ones_name_eligibility_tracking_and_coding() -> None:
    real = Counting()
    sham = ShamFamily(real, POOL)
    assert (sham.name, sham.description) == ("counting", "sham of counting")
    assert sham.eligible("count the rows") and not sham.eligible("sort the rows")
    state: dict = {}
    sham.track(Event("Stop", "t"), state)
    assert state == {"seen": 1}
    steps = [Step(index=1, kind="command", command="ls", exit_code=0)]
    assert sham.code(steps, "count") == Coding(state=True, behavior=True)
    assert sham.code([], "sort") == Coding(state=False, behavior=False)


def test_a_sham_rule_fires_when_the_real_one_does_with_generic_text_and_never_denies() -> None:
    real = Counting()
    sham = ShamFamily(real, POOL)
    rules = {r.name: r for r in sham.rules()}
    assert [(r.family, r.name, r.events, r.limit) for r in sham.rules()] == \
        [(r.family, r.name, r.events, r.limit) for r in real.rules()]
    quiet = rules["guard"].decide(Event("PreToolUse", "t", command="ls"), {})
    assert quiet.is_allow and quiet.text == ""
    real_text = "Do not run rm; copy first, please."
    loud = rules["guard"].decide(Event("PreToolUse", "t", command="rm x"), {})
    assert loud == Decision("instruct", generic_text(len(real_text), "counting.guard", POOL))
    stop = rules["nudge"].decide(Event("Stop", "t"), {})
    assert stop == Decision("instruct", generic_text(
        len("Check the count before you stop, twice if needed."), "counting.nudge", POOL))
    assert stop.text != loud.text


# ---------------------------------------------------------------- the registry
def test_the_registered_arms_their_kinds_and_descriptions() -> None:
    assert ARMS == ("real", "sham", "always_verify", "reconsider", "baseline")
    assert [(a, ARM_REGISTRY.get(a).policy_arm, ARM_REGISTRY.get(a).description)
            for a in ARMS] == [
        ("real", True, "the portfolio's families"),
        ("sham", True, "the portfolio's timing with generic review text"),
        ("always_verify", True, "verify at every stop"),
        ("reconsider", True, "a generic request to reconsider"),
        ("baseline", False, "no policy")]
    minus = ARM_REGISTRY.get("real-minus-enumeration")
    assert (minus.name, minus.policy_arm, minus.description) == (
        "real-minus-enumeration", True, "the portfolio with enumeration silenced")


def test_an_unknown_arm_is_refused_listing_the_known_ones() -> None:
    known = "real, sham, always_verify, reconsider, baseline, real-minus-NAME"
    for name in ("nonsense", "real-minus-", "Real"):
        with pytest.raises(InputError) as err:
            ARM_REGISTRY.get(name)
        assert str(err.value) == f"panel.arms: {name}: unknown arm (use some of {known})"


def _arm(name: str) -> Arm:
    return Arm(name, lambda p, c: (), False)


def test_a_name_taken_or_shadowed_by_a_prefix_is_refused() -> None:
    registry = ArmRegistry()
    registry.register(_arm("a"))
    with pytest.raises(ValueError, match=r"^arm 'a' is already registered$"):
        registry.register(_arm("a"))
    registry.register_derived("minus-", lambda rest: _arm(f"minus-{rest}"))
    with pytest.raises(ValueError, match=r"^arm 'minus-x' is already registered$"):
        registry.register(_arm("minus-x"))
    with pytest.raises(ValueError, match=r"^arms named 'minus-'\.\.\. are already registered$"):
        registry.register_derived("minus-", lambda rest: _arm(rest))
    with pytest.raises(ValueError, match=r"^arms named 'a'\.\.\. are already registered$"):
        registry.register_derived("a", lambda rest: _arm(rest))
    registry.register(_arm("b"))  # a fresh name still registers
    assert registry.names() == ("a", "b")
    assert registry.get("minus-q").name == "minus-q"


def test_arms_are_ordered_as_registered_then_by_name() -> None:
    assert ARM_REGISTRY.order(["zeta", "baseline", "real-minus-b", "real", "real-minus-a",
                               "sham"]) == ["real", "sham", "baseline", "real-minus-a",
                                            "real-minus-b", "zeta"]


# ---------------------------------------------------------------- building an arm
def test_a_built_arm_records_its_families_kind_and_sources() -> None:
    portfolio, controls = load_portfolio("fire-core"), load_controls()
    assert controls.path == PORTFOLIOS_DIR / "controls"  # the default folder
    real = build_arm("real", portfolio, controls)
    assert (real.arm, real.families, real.policy_arm, real.portfolio, real.controls) == (
        "real", portfolio.families, True, portfolio.path, controls.path)
    baseline = build_arm("baseline", portfolio, controls)
    assert (baseline.arm, baseline.families, baseline.policy_arm) == ("baseline", (), False)
    verify = build_arm("always_verify", portfolio, controls)
    assert [f.name for f in verify.families] == ["always_verify"]
    sham = build_arm("sham", portfolio, controls)
    assert [type(f) for f in sham.families] == [ShamFamily] * len(portfolio.families)
    assert [f.real for f in sham.families] == list(portfolio.families)  # type: ignore[attr-defined]
    minus = build_arm("real-minus-enumeration", portfolio, controls)
    assert minus.arm == "real-minus-enumeration"
    assert [f.name for f in minus.families] == [f.name for f in portfolio.families]


def test_a_control_the_folder_does_not_define_is_refused_naming_it(tmp_path: Path) -> None:
    controls = tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    (controls / "reconsider.py").unlink()
    with pytest.raises(InputError) as err:
        build_arm("reconsider", load_portfolio("fire-core"), load_controls(controls))
    assert str(err.value) == (f"{load_controls(controls).path}: reconsider: no control family "
                              "of that name (define a family named 'reconsider')")
