"""Import inspect_ai eval logs as a fire-exp attempts file (docs/importers.md).

Every sample of every log becomes one attempt: task = the sample id (``TASK/ID`` where an
arm holds samples of several tasks), replicate = epoch - 1, arm from the mapping over any
field of the log by dotted path (``eval.model``, ``eval.task_args.X``, ``eval.solver``,
``eval.metadata.X``, ``sample.metadata.X``) or a short name (``log``, ``task``,
``model``). Nothing is absorbed: a log whose eval did not succeed is refused (or, with
``partial``, its samples that never ran are written as failed attempts), the same sample
and epoch under one arm from two different runs is refused, a scorer the logs do not have
is refused naming the ones they have, and a sample without a score is an attempt with no
reward (cause ``verifier_failed``, unless its error or limit says more).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError
from fire_exp.files import control_character
from fire_exp.importers.contract import Imported
from fire_exp.importers.inspect_log import InspectLog, Reader, read_log
from fire_exp.importers.inspect_sample import Placement, SampleRef, Scorer, sample_record
from fire_exp.importers.mapping import ArmFields, ArmMapping, field_value, with_order
from fire_exp.records import AttemptRecord

__all__ = ["FIELDS", "InspectImporter", "import_inspect", "log_files"]

FIELDS = ArmFields(("log", "task", "model"), "the eval log (eval., plan., metadata., sample.)",
                   "eval.task_args.arm, eval.model or sample.metadata.arm", "model")


def log_files(sources: Sequence[Path]) -> list[Path]:
    """The logs named, a folder standing for its ``*.eval`` and ``*.json`` files (less
    inspect_ai's ``logs.json`` index)."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            found = sorted(p for p in source.iterdir() if p.suffix in (".eval", ".json")
                           and p.name != "logs.json")
            if not found:
                raise InputError(source, "<folder>", "holds no .eval or .json log",
                                 "pass inspect_ai's log folder or its log files")
            files += found
        else:
            files.append(source)
    return files


def _value(log: InspectLog, sample: dict[str, Any], arm_from: str) -> str:
    """The value of ``arm_from`` for one sample of ``log``."""
    spec = log.header.get("eval") or {}
    if arm_from == "log":
        return log.path.stem
    if arm_from in ("task", "model"):
        return str(spec.get(arm_from) or "")
    if arm_from.startswith("sample."):
        return field_value(sample, arm_from.removeprefix("sample."))
    return field_value(log.header, arm_from)


def choose_scorer(logs: Sequence[InspectLog], named: str | None) -> Scorer:
    """The scorer named (``NAME`` or ``NAME.KEY``), which every log must have; None: the
    one scorer the logs have. Raises InputError naming the scorers there are."""
    per_log = {log.path: _scorers(log) for log in logs}
    every = sorted(set().union(*per_log.values()))
    if named is None:
        if len(every) != 1:
            raise InputError(logs[0].path, "scorer", f"the logs have {len(every)} scorers "
                             f"({', '.join(every) or 'none'}): which one is the reward?",
                             "pass --scorer NAME")
        return Scorer(every[0])
    name, _, key = (named, "", "") if named in every else named.partition(".")
    if name not in every:
        raise InputError(logs[0].path, "scorer", f"unknown scorer {named!r}",
                         f"the logs have: {', '.join(every) or 'none'}")
    for path, names in per_log.items():
        if name not in names:
            raise InputError(path, "scorer", f"this log has no scorer {name!r}",
                             f"it has: {', '.join(sorted(names)) or 'none'}")
    return Scorer(name, key or None)


def _scorers(log: InspectLog) -> set[str]:
    spec, results = log.header.get("eval") or {}, log.header.get("results") or {}
    names = {s.get("name") for s in spec.get("scorers") or [] if isinstance(s, dict)}
    names |= {s.get("name") for s in results.get("scores") or [] if isinstance(s, dict)}
    for sample in log.samples:
        names |= set(sample.get("scores") or {})
    return {str(n) for n in names if n}


def _sample_ref(log: InspectLog, sample: dict[str, Any]) -> SampleRef:
    sid, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sid, bool) or not isinstance(sid, str | int) or sid == "":
        raise InputError(log.path, "samples: id", f"expected a string or integer id, got "
                         f"{sid!r:.60}")
    control = control_character(sid) if isinstance(sid, str) else None
    if control:  # the id is the task: it would be a task of its own that reads as another
        raise InputError(log.path, "samples: id", f"{sid!r} {control}",
                         "fix the sample id in the task's dataset")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise InputError(log.path, f"sample {sid!r}: epoch", f"expected an epoch of 1 or "
                         f"more, got {epoch!r:.60}")
    return SampleRef(log.path, str(sid), epoch)


@dataclass(frozen=True)
class _Chosen:
    log: InspectLog
    sample: dict[str, Any]
    ref: SampleRef
    arm: str


def _check_status(log: InspectLog, partial: bool) -> None:
    status = log.header.get("status")
    if status == "success" or partial:
        return
    error = (log.header.get("error") or {}).get("message")
    raise InputError(log.path, "status", f"the eval is {status!r}"
                     f"{f' ({error:.200})' if error else ''}, so some samples may never have "
                     "run", "rerun it (inspect eval-retry LOG), or pass --partial to import "
                     "the samples it finished and count the rest as failed attempts")


def _missing(log: InspectLog, done: set[tuple[str, int]]) -> list[dict[str, Any]]:
    """Stand-in samples for the (id, epoch) pairs an unfinished eval never wrote."""
    spec = log.header.get("eval") or {}
    ids = (spec.get("dataset") or {}).get("sample_ids")
    epochs = (spec.get("config") or {}).get("epochs") or 1
    if not isinstance(ids, list) or not isinstance(epochs, int):
        raise InputError(log.path, "eval.dataset.sample_ids", "missing: the log does not say "
                         "which samples the eval was to run", "rerun the eval to its end")
    status = log.header.get("status")
    message = (log.header.get("error") or {}).get("message") or f"the eval ended {status} " \
        "before this sample ran"
    kind = "EvalError" if status == "error" else "CancelledError"
    return [{"id": sid, "epoch": e, "error": {"message": f"{kind}: {message}"}}
            for sid in ids for e in range(1, epochs + 1) if (str(sid), e) not in done]


def _samples(log: InspectLog, partial: bool) -> tuple[list[dict[str, Any]], str | None]:
    _check_status(log, partial)
    if log.header.get("status") == "success":
        return log.samples, None
    done = {(str(s.get("id")), s.get("epoch")) for s in log.samples}
    missing = _missing(log, done)  # type: ignore[arg-type]
    return log.samples + missing, (f"{log.path}: the eval is {log.header.get('status')}: "
                                   f"{len(missing)} sample-epoch(s) it never ran written as "
                                   "failed attempts (no fair attempt)")


def _choose(logs: Iterable[InspectLog], mapping: ArmMapping, partial: bool,
            notes: list[str], skipped: list[str]) -> list[_Chosen]:
    """Every sample with an arm, once: a sample read twice (its uuid) counted once, the same
    (arm, sample, epoch) from two runs refused."""
    seen: dict[tuple[str, str, str, int], tuple[Path, Any]] = {}
    chosen = []
    for log in logs:
        samples, note = _samples(log, partial)
        notes += [note] if note else []
        for sample in samples:
            ref = _sample_ref(log, sample)
            arm = mapping.arm({mapping.arm_from: _value(log, sample, mapping.arm_from)})
            if arm is None:
                skipped.append(f"{log.path} sample {ref.id!r} epoch {ref.epoch}")
                continue
            key = (arm, str((log.header.get("eval") or {}).get("task")), ref.id, ref.epoch)
            if key in seen:
                first, uuid = seen[key]
                if uuid is not None and uuid == sample.get("uuid"):
                    notes.append(f"{log.path}: {ref.where('uuid')} also read from {first}: "
                                 "the same sample, counted once")
                    continue
                raise InputError(log.path, ref.where("id"), f"arm {arm!r} already has this "
                                 f"sample and epoch from another run, in {first}",
                                 "pass one of the two logs, or map them to different arms")
            seen[key] = (log.path, sample.get("uuid"))
            chosen.append(_Chosen(log, sample, ref, arm))
    return chosen


def import_inspect(sources: Sequence[Path], mapping: ArmMapping, run: str = "inspect", *,
                   scorer: str | None = None, partial: bool = False,
                   reader: Reader = "auto") -> Imported:
    """The attempts of inspect_ai eval logs (module docstring). Raises InputError."""
    logs = [read_log(p, reader) for p in log_files(sources)]
    if not any(_value(log, s, mapping.arm_from) for log in logs for s in log.samples or [{}]):
        raise InputError(logs[0].path, mapping.arm_from, "no log or sample has this field",
                         f"eval keys: {', '.join(sorted(logs[0].header.get('eval') or {}))}")
    score = choose_scorer(logs, scorer)
    notes: list[str] = []
    skipped: list[str] = []
    chosen = _choose(logs, mapping, partial, notes, skipped)
    tasks: dict[str, set[str]] = {}
    for c in chosen:
        tasks.setdefault(c.arm, set()).add(str(c.log.header["eval"].get("task")))
    prefix = any(len(names) > 1 for names in tasks.values())
    records = [_record(c, score, mapping, run, prefix) for c in chosen]
    ordered = sorted(with_order(records), key=lambda r: (r.task, r.replicate, r.order))
    return Imported(ordered, skipped, notes)


def _record(c: _Chosen, scorer: Scorer, mapping: ArmMapping, run: str,
            prefix: bool) -> AttemptRecord:
    spec = c.log.header.get("eval") or {}
    task = f"{spec.get('task')}/{c.ref.id}" if prefix else c.ref.id
    steps = (c.log.header.get("plan") or {}).get("steps") or []
    agent = spec.get("solver") or "+".join(str(s.get("solver")) for s in steps) or "inspect"
    sandbox = spec.get("sandbox")
    environment = sandbox.get("type") if isinstance(sandbox, dict) else \
        sandbox[0] if isinstance(sandbox, list) and sandbox else sandbox  # older: [type, config]
    packages = spec.get("packages") or {}
    place = Placement(run, task, c.arm, mapping.cohort(task), mapping.pass_threshold,
                      str(agent), str(environment or "inspect"), spec.get("model"),
                      {str(k): str(v) for k, v in packages.items()})
    return sample_record(c.sample, c.ref, scorer, place)


class InspectImporter:
    """``fire-exp import inspect LOG...``: inspect_ai eval logs, one attempt per sample and
    epoch."""

    kind = "inspect"
    summary = "inspect_ai eval logs (.eval or .json; a folder stands for its logs)"
    sources = "inspect_ai eval log(s) or log folder(s)"
    arm_fields = FIELDS

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        """``--scorer``, ``--partial``, ``--reader``."""
        parser.add_argument("--scorer", metavar="NAME[.KEY]", default=None,
                            help="the scorer whose value is the reward (default: the only "
                                 "one; KEY picks a value of a dict-valued score)")
        parser.add_argument("--partial", action="store_true",
                            help="import logs of a cancelled or errored eval; the samples "
                                 "it never ran become failed attempts")
        parser.add_argument("--reader", choices=["auto", "inspect_ai", "format"],
                            default="auto", help="read with inspect_ai's reader (auto: "
                            "where installed) or the file format")

    def default_run(self, sources: Sequence[Path]) -> str:
        """``inspect``: one run for every log, as the analysis reads one run per file."""
        return "inspect"

    def read(self, sources: Sequence[Path], mapping: ArmMapping, run: str,
             options: argparse.Namespace) -> Imported:
        """Every sample of the logs (:func:`import_inspect`)."""
        return import_inspect(sources, mapping, run, scorer=options.scorer,
                              partial=options.partial, reader=options.reader)
