"""The scale benchmark's DuckDB baselines do our commands' jobs: the same columns, the same values.

`benchmarks/_duck.py` holds the queries `python -m benchmarks scale` runs beside `mcc export`
and `mcc export --payloads`, `benchmarks/_duck_stats.py` the one beside `mcc stats --json`
(issue 20: a baseline must do the same job). Here each runs on a generated directory, on
lines wrapping every real response body of the test corpus, and on hand-made lines for the
rules the corpus does not reach (reasoning, legacy function calls, arguments that are not
JSON, cache writes, empty strings, negative counts, a line without a dialect, payloads that
are null, absent, raw text or JSON spelled oddly); every value DuckDB wrote must equal
ours, and the comparison itself must see a query that gets a column wrong.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks import _duck, _duck_stats
from benchmarks._generate import generate
from model_call_capture.arrow import PAYLOAD_COLUMNS, record_schema
from model_call_capture.cli import main
from model_call_capture.contracts import CAPTURE_LINE_FORMAT

CORPUS = Path(__file__).parent / "data" / "corpus"


def _export(root: Path, out: Path, payloads: bool = False) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["export", str(root), "--jobs", "1", "--out", str(out), *["--payloads"][:payloads]])
    assert exited.value.code in (0, None)


def _mismatches(
    root: Path, tmp_path: Path, columns: str = _duck.FAIR_COLUMNS, payloads: bool = False
) -> dict[str, int]:
    ours, duck = tmp_path / "mcc.parquet", tmp_path / "duck.parquet"
    _export(root, ours, payloads)
    source = _duck.FAIR_PAYLOADS_SOURCE if payloads else _duck.FAIR_SOURCE
    duckdb.connect().execute(_duck.copy_sql(columns, source, root, duck))
    return _duck.mismatches(duck, ours)


def _line(dialect: str, index: int, response: Any, **extra: Any) -> dict[str, Any]:
    return {
        "format": CAPTURE_LINE_FORMAT,
        "model_call_id": f"{dialect}-{index:04d}",
        "dialect": dialect,
        "model_ref": {"type": "responses_api_models", "name": "policy"},
        "started_at": 1800000000.0 + index,
        "completed_at": 1800000001.5 + index,
        "latency_ms": 1500.25 + 10 * index,
        "latency_ttft_ms": 80.5,
        "status_code": 200,
        "error_category": None,
        "request": {"model": f"{dialect}-request-model"},
        "response": response,
        **extra,
    }


def _write(root: Path, name: str, lines: Sequence[dict[str, Any] | str]) -> None:
    """One capture file of `lines` (a str is a line's own text, written as it is)."""
    root.mkdir(parents=True, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
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
    _write(root, "corpus-payloads", _PAYLOAD_EDGES)
    return root


def _payload_line(index: int, **fields: Any) -> dict[str, Any]:
    return {**_line("chat", index, None), "model_call_id": f"payloads-{index:04d}", **fields}


_ODD = (  # JSON spelled as DuckDB does not write it: spaces, exponents, escapes, big numbers
    '{ "model" :\t"odd" , "temperature": 7.0E-1, "n": 1e2, "seed": -0, '
    '"big": 123456789012345678901234567890, "text": "\\u00e9 \\ud83d\\ude00 \\"q\\" \\/ \\n", '
    '"messages": [ {"role": "user", "content": [ ]} ], "none": null, "t": true }'
)
# Payloads the generator and the corpus do not reach (the chat dialect derives from them).
_PAYLOAD_EDGES: list[dict[str, Any] | str] = [
    _payload_line(0, request=None, request_raw="not json {", status_code=400),
    _payload_line(1, response_raw='event: x\ndata: {"a": 1}\n\ndata: [DONE]\n\n', stream=True),
    _payload_line(2, request={}, response={}, response_raw="h\u00e9 \u2603"),
    {k: v for k, v in _payload_line(3).items() if k not in ("request", "response")},
    _payload_line(4, request={"model": "m", "messages": [{"role": "user", "content": "\u00e9"}]}),
    json.dumps(_payload_line(5, request="@", response="@")).replace('"@"', _ODD),
]


def _assert_same(counts: dict[str, int], payloads: bool = False) -> None:
    omitted = set(_duck.OMITTED) | {"model_call_id"}
    assert set(counts) - {"rows only in duckdb", "rows only in mcc"} == (
        set(record_schema(payloads).names) - omitted
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
    assert rows.fetchall() == [(18 + 7 + 3 * 2 + 1 + len(_PAYLOAD_EDGES),)]


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


def test_the_benchmark_rows_name_the_columns_they_write() -> None:
    from benchmarks.scale import FAIR, FAIR_1, FAIR_PAYLOADS

    width = len(record_schema().names) - len(_duck.OMITTED)
    assert f"(the same {width} columns)" in FAIR and f"(the same {width} columns)" in FAIR_1
    assert f"(the same {width + len(PAYLOAD_COLUMNS)} columns)" in FAIR_PAYLOADS


# -- with payloads: `_duck.FAIR_PAYLOADS_COLUMNS` beside `mcc export --payloads` ----------


def test_duckdb_writes_the_payloads_of_mcc_export_on_a_generated_directory(tmp_path: Path) -> None:
    made = generate(tmp_path / "model-calls", 4, calls=12)
    counts = _mismatches(made.root, tmp_path, _duck.FAIR_PAYLOADS_COLUMNS, payloads=True)
    _assert_same(counts, payloads=True)
    raws = duckdb.connect().execute(
        f"SELECT count(response_raw) FROM '{tmp_path / 'duck.parquet'}'"
    )
    assert raws.fetchall()[0][0] > 0  # the generator's failed streams keep their raw text


def test_duckdb_writes_the_payloads_of_mcc_export_on_the_corpus_and_edge_cases(
    corpus_dir: Path, tmp_path: Path
) -> None:
    counts = _mismatches(corpus_dir, tmp_path, _duck.FAIR_PAYLOADS_COLUMNS, payloads=True)
    _assert_same(counts, payloads=True)
    # The texts themselves differ (DuckDB writes JSON again, without the spaces of
    # `json.dumps`), so the values were compared parsed, not as text.
    differ = duckdb.connect().execute(
        f"SELECT count(*) FILTER (WHERE d.request <> m.request), "
        f"count(*) FILTER (WHERE d.response <> m.response), "
        f"count(*) FILTER (WHERE m.request IS NULL), count(m.request_raw), count(m.response_raw) "
        f"FROM '{tmp_path / 'duck.parquet'}' d JOIN '{tmp_path / 'mcc.parquet'}' m "
        f"USING (model_call_id)"
    )
    text_requests, text_responses, null_requests, request_raws, response_raws = differ.fetchall()[0]
    assert text_requests > 20 and text_responses > 20
    assert (null_requests, request_raws, response_raws) == (2, 1, 2)


_REQUEST_TEXT = "request_text::VARCHAR AS request"
_RESPONSE_TEXT = "response_text::VARCHAR AS response"
_RAWS = "request_raw,\n    response_raw,"


@pytest.mark.parametrize(
    ("old", "new", "wrong"),
    [
        # The response column holds the request.
        (_RESPONSE_TEXT, "request_text::VARCHAR AS response", {"response"}),
        # The raw texts swapped.
        (_RAWS, "response_raw AS request_raw, response_raw,", {"request_raw"}),
        # The request cut (no longer JSON).
        (_REQUEST_TEXT, "left(request_text::VARCHAR, 40) AS request", {"request"}),
        # The request as `FAIR_COLUMNS` reads it (its model only), not the whole body.
        (_REQUEST_TEXT, "to_json(request)::VARCHAR AS request", {"request"}),
        # Anthropic input tokens without cache reads and writes, beside the payloads.
        (
            "THEN u.input_tokens + coalesce(u.cache_read_input_tokens, 0)",
            "THEN u.input_tokens + 0",
            {"tokens_in", "tokens_total"},
        ),
    ],
)
def test_the_comparison_counts_a_payload_query_that_gets_a_column_wrong(
    corpus_dir: Path, tmp_path: Path, old: str, new: str, wrong: set[str]
) -> None:
    assert _duck.FAIR_PAYLOADS_COLUMNS.count(old) == 1
    query = _duck.FAIR_PAYLOADS_COLUMNS.replace(old, new)
    counts = _mismatches(corpus_dir, tmp_path, query, payloads=True)
    assert {name for name, n in counts.items() if n} == wrong


# -- the stats SQL: `_duck_stats.STATS_QUERY` beside `mcc stats --json` --------------------


def _sql_stats(root: Path, query: str = _duck_stats.STATS_QUERY) -> list[dict[str, Any]]:
    """The stats SQL's rows as the benchmark prints them (JSON)."""
    con = duckdb.connect()
    rows = con.execute(_duck.query_sql(query, _duck_stats.STATS_SOURCE, root)).fetchall()
    names = [column[0] for column in con.description]
    loaded: list[dict[str, Any]] = json.loads(
        json.dumps([dict(zip(names, r, strict=True)) for r in rows])
    )
    return loaded


def _mcc_stats(root: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["stats", str(root), "--jobs", "1", "--json"])
    assert exited.value.code in (0, None)
    printed: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["rows"]
    return printed


def test_the_stats_sql_names_every_figure_of_mcc_stats() -> None:
    from model_call_capture.cli.show import StatsRow

    assert ("model", "dialect", *_duck_stats.STATS_FIELDS) == StatsRow.__struct_fields__


def test_the_stats_sql_prints_the_figures_of_mcc_stats_on_a_generated_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made = generate(tmp_path / "model-calls", 6, calls=12)
    ours = _mcc_stats(made.root, capsys)
    assert len(ours) == 3 and all(row["errors"] or row["calls"] for row in ours)
    assert _sql_stats(made.root) == ours


def test_the_stats_sql_prints_the_figures_of_mcc_stats_on_the_corpus_and_edge_cases(
    corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = _mcc_stats(corpus_dir, capsys)
    assert len(ours) > 5
    assert _sql_stats(corpus_dir) == ours


def test_the_stats_sql_and_mcc_stats_give_hand_counted_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "model-calls"
    cached = {
        "input_tokens": 10,
        "output_tokens": 7,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
    }
    lines = [
        {**_line("messages", 0, {"model": "claude-x", "usage": cached}), "latency_ms": 100.0},
        {
            **_line("messages", 1, {"model": "claude-x", "usage": {"input_tokens": 3}}),
            "latency_ms": 300.0,
            "latency_ttft_ms": None,
            "error_category": "rate_limit",
        },
        {
            **_line("messages", 2, None, request={"model": "claude-x"}),
            "latency_ms": 200.0,
            "latency_ttft_ms": 30.0,
            "error_category": "upstream_error",
        },
        {
            **_line("messages", 3, None, request={"model": "claude-x"}),
            "latency_ms": 250.0,
            "latency_ttft_ms": None,
            "error_category": "rate_limit",
        },
    ]
    chat_usage = {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 20},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    _write(root, "a", lines)
    _write(root, "b", [_line("chat", 0, {"model": "gpt-y", "usage": chat_usage})])
    expected = [
        {
            "model": "claude-x",
            "dialect": "messages",
            "calls": 4,
            "errors": 3,
            "error_categories": {"rate_limit": 2, "upstream_error": 1},
            "tokens_in": 10 + 100 + 5 + 3,  # cache reads and writes folded in
            "tokens_out": 7,
            "tokens_reasoning": None,  # Anthropic reports none
            "tokens_total": 10 + 100 + 5 + 7,  # only the call that reported both
            "cached_tokens": 100,
            "latency_p50_ms": 200.0,  # of 100, 200, 250, 300: rank ceil(0.5 * 4) = 2
            "latency_p95_ms": 300.0,  # rank ceil(0.95 * 4) = 4
            "ttft_p50_ms": 30.0,  # of 80.5, 30: rank 1 of the sorted two
            "ttft_p95_ms": 80.5,
        },
        {
            "model": "gpt-y",
            "dialect": "chat",
            "calls": 1,
            "errors": 0,
            "error_categories": {},
            "tokens_in": 50,
            "tokens_out": 5,
            "tokens_reasoning": 2,
            "tokens_total": 55,  # no `total_tokens`: in + out
            "cached_tokens": 20,
            "latency_p50_ms": 1500.25,
            "latency_p95_ms": 1500.25,
            "ttft_p50_ms": 80.5,
            "ttft_p95_ms": 80.5,
        },
    ]
    assert _mcc_stats(root, capsys) == expected
    assert _sql_stats(root) == expected


@pytest.mark.parametrize(
    ("old", "new", "wrong"),
    [
        # Anthropic input tokens without cache reads and writes (the former stats SQL).
        (
            "THEN u.input_tokens + coalesce(u.cache_read_input_tokens, 0)",
            "THEN u.input_tokens + 0",
            {"tokens_in", "tokens_total"},
        ),
        # Interpolated percentiles: values no call had.
        ("quantile_disc(latency_ms, 0.5)", "quantile_cont(latency_ms, 0.5)", {"latency_p50_ms"}),
        # No categories: null, where `mcc stats` prints {}.
        ("coalesce(histogram(error_category), MAP {})", "histogram(error_category)", None),
        # Unknown models first.
        ("ORDER BY model NULLS LAST", "ORDER BY model NULLS FIRST", {"order"}),
    ],
)
def test_the_stats_comparison_counts_a_query_that_gets_a_figure_wrong(
    corpus_dir: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, wrong: set[str] | None
) -> None:
    assert _duck_stats.STATS_QUERY.count(old) == 1
    ours = _mcc_stats(corpus_dir, capsys)
    counts = _duck_stats.differences(
        _sql_stats(corpus_dir, _duck_stats.STATS_QUERY.replace(old, new)), ours
    )
    assert {name for name, n in counts.items() if n} == (wrong or {"error_categories"})


def test_the_stats_comparison_counts_groups_one_side_lacks() -> None:
    figures: dict[str, Any] = dict.fromkeys(_duck_stats.STATS_FIELDS, 1)
    duck: list[dict[str, Any]] = [
        {"model": "a", "dialect": "chat", **figures},
        {"model": "b", "dialect": None, **figures},
    ]
    ours: list[dict[str, Any]] = [{"model": "a", "dialect": "chat", **figures, "calls": 2}]
    ours.append({"model": "c", "dialect": "chat", **figures})
    counts = _duck_stats.differences(duck, ours)
    assert {name: n for name, n in counts.items() if n} == {
        "groups only in duckdb": 1,
        "groups only in mcc": 1,
        "calls": 1,
    }
