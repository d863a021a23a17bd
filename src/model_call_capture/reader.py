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

- A line longer than `max_line_bytes` (default `DEFAULT_MAX_LINE_BYTES`) is damaged too
  (`LineTooLongError` for a strict reader): it is read past, never held in memory.

Reading is linear and bounded: every byte is copied a fixed number of times whatever the
line lengths, and memory is one chunk plus the longest line kept (at most the cap). Each
raw line is its own `bytes` object: a record built from it holds that line only, never
the chunk or the file it came from.

No I/O here: callers feed the bytes (the store reads them under its lock protocol).

Which function to call (every reader of capture files goes through these):

- By rollout: `CaptureStore(root, max_line_bytes=...)` then `store.iter_lines(id)` (raw),
  `store.read_available(id)` / `store.read(id)` (`CaptureLine`s), or, in `records`,
  `iter_model_call_records(store, id)` (records one at a time, `.damaged` after),
  `read_available_model_call_records` / `read_model_call_records` (lists).
- By path (`mcc validate`, a directory walk): `store.read_file_lines(path, numbering=...,
  max_line_bytes=...)` (a `RawLines` over the file, which must be a regular file), then
  `CaptureLines(...)` or `records.iter_file_records(path, ...)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from . import _codec
from .contracts import CAPTURE_LINE_FORMAT, CaptureLine
from .errors import DamagedLineError, LineTooLongError, UnsupportedFormatError

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "CaptureLines",
    "LineDecoder",
    "OversizedLine",
    "RawLines",
    "check_format",
    "decode_capture_line",
]

_FORMAT_NAME = CAPTURE_LINE_FORMAT.split("/")[0]
_SUPPORTED_MAJOR = int(CAPTURE_LINE_FORMAT.split("/")[1])

DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024
"""The longest line a reader keeps; a longer one is damaged (a capture is cut far below it)."""

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


class OversizedLine(bytes):
    """Stands for a line longer than the cap: empty (its bytes were never kept), with its `size`.

    A decoder that does not know it sees an empty line and calls it damaged; `CaptureLines`
    and `mcc validate` name it for what it is.
    """

    size: int
    """The line's length in bytes, without its newline."""


def _oversized(size: int) -> OversizedLine:
    line = OversizedLine()
    line.size = size
    return line


class RawLines:
    """The non-blank lines of a capture file, numbered: iterate for `(number, raw line)`.

    `chunks` are the file's bytes in order, cut anywhere. A raw line has no newline.
    `numbering="gym"` numbers from 0 without blank lines (NeMo Gym's index, a record's
    `call_index`); `numbering="editor"` from 1 with blank lines (a person's line number).
    A line over `max_line_bytes` is yielded as an `OversizedLine` (its bytes dropped as
    they are read). Once iterated to the end, `count` holds the number of lines, blank
    ones included.
    """

    __slots__ = ("_chunks", "_editor", "count", "max_line_bytes", "size", "unterminated")

    def __init__(
        self,
        chunks: Iterable[bytes],
        *,
        numbering: Literal["gym", "editor"] = "gym",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._chunks = chunks
        self._editor = numbering == "editor"
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are yielded as `OversizedLine`."""
        self.count = 0
        """The file's lines, blank ones included (set when the iteration ends)."""
        self.size = 0
        """The bytes read, set when the iteration ends (where a reader of appended bytes goes on)."""
        self.unterminated = False
        """True from the moment the last line is yielded without its newline (a torn write?)."""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        editor = self._editor
        cap = self.max_line_bytes
        index = 0  # the gym number of the next non-blank line
        count = 0  # every line so far, blank ones included
        # The start of a line that spans chunks: its pieces, joined once at its newline
        # (never re-joined per chunk, which would copy a long line quadratically).
        pieces: list[bytes] = []
        held = 0  # bytes of the line so far (counted on, not kept, once over the cap)
        size = 0
        for chunk in self._chunks:
            size += len(chunk)
            start = 0
            if held or pieces:
                newline = chunk.find(b"\n")
                if newline < 0:
                    held += len(chunk)
                    if held <= cap:
                        pieces.append(chunk)
                    else:
                        pieces.clear()
                    continue
                held += newline
                if held <= cap:
                    pieces.append(chunk[:newline])
                    line: bytes = b"".join(pieces)
                else:
                    line = _oversized(held)
                pieces.clear()
                held = 0
                start = newline + 1
                count += 1
                if (line and not line.isspace()) or type(line) is OversizedLine:
                    yield (count if editor else index), line
                    index += 1
            parts = (chunk[start:] if start else chunk).split(b"\n")
            tail = parts.pop()
            for part in parts:
                count += 1
                if part and not part.isspace():  # blank lines are skipped (no strip() copy)
                    if len(part) > cap:
                        part = _oversized(len(part))
                    yield (count if editor else index), part
                    index += 1
            if tail:
                held = len(tail)
                if held <= cap:
                    pieces.append(tail)
        if held:
            count += 1
            line = b"".join(pieces) if held <= cap else _oversized(held)
            pieces.clear()
            if type(line) is OversizedLine or not line.isspace():
                self.unterminated = True
                yield (count if editor else index), line
        self.count = count
        self.size = size


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
            if type(raw) is OversizedLine:
                if self.strict:
                    raise LineTooLongError(
                        f"capture line too long in {path}, line {index} (0-based, blank lines "
                        f"not counted): {raw.size} bytes, over the cap of this reader",
                        path=path,
                        line_index=index,
                        size=raw.size,
                    )
                self.damaged += 1
                continue
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
