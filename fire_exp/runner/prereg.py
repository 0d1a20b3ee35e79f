"""Preregistration: freeze a panel's hashes before the first attempt, and verify them.

The manifest (``panels/NAME.prereg.json``) holds the SHA-256 of every task (content
digest), every file of the policy and control folders (the sources, the sham's sentence
pool, anything a family reads), the analysis plan, each config file byte for
byte and the agent, environment and panel configs as composed (overrides included), the
coding-agent CLI's binary (its SHA-256 and ``--version``), the tasks whose network policy
the box does not enforce (``network_not_enforced``), the randomized schedule, and the
harness's own source (every ``.py`` and ``.sh`` file of the package, hashed per file). ``fire-exp run`` recomputes each one and refuses to start if anything
differs, naming the changed file and both hashes. Freezing and running first check the
analysis plan against the panel, so an invalid plan is never frozen.

Manifests are read by :mod:`fire_exp.manifest` (re-exported here).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fire_exp import __version__
from fire_exp.analysis.dry_run import dry_analysis
from fire_exp.analysis.plan import check_plan_for_panel, load_plan
from fire_exp.analysis.plan_sequential import check_sequential_for_panel
from fire_exp.arms.spec import resolve_agent_config
from fire_exp.config import RunConfig
from fire_exp.environments.capabilities import network_not_enforced
from fire_exp.errors import PreregistrationError
from fire_exp.manifest import FORMAT, read_manifest
from fire_exp.paths import CONFIG_DIR, PACKAGE_DIR
from fire_exp.policies.arms import ARM_REGISTRY, ARMS
from fire_exp.records import now_iso
from fire_exp.runner.build import Panel
from fire_exp.runner.schedule import schedule_digest
from fire_exp.tasks.model import task_files

_CONFIG_GROUPS = ("panel", "agent", "environment")  # what defines the experiment


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def harness_file_hashes() -> dict[str, str]:
    """SHA-256 of each ``.py`` and ``.sh`` file of the installed package (bundled task suites
    aside): the shell scripts relay the policies' answers to an agent CLI in a container.

    >>> "fire_exp/runner/prereg.py" in harness_file_hashes()
    True
    """
    root = PACKAGE_DIR.parent
    files = [f for f in PACKAGE_DIR.rglob("*") if f.suffix in (".py", ".sh")
             and not {"suites", "_data", "__pycache__"} & set(f.relative_to(PACKAGE_DIR).parts)]
    return {f.relative_to(root).as_posix(): _file_sha(f) for f in sorted(files)}


def _digest(hashes: dict[str, str]) -> str:
    return _sha("".join(f"{name} {sha}\n" for name, sha in sorted(hashes.items())))


def config_files(config: RunConfig) -> dict[str, Path]:
    """The config files the run was composed from: ``configs/config.yaml`` and one per group.

    Hydra's choices (recorded in the config at the entry point) name the files; without
    them a group's file is its name's.
    """
    choices = config.choices
    names = {"panel": config.panel.name, "agent": config.agent.name,
             "environment": config.environment.name}
    files = {"config": CONFIG_DIR / "config.yaml"}
    for group in _CONFIG_GROUPS:
        files[group] = CONFIG_DIR / group / f"{choices.get(group, names[group])}.yaml"
    return files


def check_plan(panel: Panel) -> None:
    """Refuse to freeze or run a panel whose analysis plan is invalid for it: checked
    against the panel's arms and cohorts, then run dry on attempts of the panel's shape
    (:func:`fire_exp.analysis.dry_run.dry_analysis`), so the analysis cannot fail later."""
    plan = load_plan(panel.analysis_plan)
    # panel.arms: the configured arms and the leave-one-family-out arms ablation=true adds
    check_plan_for_panel(plan, panel.analysis_plan, list(panel.arms),
                         [*ARMS, *panel.config.panel.declare])
    check_sequential_for_panel(plan.sequential, plan.primary.contrast, panel.analysis_plan,
                               panel.arms)
    dry_analysis(plan, panel.analysis_plan, panel.cohorts, list(panel.arms),
                 panel.config.panel.attempts)


def panel_hashes(panel: Panel) -> dict[str, dict[str, str]]:
    """Every frozen item: ``key -> {"path": where it lives, "sha256": its hash}``."""
    items: dict[str, dict[str, str]] = {}
    for name, task in sorted(panel.tasks.items()):
        items[f"task:{name}"] = {"path": str(task.path), "sha256": task.digest}
    for kind, portfolio in (("policy", panel.portfolio), ("control", panel.controls)):
        for file, digest in sorted(portfolio.sources.items()):
            items[f"{kind}:{file}"] = {"path": str(portfolio.path / file), "sha256": digest}
        # Every other file beside the sources shapes an arm too: the sham's sentence pool
        # (controls/sham_text.md), or any file a family reads.
        for path in sorted(p for p in portfolio.path.iterdir() if p.is_file()):
            if path.name not in portfolio.sources:
                items[f"{kind}:{path.name}"] = {"path": str(path), "sha256": _file_sha(path)}
    items["analysis_plan"] = {"path": str(panel.analysis_plan),
                              "sha256": hashlib.sha256(panel.analysis_plan.read_bytes())
                              .hexdigest()}
    cfg = panel.config
    files = config_files(cfg)
    for group, config_path in files.items():
        items[f"config_file:{group}"] = {"path": str(config_path), "sha256": _file_sha(config_path)}
    for key, value in (("agent_config", asdict(cfg.agent)),
                       ("environment_config", asdict(cfg.environment)),
                       ("panel_config", cfg.panel.as_dict())):
        group = key.split("_")[0]
        items[key] = {"path": f"{files[group]} (values as composed, overrides included)",
                      "sha256": _sha(json.dumps(value, sort_keys=True, default=list))}
    items.update(arm_hashes(panel, files["panel"]))
    items.update(agent_binary_hashes(panel))
    items.update(unenforced_network_items(panel))
    items["schedule"] = {"path": f"schedule (seed {cfg.seed})",
                         "sha256": schedule_digest(panel.schedule)}
    sources = harness_file_hashes()
    items["harness"] = {"path": f"fire-exp {__version__} ({len(sources)} source files)",
                        "sha256": _digest(sources)}
    items.update(served_model_items(panel))  # the weights of a model serve-model serves
    return items


def agent_binary_hashes(panel: Panel) -> dict[str, dict[str, str]]:
    """``agent_binary:NAME`` (the panel's agent) and ``agent_binary:NAME:ARM`` (an arm's
    own): the coding-agent CLI binary the attempts run, its SHA-256, and its ``--version``
    (``version``, shown when it changed). An agent that runs no binary of this machine has
    none."""
    items: dict[str, dict[str, str]] = {}
    for arm, factory in [("", panel.agent), *sorted(panel.arm_agents.items())]:
        identify = getattr(factory.make(), "binary_identity", None)
        environment = panel.environment_for(arm) if arm else panel.environment
        found = identify(environment.capabilities) if callable(identify) else None
        if found is None:
            continue
        key = f"agent_binary:{factory.name}" + (f":{arm}" if arm else "")
        items[key] = {"path": f"{found.path} ({found.version})", "sha256": found.sha256,
                      "version": found.version}
    return items


def unenforced_network_items(panel: Panel) -> dict[str, dict[str, str]]:
    """``network_not_enforced`` (``:ARM`` for an arm's own environment): the tasks whose
    ``network_mode`` the box does not enforce, which run so only because the user said so
    (local's ``allow_network``), named in the manifest. None where every policy is kept."""
    items: dict[str, dict[str, str]] = {}
    for arm, environment in [("", panel.environment), *sorted(panel.arm_environments.items())]:
        names = sorted(name for name, task in panel.tasks.items()
                       if network_not_enforced(task, environment.capabilities))
        if names:
            items["network_not_enforced" + (f":{arm}" if arm else "")] = {
                "path": f"environment={environment.name} does not enforce the network_mode "
                        f"of {len(names)} tasks: {', '.join(names)}",
                "sha256": _sha("\n".join(names))}
    return items


def arm_hashes(panel: Panel, config_file: Path) -> dict[str, dict[str, str]]:
    """What each declared arm changes: ``arm:NAME`` its settings as composed values,
    ``arm_file:NAME:DEST`` each file it places (byte for byte), ``arm_agent:NAME`` its own
    agent's config as composed (and ``arm_agent_file:NAME`` the agent config file it names),
    ``arm_policy:NAME:FILE`` the policy and control sources of a portfolio of its own.
    Presets add nothing: their policies are the panel's portfolio and controls, hashed
    above."""
    items: dict[str, dict[str, str]] = {}
    for name, setup in sorted(panel.setups.items()):
        spec = setup.spec
        items[f"arm:{name}"] = {
            "path": f"{config_file} declare.{name} (values as composed, overrides included)",
            "sha256": _sha(spec.settings_json())}
        for placed in setup.files:
            items[f"arm_file:{name}:{placed.dest}"] = {"path": str(placed.source),
                                                      "sha256": placed.sha256}
        if name in panel.arm_agents:  # its own agent: the config file and values as composed
            agent = panel.arm_agents[name]
            source = config_file if spec.agent_config is None else \
                resolve_agent_config(spec.agent_config, name)
            items[f"arm_agent:{name}"] = {
                "path": f"{source} (agent {agent.name}, values as composed)",
                "sha256": _sha(json.dumps({"name": agent.name, "params": dict(agent.params)},
                                          sort_keys=True, default=list))}
            if spec.agent_config is not None:
                items[f"arm_agent_file:{name}"] = {"path": str(source),
                                                   "sha256": _file_sha(source)}
        arm = panel.arms[name]
        for folder, default in ((arm.portfolio, panel.portfolio.path),
                                (arm.controls, panel.controls.path)):
            if folder is None or folder == default:
                continue
            for file in sorted(f for f in folder.iterdir() if f.is_file()
                               and f.suffix in (".py", ".md")):
                items[f"arm_policy:{name}:{folder.name}/{file.name}"] = {
                    "path": str(file), "sha256": _file_sha(file)}
    return items


def served_model_items(panel: Panel) -> dict[str, dict[str, str]]:
    """``served_model:NAME``: the weights of each model ``fire-exp serve-model`` serves that
    the panel's agent (or an arm's own agent) names as ``agent.model``, by the SHA-256 of
    its GGUF file, checked against the file on this machine (a missing or changed file is
    refused before anything is frozen or run); and ``served_model:NAME:chat_template``, the
    chat template of fire-exp's own it is served with, by the file's SHA-256 (part of what
    the model answers: its prompt and the grammar of its tool calls). Other models are
    named by ``agent_config`` only: fire-exp cannot see their weights."""
    from fire_exp.serve.models import MODELS, gguf_path

    names = {str(panel.config.agent.params.get("model"))}
    names |= {str(agent.params.get("model")) for agent in panel.arm_agents.values()}
    items: dict[str, dict[str, str]] = {}
    for name in sorted(names & set(MODELS)):
        model = MODELS[name]
        items[f"served_model:{name}"] = {"path": f"{gguf_path(model)} ({model.title})",
                                         "sha256": model.sha256}
        template = model.template_path()
        if template is not None:
            items[f"served_model:{name}:chat_template"] = {"path": str(template),
                                                           "sha256": _file_sha(template)}
    return items


def declared_arms(panel: Panel) -> dict[str, Any]:
    """``{"arms": {NAME: what it changes}}`` for a panel that declares arms, for the report
    (the hashes above are what verification compares); ``{}`` for preset arms only."""
    if not panel.setups:
        return {}
    arms = {}
    for name in panel.arms:
        spec = panel.setup_for(name).spec
        description = spec.description or ("" if spec.declared else
                                           ARM_REGISTRY.get(name).description)
        arms[name] = {"description": description, "changes": spec.changes(),
                      "settings": spec.settings()}
    return {"arms": arms}


def task_file_hashes(path: Path) -> dict[str, str]:
    """SHA-256 of each file of a task, so a refusal can name the file that changed."""
    return {f.relative_to(path).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in task_files(path)}


def _first_difference(frozen: dict[str, Any], current: dict[str, str]) -> str | None:
    """The first file (by name) whose hash differs, with how: ``NAME (added|removed|changed)``."""
    for rel in sorted(set(frozen) | set(current)):
        if frozen.get(rel) != current.get(rel):
            state = "added" if rel not in frozen else "removed" if rel not in current else \
                "changed"
            return f"{rel} ({state})"
    return None


def _changed_task_file(manifest: dict[str, Any], name: str, path: Path) -> str | None:
    """The first file of task ``name`` whose bytes differ from the manifest, if recorded."""
    frozen = (manifest.get("task_files") or {}).get(name)
    if not isinstance(frozen, dict):
        return None
    changed = _first_difference(frozen, task_file_hashes(path))
    return None if changed is None else f"{path}/{changed}"


def _changed_harness_file(manifest: dict[str, Any]) -> str | None:
    """The first harness source file that differs from the manifest, if recorded."""
    frozen = manifest.get("harness_files")
    if not isinstance(frozen, dict):
        return None
    return _first_difference(frozen, harness_file_hashes())


def build_manifest(panel: Panel) -> dict[str, Any]:
    """The manifest of ``panel`` (its plan checked first)."""
    check_plan(panel)
    return {
        "format": FORMAT,
        "panel": panel.name,
        "frozen_at": now_iso(),
        "harness_version": __version__,
        "seed": panel.config.seed,
        "config_hash": panel.config.config_hash(),
        "n_attempts": len(panel.schedule),
        "hashes": panel_hashes(panel),
        "task_files": {name: task_file_hashes(task.path)
                       for name, task in sorted(panel.tasks.items())},
        "harness_files": harness_file_hashes(),
        "schedule": [asdict(s) for s in panel.schedule],
        **declared_arms(panel),
    }


def write_manifest(panel: Panel, path: Path) -> dict[str, Any]:
    """Freeze ``panel`` into ``path``; returns the manifest."""
    manifest = build_manifest(panel)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return manifest


def record_power(path: Path, power: dict[str, Any]) -> dict[str, Any]:
    """Add a power analysis (``fire_exp.power.manifest.power_record``) to the manifest at
    ``path`` under ``power``; the hashes, and so verification, are unchanged."""
    manifest = read_manifest(path)
    manifest["power"] = power
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return manifest


def verify_manifest(panel: Panel, path: Path) -> dict[str, Any]:
    """Recompute every hash of ``panel`` and compare with the manifest at ``path``.

    Raises:
        PreregistrationError: naming the first changed item, its file and both hashes.
    """
    check_plan(panel)
    manifest = read_manifest(path)
    frozen: dict[str, dict[str, str]] = manifest["hashes"]
    current = panel_hashes(panel)
    for key in sorted(set(frozen) | set(current)):
        old, new = frozen.get(key), current.get(key)
        if old is None:
            raise PreregistrationError(
                f"{path}: {key} ({new['path']}) is not in the preregistration "  # type: ignore[index]
                "(added after freezing); re-freeze the panel to include it")
        if new is None:
            raise PreregistrationError(
                f"{path}: {key} ({old['path']}) was frozen but is no longer part of the panel")
        if old["sha256"] != new["sha256"]:
            where = new["path"]
            if key.startswith("task:"):
                where = _changed_task_file(manifest, key[5:], Path(new["path"])) or where
            elif key == "harness":
                where = _changed_harness_file(manifest) or where
            elif key.startswith("agent_binary:"):
                where = f"the agent's CLI binary {where}, frozen as {old.get('version')},"
            raise PreregistrationError(
                f"{path}: {where} changed since freezing ({key}): frozen sha256 "
                f"{old['sha256'][:16]}…, now {new['sha256'][:16]}…. Restore it, or re-freeze "
                "the panel (a new preregistration) before running")
    check_schedule_list(panel, manifest, path)
    return manifest


def check_schedule_list(panel: Panel, manifest: dict[str, Any], path: Path) -> None:
    """Refuse a manifest whose written-out schedule is not the schedule it hashes.

    The hashes say the panel is unchanged; the analysis checks every record against the
    ``schedule`` list, so a list edited by hand would refuse the run's records only after
    its last attempt. Checked here, before the first.

    Raises:
        PreregistrationError: naming the manifest and the first entry that differs.
    """
    frozen = manifest.get("schedule")
    current = [asdict(s) for s in panel.schedule]
    if frozen == current:
        return
    if not isinstance(frozen, list):
        where = "schedule"
    else:
        index = next((i for i, (a, b) in enumerate(zip(frozen, current, strict=False))
                      if a != b), min(len(frozen), len(current)))
        where = f"schedule[{index}]"
    raise PreregistrationError(
        f"{path}: {where} differs from the schedule the manifest hashes (edited by hand?); "
        "restore the manifest, or re-freeze the panel before running")
