"""Records without payloads (`payloads="omitted"`, the export's one-pass decode) equal the others.

`decode_line_without_payloads` decodes a line in one pass that skips the payloads; every
record it gives must be the `lazy` record (the default), payload fields left unset, and
every line it refuses a line the lazy reader refuses, with the same error. Checked on
the recorded corpus, NeMo Gym's files, a real `mcc demo` run and hand-written hostile
lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
import pytest

from benchmarks.export_scale import generate_captures
from conftest import FULL_CORPUS
from model_call_capture.arrow import PAYLOAD_COLUMNS, iter_record_batches
from model_call_capture.cli import main
from model_call_capture.contracts import ModelCallRecord
from model_call_capture.errors import DamagedLineError, LineTooLongError, UnsupportedFormatError
from model_call_capture.export._records import RecordsParquet
from model_call_capture.reader import decode_capture_line
from model_call_capture.records import (
    Payloads,
    decode_line_lazily,
    decode_line_without_payloads,
    iter_rollout_records,
)
from model_call_capture.store import CaptureStore, Rollout

_UNSET_PAYLOADS = dict.fromkeys(PAYLOAD_COLUMNS, msgspec.UNSET)

# One field per line shape: each is one line of a capture file, written by hand.
HOSTILE = [
    b'{"model_call_id":"ok","dialect":"chat","request":{"model":"m","messages":[]},'
    b'"response":{"id":"c","choices":[{"message":{"tool_calls":[{"id":"t","function":'
    b'{"name":"f","arguments":"{\\"a\\":1}"}}]},"finish_reason":"tool_calls"}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":4}}}',
    b'{"model_call_id":"no model in the response","dialect":"messages",'
    b'"request":{"model":"claude","max_tokens":5},"response":{"id":"msg"}}',
    b'{"model_call_id":"model not a string","dialect":"chat","request":{"model":{"a":[1]}}}',
    b'{"model_call_id":"model out of range","dialect":"chat","request":{"model":1e400}}',
    b'{"model_call_id":"number out of range elsewhere","dialect":"chat","request":{"x":1e400}}',
    b'{"model_call_id":"big model","dialect":"chat","request":{"model":123456789012345678901234567890}}',
    b'{"model_call_id":"dup","dialect":"chat","request":{"model":"a","model":"b"},'
    b'"request":{"model":"c"}}',
    b'{"model_call_id":"request array","request":[1]}',
    b'{"model_call_id":"request string","request":"text"}',
    b'{"model_call_id":"response number","response":12}',
    b'{"model_call_id":"response null","dialect":"responses","response":null}',
    b'{"model_call_id":"not utf-8 in the request","request":{"k":"\xff"}}',
    b'{"model_call_id":"not utf-8 in an unknown field","unknown":"\xfe","request":null}',
    b'{"model_call_id":"utf-8","dialect":"chat","request":{"model":"caf\xc3\xa9"}}',
    b'{"model_call_id":"lone surrogate","request":{"k":"\\ud800"}}',
    b'{"model_call_id":"escaped model","dialect":"chat","request":{"model":"\\u006d"}}',
    b'{"model_call_id":"torn","request":{"model":"m","messages":[{"role"',
    b'{"model_call_id":"deep","request":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}}",
    b'{"model_call_id":"trailing","request":{}} x',
    b"[1,2,3]",
    b'{"model_call_id":7}',
    b'{"model_call_id":"bad latency","latency_ms":-1}',
    b'{"model_call_id":"bad gap","gaps":[{"detail":"no code"}]}',
    b'{"model_call_id":"gap","gaps":[{"code":"memory_budget"}],"capture_cut":true}',
    b'{"model_call_id":"unknown dialect","dialect":"other","request":{"model":"m"}}',
    b'{"model_call_id":"dialect null","dialect":null,"request":{"model":"m"}}',
    b'{"model_call_id":"raw texts","request":null,"request_raw":"<html>",'
    b'"response_raw":"data: x\\n\\n","stream":true}',
    b'{"model_call_id":"raw not text","request_raw":5}',
    b'{"model_call_id":"huge tokens","dialect":"chat","response":{"usage":'
    b'{"prompt_tokens":1180591620717411303424}}}',
    b'{"model_call_id":"wrong dialect body","dialect":"responses","response":'
    b'{"choices":[{"message":{"content":"hi"}}]}}',
    b'{"format":"model-call-capture/1","model_call_id":"v1"}',
    b"   ",
]


def _without_payloads(record: ModelCallRecord) -> ModelCallRecord:
    return msgspec.structs.replace(record, **_UNSET_PAYLOADS)


def _outcome(path: Path, payloads: bool) -> tuple[list[ModelCallRecord], int]:
    mode: Payloads = "lazy" if payloads else "omitted"
    stream = iter_rollout_records(Rollout("r", (path,)), payloads=mode)
    records = list(stream)
    return records, stream.damaged


def _assert_same_records(path: Path) -> int:
    """The records of `path` without payloads are the lazy ones less the payloads; their number."""
    with_payloads, damaged = _outcome(path, payloads=True)
    without, damaged_without = _outcome(path, payloads=False)
    assert without == [_without_payloads(r) for r in with_payloads]
    assert damaged_without == damaged
    return len(without)


def test_each_hostile_line_gives_the_record_or_the_verdict_it_gives_with_payloads(
    tmp_path: Path,
) -> None:
    for i, line in enumerate(HOSTILE):
        path = tmp_path / f"r{i}.capture.jsonl"
        path.write_bytes(line + b"\n")
        _assert_same_records(path)
        strict = [_strict_outcome(path, payloads) for payloads in (True, False)]
        assert strict[0] == strict[1], line


def _strict_outcome(path: Path, payloads: bool) -> Any:
    mode: Payloads = "lazy" if payloads else "omitted"
    try:
        return [
            _without_payloads(r)
            for r in iter_rollout_records(Rollout("r", (path,)), strict=True, payloads=mode)
        ]
    except DamagedLineError as exc:
        return (type(exc), str(exc))


def test_the_hostile_lines_are_judged_as_written_here(tmp_path: Path) -> None:
    # The expected verdicts are written by hand: which lines are records, in order.
    path = tmp_path / "r.capture.jsonl"
    path.write_bytes(b"\n".join(HOSTILE) + b"\n")
    records, damaged = _outcome(path, payloads=False)
    assert [r.model_call_id for r in records] == [
        "ok",
        "no model in the response",
        "model not a string",
        "model out of range",
        "number out of range elsewhere",
        "big model",
        "dup",
        "response null",
        "not utf-8 in an unknown field",  # msgspec checks no text it skips, nor does the store
        "utf-8",
        "escaped model",
        "gap",
        "dialect null",
        "raw texts",
        "huge tokens",
        "wrong dialect body",
        "v1",
    ]
    # The array, string and number payloads, the bytes that are not UTF-8 in the request,
    # the lone surrogate, the torn line, nesting deeper than the decoder goes, trailing
    # bytes, a line that is no object, a number id, a negative latency, a gap without its
    # code, a dialect no v1 line names, a raw text that is no text.
    assert damaged == 14
    by_id = {r.model_call_id: r for r in records}
    ok = by_id["ok"]
    assert (ok.model, ok.response_id, ok.finish_reason, ok.tokens_in, ok.tokens_total) == (
        "m",
        "c",
        "tool_calls",
        3,
        7,
    )
    assert [(c.call_id, c.name, c.arguments) for c in ok.tool_calls] == [("t", "f", {"a": 1})]
    assert by_id["no model in the response"].model == "claude"
    assert by_id["model not a string"].model is None
    assert by_id["model out of range"].model is None
    assert by_id["dup"].model == "c"
    assert by_id["utf-8"].model == "café"
    assert by_id["escaped model"].model == "m"
    assert by_id["huge tokens"].tokens_in == 2**70
    assert by_id["gap"].capture_cut is True
    assert all(r.request is msgspec.UNSET and r.response_raw is msgspec.UNSET for r in records)


def test_every_line_decoded_without_payloads_has_the_verdict_of_the_lazy_decode() -> None:
    for raw in HOSTILE:
        if raw.isspace():
            continue
        outcomes: list[tuple[Any, ...]] = []
        for decode in (decode_line_lazily, decode_line_without_payloads):
            try:
                line = decode(raw, path=None, line_index=0)
                outcomes.append(("line", line.model_call_id, line.dialect, line.status_code))
            except (msgspec.DecodeError, RecursionError) as exc:
                outcomes.append(("error", type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1], raw


def test_a_newer_format_and_a_line_over_the_cap_are_still_named(tmp_path: Path) -> None:
    path = tmp_path / "r.capture.jsonl"
    path.write_bytes(b'{"format":"model-call-capture/2","request":[1]}\n')
    with pytest.raises(UnsupportedFormatError, match="newer than this reader"):
        list(iter_rollout_records(Rollout("r", (path,)), payloads="omitted"))
    with pytest.raises(UnsupportedFormatError):
        decode_capture_line(b'{"format":"model-call-capture/2"}')
    path.write_bytes(b'{"model_call_id":"a","request":{"model":"' + b"m" * 100 + b'"}}\n')
    with pytest.raises(LineTooLongError, match="line 1: "):
        list(
            iter_rollout_records(
                Rollout("r", (path,)), strict=True, max_line_bytes=50, payloads="omitted"
            )
        )
    stream = iter_rollout_records(Rollout("r", (path,)), max_line_bytes=50, payloads="omitted")
    assert (list(stream), stream.damaged) == ([], 1)


def test_records_without_payloads_equal_the_records_on_the_corpus(
    corpus_dir: Path, tmp_path: Path
) -> None:
    # Every complete JSON body of the corpus as the response of a line of its dialect.
    manifest = json.loads((corpus_dir / "manifest.json").read_text())
    lines = []
    for entry in manifest:
        if entry["kind"] != "json":
            continue
        body = (corpus_dir / entry["file"]).read_bytes()
        dialect = entry["dialect"].encode()
        lines.append(
            b'{"model_call_id":"'
            + entry["sha256"].encode()
            + b'","dialect":"'
            + dialect
            + b'","request":{"model":"asked"},"response":'
            + body.strip()
            + b"}"
        )
    path = tmp_path / "corpus.capture.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    # Bodies written on one line become records (the corpus gives 15, its sample in
    # tests/data 5); the others are damaged lines, which both reads must count alike.
    assert _assert_same_records(path) >= (10 if FULL_CORPUS else 3)


def test_records_without_payloads_equal_the_records_on_gyms_files(gym_reference_dir: Path) -> None:
    files = sorted(gym_reference_dir.rglob("*.capture.jsonl"))
    assert files
    assert sum(_assert_same_records(path) for path in files) > 20


def test_records_without_payloads_equal_the_records_of_a_demo_run(demo_calls: Path) -> None:
    assert sum(_assert_same_records(path) for path in sorted(demo_calls.iterdir())) > 20


def test_batches_without_payloads_equal_the_batches_with_them_less_the_payloads(
    demo_calls: Path, tmp_path: Path
) -> None:
    paths = sorted(demo_calls.glob("*.capture.jsonl"))
    hostile = tmp_path / "hostile.capture.jsonl"
    hostile.write_bytes(b"\n".join(HOSTILE) + b"\n")
    paths.append(hostile)
    with_payloads = iter_record_batches(paths, payloads=True, batch_size=7)
    rows = [r for b in with_payloads for r in b.to_pylist()]
    without = iter_record_batches(paths, payloads=False, batch_size=7)
    assert [r for b in without for r in b.to_pylist()] == [
        {k: v for k, v in row.items() if k not in PAYLOAD_COLUMNS} for row in rows
    ]
    assert (without.damaged, without.out_of_range, without.rows) == (
        with_payloads.damaged,
        with_payloads.out_of_range,
        len(rows),
    )
    assert without.out_of_range == 1  # the token count beyond int64


def test_an_export_of_many_files_per_table_is_the_same_bytes_whatever_the_jobs(
    tmp_path: Path,
) -> None:
    # 520 files: two files per worker table without payloads (`RecordsParquet.groups`).
    captures = tmp_path / "captures"
    generate_captures(captures, rollouts=520, calls=2, payload_bytes=700)
    assert [len(g) for g in RecordsParquet().groups(CaptureStore(captures).rollouts())] == [2] * 260
    outs = [tmp_path / f"jobs{n}.parquet" for n in (1, 3)]
    for jobs, out in zip((1, 3), outs, strict=True):
        with pytest.raises(SystemExit) as exited:
            main(["export", str(captures), "--out", str(out), "--jobs", str(jobs)])
        assert exited.value.code in (0, None)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    table = pq.read_table(outs[0])
    assert table.num_rows == 1040
    assert table.column("rollout_id").to_pylist()[:3] == ["r000000", "r000000", "r000001"]
    assert table.column("tokens_in").to_pylist()[:3] == [100, 101, 100]
