"""The scale benchmark's DuckDB baseline does `mcc export`'s job: the same columns, the same values.

`benchmarks/_duck.py` holds the query `python -m benchmarks scale` runs beside `mcc export`
(issue 20: a baseline must do the same job). Here the same query runs on a generated
directory, on lines wrapping every real response body of the test corpus, and on hand-made
lines for the rules the corpus does not reach (reasoning, legacy function calls, arguments
that are not JSON, cache writes, empty strings, negative counts, a line without a dialect); every
value DuckDB wrote must equal `mcc export`'s, and the counter itself must see a difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks import _duck
from benchmarks._generate import generate
from model_call_capture.arrow import record_schema
from model_call_capture.cli import main
from model_call_capture.contracts import CAPTURE_LINE_FORMAT

CORPUS = Path(__file__).parent / "data" / "corpus"


def _export(root: Path, out: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["export", str(root), "--jobs", "1", "--out", str(out)])
    assert exited.value.code in (0, None)


def _mismatches(root: Path, tmp_path: Path, columns: str = _duck.FAIR_COLUMNS) -> dict[str, int]:
    ours, duck = tmp_path / "mcc.parquet", tmp_path / "duck.parquet"
    _export(root, ours)
    duckdb.connect().execute(_duck.copy_sql(columns, _duck.FAIR_SOURCE, root, duck))
    return _duck.mismatches(duck, ours)


def _line(dialect: str, index: int, response: Any, **extra: Any) -> dict[str, Any]:
    return {
        "format": CAPTURE_LINE_FORMAT,
        "model_call_id": f"{dialect}-{index:04d}",
        "dialect": dialect,
        "model_ref": {"type": "responses_api_models", "name": "policy"},
        "started_at": 1800000000.0 + index,
        "completed_at": 1800000001.5 + index,
        "latency_ms": 1500.25,
        "latency_ttft_ms": 80.5,
        "status_code": 200,
        "error_category": None,
        "request": {"model": f"{dialect}-request-model"},
        "response": response,
        **extra,
    }


def _write(root: Path, name: str, lines: list[dict[str, Any]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (root / f"{name}.capture.jsonl").write_text(text)


def _chat(**message: Any) -> dict[str, Any]:
    return {"id": "", "model": "", "choices": [{"finish_reason": "", "message": message}]}


# Hand-made responses for rules the corpus and the generator do not reach.
_EDGES: dict[str, list[Any]] = {
    "chat": [
        _chat(reasoning_content="", reasoning="thought in `reasoning`"),
        _chat(
            reasoning_content="thought",
            tool_calls=[{"id": "", "function": {"name": "f", "arguments": "not json {"}}],
            function_call={"name": "legacy", "arguments": '{"a": [1, 2]}'},
        ),
        {
            "id": "c1",
            "model": "m",
            "usage": {
                "prompt_tokens": -3,
                "completion_tokens": 4,
                "prompt_cache_hit_tokens": 7,
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        },
        {"usage": {"prompt_tokens": 5, "completion_tokens": 6}},
    ],
    "responses": [
        {
            "id": "",
            "model": "",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {"type": "reasoning", "summary": [{"text": "s1"}, {"text": ""}], "content": []},
                {"type": "custom_tool_call", "call_id": "t", "name": "sh", "input": "ls -l"},
                {"type": "reasoning", "summary": [], "content": [{"text": "c1"}]},
                {"type": "function_call", "call_id": "u", "name": "f", "arguments": "[1,"},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 3},
        },
    ],
    "messages": [
        {
            "id": "",
            "model": "",
            "stop_reason": "end_turn",
            "content": [
                {"type": "thinking", "thinking": "one"},
                {"type": "thinking", "thinking": ""},
                {"type": "tool_use", "id": "x", "name": "f", "input": {"b": {"c": [None, 1.5]}}},
                {"type": "thinking", "thinking": "two"},
            ],
            "usage": {
                "input_tokens": 3,
                "output_tokens": 9,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 40,
            },
        },
        {"usage": {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": -1}},
    ],
}


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Capture lines wrapping every real response body of the corpus, and the hand-made ones."""
    root = tmp_path_factory.mktemp("corpus") / "model-calls"
    for dialect in ("chat", "responses", "messages"):
        bodies = [
            json.loads(p.read_text()) for p in sorted((CORPUS / "json" / dialect).glob("*.json"))
        ]
        lines = [_line(dialect, i, body) for i, body in enumerate([*bodies, *_EDGES[dialect]])]
        lines.append(_line(dialect, len(lines), None, error_category="upstream_error"))
        lines.append(
            _line(
                dialect,
                len(lines),
                None,
                capture_cut=True,
                client_session_id="s",
                upstream_attempted=False,
            )
        )
        _write(root, f"corpus-{dialect}", lines)
    # No dialect: nothing is derived, whatever the response holds.
    no_dialect = _line("none", 0, {"id": "g", "model": "gm", "usage": {"input_tokens": 1}})
    _write(root, "corpus-none", [{**no_dialect, "dialect": None}])
    return root


def _assert_same(counts: dict[str, int]) -> None:
    omitted = set(_duck.OMITTED) | {"model_call_id"}
    assert set(counts) - {"rows only in duckdb", "rows only in mcc"} == (
        set(record_schema().names) - omitted
    )
    assert {name: n for name, n in counts.items() if n} == {}


def test_duckdb_writes_the_values_of_mcc_export_on_a_generated_directory(tmp_path: Path) -> None:
    made = generate(tmp_path / "model-calls", 4, calls=12)
    assert made.lines > 30
    _assert_same(_mismatches(made.root, tmp_path))


def test_duckdb_writes_the_values_of_mcc_export_on_the_corpus_and_edge_cases(
    corpus_dir: Path, tmp_path: Path
) -> None:
    counts = _mismatches(corpus_dir, tmp_path)
    _assert_same(counts)
    rows = duckdb.connect().execute(f"SELECT count(*) FROM '{tmp_path / 'duck.parquet'}'")
    assert rows.fetchall() == [(18 + 7 + 3 * 2 + 1,)]


def test_the_comparison_counts_a_column_the_query_gets_wrong(
    corpus_dir: Path, tmp_path: Path
) -> None:
    # Anthropic input tokens without cache reads and writes, as issue 14's hand-written SQL.
    wrong = _duck.FAIR_COLUMNS.replace(
        "THEN u.input_tokens + coalesce(u.cache_read_input_tokens, 0)", "THEN u.input_tokens + 0"
    )
    assert wrong != _duck.FAIR_COLUMNS
    counts = _mismatches(corpus_dir, tmp_path, wrong)
    assert counts["tokens_in"] > 0 and counts["tokens_total"] > 0
    assert counts["tokens_out"] == 0


def test_the_benchmark_row_names_the_columns_it_writes() -> None:
    from benchmarks.scale import FAIR, FAIR_1

    width = len(record_schema().names) - len(_duck.OMITTED)
    assert f"(the same {width} columns)" in FAIR and f"(the same {width} columns)" in FAIR_1
