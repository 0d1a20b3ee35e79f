"""Each arm delivers its own content, and the preregistration freezes every file that shapes it.

For every arm of every bundled panel (the leave-one-family-out arms included), scripted
sessions that arm each fire-core family are fed through the arm as the runner builds it,
and what the agent receives at a deny and at Stop is traced to a source file: the real arm's
texts are string constants of the family's own source, ``reconsider`` and ``always_verify``
each deliver a constant of their own control source and of no other file, the sham's texts
are made of the sentences of ``sham_text.md`` (a copy rewritten with sentences of its own, so
a built-in fallback could not pass), and ``real-minus-F`` delivers exactly what ``real`` does
without F's texts. The expectations come from the source files, never from the arm builder.

Then the preregistration: editing or deleting any file of the portfolio or the controls
after freezing makes the run refuse, naming that file.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import InputError, PreregistrationError
from fire_exp.paths import CONFIG_DIR, PORTFOLIOS_DIR, SUITES_DIR
from fire_exp.policies import Event, Family, PolicyRuntime
from fire_exp.policies.loader import load_portfolio
from fire_exp.runner.build import Panel, build_panel
from fire_exp.runner.prereg import verify_manifest, write_manifest
from fire_exp.tasks.loader import load_task
from tests.conftest import run_cli

BUNDLED_PANELS = sorted(p.stem for p in (CONFIG_DIR / "panel").glob("*.yaml"))
PAPER_ARMS = {"real", "sham", "always_verify", "reconsider", "baseline"}
ABLATION = "real-minus-"
# The sham's pool in the test copy of the controls: sentences no built-in text holds.
SHAM_POOL = [
    "Pause here and look back over the path that brought you to this point.",
    "Ask yourself whether the pieces you produced still agree with one another.",
    "Read what you wrote one more time with a calm and patient eye.",
    "Consider the plain words of the request and weigh them against your result.",
    "Let nothing rest on a guess that a short look could settle for certain.",
    "Carry on in whatever way seems sensible to you once this is done.",
]
# What the bundled sham says on SESSIONS (test_the_sham_texts_are_frozen_with_their_pool).
SHAM_TEXTS_SHA256 = "1f87139f64c67cb5af03f97cfea2423a4151115201c80ce91a4e94db67938678"


# ---------------------------------------------------------------- scripted sessions
@dataclass(frozen=True)
class Session:
    """What an agent does on a task: commands (text, exit code, output) and stops."""

    family: str  # the fire-core family this session arms
    task: str
    steps: tuple[tuple[str, int, str] | None, ...]  # None: the agent asks to stop


def c(command: str, exit_code: int = 0, output: str = "") -> tuple[str, int, str]:
    return (command, exit_code, output)


SESSIONS = [
    Session("service_persistence", "serve-status-page",
            (c("python3 status_server.py &"), c("curl -s http://127.0.0.1:8000/status"), None)),
    Session("deployment_preservation", "deploy-git-hook",
            (c("git -C clone push origin main"), c("rm -rf www/*"), None)),
    Session("database_evidence", "recover-wal-orders",
            (c("sqlite3 evidence/orders.db .dump"), None)),
    Session("exact_replacement", "sanitize-credentials",
            (c("sed -i 's/sk-live-123/<API_KEY>/' config/app.env"), None)),
    Session("latex_final_log", "build-report-log", (c("cd doc && python3 build.py"), None)),
    Session("binary_equivalence", "reimplement-rle",
            (c("cat > rle.py <<'PY'\nprint()\nPY"), c("python3 rle.py < in.1"), None)),
    Session("token_accounting", "count-subset-tokens",
            (c("python3 count.py > answer.txt", 0, "1234"), None)),
    Session("enumeration", "enumerate-lock-codes",
            (c("python3 -c 'print(123)' > codes.txt"), None)),
]

Received = list[tuple[int, str, str, tuple[str, ...]]]  # (step, event, kind, text parts)


def play(families: tuple[Family, ...] | list[Family], session: Session) -> Received:
    """What the agent receives when it acts out ``session`` under ``families``."""
    text = load_task(SUITES_DIR / "fire-mini" / session.task).instruction
    runtime = PolicyRuntime(families, text)
    received: Received = []

    def handle(i: int, event: Event) -> str:
        decision = runtime.handle(event)
        if not decision.is_allow:
            received.append((i, event.name, decision.kind, tuple(decision.text.split("\n\n"))))
        return decision.kind

    handle(-1, Event("SessionStart", text))
    for i, step in enumerate(session.steps):
        if step is None:
            handle(i, Event("Stop", text, step=i))
            continue
        command, exit_code, output = step
        if handle(i, Event("PreToolUse", text, command=command, step=i + 1)) != "deny":
            handle(i, Event("PostToolUse", text, command=command, output=output,
                            exit_code=exit_code, step=i + 1))
    # A policy that raises fails open (allow) and is logged: no arm may do so here.
    errors = [(e.family, e.rule, e.text) for e in runtime.log if e.decision == "error"]
    assert not errors, errors
    return received


def texts(received: Received) -> list[str]:
    return [part for *_, parts in received for part in parts]


# ---------------------------------------------------------------- where a text comes from
def string_constants(path: Path) -> set[str]:
    """Every string literal of a Python source (adjacent literals joined, as Python does)."""
    return set(_literals(path.read_text(encoding="utf-8")))


@functools.cache
def _literals(source: str) -> frozenset[str]:
    """The string literals of ``source`` (parsed once per text: the checks read the same
    few sources hundreds of times)."""
    return frozenset(n.value for n in ast.walk(ast.parse(source))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str))


def source_of(family: str, folder: Path) -> Path:
    """The source file that defines ``family`` (the file holding its name as a literal)."""
    found = [p for p in sorted(folder.glob("*.py")) if family in string_constants(p)]
    assert len(found) == 1, f"family {family!r} is named in {found}"
    return found[0]


def is_sham_text(text: str, pool: list[str]) -> bool:
    """``text`` is pool sentences taken in the pool's order (wrapping round), the last
    possibly cut at a word and closed by '.'."""
    rest, expected = text, None  # expected: the index the next sentence must have
    while rest:
        found = [i for i, s in enumerate(pool) if rest == s or rest.startswith(s + " ")]
        cut = [i for i, s in enumerate(pool)
               if rest.endswith(".") and s.startswith(rest[:-1] + " ")]
        if expected is not None:
            found, cut = [i for i in found if i == expected], [i for i in cut if i == expected]
        if found:
            rest, expected = rest[len(pool[found[0]]):].lstrip(" "), (found[0] + 1) % len(pool)
            continue
        return bool(cut)
    return True


# ---------------------------------------------------------------- panels on copied sources
@functools.cache
def compose_run(*overrides: str) -> RunConfig:
    """The run config of ``overrides`` (composed once per overrides: a RunConfig is
    frozen, and the bundled configs do not change while the tests run)."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return run_config_from_dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Copies of fire-core and the controls, the sham pool rewritten with SHAM_POOL."""
    root = tmp_path_factory.mktemp("sources")
    shutil.copytree(PORTFOLIOS_DIR / "fire-core", root / "fire-core")
    shutil.copytree(PORTFOLIOS_DIR / "controls", root / "controls")
    (root / "controls" / "sham_text.md").write_text(  # comments and blank lines are skipped
        "# the test's own generic sentences\n\n" + "\n\n".join(SHAM_POOL) + "\n# end\n",
        encoding="utf-8")
    return root / "fire-core", root / "controls"


def panel_of(name: str, portfolio: Path, controls: Path, *extra: str) -> Panel:
    return build_panel(compose_run(f"panel={name}", f"panel.portfolio={portfolio}",
                                   f"panel.controls={controls}", *extra))


def arm_families(panel: Panel, arm: str) -> tuple[Family, ...]:
    """The families the runner gives an attempt of ``arm`` in ``panel``."""
    return tuple(panel.arms[arm].families)


@pytest.fixture(scope="module")
def panels(sources: tuple[Path, Path]) -> dict[str, Panel]:
    """Every bundled panel, with its leave-one-family-out arms, on the copied sources."""
    return {name: panel_of(name, *sources, "panel.ablation=true") for name in BUNDLED_PANELS}


def panel_arms() -> list[tuple[str, str]]:
    cases = []
    for name in BUNDLED_PANELS:
        arms = compose_run(f"panel={name}").panel.arms
        families = [f.name for f in load_portfolio("fire-core").families]
        cases += [(name, arm) for arm in [*arms, *(ABLATION + f for f in families)]]
    return cases


def policies_of(panel: str, arm: str) -> str:
    """The policies an arm runs: its own name for a preset arm, its ``policies`` field for
    an arm the panel declares (``none``: it runs no policy)."""
    declared = compose_run(f"panel={panel}").panel.declare.get(arm)
    return arm if declared is None else declared.policies


# ---------------------------------------------------------------- what each arm delivers
def check_real(received: Received, session: Session, portfolio: Path) -> None:
    own = string_constants(source_of(session.family, portfolio))
    every = set().union(*(string_constants(p) for p in portfolio.glob("*.py")))
    assert texts(received), f"real delivered nothing on {session.family}'s session"
    assert set(texts(received)) <= every, "real delivered a text of no portfolio source"
    assert own & set(texts(received)), f"real delivered nothing from {session.family}'s source"


def check_sham(received: Received, real: Received, portfolio: Path) -> None:
    every = set().union(*(string_constants(p) for p in portfolio.glob("*.py")))
    assert [(i, e) for i, e, *_ in received] == [(i, e) for i, e, *_ in real]
    assert all(kind == "instruct" for _, _, kind, _ in received), "the sham never denies"
    for part, real_part in zip(texts(received), texts(real), strict=True):
        assert is_sham_text(part, SHAM_POOL), f"sham text not from sham_text.md: {part!r}"
        assert part not in every
        assert 0.8 * len(real_part) <= len(part) <= 1.2 * len(real_part)


def check_control(received: Received, arm: str, controls: Path, portfolio: Path) -> None:
    own = string_constants(controls / f"{arm}.py")
    others = set().union(*(string_constants(p) for p in [*controls.glob("*.py"),
                                                          *portfolio.glob("*.py")]
                           if p.name != f"{arm}.py"))
    assert [(e, kind) for _, e, kind, _ in received] == [("Stop", "instruct")], received
    (text,) = texts(received)
    assert text in own and text not in others, f"{arm} delivered {text!r}"


def check_ablation(received: Received, real: Received, left_out: list[str]) -> None:
    expected = [(i, e, kind, kept) for i, e, kind, parts in real
                if (kept := tuple(p for p in parts if p not in left_out))]
    assert received == expected


@pytest.mark.parametrize(("panel", "arm"), panel_arms())
def test_every_arm_delivers_the_text_of_its_own_source(
        panel: str, arm: str, panels: dict[str, Panel], sources: tuple[Path, Path]) -> None:
    portfolio, controls = sources
    built = panels[panel]
    real = arm_families(built, "real") if "real" in built.arms else \
        load_portfolio(portfolio).families
    check: dict[str, Callable[[Received, Session, Received], None]] = {
        "real": lambda got, s, r: check_real(got, s, portfolio),
        "sham": lambda got, s, r: check_sham(got, r, portfolio),
        "always_verify": lambda got, s, r: check_control(got, "always_verify", controls,
                                                         portfolio),
        "reconsider": lambda got, s, r: check_control(got, "reconsider", controls, portfolio),
        "baseline": lambda got, s, r: (_ for _ in ()).throw(AssertionError(got)) if got
        else None,
    }
    runs = policies_of(panel, arm)
    check["none"] = check["baseline"]
    if runs.startswith(ABLATION):
        left = load_portfolio(portfolio).family(runs[len(ABLATION):])
        for session in SESSIONS:
            own = texts(play([left], session))
            if session.family == left.name:
                assert own, f"{left.name} does not fire on its own session"
            check_ablation(play(arm_families(built, arm), session), play(real, session), own)
        return
    assert runs in check, f"no expectation for arm {arm!r}: say here what it must deliver"
    for session in SESSIONS:
        check[runs](play(arm_families(built, arm), session), session, play(real, session))


def test_the_two_stop_controls_deliver_different_texts(sources: tuple[Path, Path],
                                                       panels: dict[str, Panel]) -> None:
    built = panels["demo"]
    session = SESSIONS[-1]
    (verify,) = texts(play(arm_families(built, "always_verify"), session))
    (reconsider,) = texts(play(arm_families(built, "reconsider"), session))
    assert verify != reconsider


def test_the_sham_fires_as_often_as_real_and_logs_an_instruction(
        panels: dict[str, Panel]) -> None:
    built = panels["demo"]
    for session in SESSIONS:
        again = Session(session.family, session.task, (*session.steps, *session.steps, None))
        real, sham = (play(arm_families(built, arm), again) for arm in ("real", "sham"))
        assert [(i, e) for i, e, *_ in sham] == [(i, e) for i, e, *_ in real], session.family
    text = load_task(SUITES_DIR / "fire-mini" / "recover-wal-orders").instruction
    runtime = PolicyRuntime(arm_families(built, "sham"), text)
    runtime.handle(Event("PreToolUse", text, command="sqlite3 evidence/orders.db .dump"))
    assert [(e.family, e.decision) for e in runtime.log] == [("database_evidence", "instruct")]


def test_the_sham_texts_are_frozen_with_their_pool() -> None:
    """What the sham says is part of the preregistered arm: the same text for a rule in
    every attempt, from the bundled pool. A change to how it is built fails here (and then
    needs a new preregistration)."""
    portfolio, controls = PORTFOLIOS_DIR / "fire-core", PORTFOLIOS_DIR / "controls"
    built = panel_of("demo", portfolio, controls)
    said = [part for session in SESSIONS
            for part in texts(play(arm_families(built, "sham"), session))]
    pool = [line.strip() for line in (controls / "sham_text.md").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert all(is_sham_text(part, pool) for part in said)
    digest = hashlib.sha256("\n".join(said).encode()).hexdigest()
    assert digest == SHAM_TEXTS_SHA256, digest


def test_an_ablation_arm_of_no_family_is_refused_naming_the_families() -> None:
    families = ", ".join(f.name for f in load_portfolio("fire-core").families)
    with pytest.raises(InputError) as err:
        build_panel(compose_run("panel=demo", "panel.arms=[real,real-minus-nosuch]"))
    assert str(err.value) == ("panel.arms: real-minus-nosuch: the portfolio has no family "
                              f"'nosuch' (families: {families})")


@pytest.mark.parametrize(("pool", "problem"), [
    (None, "<file>: missing (the sham needs its generic text pool)"),
    ("# two sentences only\nOne sentence here.\n\nAnother one.\n",
     "<sentences>: needs at least 3 generic sentences"),
])
def test_a_sham_without_its_pool_is_refused_naming_it(tmp_path: Path, pool: str | None,
                                                      problem: str) -> None:
    controls = tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    sham = controls / "sham_text.md"
    sham.unlink() if pool is None else sham.write_text(pool)
    with pytest.raises(InputError) as err:
        panel_of("demo", PORTFOLIOS_DIR / "fire-core", controls)
    assert str(err.value) == f"{sham}: {problem}"


def test_three_sentences_are_enough_for_a_sham(tmp_path: Path) -> None:
    controls = tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    (controls / "sham_text.md").write_text("\n".join(SHAM_POOL[:3]) + "\n")
    built = panel_of("demo", PORTFOLIOS_DIR / "fire-core", controls)
    said = texts(play(arm_families(built, "sham"), SESSIONS[2]))
    assert said and all(is_sham_text(part, SHAM_POOL[:3]) for part in said)


def test_the_database_family_allows_the_read_only_open_its_text_recommends(
        panels: dict[str, Panel]) -> None:
    session = Session("database_evidence", "recover-wal-orders",
                      (c("sqlite3 -readonly evidence/orders.db .tables"), None))
    assert play(arm_families(panels["demo"], "real"), session) == []


# ---------------------------------------------------------------- the preregistration
def arm_shaping_files() -> list[str]:
    """Every file of the portfolio and the control folders, as ``folder/name``."""
    return [f"{folder}/{p.name}" for folder in ("fire-core", "controls")
            for p in sorted((PORTFOLIOS_DIR / folder).iterdir()) if p.is_file()] + [DATA_FILE]


# A file a family could read beside its source (a word list, a prompt): it shapes the arm.
DATA_FILE = "fire-core/allowlist.txt"


@pytest.fixture
def frozen(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The demo panel on copied sources (and DATA_FILE), frozen: (portfolio, controls,
    manifest)."""
    portfolio, controls = tmp_path / "fire-core", tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "fire-core", portfolio)
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    (tmp_path / DATA_FILE).write_text("centre center\ncolour color\n")
    manifest = tmp_path / "prereg.json"
    write_manifest(panel_of("demo", portfolio, controls), manifest)
    return portfolio, controls, manifest


def refusal(portfolio: Path, controls: Path, manifest: Path) -> str:
    """The one-line refusal of a run of the frozen panel (fails if it would run)."""
    try:
        verify_manifest(panel_of("demo", portfolio, controls), manifest)
    except (PreregistrationError, InputError) as exc:
        return str(exc)
    raise AssertionError("the run was not refused")


def test_the_manifest_hashes_every_file_that_shapes_an_arm(
        frozen: tuple[Path, Path, Path]) -> None:
    portfolio, controls, manifest = frozen
    hashed = {Path(item["path"]) for item in json.loads(manifest.read_text())["hashes"].values()}
    files = {p for folder in (portfolio, controls) for p in folder.iterdir() if p.is_file()}
    assert files <= hashed, f"not frozen: {sorted(map(str, files - hashed))}"


@pytest.mark.parametrize("file", arm_shaping_files())
def test_editing_a_file_that_shapes_an_arm_is_refused_naming_it(
        file: str, frozen: tuple[Path, Path, Path]) -> None:
    portfolio, controls, manifest = frozen
    path = (portfolio if file.startswith("fire-core/") else controls) / file.split("/")[1]
    data = path.read_bytes()
    i = data.index(b"e")  # in a comment or a docstring: the file stays valid
    path.write_bytes(data[:i] + b"E" + data[i + 1:])
    message = refusal(portfolio, controls, manifest)
    assert str(path) in message and "changed since freezing" in message


@pytest.mark.parametrize("file", arm_shaping_files())
def test_deleting_a_file_that_shapes_an_arm_is_refused_naming_it(
        file: str, frozen: tuple[Path, Path, Path]) -> None:
    portfolio, controls, manifest = frozen
    path = (portfolio if file.startswith("fire-core/") else controls) / file.split("/")[1]
    path.unlink()
    message = refusal(portfolio, controls, manifest)
    # A control source's family is missing before the manifest is read: the build refuses,
    # naming the folder and the family the file defined (the file's stem).
    if file.startswith("controls/") and path.suffix == ".py":
        assert message == (f"{path.parent}: {path.stem}: no control family of that name "
                           f"(define a family named {path.stem!r})")
    else:
        assert str(path) in message


def test_an_unchanged_panel_verifies(frozen: tuple[Path, Path, Path]) -> None:
    portfolio, controls, manifest = frozen
    assert verify_manifest(panel_of("demo", portfolio, controls), manifest)["panel"] == "demo"


def test_fire_exp_run_refuses_an_edited_sham_text_naming_it(tmp_path: Path) -> None:
    """The same refusal through the command a user runs, for the file the sham reads."""
    controls = tmp_path / "controls"
    shutil.copytree(PORTFOLIOS_DIR / "controls", controls)
    overrides = ["panel=demo", f"panel.controls={controls}", "panel.attempts=1",
                 f"prereg={tmp_path / 'prereg.json'}", f"results_dir={tmp_path / 'results'}",
                 "run=t", "analyze=false"]
    assert run_cli("freeze", *overrides).returncode == 0
    sham = controls / "sham_text.md"
    sham.write_text(sham.read_text().replace("Please take", "Please do take"))
    proc = run_cli("run", *overrides)
    assert proc.returncode == 2, proc.stderr
    assert f"{sham} changed since freezing" in proc.stderr
    assert not (tmp_path / "results").exists()
