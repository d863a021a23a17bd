"""Turning capture files into lines: bytes into numbered raw lines, raw lines into `CaptureLine`s.

The one home of the rules every reader shares (the store, the records, `mcc validate`):

- Lines end with a newline; the last one may lack it (a write torn by a crash).
- Blank and whitespace-only lines carry no call and are skipped. The others are numbered
  as NeMo Gym numbers them: from 0, blank lines not counted, every other line counted
  whether it is valid or damaged (so a record keeps its position past a damaged line).
  Whatever names a line to a person (an error's message, a damaged line in `mcc show`
  and `mcc view`, `mcc validate`) numbers it as editors do instead: from 1, blank lines
  counted (`RawLines.line_number`; the errors' `line`, beside their internal `line_index`).
- A line of a newer format major raises `UnsupportedFormatError` (checked first, so it is
  never mistaken for a damaged line). Any other line that is not a valid `CaptureLine` is
  damaged: counted and skipped, or raised as `DamagedLineError` by a strict reader.
- A capture line is a JSON object with at least one member of a capture line besides
  `response` (`CAPTURE_MEMBERS`; null counts): NeMo Gym and this library write eleven
  of them on every line, while other JSON lines have none (`{"a": 1}`) or only a
  `response` of their own (a collector's `rollouts.jsonl`). Any other object is
  damaged ("not a capture line"), never a call whose every field is unknown. The JSON
  Schema leaves every field optional, as in v1: the rule is this reader's, checked by
  every reader and by `mcc validate`.

- A line longer than `max_line_bytes` (default `DEFAULT_MAX_LINE_BYTES`) is damaged too
  (`LineTooLongError` for a strict reader): it is read past, never held in memory.

Reading is linear and bounded: every byte is copied a fixed number of times whatever the
line lengths, and memory is one chunk plus the longest line kept (at most the cap). Each
raw line is its own `bytes` object: a record built from it holds that line only, never
the chunk or the file it came from. A consumer that decodes a chunk's lines at once
(`RawLines.runs`, `CaptureLines(decode_run=...)`) holds the chunk until it has used the
run's lines, and must keep nothing that points into it (records without payloads).

No I/O here: callers feed the bytes (the store reads them under its lock protocol).

Which function to call (every reader of capture files goes through these):

- Rollouts come from the store (`store.Rollout`: an id and its files; `store.rollouts()`,
  `store.rollout(id)`, `store.rollouts_from(directory | store | rollouts | files)`).
- A rollout's lines: `store.RolloutLines(rollout, ...)` (`CaptureLine`s of every file, in
  order), or its lists `store.read_available(id)` / `store.read(id)`; its records: in
  `records`, `iter_rollout_records(rollout)` / `iter_model_call_records(store, id)` (one
  at a time, `.damaged` after), `read_available_model_call_records` /
  `read_model_call_records` (lists).
- One file's raw lines (`mcc validate`, which checks files): `store.read_file_lines(path,
  numbering=..., max_line_bytes=...)`, a `RawLines` over a regular file.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from ._capture_line import (
    CAPTURE_MEMBERS,
    NotACaptureLineError,
    check_format,
    decode_capture_line,
    is_capture_object,
)
from .contracts import CaptureLine
from .errors import DamagedLineError, LineTooLongError, UnsupportedFormatError

__all__ = [
    "CAPTURE_MEMBERS",
    "DEFAULT_MAX_LINE_BYTES",
    "CaptureLines",
    "LineDecoder",
    "LineRun",
    "NotACaptureLineError",
    "OversizedLine",
    "RawLines",
    "check_format",
    "decode_capture_line",
    "is_capture_object",
]

DEFAULT_MAX_LINE_BYTES = 256 * 1024 * 1024
"""The longest line a reader keeps; a longer one is damaged (a capture is cut far below it)."""

# What decoding a damaged line raises: `msgspec.ValidationError` is a `DecodeError`, and
# a line nested deeper than the decoder goes raises `RecursionError`.
_DAMAGED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


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

    `hold_tail()`, if given, says whether a last line without its newline may still be
    being written (by a segment's live writer): it is then left out, its bytes not in `size`.
    """

    __slots__ = (
        "_chunks",
        "_editor",
        "_hold_tail",
        "blanks",
        "count",
        "max_line_bytes",
        "numbered",
        "size",
        "unterminated",
    )

    def __init__(
        self,
        chunks: Iterable[bytes],
        *,
        numbering: Literal["gym", "editor"] = "gym",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        hold_tail: Callable[[], bool] | None = None,
    ) -> None:
        self._chunks = chunks
        self._editor = numbering == "editor"
        self._hold_tail = hold_tail
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are yielded as `OversizedLine`."""
        self.count = 0
        """The file's lines, blank ones included (set when the iteration ends)."""
        self.blanks = 0
        """Blank lines passed so far: while a line is being used, those before it."""
        self.numbered = 0
        """The file's non-blank lines: the gym numbers they took (set when the iteration ends)."""
        self.size = 0
        """The bytes read, set when the iteration ends (where a reader of appended bytes goes on)."""
        self.unterminated = False
        """True from the moment the last line is yielded without its newline (a torn write?)."""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        return self._iter(runs=False)  # type: ignore[return-value]

    def line_number(self, number: int) -> int:
        """The line number an editor shows (from 1, blank lines counted) of the line being
        used, which this iteration numbered `number`; from `start` when read from there."""
        return number if self._editor else number + 1 + self.blanks

    def runs(self) -> Iterator[tuple[int, bytes] | LineRun]:
        """The lines as `__iter__` yields them, except that the complete lines of a chunk
        come as one `LineRun`, which the consumer cuts (`LineRun.lines`) or takes whole
        (`LineRun.take`) before it asks for the next item."""
        return self._iter(runs=True)

    def _iter(self, *, runs: bool) -> Iterator[tuple[int, bytes] | LineRun]:
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
                else:
                    self.blanks += 1
            end = len(chunk)
            last = chunk.rfind(b"\n", start)
            if last >= 0:
                run = LineRun(chunk, start, last + 1, index, count, cap, editor, self)
                if runs:
                    yield run
                else:
                    yield from run.lines()
                index, count = run.index, run.count
                start = last + 1
            if start < end:
                held = end - start
                if held <= cap:
                    pieces.append(chunk[start:] if start else chunk)
        if held and self._hold_tail is not None and self._hold_tail():
            size, held = size - held, 0  # being written: read from its start next time
        if held:
            count += 1
            line = b"".join(pieces) if held <= cap else _oversized(held)
            pieces.clear()
            if type(line) is OversizedLine or not line.isspace():
                self.unterminated = True
                yield (count if editor else index), line
                index += 1
        self.count = count
        self.numbered = index
        self.size = size


_OPEN = ord("{")
_CLOSE = ord("}")


class LineRun:
    """The complete lines of one chunk, not cut yet: `chunk[start:end]`, ending with a newline.

    `index` and `count` are `RawLines`' counters before the run's first line and, once the
    run is cut (`lines`) or taken (`take`), after its last.
    """

    __slots__ = ("_cap", "_editor", "_owner", "chunk", "count", "end", "index", "start")

    def __init__(
        self,
        chunk: bytes,
        start: int,
        end: int,
        index: int,
        count: int,
        cap: int,
        editor: bool,
        owner: RawLines | None = None,
    ) -> None:
        self._owner = owner  # its `blanks` counts the blank lines this run passes
        self.chunk = chunk
        self.start = start
        self.end = end
        self.index = index
        self.count = count
        self._cap = cap
        self._editor = editor

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """The run's numbered lines as `RawLines` yields them (blank lines skipped)."""
        editor = self._editor
        cap = self._cap
        chunk = self.chunk
        index = self.index
        count = self.count
        start = self.start
        end = self.end
        # One line cut out at a time, not `split()`: a line is copied out of the chunk
        # only once it is reached, so the consumer has dropped the line before and the
        # allocator hands the same memory back; split's list of a chunk's lines made
        # the heap grow and shrink by a chunk each time, every page faulted in anew.
        find = chunk.find
        while (newline := find(b"\n", start, end)) >= 0:
            count += 1
            length = newline - start
            if length > cap:
                yield (count if editor else index), _oversized(length)
                index += 1
            elif length and not (part := chunk[start:newline]).isspace():
                yield (count if editor else index), part  # blank lines are skipped
                index += 1
            elif self._owner is not None:
                self._owner.blanks += 1
            start = newline + 1
        self.index = index
        self.count = count

    def objects(self) -> tuple[memoryview, int] | None:
        """The run (no copy) and its number of lines, when each is one JSON object at most.

        That is: every line starts with `{` and ends with `}` (no blank line, no white
        space at either end), none is over the cap, and the bytes are valid UTF-8. A JSON
        value cannot go on past such a newline (a string cannot hold one, and no value
        goes on with `{` after a `}`), so a decoder of newline-delimited JSON that finds
        as many values as there are lines has found each line's value, and only it. None
        when any line is not of that form: cut the run instead.
        """
        chunk = self.chunk
        start = self.start
        end = self.end
        cap = self._cap
        find = chunk.find
        lines = 0
        while (newline := find(b"\n", start, end)) >= 0:
            # An empty line fails the first test: its first byte is its newline.
            if chunk[start] != _OPEN or chunk[newline - 1] != _CLOSE or newline - start > cap:
                return None
            start = newline + 1
            lines += 1
        view = memoryview(chunk)[self.start : end]
        # The whole chunk, not the run: bytes has no ranged `isascii`, and a copy of the run
        # would cost more than the held tail's few bytes checked twice.
        if not chunk.isascii():
            try:
                codecs.utf_8_decode(view, "strict", True)
            except UnicodeDecodeError:
                return None
        return view, lines

    @property
    def number(self) -> int:
        """The number `lines` gives the run's first line when it is not blank."""
        return self.count + 1 if self._editor else self.index

    def take(self, lines: int) -> None:
        """Count the run's `lines` (from `objects`) as read, without cutting it."""
        self.count += lines
        self.index += lines


class LineDecoder(Protocol):
    """Decodes one raw line as `decode_capture_line` does (same verdicts, same errors)."""

    def __call__(self, raw: bytes, *, path: Path | None, line_index: int | None) -> CaptureLine:
        """The line; `msgspec.DecodeError` (or `UnicodeDecodeError`) for a damaged one."""
        ...


RunDecoder = Callable[[memoryview], "list[CaptureLine] | None"]
"""Decodes a run of lines (`LineRun.objects`) at once; None when any line is not taken as it is."""


class CaptureLines:
    """The lines of one capture file decoded in order: iterate for `(index, CaptureLine)`.

    `lines` are the file's numbered raw lines (`RawLines`). A damaged line is counted in
    `damaged` and skipped, or, when `strict`, raised as `DamagedLineError` naming the
    file and line. A line of a newer format raises `UnsupportedFormatError` either way.
    `decode` may keep parts of the line undecoded (the records' lazy payloads) as long as
    it gives the verdicts of `decode_capture_line`. With `decode_run`, the complete lines
    of each chunk are first decoded together (`LineRun.objects`); a run it does not take
    whole (None, or not one line a value) is cut and each line decoded by `decode`, so
    every line gets the verdict and the index `decode` gives it.
    """

    __slots__ = (
        "_decode",
        "_decode_run",
        "_lines",
        "damaged",
        "damaged_files",
        "on_damaged",
        "path",
        "strict",
    )

    def __init__(
        self,
        lines: Iterable[tuple[int, bytes]],
        path: Path,
        *,
        strict: bool,
        decode: LineDecoder = decode_capture_line,
        decode_run: RunDecoder | None = None,
    ) -> None:
        self._lines = lines
        self._decode = decode
        self._decode_run = decode_run
        self.path = path
        """The capture file, named by errors."""
        self.strict = strict
        """Raise on the first damaged line instead of counting it."""
        self.damaged = 0
        """Damaged lines skipped so far."""
        self.damaged_files: dict[Path, int] = {}  # the damaged lines of each file
        self.on_damaged: Callable[[int, int, BaseException | None], None] | None = None
        """Told of each damaged line skipped: its index (as a good line's), its number as
        editors show it in its file, and the decoder's error (None: over the cap)."""

    def __iter__(self) -> Iterator[tuple[int, CaptureLine]]:
        lines = self._lines
        decode_run = self._decode_run
        if decode_run is None or not isinstance(lines, RawLines):
            yield from self._decoded(lines)
            return
        for item in lines.runs():
            if type(item) is not LineRun:
                yield from self._decoded((item,))  # type: ignore[arg-type]
                continue
            run = item.objects()
            decoded = None if run is None else decode_run(run[0])
            # A line a value is what `objects` ensures; the count is checked all the same.
            if decoded is None or run is None or len(decoded) != run[1]:
                yield from self._decoded(item.lines())
                continue
            index = item.number
            item.take(len(decoded))
            for line in decoded:
                yield index, line
                index += 1

    def _line(self, at: int) -> int:
        """The editor's number (from 1, blank lines counted) of the line in use, `at` in its file."""
        lines: Any = self._lines
        if hasattr(lines, "source"):  # MergedLines
            return int(lines.line)
        return lines.line_number(at) if isinstance(lines, RawLines) else at + 1

    def _decoded(self, lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, CaptureLine]]:
        decode = self._decode
        path = self.path
        merged: Any = self._lines if hasattr(self._lines, "source") else None  # MergedLines
        for index, raw in lines:
            path, at = (merged.source, merged.position) if merged else (path, index)
            if type(raw) is OversizedLine:
                if self.strict:
                    number = self._line(at)
                    raise LineTooLongError(
                        f"capture line too long in {path}, line {number}: {raw.size} bytes, "
                        "over the cap of this reader",
                        path=path,
                        line_index=at,
                        size=raw.size,
                        line=number,
                    )
                self.damaged += 1
                self.damaged_files[path] = self.damaged_files.get(path, 0) + 1
                if self.on_damaged is not None:
                    self.on_damaged(index, self._line(at), None)
                continue
            try:
                line = decode(raw, path=path, line_index=at)
            except UnsupportedFormatError as exc:
                raise exc.at_line(self._line(at)) from None
            except _DAMAGED as exc:
                if self.strict:
                    number = self._line(at)
                    raise DamagedLineError(
                        f"damaged capture line in {path}, line {number}: {exc}",
                        path=path,
                        line_index=at,
                        line=number,
                    ) from exc
                self.damaged += 1
                self.damaged_files[path] = self.damaged_files.get(path, 0) + 1
                if self.on_damaged is not None:
                    self.on_damaged(index, self._line(at), exc)
                continue
            yield index, line
