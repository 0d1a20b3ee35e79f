"""Component settings: each environment, agent and executor declares one typed model,
checked once where the registry builds the component, with one line naming the config
file, the key and the fix; the bottom layer (``config.py``) knows no component's keys."""

from __future__ import annotations

import ast
import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fire_exp.config import ComponentConfig, PanelConfig, run_config_from_dict
from fire_exp.errors import InputError
from fire_exp.registry import REGISTRY, Registry
from fire_exp.runner.build import agent_factory, environment_factory, make_executor
from fire_exp.settings import Settings

CONFIG_PY = Path(__file__).resolve().parents[1] / "fire_exp" / "config.py"
COMPONENTS = [(kind, name) for kind in ("agent", "environment", "executor")
              for name in REGISTRY.names(kind)]


def _composed(**groups: dict[str, Any]) -> dict[str, Any]:
    return {"panel": {"name": "p", "suite": "s", "eligible": ["t"], "arms": ["real"],
                      "attempts": 1, "portfolio": "fire-core"},
            "agent": {"name": "simulated"}, "environment": {"name": "local"},
            "executor": {"name": "local"}, "run": "r", **groups}


@pytest.mark.parametrize(("kind", "component", "build", "line"), [
    ("agent", {"name": "simulated", "think_s": -0.5}, agent_factory,
     "configs/agent/simulated.yaml: think_s: -0.5 is below 0 (set agent.think_s to 0 or more)"),
    ("environment", {"name": "docker", "pids_limit": 0}, environment_factory,
     "configs/environment/docker.yaml: pids_limit: 0 is below 1 "
     "(set environment.pids_limit to 1 or more)"),
    ("executor", {"name": "local", "workers": 0}, make_executor,
     "configs/executor/local.yaml: workers: 0 is below 1 (set executor.workers to 1 or more)"),
])
def test_a_bad_setting_is_refused_where_the_component_is_built(
        kind: str, component: dict[str, Any], build: Any, line: str) -> None:
    config = run_config_from_dict(_composed(**{kind: component}))  # the bottom layer passes it
    with pytest.raises(InputError) as err:
        build(getattr(config, kind))
    assert str(err.value) == line


@pytest.mark.parametrize(("kind", "name"), COMPONENTS)
def test_every_registered_component_declares_its_settings(kind: str, name: str) -> None:
    model = getattr(REGISTRY.get(kind, name), "settings_model", None)
    assert isinstance(model, type) and issubclass(model, Settings)
    assert REGISTRY.settings(kind, name) is model


def _constructor(factory: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters a class's constructors take, down its bases while one passes
    ``**kwargs`` on (``CodexAgent`` to ``CodingCliAgent``)."""
    found: dict[str, inspect.Parameter] = {}
    for cls in factory.__mro__:
        if "__init__" not in vars(cls):
            continue
        params = inspect.signature(cls.__init__).parameters.values()
        found |= {p.name: p for p in params if p.name not in found
                  and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    skip = {"self", "task", "attempt_dir", "attempt_id"}
    return {k: v for k, v in found.items() if k not in skip}


@pytest.mark.parametrize(("kind", "name"), COMPONENTS)
def test_the_constructor_takes_the_models_keys_with_its_defaults(kind: str, name: str) -> None:
    """Defaults are written once, in the model: a constructor's own default that differs
    (a drifted copy) or a key only one of them takes fails here."""
    factory = REGISTRY.get(kind, name)
    model = REGISTRY.settings(kind, name)
    taken = _constructor(factory)
    assert sorted(taken) == sorted(model.model_fields)
    defaults = model()
    for key, parameter in taken.items():
        default = getattr(defaults, key)
        expected = None if isinstance(default, BaseModel) else default
        same = list(parameter.default) if isinstance(parameter.default, tuple) \
            else parameter.default
        assert same == expected and type(same) is type(expected), key


def _fields(model: type[BaseModel]) -> set[str]:
    names = set(model.model_fields)
    for field in model.model_fields.values():
        for arg in (*getattr(field.annotation, "__args__", ()), field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                names |= _fields(arg)
    return names


def test_the_bottom_layer_names_no_components_key() -> None:
    """``config.py`` reads a component's name and passes the rest on: no key of any
    component's settings, and no rule by a key's shape (``*_s``, ``*timeout*``)."""
    keys = set().union(*(_fields(REGISTRY.settings(k, n)) for k, n in COMPONENTS))
    tree = ast.parse(CONFIG_PY.read_text())
    words = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str)}
    words |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    words |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    words -= {f.name for f in fields(PanelConfig)}  # the panel's own keys are config.py's
    assert sorted(keys & words) == []
    assert not {w for w in words if w in ("_s", "_sec") or "timeout" in w.lower()}


def test_a_factory_without_a_model_is_checked_by_its_signature() -> None:
    def toy(count: int = 1, label: str | None = None) -> object:
        return object()

    registry = Registry()
    registry.register("agent", "toy", toy)
    model = registry.settings("agent", "toy")
    for params, line in [({"cuont": 2}, "cuont: unknown parameter (use some of count, label)"),
                         ({"count": "2"}, "count: expected a whole number, got '2'"),
                         ({"label": 3}, "label: expected text, got 3")]:
        with pytest.raises(InputError, match=line.replace("(", r"\(").replace(")", r"\)")):
            from fire_exp.settings import check_settings
            check_settings(model, params, where="configs/agent/toy.yaml", group="agent")


def test_an_arms_setting_is_refused_with_the_arms_path() -> None:
    with pytest.raises(InputError) as err:
        agent_factory(ComponentConfig("simulated", {"think_s": 1e6}),
                      group="panel.declare.slow.agent")
    assert str(err.value) == (
        "configs/agent/simulated.yaml: think_s: 1,000,000.0 is above the ceiling 86,400 "
        "(set panel.declare.slow.agent.think_s to 86,400 or less, or set ceilings=false to "
        "lift the ceiling on purpose)")


def test_a_subclass_with_its_own_constructor_is_checked_by_its_signature() -> None:
    from fire_exp.environments.local import LocalEnvironment, LocalSettings

    class Slow(LocalEnvironment):
        def __init__(self, *args: Any, delay: float = 0.0) -> None:
            super().__init__(*args)

    class Same(LocalEnvironment):
        pass

    registry = Registry()
    registry.register("environment", "slow", Slow)
    registry.register("environment", "same", Same)
    assert registry.settings("environment", "same") is LocalSettings
    assert list(registry.settings("environment", "slow").model_fields) == ["delay"]
