"""Reading a user's file as text or JSON, with every decoding fault one ``InputError``.

Files fire-exp reads at an entry point (attempts, CSVs, plans, task files, Harbor results,
manifests, pilots) may be anything a user has on disk: bytes that are not UTF-8, JSON
nested deeper than the parser recurses, a 5,000-digit integer Python refuses to convert,
a key written twice in one object or mapping (JSON and YAML keep the last silently: a
record with ``"reward"`` twice, a plan with ``primary:`` twice, would mean what its reader
does not see). Each of these ends here as ``FILE: WHERE: what is wrong (what to do)``, never a
traceback. Like :mod:`fire_exp.records` this module sits at the bottom of the import
graph: it imports only the errors.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from fire_exp.errors import InputError

__all__ = ["INVISIBLE", "DuplicateKeyError", "StrictYamlLoader", "control_character", "decoded",
           "json_loads", "load_json", "load_yaml", "parse_json", "parse_yaml",
           "read_text", "unknown_key_message"]

_UTF8_FIX = "save the file as UTF-8 text"


def decoded(data: bytes, path: Path | str, *, line_offset: int = 0) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped).

    Raises:
        InputError: naming the line and the first byte that is not UTF-8.

    >>> decoded(b"\\xef\\xbb\\xbfok", "f.txt")
    'ok'
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        start = exc.start + bom if exc.object is not data else exc.start
        line = data[:start].count(b"\n") + 1 + line_offset
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff")  # a spreadsheet's "Unicode text"
        raise InputError(path, f"line {line}", f"is not UTF-8 text (byte "
                         f"0x{data[start]:02x} at offset {start}"
                         + ("; it looks like UTF-16" if utf16 else "") + ")",
                         _UTF8_FIX) from None


def read_text(path: Path | str) -> str:
    """The UTF-8 text of ``path`` (see :func:`decoded`); OSErrors propagate."""
    return decoded(Path(path).read_bytes(), path)


def parse_json(text: str | bytes, path: Path | str, where: str = "<json>",
               fix: str = "fix the file") -> Any:
    """Parse JSON, turning every way it can fail into one ``InputError``.

    Besides malformed JSON: nesting past the parser's recursion limit, and an integer
    longer than Python converts (4,300 digits).

    >>> parse_json('{"a": [1]}', "x.json")
    {'a': [1]}
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except DuplicateKeyError as exc:
        raise InputError(path, where if where != "<json>" else _json_key_line(text, exc.key),
                         f"key {exc.key!r} appears twice in one object (JSON keeps the last "
                         "silently)", "keep one of them") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, where, f"not valid JSON: {exc.msg}", fix) from None
    except RecursionError:
        raise InputError(path, where, "JSON nested too deeply to read", fix) from None
    except UnicodeDecodeError:  # bytes given
        raise InputError(path, where, "is not UTF-8 text", _UTF8_FIX) from None
    except ValueError:  # an integer of thousands of digits
        raise InputError(path, where, "holds an integer of more than 4,300 digits", fix) \
            from None


class DuplicateKeyError(ValueError):
    """A JSON object with a key written twice (``json`` keeps the last silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} appears twice in one object")
        self.key = key


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` refusing a key written twice (:class:`DuplicateKeyError`, a
    ``ValueError``), for readers that handle their own errors (hook payloads, rewards)."""
    return json.loads(text, object_pairs_hook=_unique_pairs)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s object hook: the object, or :class:`DuplicateKeyError` for a key twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


def _json_key_line(text: str | bytes, key: str) -> str:
    """``line N`` of the second ``"key":`` in ``text`` (where a key written twice is)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    hits = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return f"line {text.count(chr(10), 0, hits[1]) + 1}" if len(hits) > 1 else "<json>"


def load_json(path: Path | str, where: str = "<json>", fix: str = "fix the file") -> Any:
    """Read and parse a JSON file (see :func:`read_text` and :func:`parse_json`)."""
    return parse_json(read_text(path), path, where, fix)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Unicode's format characters (category Cf: zero-width spaces and joiners, direction
# marks and overrides, the byte-order mark, soft hyphen, tags) and its line and paragraph
# separators (Zl, Zp): invisible in a table, yet a name holding one is another name.
INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]")


def control_character(text: str) -> str | None:
    """What to say of a name holding a control character (a tab, a newline, an escape) or
    an invisible one (:data:`INVISIBLE`: a zero-width space, a direction override), or
    None: such a name is a task or arm of its own that reads as another, and a control
    character breaks the Markdown tables across lines.

    >>> control_character("dedupe\\temails")
    "holds the control character '\\\\t' (names are printable text)"
    >>> control_character("dedupe\\u200bemails")
    "holds the invisible character '\\\\u200b' (names are printable text)"
    """
    found = _CONTROL.search(text)
    if found is not None:
        return f"holds the control character {found.group()!r} (names are printable text)"
    found = INVISIBLE.search(text)
    return None if found is None else (f"holds the invisible character "
                                       f"{ascii(found.group())} (names are printable text)")


def unknown_key_message(key: str, known: Iterable[str]) -> str:
    """What to say of a key a schema does not know: the closest known key, if any.

    >>> unknown_key_message("rewrd", ["reward", "passed"])
    "unknown field 'rewrd'; did you mean 'reward'?"
    """
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f"unknown field {key!r}" + (f"; did you mean {close[0]!r}?" if close else "")


_YAML_BASE: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: faster


class StrictYamlLoader(_YAML_BASE):  # type: ignore[misc]
    """YAML's safe loader that refuses a key written twice in one mapping (PyYAML keeps the
    last silently); the error's mark is the second key's line."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeConstructor names it
                break
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping (first on line "
                    f"{first}; YAML keeps the last silently)", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def parse_yaml(text: str, path: Path | str, fix: str = "fix the file") -> Any:
    """Parse YAML with :class:`StrictYamlLoader`, every way it can fail one ``InputError``
    naming the line: malformed YAML, a key twice, nesting past the recursion limit, an
    integer of thousands of digits.

    >>> parse_yaml("a: 1", "x.yaml")
    {'a': 1}
    """
    try:
        return yaml.load(text, Loader=StrictYamlLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}" if mark is not None else "<yaml>"
        problem = exc.problem or str(exc)
        if "appears twice" not in problem:
            problem = f"not valid YAML: {problem}"
        raise InputError(path, where, problem, fix) from None
    except yaml.YAMLError as exc:
        raise InputError(path, "<yaml>", f"not valid YAML: {exc}", fix) from None
    except (RecursionError, ValueError):  # nested too deeply; a 5,000-digit integer
        raise InputError(path, "<yaml>", "nested too deeply, or an integer of thousands "
                         "of digits", fix) from None


def load_yaml(path: Path | str, fix: str = "fix the file") -> Any:
    """Read and parse a YAML file (see :func:`read_text` and :func:`parse_yaml`)."""
    return parse_yaml(read_text(path), path, fix)
