"""A chunk's complete lines decoded in one call (`LineRun`, `decode_run_without_payloads`).

Records without payloads decode the complete lines of each read chunk with one
`decode_lines` call when every line is one object (`LineRun.objects`), and cut the run
into lines, each decoded alone, otherwise. Every file here is read both ways (the run
path, and the same reader with no run decoder) and must give the same records, indices,
counts and errors, which are also written out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from model_call_capture.errors import DamagedLineError, LineTooLongError, UnsupportedFormatError
from model_call_capture.reader import CaptureLines, LineRun, RawLines
from model_call_capture.records import (
    build_model_call_record,
    decode_line_without_payloads,
    decode_run_without_payloads,
)


def _line(call_id: str, extra: bytes = b"") -> bytes:
    return (
        b'{"model_call_id":"' + call_id.encode() + b'","dialect":"chat","request":{"model":"m",'
        b'"messages":[{"role":"user","content":"hi"}]},"response":{"id":"r-'
        + call_id.encode()
        + b'","usage":{"prompt_tokens":3,"completion_tokens":4}}'
        + extra
        + b"}"
    )


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _read(data: bytes, *, size: int, runs: bool, strict: bool = False, cap: int = 1 << 20) -> Any:
    """(call ids with their index, damaged count) of `data` read in chunks of `size`."""
    lines = CaptureLines(
        RawLines(_chunks(data, size), max_line_bytes=cap),
        Path("r.capture.jsonl"),
        strict=strict,
        decode=decode_line_without_payloads,
        decode_run=decode_run_without_payloads if runs else None,
    )
    try:
        got = [
            (index, line.model_call_id, build_model_call_record(line, index, payloads=False))
            for index, line in lines
        ]
    except (DamagedLineError, UnsupportedFormatError) as exc:
        return type(exc).__name__, str(exc)
    return [(index, call_id) for index, call_id, _ in got], lines.damaged, [r for *_, r in got]


def _both(data: bytes, **options: Any) -> Any:
    """The outcome of `data`, the same with and without runs at every chunk size tried."""
    outcomes = []
    for size in (1 << 20, 1000, 97, 7):
        for runs in (True, False):
            outcome = _read(data, size=size, runs=runs, **options)
            outcomes.append(outcome)
            assert outcome == outcomes[0], (size, runs)
    first = outcomes[0]
    return first[:2] if isinstance(first[0], list) else first


GOOD = b"".join(_line(f"c{i}") + b"\n" for i in range(5))


def test_a_run_of_object_lines_is_taken_whole_and_gives_the_lines_records() -> None:
    run = LineRun(GOOD, 0, len(GOOD), 0, 0, 1 << 20, False)
    objects = run.objects()
    assert objects is not None and objects[1] == 5
    decoded = decode_run_without_payloads(objects[0])
    assert decoded is not None
    one_by_one = [
        decode_line_without_payloads(raw, path=None, line_index=0) for _, raw in run.lines()
    ]
    assert decoded == one_by_one
    assert [line.model_call_id for line in decoded] == ["c0", "c1", "c2", "c3", "c4"]
    record = build_model_call_record(decoded[0], 0, payloads=False)
    assert (record.model, record.response_id, record.tokens_total) == ("m", "r-c0", 7)
    assert _both(GOOD) == ([(0, "c0"), (1, "c1"), (2, "c2"), (3, "c3"), (4, "c4")], 0)


def test_a_run_is_cut_when_a_line_is_not_one_object() -> None:
    for data in (
        b"\n\n" + GOOD,  # blank lines first
        _line("a") + b"\n  \n" + _line("b") + b"\n",  # white space only
        _line("a") + b"\r\n" + _line("b") + b"\r\n",  # CRLF
        _line("a") + b" \n" + _line("b") + b"\n",  # trailing white space
    ):
        run = LineRun(data, 0, data.rindex(b"\n") + 1, 0, 0, 1 << 20, False)
        assert run.objects() is None, data


def test_blank_and_white_space_lines_keep_the_numbering() -> None:
    data = b"\n" + _line("a") + b"\n\n   \n" + _line("b") + b"\n\t\n" + _line("c") + b"\n"
    assert _both(data) == ([(0, "a"), (1, "b"), (2, "c")], 0)


def test_crlf_lines_are_read_as_one_by_one() -> None:
    data = _line("a") + b"\r\n" + _line("b") + b"\r\n"
    assert _both(data) == ([(0, "a"), (1, "b")], 0)


def test_two_objects_on_a_line_and_a_blank_line_are_not_two_records() -> None:
    # As many values as lines, but not one a line: the first line is damaged (trailing bytes).
    data = _line("a") + b" " + _line("b") + b"\n\n" + _line("c") + b"\n"
    assert _both(data) == ([(1, "c")], 1)
    data = _line("a") + b"\n" + _line("b") + _line("c") + b"\n\n"
    assert _both(data) == ([(0, "a")], 1)


def test_an_object_over_two_lines_and_two_on_one_are_three_damaged_lines() -> None:
    data = b'{"model_call_id":"a",\n"status_code":200}\n' + _line("b") + _line("c") + b"\n"
    assert _both(data) == ([], 3)
    data = _line("a") + b"\n" + b'{"model_call_id":"b",\n{}}\n' + _line("c") + b"\n"
    assert _both(data) == ([(0, "a"), (3, "c")], 2)
    # Every line ends with "}", one starts with "}": still three damaged lines, not three values.
    data = b'{"model_call_id":"a","request":{"model":{}}\n}\n' + _line("b") + _line("c") + b"\n"
    assert _both(data) == ([], 3)


def test_a_bad_line_among_good_ones_is_damaged_and_the_others_keep_their_index() -> None:
    for bad in (
        b'{"model_call_id":"x","request":{"model":"m","messages":[}',  # invalid JSON
        b'{"model_call_id":7}',  # wrong type
        b'{"model_call_id":"x","response":12}',  # a response that is no object
        b'{"model_call_id":"x","request":[1]}',  # a request that is no object
        b'{"model_call_id":"x","latency_ms":-1}',  # out of range
        b'{"model_call_id":"x","request":{"k":"\xff"}}',  # not UTF-8, in skipped text
        b'{"model_call_id":"x","request":{"k":"\\ud800"}}',  # a lone surrogate
    ):
        data = _line("a") + b"\n" + bad + b"\n" + _line("b") + b"\n"
        assert _both(data) == ([(0, "a"), (2, "b")], 1), bad
        assert _both(data, strict=True) == (
            "DamagedLineError",
            _read(data, size=1 << 20, runs=False, strict=True)[1],
        )
        assert "line 2: " in _both(data, strict=True)[1]


def test_bytes_that_are_not_utf8_refuse_the_run_and_valid_utf8_is_taken() -> None:
    bad = _line("a") + b"\n" + _line("b", b',"unknown":"\xc3"') + b"\n"
    run = LineRun(bad, 0, len(bad), 0, 0, 1 << 20, False)
    assert run.objects() is None
    # Not checked by msgspec in text it skips, nor by the full decode in an unknown field:
    # the line is a record either way (as in tests/test_record_payload_modes.py).
    assert _both(bad) == ([(0, "a"), (1, "b")], 0)
    bad = _line("a") + b"\n" + _line("b", b',"request_raw":"\xc3"') + b"\n"
    assert _both(bad) == ([(0, "a")], 1)
    good = _line("a") + b"\n" + _line("b", b',"request_raw":"caf\xc3\xa9"') + b"\n"
    run = LineRun(good, 0, len(good), 0, 0, 1 << 20, False)
    assert run.objects() is not None
    assert _both(good) == ([(0, "a"), (1, "b")], 0)


def test_a_line_over_the_cap_in_a_run_is_damaged() -> None:
    long = _line("long", b',"request_raw":"' + b"x" * 400 + b'"')
    data = _line("a") + b"\n" + long + b"\n" + _line("b") + b"\n"
    run = LineRun(data, 0, len(data), 0, 0, 300, False)
    assert run.objects() is None
    assert _both(data, cap=300) == ([(0, "a"), (2, "b")], 1)
    lines = CaptureLines(
        RawLines([data], max_line_bytes=300),
        Path("r.capture.jsonl"),
        strict=True,
        decode=decode_line_without_payloads,
        decode_run=decode_run_without_payloads,
    )
    with pytest.raises(LineTooLongError, match="line 2: "):
        list(lines)


def test_a_line_across_a_chunk_edge_and_a_torn_last_line() -> None:
    data = GOOD + _line("torn")[:-3]
    assert _both(data) == ([(0, "c0"), (1, "c1"), (2, "c2"), (3, "c3"), (4, "c4")], 1)
    # Chunks cut inside the second and the fourth line: each run holds whole lines only.
    size = len(_line("c0")) + 1
    lines = RawLines([GOOD[: size + 10], GOOD[size + 10 : 3 * size + 10], GOOD[3 * size + 10 :]])
    kinds = []
    for item in lines.runs():
        if isinstance(item, LineRun):
            objects = item.objects()
            assert objects is not None
            kinds.append(("run", item.index, objects[1]))
            item.take(objects[1])
        else:
            kinds.append(("line", item[0], item[1].count(b"\n")))
    assert kinds == [("run", 0, 1), ("line", 1, 0), ("run", 2, 1), ("line", 3, 0), ("run", 4, 1)]
    assert (lines.count, lines.size, lines.unterminated) == (5, len(GOOD), False)


def test_a_newer_format_in_a_run_is_still_named() -> None:
    data = _line("a") + b'\n{"format":"model-call-capture/2","model_call_id":"b"}\n'
    outcome = _both(data)
    assert outcome[0] == "UnsupportedFormatError" and "newer than this reader" in outcome[1]


def test_editor_numbers_are_those_of_the_lines_read_one_by_one() -> None:
    # The second chunk is one run taken whole, after three lines of which two are blank.
    chunks = [b"\n" + _line("a") + b"\n\n", _line("b") + b"\n" + _line("c") + b"\n"]
    outcomes = []
    for runs in (True, False):
        lines = CaptureLines(
            RawLines(chunks, numbering="editor"),
            Path("r.capture.jsonl"),
            strict=False,
            decode=decode_line_without_payloads,
            decode_run=decode_run_without_payloads if runs else None,
        )
        outcomes.append([(number, line.model_call_id) for number, line in lines])
    # From 1, blank lines counted, as editors number them.
    assert outcomes[0] == outcomes[1] == [(2, "a"), (4, "b"), (5, "c")]
