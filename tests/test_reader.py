"""The line reader: a capture file's bytes into numbered raw lines, raw lines into `CaptureLine`s."""

from __future__ import annotations

import os
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from model_call_capture.contracts import CaptureLine
from model_call_capture.errors import (
    DamagedLineError,
    LineTooLongError,
    NotARegularFileError,
    UnsupportedFormatError,
)
from model_call_capture.reader import CaptureLines, OversizedLine, RawLines, decode_capture_line
from model_call_capture.records import decode_line_lazily, decode_line_without_payloads

_PATH = Path("/captures/r.capture.jsonl")


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(
    st.lists(st.sampled_from([b"{}", b"x", b"", b" ", b"\t\r", b'{"a": 1}']), max_size=12),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_any_chunking_gives_the_lines_of_the_whole_file(
    lines: list[bytes], final_newline: bool, cuts: list[int]
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    physical = data.split(b"\n")
    if physical[-1] == b"":
        physical.pop()  # the newline that ends the last line
    kept = [(number, raw) for number, raw in enumerate(physical, 1) if raw.strip()]

    gym = RawLines(_chunked(data, cuts))
    assert list(gym) == [(index, raw) for index, (_, raw) in enumerate(kept)]
    editor = RawLines(_chunked(data, cuts), numbering="editor")
    assert list(editor) == kept
    assert editor.count == gym.count == len(physical)
    torn = bool(data) and not data.endswith(b"\n") and bool(physical[-1].strip())
    assert editor.unterminated is gym.unterminated is torn


def test_only_the_last_line_without_its_newline_is_unterminated() -> None:
    lines = RawLines([b'{"a": 1}\n{"b":', b' 2}\n{"c'], numbering="editor")
    seen = []
    for number, raw in lines:
        seen.append((number, raw, lines.unterminated))
    assert seen == [(1, b'{"a": 1}', False), (2, b'{"b": 2}', False), (3, b'{"c', True)]
    assert lines.count == 3


def test_size_is_every_byte_read_once_the_iteration_ends() -> None:
    lines = RawLines([b'{"a": 1}\n\n', b"  \n{", b'"b"'])
    assert lines.size == 0
    assert [raw for _, raw in lines] == [b'{"a": 1}', b'{"b"']
    assert lines.size == 17


def test_damaged_lines_are_counted_and_keep_their_index() -> None:
    raw = [(0, b'{"model_call_id": "a"}'), (1, b'{"torn'), (2, b'{"model_call_id": "c"}')]
    lines = CaptureLines(raw, _PATH, strict=False)
    assert [(index, line.model_call_id) for index, line in lines] == [(0, "a"), (2, "c")]
    assert lines.damaged == 1


def test_a_strict_reader_names_the_file_and_line_of_the_first_damaged_line() -> None:
    raw = [(0, b'{"model_call_id": "a"}'), (1, b'{"model_call_id": 7}')]
    with pytest.raises(DamagedLineError, match=r"in /captures/r.capture.jsonl, line 2: ") as caught:
        list(CaptureLines(raw, _PATH, strict=True))
    # The message names the line as editors number it; the index is a record's numbering.
    assert (caught.value.path, caught.value.line_index, caught.value.line) == (_PATH, 1, 2)


@pytest.mark.parametrize("strict", [True, False])
def test_a_newer_format_is_never_counted_as_damage(strict: bool) -> None:
    raw = [(0, b'{"format": "model-call-capture/2", "status_code": "x"}')]
    lines = CaptureLines(raw, _PATH, strict=strict)
    with pytest.raises(UnsupportedFormatError, match="newer than this reader"):
        list(lines)
    assert lines.damaged == 0


@pytest.mark.parametrize(
    ("major", "shown"),
    [
        ("\u00b2", "'model-call-capture/\u00b2'"),  # `isdigit`, and no int
        ("\u0663", "'model-call-capture/\u0663'"),  # an Arabic-Indic 3: not our format
        ("9" * 5000, "'model-call-capture/" + "9" * 40 + "...<5021 chars>"),  # int() refuses
    ],
)
@pytest.mark.parametrize("strict", [True, False])
def test_a_format_of_odd_digits_is_an_unknown_format_not_a_crash(
    strict: bool, major: str, shown: str
) -> None:
    # These used to raise a bare ValueError out of the reader: one line failed
    # `mcc stats`, `show` and `validate` for the whole directory, and the collector's run.
    raw = [(0, b'{"format": "model-call-capture/' + major.encode() + b'"}')]
    lines = CaptureLines(raw, _PATH, strict=strict)
    with pytest.raises(UnsupportedFormatError) as info:
        list(lines)
    assert str(info.value) == (
        f"capture line in {_PATH}, line 1 has unknown format {shown}; "
        "expected 'model-call-capture/1'"
    )


# -- scale: linear cutting, the line cap, records that hold their own line only ------------

_CAP_LINES = st.lists(
    st.sampled_from([b"{}", b"x" * 9, b"", b" ", b"y" * 30, b'{"a": 1}']), max_size=10
)


@given(_CAP_LINES, st.lists(st.integers(min_value=0, max_value=120), max_size=6))
def test_any_chunking_gives_the_same_lines_under_a_cap(lines: list[bytes], cuts: list[int]) -> None:
    data = b"\n".join(lines) + b"\n"
    kept = [raw for raw in data.split(b"\n")[:-1] if raw.strip()]
    got = list(RawLines(_chunked(data, cuts), max_line_bytes=8))
    assert [index for index, _ in got] == list(range(len(kept)))
    for (_, raw), want in zip(got, kept, strict=True):
        if len(want) > 8:
            assert type(raw) is OversizedLine
            assert (raw, raw.size) == (b"", len(want))
        else:
            assert raw == want and type(raw) is bytes


def _allocated_while_reading(chunks: list[bytes], **options: Any) -> tuple[list[Any], int]:
    """The lines, and the sum over every chunk fed of the peak bytes allocated meanwhile.

    The sum is the bytes copied, near enough: re-joining a long line at each chunk (the
    quadratic reader) adds the line so far at every step.
    """
    total = 0

    def feed() -> Iterator[bytes]:
        nonlocal total
        for chunk in chunks:
            tracemalloc.reset_peak()
            current = tracemalloc.get_traced_memory()[0]
            yield chunk
            total += tracemalloc.get_traced_memory()[1] - current

    tracemalloc.start()
    try:
        lines = [(i, len(raw), type(raw)) for i, raw in RawLines(feed(), **options)]
    finally:
        tracemalloc.stop()
    return lines, total


def test_a_long_line_is_copied_a_bounded_number_of_times() -> None:
    size, step = 8 << 20, 64 << 10
    data = b'{"x": "' + b"a" * size + b'"}\n{}\n'
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    lines, copied = _allocated_while_reading(chunks)
    assert lines == [(0, size + 9, bytes), (1, 2, bytes)]
    assert copied < 3 * size, f"{copied:,} bytes allocated to cut a {size:,}-byte line"


def test_a_line_over_the_cap_is_damaged_and_never_held() -> None:
    size, step, cap = 16 << 20, 64 << 10, 1 << 20
    data = b'{"model_call_id": "a"}\n' + b"z" * size + b'\n{"model_call_id": "c"}'
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    lines, copied = _allocated_while_reading(chunks, max_line_bytes=cap)
    assert lines == [(0, 22, bytes), (1, 0, OversizedLine), (2, 22, bytes)]
    assert copied < 4 * cap, f"{copied:,} bytes allocated for a line over a {cap:,}-byte cap"

    tolerant = CaptureLines(RawLines(chunks, max_line_bytes=cap), _PATH, strict=False)
    assert [(i, line.model_call_id) for i, line in tolerant] == [(0, "a"), (2, "c")]
    assert tolerant.damaged == 1
    with pytest.raises(LineTooLongError, match=r"line 2: .*16777216 bytes") as caught:
        list(CaptureLines(RawLines(chunks, max_line_bytes=cap), _PATH, strict=True))
    assert (caught.value.line_index, caught.value.line, caught.value.size) == (1, 2, size)
    assert isinstance(caught.value, DamagedLineError)


def test_a_record_holds_its_own_line_not_the_chunk_it_came_from(tmp_path: Path) -> None:
    from model_call_capture.records import read_available_model_call_records
    from model_call_capture.store import CaptureStore

    line = b'{"dialect": "chat", "request": {"model": "m"}, "response": null}\n'
    chunk = line * 3
    chunks = [chunk]
    before = sys.getrefcount(chunk)
    lines = CaptureLines(RawLines(chunks), _PATH, strict=True, decode=decode_line_lazily)
    kept = [line for _, line in lines]
    assert [str(bytes(cast(Any, line.request))) for line in kept] == ['b\'{"model": "m"}\''] * 3
    assert sys.getrefcount(chunk) == before

    (tmp_path / "r.capture.jsonl").write_bytes(chunk)
    records, _ = read_available_model_call_records(CaptureStore(tmp_path), "r")
    assert [r.request for r in records] == [{"model": "m"}] * 3


def test_a_fifo_or_a_directory_named_like_a_capture_file_is_refused_by_name(
    tmp_path: Path,
) -> None:
    from model_call_capture.store import CaptureStore

    os.mkfifo(tmp_path / "f.capture.jsonl")  # no writer: a blocking open would hang here
    (tmp_path / "d.capture.jsonl").mkdir()
    store = CaptureStore(tmp_path)
    for rollout_id, kind in (("f", "a FIFO"), ("d", "a directory")):
        with pytest.raises(NotARegularFileError, match=f"not a regular file \\({kind}\\)") as e:
            store.read_available(rollout_id)
        assert e.value.filename == str(tmp_path / f"{rollout_id}.capture.jsonl")
        assert isinstance(e.value, OSError)


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",
        b'{"a": 1}',
        # A collector's rollout record: a `response` of its own, nothing of a capture line.
        b'{"response": {"id": "r"}, "reward": 1.0, "_ng_task_index": 0, "ng_model_call_capture": {}}',
    ],
)
def test_an_object_that_is_not_a_capture_line_is_damaged(raw: bytes) -> None:
    wanted = "^not a capture line: no member of a capture line besides `response`"
    for decode in (decode_capture_line, decode_line_lazily, decode_line_without_payloads):
        with pytest.raises(msgspec.ValidationError, match=wanted):
            decode(raw, path=None, line_index=None)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"request": {"i": 0}, "response": {}}',  # NeMo Gym's minimal line
        b'{"request": null}',
        b'{"model_call_id": null}',
        b'{"dialect": "chat", "response": {"id": "x"}}',
    ],
)
def test_any_member_of_a_capture_line_but_response_makes_one(raw: bytes) -> None:
    for decode in (decode_capture_line, decode_line_lazily, decode_line_without_payloads):
        assert isinstance(decode(raw, path=None, line_index=None), CaptureLine)
