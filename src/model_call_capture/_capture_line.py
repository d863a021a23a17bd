"""What a capture line is: its format version and the members that make a JSON object one.

Part of the one line reader (`reader`, which re-exports these): `decode_capture_line`
turns one raw line into a `CaptureLine` or raises, `check_format` refuses a newer or
unknown format, and `is_capture_object` is the rule that tells a capture line from any
other JSON object (the `reader` module docstring states it). No I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from . import _codec
from .contracts import CAPTURE_LINE_FORMAT, CaptureLine
from .errors import UnsupportedFormatError

__all__ = [
    "CAPTURE_MEMBERS",
    "NotACaptureLineError",
    "check_format",
    "decode_capture_line",
    "is_capture_object",
]

_FORMAT_NAME = CAPTURE_LINE_FORMAT.split("/")[0]
_SUPPORTED_MAJOR = int(CAPTURE_LINE_FORMAT.split("/")[1])

_line_decoder = msgspec.json.Decoder(CaptureLine)


def check_format(value: Any, *, path: Path | None = None, line_index: int | None = None) -> None:
    """Raise `UnsupportedFormatError` when `value` (a line's `format`) is not a v1 format.

    Absent (`UNSET`/None) means v1: NeMo Gym writes no `format` field.
    """
    if value is None or value is msgspec.UNSET:
        return
    where = "" if path is None else f" in {path}"
    name, _, major = str(value).partition("/")
    # Any major that is not a few ASCII digits is an unknown format, never a ValueError.
    number = _codec.ascii_int(major, 18)
    if name == _FORMAT_NAME and number == _SUPPORTED_MAJOR:
        return
    if name == _FORMAT_NAME and number is not None and number > _SUPPORTED_MAJOR:
        raise UnsupportedFormatError(
            f"capture line{where} has format {value!r}, newer than this reader "
            f"({CAPTURE_LINE_FORMAT}); upgrade model-call-capture to read it",
            path=path,
            line_index=line_index,
        )
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:60] + f"...<{len(shown)} chars>"
    raise UnsupportedFormatError(
        f"capture line{where} has unknown format {shown}; expected {CAPTURE_LINE_FORMAT!r}",
        path=path,
        line_index=line_index,
    )


def decode_capture_line(
    raw: bytes, *, path: Path | None = None, line_index: int | None = None
) -> CaptureLine:
    """Decode one raw line into a `CaptureLine`.

    Raises `UnsupportedFormatError` for a line of a future format (checked first, so a
    future line is never mistaken for a damaged one) and `msgspec.ValidationError` /
    `msgspec.DecodeError` for a damaged line.
    """
    try:
        line = _line_decoder.decode(raw)
    except msgspec.ValidationError:
        obj = _codec.decode_object(raw)
        if obj is not None and "format" in obj:
            check_format(obj["format"], path=path, line_index=line_index)
        raise
    check_format(line.format, path=path, line_index=line_index)
    # Only a line without these two (null or absent) is worth decoding again to judge.
    if line.request is None and line.model_call_id is None:
        if not is_capture_object(_codec.decode_object(raw) or {}):
            raise NotACaptureLineError()
    return line


CAPTURE_MEMBERS = frozenset(CaptureLine.__struct_fields__) - {"response"}
"""A capture line has at least one of these (null counts): the rule that tells a capture
line from any other JSON object (see the module docstring)."""


def is_capture_object(obj: dict[str, Any]) -> bool:
    """Whether the decoded line `obj` is a capture line by `CAPTURE_MEMBERS`."""
    return not CAPTURE_MEMBERS.isdisjoint(obj)


class NotACaptureLineError(msgspec.ValidationError):
    """A valid JSON object that is not a capture line: no member of one but `response`.

    A `msgspec.ValidationError`, so every reader counts the line as damaged.
    """

    def __init__(self) -> None:
        super().__init__(
            "not a capture line: no member of a capture line besides `response` (such "
            "as `request`, `model_call_id`, `dialect`)"
        )
