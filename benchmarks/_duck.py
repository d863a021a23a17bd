"""DuckDB doing `mcc export`'s job: the same columns with the same values, from the same lines.

`FAIR_COLUMNS` is what a competent DuckDB user writes to export the records without
payloads: one `read_json` whose `request` is typed `STRUCT(model VARCHAR)` (DuckDB then
builds nothing for the rest of it) and whose `response` is `json_transform`ed once into a
STRUCT of the members the dialects' `derive` reads (`RESPONSE_SHAPE`; the fastest of the
forms tried, docs/performance.md), and per dialect the rules of `dialects/*/_derive.py` in SQL: token
counts that must be non-negative integers, Anthropic input tokens with cache reads and
writes folded in, totals summed where the response has none, tool calls as
list<struct> with their arguments parsed as JSON (`{"_raw": text}` when they are not),
reasoning text joined by a newline, nulls where the dialect is unknown.

What SQL cannot reasonably compute, and the baseline leaves out (`OMITTED`): the token
fields (`prompt_token_ids`, `generation_token_ids`, `generation_log_probs`: several
candidate places per dialect, ids spelled in log-prob tokens, length checks between
them) and `derivation_problems` (the notes those rules write). `call_index` is the
line's position in its file; `read_json` has no line number, so the query numbers each
file's lines by `started_at` (then `model_call_id`), which is the line order of the
generated files (a rollout's calls there run one after another) but not of every file.

`FAIR_PAYLOADS_COLUMNS` does `mcc export --payloads`'s job: the same query over lines read
with `request` whole (`FAIR_PAYLOADS_SOURCE`), and the four payload columns
(`arrow.PAYLOAD_COLUMNS`) where the export writes them. The token derivation
(`counted_ctes`, `MODEL`, `REASONING_TOKENS`, `TOTAL_TOKENS`) is also the stats SQL's
(`_duck_stats.py`).

`mismatches` joins DuckDB's Parquet with `mcc export`'s on `model_call_id` and counts the
values that differ, column by column (JSON text compared parsed, payloads by digest,
floats within 1e-9 relative), so a baseline that does a different job shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from model_call_capture.arrow import PAYLOAD_COLUMNS

__all__ = [
    "FAIR_COLUMNS",
    "FAIR_PAYLOADS_COLUMNS",
    "FAIR_PAYLOADS_SOURCE",
    "FAIR_SOURCE",
    "MODEL",
    "OMITTED",
    "REASONING_TOKENS",
    "RESPONSE_SHAPE",
    "SHORT_COLUMNS",
    "SHORT_QUERY",
    "SHORT_SOURCE",
    "TOTAL_TOKENS",
    "copy_sql",
    "counted_ctes",
    "mismatches",
    "query_sql",
    "struct_type",
]

OMITTED = (
    "prompt_token_ids",
    "generation_token_ids",
    "generation_log_probs",
    "derivation_problems",
)
"""Columns of `record_schema()` the DuckDB baseline does not write (see the module text)."""

_N = "BIGINT"  # a token count
_TEXT = "VARCHAR"
_TOOL_FUNCTION = {"name": _TEXT, "arguments": _TEXT}
# The members of a response the three dialects' `derive` reads ([x]: a list of x).
RESPONSE_SHAPE: dict[str, Any] = {
    "id": _TEXT,
    "model": _TEXT,
    "status": _TEXT,
    "stop_reason": _TEXT,
    "incomplete_details": {"reason": _TEXT},
    "usage": {
        "prompt_tokens": _N,
        "completion_tokens": _N,
        "total_tokens": _N,
        "prompt_cache_hit_tokens": _N,
        "prompt_tokens_details": {"cached_tokens": _N},
        "completion_tokens_details": {"reasoning_tokens": _N},
        "input_tokens": _N,
        "output_tokens": _N,
        "input_tokens_details": {"cached_tokens": _N},
        "output_tokens_details": {"reasoning_tokens": _N},
        "cache_read_input_tokens": _N,
        "cache_creation_input_tokens": _N,
    },
    "choices": [
        {
            "finish_reason": _TEXT,
            "message": {
                "reasoning_content": _TEXT,
                "reasoning": _TEXT,
                "tool_calls": [{"id": _TEXT, "function": _TOOL_FUNCTION}],
                "function_call": _TOOL_FUNCTION,
            },
        }
    ],
    "output": [
        {
            "type": _TEXT,
            "call_id": _TEXT,
            "name": _TEXT,
            "arguments": _TEXT,
            "input": _TEXT,
            "summary": [{"text": _TEXT}],
            "content": [{"text": _TEXT}],
        }
    ],
    "content": [{"type": _TEXT, "id": _TEXT, "name": _TEXT, "input": "JSON", "thinking": _TEXT}],
}
"""The structure `FAIR_COLUMNS` gives `response` (`json_transform`; `struct_type` is its type)."""


def struct_type(shape: Any) -> str:
    """The DuckDB type of a shape of `RESPONSE_SHAPE`: STRUCT for a dict, LIST for `[x]`."""
    if isinstance(shape, list):
        return struct_type(shape[0]) + "[]"
    if isinstance(shape, dict):
        return "STRUCT(" + ", ".join(f"{k} {struct_type(v)}" for k, v in shape.items()) + ")"
    return str(shape)


FAIR_SOURCE = (
    "read_json('{root}/*.capture.jsonl', format='newline_delimited', "
    "maximum_object_size=268435456, filename=true, columns={{"
    "model_call_id: 'VARCHAR', dialect: 'VARCHAR', "
    "model_ref: 'STRUCT(type VARCHAR, name VARCHAR)', status_code: 'BIGINT', "
    "error_category: 'VARCHAR', latency_ms: 'DOUBLE', latency_ttft_ms: 'DOUBLE', "
    "started_at: 'DOUBLE', completed_at: 'DOUBLE', capture_cut: 'BOOLEAN', "
    "client_session_id: 'VARCHAR', upstream_attempted: 'BOOLEAN', response_source: 'VARCHAR', "
    "upstream_status_code: 'BIGINT', local_response_reason: 'VARCHAR', "
    "request: 'STRUCT(model VARCHAR)', response: 'JSON'}})"
)
"""The lines as `FAIR_COLUMNS` reads them (`{root}`: the capture directory)."""

FAIR_PAYLOADS_SOURCE = FAIR_SOURCE.replace(
    "request: 'STRUCT(model VARCHAR)', response: 'JSON'",
    "request: 'JSON', response: 'JSON', request_raw: 'VARCHAR', response_raw: 'VARCHAR'",
)
"""The lines as `FAIR_PAYLOADS_COLUMNS` reads them: `request` whole (`JSON`), and the raw texts."""

# Tool-call arguments as `dialects.base.tool_arguments` reads them, as JSON text.
_ARGS = (
    "CASE WHEN {a} IS NULL THEN NULL WHEN json_valid({a}) THEN json({a})::VARCHAR "
    "ELSE json_object('_raw', {a})::VARCHAR END"
)
_CHAT_CALLS = f"""list_concat(
    list_transform(list_filter(r.choices[1].message.tool_calls, lambda c: c IS NOT NULL),
        lambda c: {{'call_id': nullif(c.id, ''), 'name': nullif(c.function.name, ''),
                    'arguments': {_ARGS.format(a="c.function.arguments")}}}),
    CASE WHEN r.choices[1].message.function_call IS NOT NULL THEN
        [{{'call_id': NULL::VARCHAR, 'name': nullif(r.choices[1].message.function_call.name, ''),
           'arguments': {_ARGS.format(a="r.choices[1].message.function_call.arguments")}}}]
    END)"""
_RESPONSES_CALLS = f"""list_transform(
    list_filter(r.output, lambda o: o.type IN ('function_call', 'custom_tool_call')),
    lambda o: {{'call_id': o.call_id, 'name': o.name, 'arguments':
        {_ARGS.format(a="CASE WHEN o.type = 'function_call' THEN o.arguments ELSE o.input END")}}})"""
_MESSAGES_CALLS = """list_transform(list_filter(r.content, lambda b: b.type = 'tool_use'),
    lambda b: {'call_id': b.id, 'name': b.name, 'arguments': b.input::VARCHAR})"""
_RESPONSES_REASONING = """flatten(list_transform(list_filter(r.output, lambda o: o.type = 'reasoning'),
    lambda o: list_concat(list_transform(o.summary, lambda part: part.text),
                          list_transform(o.content, lambda part: part.text))))"""
_MESSAGES_REASONING = """list_transform(
    list_filter(r.content, lambda b: b.type = 'thinking'), lambda b: b.thinking)"""

# The CTEs every fair query starts with (`{select}`: `shaped`'s columns, the response
# shaped once): the usage counts of `dialects/*/_derive.py`, `t_in`, `t_out`, `t_cached`.
_COUNTED = """shaped AS (
    SELECT {select} FROM {source}
), lines AS (
    SELECT *, r.usage AS u FROM shaped
), counted AS (
    SELECT *,
        CASE dialect
            WHEN 'chat' THEN CASE WHEN u.prompt_tokens >= 0 THEN u.prompt_tokens END
            WHEN 'responses' THEN CASE WHEN u.input_tokens >= 0 THEN u.input_tokens END
            WHEN 'messages' THEN CASE
                WHEN u.input_tokens >= 0
                 AND coalesce(u.cache_read_input_tokens, 0) >= 0
                 AND coalesce(u.cache_creation_input_tokens, 0) >= 0
                THEN u.input_tokens + coalesce(u.cache_read_input_tokens, 0)
                     + coalesce(u.cache_creation_input_tokens, 0) END
        END AS t_in,
        CASE dialect
            WHEN 'chat' THEN CASE WHEN u.completion_tokens >= 0 THEN u.completion_tokens END
            WHEN 'responses' THEN CASE WHEN u.output_tokens >= 0 THEN u.output_tokens END
            WHEN 'messages' THEN CASE WHEN u.output_tokens >= 0 THEN u.output_tokens END
        END AS t_out,
        CASE dialect
            WHEN 'chat' THEN coalesce(
                CASE WHEN u.prompt_tokens_details.cached_tokens >= 0
                     THEN u.prompt_tokens_details.cached_tokens END,
                CASE WHEN u.prompt_cache_hit_tokens >= 0 THEN u.prompt_cache_hit_tokens END)
            WHEN 'responses' THEN CASE WHEN u.input_tokens_details.cached_tokens >= 0
                                       THEN u.input_tokens_details.cached_tokens END
            WHEN 'messages' THEN CASE WHEN u.cache_read_input_tokens >= 0
                                      THEN u.cache_read_input_tokens END
        END AS t_cached
    FROM lines
)"""


def counted_ctes(shape: Any, *, exclude: str = "response", keep: str = "") -> str:
    """`_COUNTED` with `response` shaped as `shape` (`json_transform`) into `r`.

    `shaped` holds the source's columns but `exclude`, and `keep` (more columns, each
    with its leading comma); `{source}` stays to be filled (`query_sql`).
    """
    shaped = json.dumps(shape, separators=(",", ":"))
    select = f"* EXCLUDE ({exclude}), json_transform(response, '{shaped}') AS r{keep}"
    return _COUNTED.format(select=select, source="{source}")


# The derived columns `mcc stats` sums, from `counted` (as `dialects/*/_derive.py`).
MODEL = """CASE dialect
        WHEN 'responses' THEN coalesce(nullif(r.model, ''), request.model)
        WHEN 'chat' THEN coalesce(nullif(r.model, ''), nullif(request.model, ''))
        WHEN 'messages' THEN coalesce(nullif(r.model, ''), nullif(request.model, ''))
    END"""
REASONING_TOKENS = """CASE dialect
        WHEN 'chat' THEN CASE WHEN u.completion_tokens_details.reasoning_tokens >= 0
                              THEN u.completion_tokens_details.reasoning_tokens END
        WHEN 'responses' THEN CASE WHEN u.output_tokens_details.reasoning_tokens >= 0
                                   THEN u.output_tokens_details.reasoning_tokens END
    END"""
TOTAL_TOKENS = """CASE dialect
        WHEN 'chat' THEN coalesce(CASE WHEN u.total_tokens >= 0 THEN u.total_tokens END,
                                  t_in + t_out)
        WHEN 'responses' THEN coalesce(CASE WHEN u.total_tokens >= 0 THEN u.total_tokens END,
                                       t_in + t_out)
        WHEN 'messages' THEN t_in + t_out
    END"""


def _export_query(payloads: str = "", **shaped: str) -> str:
    """The fair export's query: `payloads` before `capture_cut`, `shaped` for `counted_ctes`."""
    return f"""
WITH {counted_ctes(RESPONSE_SHAPE, **shaped)}, thought AS (
    SELECT *,
        CASE dialect
            WHEN 'chat' THEN list_filter([coalesce(
                nullif(r.choices[1].message.reasoning_content, ''),
                nullif(r.choices[1].message.reasoning, ''))], lambda t: t IS NOT NULL)
            WHEN 'responses' THEN {_RESPONSES_REASONING}
            WHEN 'messages' THEN {_MESSAGES_REASONING}
        END AS thoughts
    FROM counted
)
SELECT
    regexp_extract(filename, '([^/]*)\\.capture\\.jsonl$', 1) AS rollout_id,
    model_call_id,
    CASE dialect
        WHEN 'chat' THEN nullif(r.id, '')
        WHEN 'responses' THEN r.id
        WHEN 'messages' THEN r.id
    END AS response_id,
    row_number() OVER (PARTITION BY filename ORDER BY started_at, model_call_id) - 1
        AS call_index,
    model_ref,
    {MODEL} AS model,
    dialect,
    status_code,
    CASE dialect WHEN 'responses' THEN r.status END AS response_status,
    CASE dialect
        WHEN 'chat' THEN nullif(r.choices[1].finish_reason, '')
        WHEN 'responses' THEN r.incomplete_details.reason
        WHEN 'messages' THEN r.stop_reason
    END AS finish_reason,
    started_at,
    completed_at,
    t_in AS tokens_in,
    t_out AS tokens_out,
    {REASONING_TOKENS} AS tokens_reasoning,
    {TOTAL_TOKENS} AS tokens_total,
    t_cached AS cached_tokens,
    t_cached > 0 AS cache_hit,
    CASE dialect WHEN 'messages' THEN CASE WHEN u.cache_creation_input_tokens >= 0
                                           THEN u.cache_creation_input_tokens END
    END AS cache_creation_tokens,
    coalesce(CASE dialect
        WHEN 'chat' THEN {_CHAT_CALLS}
        WHEN 'responses' THEN {_RESPONSES_CALLS}
        WHEN 'messages' THEN {_MESSAGES_CALLS}
    END, []) AS tool_calls,
    CASE WHEN len(list_filter(thoughts, lambda t: t <> '')) > 0
         THEN array_to_string(list_filter(thoughts, lambda t: t <> ''), chr(10))
    END AS reasoning_content,
    error_category,
    latency_ms AS latency_total_ms,
    latency_ttft_ms,{payloads}
    coalesce(capture_cut, false) AS capture_cut,
    client_session_id,
    upstream_attempted,
    response_source,
    upstream_status_code,
    local_response_reason
FROM thought
"""


FAIR_COLUMNS = _export_query()
"""The fair baseline's query (`{source}`: `FAIR_SOURCE`; see `copy_sql`)."""

# With payloads `request` is read whole: its text is the column, its model the STRUCT
# `FAIR_COLUMNS` reads (`shaped` keeps both). The texts are DuckDB's own writing of the
# JSON (no white space, numbers as it prints them), so `mismatches` compares them parsed.
FAIR_PAYLOADS_COLUMNS = _export_query(
    exclude="request, response",
    keep=", request AS request_text, response AS response_text, "
    """json_transform(request, '{"model":"VARCHAR"}') AS request""",
    payloads="""
    request_text::VARCHAR AS request,
    response_text::VARCHAR AS response,
    request_raw,
    response_raw,""",
)
"""`FAIR_COLUMNS` and `PAYLOAD_COLUMNS`: `mcc export --payloads`'s job (`{source}`: `FAIR_PAYLOADS_SOURCE`)."""

SHORT_SOURCE = (
    "read_json('{root}/*.capture.jsonl', format='newline_delimited', "
    "maximum_object_size=268435456, columns={{model_call_id: 'VARCHAR', dialect: 'VARCHAR', "
    "status_code: 'INTEGER', error_category: 'VARCHAR', latency_ms: 'DOUBLE', "
    "latency_ttft_ms: 'DOUBLE', started_at: 'DOUBLE', request: 'JSON', response: 'JSON', "
    "response_raw: 'VARCHAR', stream: 'BOOLEAN'}})"
)
# The former baseline: 10 columns, the usage fields spelled by hand (Anthropic input
# tokens without cache reads and writes), kept as a primed info row.
SHORT_COLUMNS = """
    model_call_id, dialect, status_code, error_category, latency_ms, latency_ttft_ms,
    started_at, coalesce(response->>'$.model', request->>'$.model') AS model,
    coalesce(response->>'$.usage.prompt_tokens', response->>'$.usage.input_tokens')::BIGINT
        AS tokens_in,
    coalesce(response->>'$.usage.completion_tokens', response->>'$.usage.output_tokens')::BIGINT
        AS tokens_out
"""
SHORT_QUERY = "SELECT " + SHORT_COLUMNS + " FROM {source}"
"""The former baseline's query (`{source}`: `SHORT_SOURCE`)."""


def query_sql(query: str, source: str, root: Path | str) -> str:
    """`query` (with `{source}`) over the capture directory `root` read as `source`, on one line."""
    return " ".join(query.replace("{source}", source.format(root=root)).split())


def copy_sql(query: str, source: str, root: Path | str, out: Path | str) -> str:
    """The `COPY (query) TO out (FORMAT parquet)` statement of `query_sql(query, source, root)`."""
    return f"COPY ({query_sql(query, source, root)}) TO '{out}' (FORMAT parquet)"


def _differs(name: str, type_: str) -> str:
    """SQL true when column `name` of `d` (DuckDB) and `m` (mcc) hold different values."""
    d, m = f"d.{name}", f"m.{name}"
    if type_ == "DOUBLE":
        return (
            f"(({d} IS NULL) <> ({m} IS NULL) OR "
            f"abs({d} - {m}) > 1e-9 * greatest(abs({d}), abs({m})))"
        )
    if name == "tool_calls":  # arguments are JSON text: compared parsed
        norm = "list_transform({}, lambda t: {{'call_id': t.call_id, 'name': t.name, 'arguments': json(t.arguments)}})"
        return f"{norm.format(d)} IS DISTINCT FROM {norm.format(m)}"
    return f"{d} IS DISTINCT FROM {m}"


# Each side's payload columns, before the join: the md5 of the JSON as DuckDB writes it
# again (`json()`: the two texts compared parsed; text that is not JSON by its own md5,
# marked) or of the raw text, so the join holds 16 bytes a value, not the payloads.
_JSON_DIGEST = "CASE WHEN json_valid({c}) THEN md5(json({c})) ELSE 'not json ' || md5({c}) END"
_DIGESTS = {
    name: _JSON_DIGEST.format(c=name) if name in ("request", "response") else f"md5({name})"
    for name in PAYLOAD_COLUMNS
}


def _side(path: Path | str, names: list[str]) -> str:
    """The Parquet file at `path`, its payload columns among `names` reduced to digests."""
    digests = [f"{_DIGESTS[name]} AS {name}" for name in names if name in _DIGESTS]
    replace = f" REPLACE ({', '.join(digests)})" if digests else ""
    return f"(SELECT *{replace} FROM read_parquet('{path}'))"


def mismatches(duck: Path | str, ours: Path | str) -> dict[str, int]:
    """Values that differ between DuckDB's Parquet and `mcc export`'s, per column, joined on `model_call_id`.

    Every column DuckDB wrote is compared (payloads too, when it wrote them: JSON
    compared parsed, by digest); `rows only in duckdb` and `rows only in mcc` count the
    calls one side has and the other has not.
    """
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")  # one bar per comparison: noise in the log
        types = con.sql(f"DESCRIBE SELECT * FROM read_parquet('{duck}')").fetchall()
        columns = [(name, type_) for name, type_, *_ in types if name != "model_call_id"]
        names = [name for name, _ in columns]
        counts = ", ".join(
            f"count(*) FILTER (WHERE d.model_call_id IS NOT NULL AND m.model_call_id IS NOT NULL "
            f"AND {_differs(name, type_)})"
            for name, type_ in columns
        )
        row: Any = con.sql(
            f"SELECT count(*) FILTER (WHERE m.model_call_id IS NULL), "
            f"count(*) FILTER (WHERE d.model_call_id IS NULL), {counts} "
            f"FROM {_side(duck, names)} d FULL OUTER JOIN {_side(ours, names)} m "
            f"ON d.model_call_id = m.model_call_id"
        ).fetchall()[0]
    finally:
        con.close()
    names = ["rows only in duckdb", "rows only in mcc", *(name for name, _ in columns)]
    return dict(zip(names, row, strict=True))
