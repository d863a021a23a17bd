"""DuckDB doing `mcc stats`'s job: the figures `mcc stats --json` prints, from the same lines.

`STATS_QUERY` derives what `mcc stats` sums as the fair export does (`_duck.counted_ctes`,
`_duck.MODEL`, `_duck.REASONING_TOKENS`, `_duck.TOTAL_TOKENS`: tokens with Anthropic cache
reads and writes folded in, counts that must be non-negative integers, totals summed
where the response has none), with `response` shaped to the members those read (model
and usage, `STATS_SHAPE`) and only the line fields `mcc stats` uses read (`STATS_SOURCE`).
It then groups by (model, dialect) and gives each `StatsRow` field of `mcc stats`: sums
over the calls that reported a value (null when none did), errors and their categories,
and nearest-rank percentiles (`quantile_disc` picks rank ceil(p * n), as `percentile`).
Rows come in `mcc stats`'s order: model, then dialect, unknowns last (byte order, which
is Python's order of the same strings).

`differences` compares its rows with `mcc stats --json`'s, field by field, so a stats
baseline that does another job shows it.
"""

from __future__ import annotations

from typing import Any

from ._duck import MODEL, REASONING_TOKENS, RESPONSE_SHAPE, TOTAL_TOKENS, counted_ctes

__all__ = ["STATS_FIELDS", "STATS_QUERY", "STATS_SHAPE", "STATS_SOURCE", "differences"]

STATS_SHAPE: dict[str, Any] = {"model": "VARCHAR", "usage": RESPONSE_SHAPE["usage"]}
"""The members of a response `STATS_QUERY` reads: the model and the usage counts."""

STATS_SOURCE = (
    "read_json('{root}/*.capture.jsonl', format='newline_delimited', "
    "maximum_object_size=268435456, columns={{"
    "dialect: 'VARCHAR', error_category: 'VARCHAR', latency_ms: 'DOUBLE', "
    "latency_ttft_ms: 'DOUBLE', request: 'STRUCT(model VARCHAR)', response: 'JSON'}})"
)
"""The lines as `STATS_QUERY` reads them (`{root}`: the capture directory)."""

STATS_QUERY = f"""
WITH {counted_ctes(STATS_SHAPE)}, calls AS (
    SELECT
        {MODEL} AS model,
        dialect,
        error_category,
        latency_ms,
        latency_ttft_ms,
        t_in AS tokens_in,
        t_out AS tokens_out,
        {REASONING_TOKENS} AS tokens_reasoning,
        {TOTAL_TOKENS} AS tokens_total,
        t_cached AS cached_tokens
    FROM counted
)
SELECT
    model,
    dialect,
    count(*) AS calls,
    count(error_category) AS errors,
    coalesce(histogram(error_category), MAP {{}}) AS error_categories,
    sum(tokens_in) AS tokens_in,
    sum(tokens_out) AS tokens_out,
    sum(tokens_reasoning) AS tokens_reasoning,
    sum(tokens_total) AS tokens_total,
    sum(cached_tokens) AS cached_tokens,
    quantile_disc(latency_ms, 0.5) AS latency_p50_ms,
    quantile_disc(latency_ms, 0.95) AS latency_p95_ms,
    quantile_disc(latency_ttft_ms, 0.5) AS ttft_p50_ms,
    quantile_disc(latency_ttft_ms, 0.95) AS ttft_p95_ms
FROM calls
GROUP BY model, dialect
ORDER BY model NULLS LAST, dialect NULLS LAST
"""
"""`mcc stats --json`'s rows in SQL (`{source}`: `STATS_SOURCE`; see `_duck.query_sql`)."""

STATS_FIELDS = (
    "calls",
    "errors",
    "error_categories",
    "tokens_in",
    "tokens_out",
    "tokens_reasoning",
    "tokens_total",
    "cached_tokens",
    "latency_p50_ms",
    "latency_p95_ms",
    "ttft_p50_ms",
    "ttft_p95_ms",
)
"""The figures of a `StatsRow` beside its (model, dialect) key, as `STATS_QUERY` names them."""


def differences(duck: list[dict[str, Any]], ours: list[dict[str, Any]]) -> dict[str, int]:
    """The (model, dialect) groups whose figure differs between DuckDB's rows and `mcc stats --json`'s `rows`.

    Per field of `STATS_FIELDS` (values compared exactly: sums are integers and
    percentiles are values of the lines); `groups only in duckdb` and `groups only in
    mcc` count the groups one side has and the other has not, and `order` is 1 when the
    groups common to both come in a different order.
    """
    d = {(row["model"], row["dialect"]): row for row in duck}
    m = {(row["model"], row["dialect"]): row for row in ours}
    both = [key for key in d if key in m]
    counts = {
        "groups only in duckdb": len(d.keys() - m.keys()),
        "groups only in mcc": len(m.keys() - d.keys()),
        "order": int(both != [key for key in m if key in d]),
    }
    for name in STATS_FIELDS:
        counts[name] = sum(1 for key in both if d[key][name] != m[key][name])
    return counts
