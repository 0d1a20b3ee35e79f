"""Preregistration: freeze a panel's hashes before the first attempt, and verify them.

The manifest (``panels/NAME.prereg.json``) holds the SHA-256 of every task (content
digest), every policy and control source, the analysis plan, the agent, environment and
panel configs, the randomized schedule, and the harness version. ``fire-exp run``
recomputes each one and refuses to start if anything differs, naming the changed file and
both hashes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fire_exp import __version__
from fire_exp.errors import InputError, PreregistrationError
from fire_exp.records import now_iso
from fire_exp.runner.build import Panel
from fire_exp.runner.schedule import schedule_digest
from fire_exp.tasks.model import task_files

FORMAT = "fire-exp-prereg/1"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def panel_hashes(panel: Panel) -> dict[str, dict[str, str]]:
    """Every frozen item: ``key -> {"path": where it lives, "sha256": its hash}``."""
    items: dict[str, dict[str, str]] = {}
    for name, task in sorted(panel.tasks.items()):
        items[f"task:{name}"] = {"path": str(task.path), "sha256": task.digest}
    for kind, portfolio in (("policy", panel.portfolio), ("control", panel.controls)):
        for file, digest in sorted(portfolio.sources.items()):
            items[f"{kind}:{file}"] = {"path": str(portfolio.path / file), "sha256": digest}
    sham_text = panel.controls.path / "sham_text.md"
    if sham_text.is_file():
        items["control:sham_text.md"] = {
            "path": str(sham_text), "sha256": hashlib.sha256(sham_text.read_bytes()).hexdigest()}
    items["analysis_plan"] = {"path": str(panel.analysis_plan),
                              "sha256": hashlib.sha256(panel.analysis_plan.read_bytes())
                              .hexdigest()}
    cfg = panel.config
    for key, value in (("agent_config", asdict(cfg.agent)),
                       ("environment_config", asdict(cfg.environment)),
                       ("panel_config", asdict(cfg.panel))):
        items[key] = {"path": f"configs/{key.split('_')[0]}",
                      "sha256": _sha(json.dumps(value, sort_keys=True, default=list))}
    items["schedule"] = {"path": f"schedule (seed {cfg.seed})",
                         "sha256": schedule_digest(panel.schedule)}
    items["harness"] = {"path": f"fire-exp {__version__}", "sha256": _sha(__version__)}
    return items


def task_file_hashes(path: Path) -> dict[str, str]:
    """SHA-256 of each file of a task, so a refusal can name the file that changed."""
    return {f.relative_to(path).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in task_files(path)}


def _changed_task_file(manifest: dict[str, Any], name: str, path: Path) -> str | None:
    """The first file of task ``name`` whose bytes differ from the manifest, if recorded."""
    frozen = (manifest.get("task_files") or {}).get(name)
    if not isinstance(frozen, dict):
        return None
    current = task_file_hashes(path)
    for rel in sorted(set(frozen) | set(current)):
        if frozen.get(rel) != current.get(rel):
            state = "added" if rel not in frozen else "removed" if rel not in current else \
                "changed"
            return f"{path / rel} ({state})"
    return None


def build_manifest(panel: Panel) -> dict[str, Any]:
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
        "schedule": [asdict(s) for s in panel.schedule],
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


def read_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, "<json>", f"not valid JSON: {exc.msg}",
                         "re-freeze with `fire-exp freeze`") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT \
            or not isinstance(manifest.get("hashes"), dict):
        raise InputError(path, "format", f"not a {FORMAT} manifest",
                         "re-freeze with `fire-exp freeze`")
    return manifest


def verify_manifest(panel: Panel, path: Path) -> dict[str, Any]:
    """Recompute every hash of ``panel`` and compare with the manifest at ``path``.

    Raises:
        PreregistrationError: naming the first changed item, its file and both hashes.
    """
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
            raise PreregistrationError(
                f"{path}: {where} changed since freezing ({key}): frozen sha256 "
                f"{old['sha256'][:16]}…, now {new['sha256'][:16]}…. Restore it, or re-freeze "
                "the panel (a new preregistration) before running")
    return manifest
