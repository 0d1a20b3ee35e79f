"""Compose the Hydra config for the subcommands that take overrides."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from fire_exp.config import RunConfig, run_config_from_dict
from fire_exp.errors import FireExpError, InputError
from fire_exp.files import load_yaml
from fire_exp.paths import CONFIG_DIR


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Convert Hydra's DictConfig to the typed RunConfig, once, at the edge (with the file
    each config group was chosen from)."""
    from hydra.core.hydra_config import HydraConfig

    data: Any = OmegaConf.to_container(cfg, resolve=True)
    choices = ({k: str(v) for k, v in HydraConfig.get().runtime.choices.items() if v}
               if HydraConfig.initialized() else {})
    return run_config_from_dict(data, choices)


def hydra_main(prog: str, argv: list[str], body: Callable[[RunConfig], int]) -> int:
    """Run ``body`` under Hydra with ``argv`` as overrides (``-m`` for multirun).

    A FireExpError inside a job prints one line and exits with status 2.
    """
    status = {"code": 0}

    @hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
    def _app(cfg: DictConfig) -> None:
        from fire_exp.cli import UNREADABLE

        try:
            code = body(to_run_config(cfg))
        except (FireExpError, OSError, *UNREADABLE) as exc:
            from fire_exp.cli import error_line

            print(error_line(prog, exc), file=sys.stderr)
            raise SystemExit(2) from None
        status["code"] = max(status["code"], code)

    try:
        check_before_compose(argv)
    except FireExpError as exc:
        from fire_exp.cli import error_line

        print(error_line(prog, exc), file=sys.stderr)
        raise SystemExit(2) from None
    saved = sys.argv
    sys.argv = [f"fire-exp {prog}", *argv]
    try:
        _app()
    except SystemExit as exc:
        hint = override_hint(argv) if exc.code == 1 else None  # Hydra refused an override
        if hint is None:
            raise
        print(f"fire-exp {prog}: error: {hint}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        sys.argv = saved
    return status["code"]


_GROUPS = ("panel", "agent", "environment", "executor")


def check_before_compose(argv: list[str]) -> None:
    """What Hydra would refuse in eleven lines, or take in a meaning the user does not
    see, refused here in one: a config file with a key written twice (checked before
    Hydra composes it; its loader would refuse it with a traceback-like message), and a
    group option that does not exist (``environment=nonexistent``, ``panel=Demo``), with
    the option meant.

    Raises:
        InputError: naming the file and line, or the override and the options there are.
    """
    from fire_exp.analysis.plan import did_you_mean

    for path in sorted([CONFIG_DIR / "config.yaml", *CONFIG_DIR.glob("*/*.yaml")]):
        load_yaml(path, "keep one of the keys")
    multirun = any(a in ("-m", "--multirun") for a in argv)
    for arg in argv:
        group, eq, value = arg.lstrip("+").partition("=")
        folder = CONFIG_DIR / group
        if not eq or "." in group or "/" in group or arg.startswith("~") \
                or not folder.is_dir():
            continue
        options = sorted(p.stem for p in folder.glob("*.yaml"))
        if not options:  # a folder of configs/ that is not a config group
            continue
        for option in value.split(",") if multirun else [value]:
            if option not in options:
                raise InputError(f"configs/{group}", arg, f"no {group} config {option!r}",
                                 did_you_mean(option, options))


def override_hint(argv: list[str]) -> str | None:
    """The one line for an override naming a key the config lacks (``panel.atempts=3``),
    with the key meant; None when every key exists (Hydra refused for another reason).
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    overrides = [a for a in argv if "=" in a and not a.startswith(("+", "~", "-"))]
    choices = [a for a in overrides if a.split("=", 1)[0] in _GROUPS]
    try:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=choices)
    except Exception:  # noqa: BLE001 - a bad group choice: Hydra's own message stands
        return None
    finally:
        GlobalHydra.instance().clear()
    for override in overrides:
        key = override.split("=", 1)[0]
        node: Any = cfg
        for depth, part in enumerate(key.split(".")):
            if not isinstance(node, DictConfig):
                break
            if part not in node:
                close = difflib.get_close_matches(part, [str(k) for k in node], n=1)
                prefix = ".".join(key.split(".")[:depth] + [close[0]]) if close else ""
                meant = f"did you mean {prefix}=...? " if close else ""
                return (f"{key}: no such key in the config ({meant}a new key is added "
                        f"with +{key}=...)")
            node = node[part]
    return None
