"""The line reader: a capture file's bytes into numbered raw lines, raw lines into `CaptureLine`s."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model_call_capture.errors import DamagedLineError, UnsupportedFormatError
from model_call_capture.reader import CaptureLines, RawLines

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


def test_damaged_lines_are_counted_and_keep_their_index() -> None:
    raw = [(0, b'{"model_call_id": "a"}'), (1, b'{"torn'), (2, b'{"model_call_id": "c"}')]
    lines = CaptureLines(raw, _PATH, strict=False)
    assert [(index, line.model_call_id) for index, line in lines] == [(0, "a"), (2, "c")]
    assert lines.damaged == 1


def test_a_strict_reader_names_the_file_and_line_of_the_first_damaged_line() -> None:
    raw = [(0, b'{"model_call_id": "a"}'), (1, b'{"model_call_id": 7}')]
    with pytest.raises(DamagedLineError, match=r"in /captures/r.capture.jsonl, line 1 ") as caught:
        list(CaptureLines(raw, _PATH, strict=True))
    assert (caught.value.path, caught.value.line_index) == (_PATH, 1)


@pytest.mark.parametrize("strict", [True, False])
def test_a_newer_format_is_never_counted_as_damage(strict: bool) -> None:
    raw = [(0, b'{"format": "model-call-capture/2", "status_code": "x"}')]
    lines = CaptureLines(raw, _PATH, strict=strict)
    with pytest.raises(UnsupportedFormatError, match="newer than this reader"):
        list(lines)
    assert lines.damaged == 0
