"""Turning capture files into lines: bytes into numbered raw lines, raw lines into `CaptureLine`s.

The one home of the rules every reader shares (the store, the records, `mcc validate`):

- Lines end with a newline; the last one may lack it (a write torn by a crash).
- Blank and whitespace-only lines carry no call and are skipped. The others are numbered
  as NeMo Gym numbers them: from 0, blank lines not counted, every other line counted
  whether it is valid or damaged (so a record keeps its position past a damaged line).
  `mcc validate` numbers lines for people instead: from 1, blank lines counted, as
  editors number them.
- A line of a newer format major raises `UnsupportedFormatError` (checked first, so it is
  never mistaken for a damaged line). Any other line that is not a valid `CaptureLine` is
  damaged: counted and skipped, or raised as `DamagedLineError` by a strict reader.

No I/O here: callers feed the bytes (the store reads them under its lock protocol).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from . import _codec
from .contracts import CAPTURE_LINE_FORMAT, CaptureLine
from .errors import DamagedLineError, UnsupportedFormatError

__all__ = [
    "CaptureLines",
    "LineDecoder",
    "RawLines",
    "check_format",
    "decode_capture_line",
]

_FORMAT_NAME = CAPTURE_LINE_FORMAT.split("/")[0]
_SUPPORTED_MAJOR = int(CAPTURE_LINE_FORMAT.split("/")[1])

_line_decoder = msgspec.json.Decoder(CaptureLine)

# What decoding a damaged line raises: `msgspec.ValidationError` is a `DecodeError`, and
# a line nested deeper than the decoder goes raises `RecursionError`.
_DAMAGED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def check_format(value: Any, *, path: Path | None = None, line_index: int | None = None) -> None:
    """Raise `UnsupportedFormatError` when `value` (a line's `format`) is not a v1 format.

    Absent (`UNSET`/None) means v1: NeMo Gym writes no `format` field.
    """
    if value is None or value is msgspec.UNSET:
        return
    where = ""
    if path is not None:
        where = f" in {path}" + (f", line {line_index}" if line_index is not None else "")
    name, _, major = str(value).partition("/")
    if name == _FORMAT_NAME and major.isdigit() and int(major) == _SUPPORTED_MAJOR:
        return
    if name == _FORMAT_NAME and major.isdigit() and int(major) > _SUPPORTED_MAJOR:
        raise UnsupportedFormatError(
            f"capture line{where} has format {value!r}, newer than this reader "
            f"({CAPTURE_LINE_FORMAT}); upgrade model-call-capture to read it",
            path=path,
            line_index=line_index,
        )
    raise UnsupportedFormatError(
        f"capture line{where} has unknown format {value!r}; expected {CAPTURE_LINE_FORMAT!r}",
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
    return line


class RawLines:
    """The non-blank lines of a capture file, numbered: iterate for `(number, raw line)`.

    `chunks` are the file's bytes in order, cut anywhere. A raw line has no newline.
    `numbering="gym"` numbers from 0 without blank lines (NeMo Gym's index, a record's
    `call_index`); `numbering="editor"` from 1 with blank lines (a person's line number).
    Once iterated to the end, `count` holds the number of lines, blank ones included.
    """

    __slots__ = ("_chunks", "_editor", "count", "unterminated")

    def __init__(
        self, chunks: Iterable[bytes], *, numbering: Literal["gym", "editor"] = "gym"
    ) -> None:
        self._chunks = chunks
        self._editor = numbering == "editor"
        self.count = 0
        """The file's lines, blank ones included (set when the iteration ends)."""
        self.unterminated = False
        """True from the moment the last line is yielded without its newline (a torn write?)."""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        editor = self._editor
        index = 0  # the gym number of the next non-blank line
        count = 0  # every line so far, blank ones included
        pending = b""
        for chunk in self._chunks:
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            for part in parts:
                count += 1
                if part and not part.isspace():  # blank lines are skipped (no strip() copy)
                    yield (count if editor else index), part
                    index += 1
        if pending:
            count += 1
            if not pending.isspace():
                self.unterminated = True
                yield (count if editor else index), pending
        self.count = count


class LineDecoder(Protocol):
    """Decodes one raw line as `decode_capture_line` does (same verdicts, same errors)."""

    def __call__(self, raw: bytes, *, path: Path | None, line_index: int | None) -> CaptureLine:
        """The line; `msgspec.DecodeError` (or `UnicodeDecodeError`) for a damaged one."""
        ...


class CaptureLines:
    """The lines of one capture file decoded in order: iterate for `(index, CaptureLine)`.

    `lines` are the file's numbered raw lines (`RawLines`). A damaged line is counted in
    `damaged` and skipped, or, when `strict`, raised as `DamagedLineError` naming the
    file and line. A line of a newer format raises `UnsupportedFormatError` either way.
    `decode` may keep parts of the line undecoded (the records' lazy payloads) as long as
    it gives the verdicts of `decode_capture_line`.
    """

    __slots__ = ("_decode", "_lines", "damaged", "path", "strict")

    def __init__(
        self,
        lines: Iterable[tuple[int, bytes]],
        path: Path,
        *,
        strict: bool,
        decode: LineDecoder = decode_capture_line,
    ) -> None:
        self._lines = lines
        self._decode = decode
        self.path = path
        """The capture file, named by errors."""
        self.strict = strict
        """Raise on the first damaged line instead of counting it."""
        self.damaged = 0
        """Damaged lines skipped so far."""

    def __iter__(self) -> Iterator[tuple[int, CaptureLine]]:
        decode = self._decode
        path = self.path
        for index, raw in self._lines:
            try:
                line = decode(raw, path=path, line_index=index)
            except _DAMAGED as exc:
                if self.strict:
                    raise DamagedLineError(
                        f"damaged capture line in {path}, line {index} (0-based, blank lines "
                        f"not counted): {exc}",
                        path=path,
                        line_index=index,
                    ) from exc
                self.damaged += 1
                continue
            yield index, line
