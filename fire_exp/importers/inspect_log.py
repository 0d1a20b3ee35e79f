"""Reading an inspect_ai eval log: its header (the eval, its status) and its samples.

Two readers give the same plain dicts. Where ``inspect_ai`` is installed, its own
``inspect_ai.log.read_eval_log`` reads the file (any log version it knows). Otherwise the
file format is read directly, as inspect_ai writes it:

- ``.json``: one JSON object, the ``EvalLog`` (``version``, ``status``, ``eval``, ``plan``,
  ``results``, ``stats``, ``error``, ``samples``, ...);
- ``.eval``: a zip archive whose members are JSON: ``header.json`` (the ``EvalLog``
  without its samples, written when the eval ends), ``_journal/start.json`` (``eval`` and
  ``plan``, written first: a log without a header never finished, its status is
  ``started``), and one ``samples/ID_epoch_N.json`` per sample. Members are deflated
  (older inspect_ai) or zstd-compressed (zip method 93, as inspect_ai 0.3.285 writes
  them), which needs the ``zstandard`` package (installed with ``fire-exp[inspect]``).
"""

from __future__ import annotations

import importlib.util
import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fire_exp.errors import InputError
from fire_exp.files import load_json, parse_json

__all__ = ["SAMPLE_KEYS", "InspectLog", "read_log"]

# The sample fields the importer reads; the rest (messages, events, store) stays unread.
SAMPLE_KEYS = ("id", "epoch", "input", "target", "scores", "metadata", "error", "limit",
               "model_usage", "total_time", "working_time", "started_at", "completed_at",
               "uuid", "invalidation")
_ZSTD = 93  # the zip compression method number of Zstandard (APPNOTE 4.4.5)
_FIX = "pass an eval log inspect_ai wrote (.eval or .json), e.g. from logs/"

Reader = Literal["auto", "inspect_ai", "format"]


@dataclass(frozen=True)
class InspectLog:
    """One eval log, read.

    Attributes:
        path: the log file.
        header: the ``EvalLog`` without ``samples`` (``status``, ``eval``, ``results``...).
        samples: each sample's :data:`SAMPLE_KEYS`, as JSON values.
        reader: which reader read it (``inspect_ai 0.3.x`` or ``file format``).
    """

    path: Path
    header: dict[str, Any]
    samples: list[dict[str, Any]]
    reader: str


def read_log(path: Path, reader: Reader = "auto") -> InspectLog:
    """Read an eval log with inspect_ai's reader (``auto`` where it is installed, or
    ``inspect_ai``) or the file format (``format``).

    Raises:
        InputError: a missing file, not an eval log, a member that is not JSON.
    """
    if not path.is_file():
        raise InputError(path, "<file>", "no such eval log", _FIX)
    if path.suffix not in (".eval", ".json"):
        raise InputError(path, "<file>", "an inspect_ai eval log ends in .eval or .json", _FIX)
    if reader == "inspect_ai" or (reader == "auto" and importlib.util.find_spec("inspect_ai")):
        return _read_with_inspect(path)
    header, samples = _read_eval(path) if path.suffix == ".eval" else _read_json(path)
    return InspectLog(path, header, [_kept(s) for s in samples], "file format")


def _kept(sample: Any) -> dict[str, Any]:
    if not isinstance(sample, dict):
        raise InputError("<sample>", "<json>", "a sample is not a JSON object")
    return {k: sample.get(k) for k in SAMPLE_KEYS}


def _read_with_inspect(path: Path) -> InspectLog:
    try:
        import inspect_ai
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise InputError(path, "<reader>", f"inspect_ai is not installed: {exc}",
                         "pip install 'fire-exp[inspect]', or read the file format "
                         "(--reader format)") from exc
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai raises many kinds; each means "not a log I read"
        raise InputError(path, "<file>", f"inspect_ai could not read it: {exc!s:.300}",
                         _FIX) from exc
    header = log.model_dump(mode="json", exclude={"samples", "reductions"}, exclude_none=True)
    samples = [s.model_dump(mode="json", include=set(SAMPLE_KEYS), exclude_none=True)
               for s in log.samples or []]
    return InspectLog(path, header, [_kept(s) for s in samples],
                      f"inspect_ai {inspect_ai.__version__}")


def _read_json(path: Path) -> tuple[dict[str, Any], list[Any]]:
    raw = load_json(path, fix=_FIX)
    if not isinstance(raw, dict) or not isinstance(raw.get("eval"), dict):
        raise InputError(path, "eval", "missing: not an inspect_ai eval log", _FIX)
    samples = raw.pop("samples", None) or []
    if not isinstance(samples, list):
        raise InputError(path, "samples", "expected a list of samples", _FIX)
    return raw, samples


def _read_eval(path: Path) -> tuple[dict[str, Any], list[Any]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(path, "<file>", f"not a .eval log (not a zip archive: {exc})",
                         _FIX) from exc
    with archive:
        names = set(archive.namelist())
        if "header.json" in names:
            header = _member(archive, path, "header.json")
        elif "_journal/start.json" in names:  # the eval never finished writing its log
            header = {"status": "started", **_member(archive, path, "_journal/start.json")}
        else:
            raise InputError(path, "header.json", "missing, and no _journal/start.json: not "
                             "an inspect_ai .eval log", _FIX)
        samples = [_member(archive, path, name) for name in sorted(names)
                   if name.startswith("samples/") and name.endswith(".json")]
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise InputError(path, "header.json", "has no 'eval': not an inspect_ai eval log", _FIX)
    return header, samples


def _member(archive: zipfile.ZipFile, path: Path, name: str) -> Any:
    """A JSON member, decompressed by the method its zip entry names."""
    info = archive.getinfo(name)
    if info.compress_type == _ZSTD:
        data = _zstd_member(path, info)
    else:
        try:
            data = archive.read(info)
        except (NotImplementedError, zipfile.BadZipFile, zlib.error) as exc:
            raise InputError(path, name, f"cannot be read: {exc}", _FIX) from exc
    return parse_json(data, f"{path}!{name}", fix=_FIX)


def _zstd_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """Decompress a zstd member from its raw bytes (the standard library of Python < 3.14
    does not know method 93), checking its length and CRC as zipfile does."""
    try:
        import zstandard
    except ImportError:
        raise InputError(path, info.filename, "zstd-compressed, and the zstandard package "
                         "is not installed", "pip install 'fire-exp[inspect]' (or zstandard)"
                         ) from None
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) < 30 or local[:4] != b"PK\x03\x04":
            raise InputError(path, info.filename, "bad local zip header", _FIX)
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw),
                                                            read_across_frames=True)
        data = reader.read()
    except zstandard.ZstdError as exc:
        raise InputError(path, info.filename, f"not valid zstd data: {exc}", _FIX) from exc
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise InputError(path, info.filename, "decompressed length or CRC does not match the "
                         "zip entry (a truncated or corrupt log)", _FIX)
    return bytes(data)

