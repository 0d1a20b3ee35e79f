"""Reading a user's file as text or JSON, with every decoding fault one ``InputError``.

Files fire-exp reads at an entry point (attempts, CSVs, plans, task files, Harbor results,
manifests, pilots) may be anything a user has on disk: bytes that are not UTF-8, JSON
nested deeper than the parser recurses, a 5,000-digit integer Python refuses to convert.
Each of these ends here as ``FILE: WHERE: what is wrong (what to do)``, never a
traceback. Like :mod:`fire_exp.records` this module sits at the bottom of the import
graph: it imports only the errors.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fire_exp.errors import InputError

__all__ = ["decoded", "load_json", "parse_json", "read_text", "unknown_key_message"]

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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, where, f"not valid JSON: {exc.msg}", fix) from None
    except RecursionError:
        raise InputError(path, where, "JSON nested too deeply to read", fix) from None
    except UnicodeDecodeError:  # bytes given
        raise InputError(path, where, "is not UTF-8 text", _UTF8_FIX) from None
    except ValueError:  # an integer of thousands of digits
        raise InputError(path, where, "holds an integer of more than 4,300 digits", fix) \
            from None


def load_json(path: Path | str, where: str = "<json>", fix: str = "fix the file") -> Any:
    """Read and parse a JSON file (see :func:`read_text` and :func:`parse_json`)."""
    return parse_json(read_text(path), path, where, fix)


def unknown_key_message(key: str, known: Iterable[str]) -> str:
    """What to say of a key a schema does not know: the closest known key, if any.

    >>> unknown_key_message("rewrd", ["reward", "passed"])
    "unknown field 'rewrd'; did you mean 'reward'?"
    """
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f"unknown field {key!r}" + (f"; did you mean {close[0]!r}?" if close else "")
