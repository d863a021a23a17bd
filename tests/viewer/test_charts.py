"""Totals and histograms of the rows a page's filters match, counted by hand."""

from __future__ import annotations

import json
from pathlib import Path

from model_call_capture.store import CaptureStore
from model_call_capture.viewer import Query, RolloutIndex
from model_call_capture.viewer._charts import overview

from .conftest import chat_line, rollout_row


def _line(tokens: tuple[int, int], latency_ms: float, started_at: float = 1.0) -> bytes:
    line = json.loads(chat_line(tokens=tokens, started_at=started_at))
    line["latency_ms"] = latency_ms
    return json.dumps(line).encode()


def _bars(histogram: object) -> list[tuple[float, float, int]]:
    return [(b.low, b.high, b.count) for b in histogram.bins]  # type: ignore[attr-defined]


def test_totals_and_power_of_two_bins_over_the_matching_rows(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("0-0", _line((100, 20), 3.0))  # 120 tokens: [64, 128); 3 ms: [2, 4)
    store.append("0-0", _line((300, 0), 0.5, 2.0))  # 300: [256, 512); 0.5 ms: [0, 1)
    store.append("1-0", _line((60, 4), 40.0))  # 64: [64, 128); 40 ms: [32, 64)
    store.append("2-0", chat_line(model="other", error_category="timeout", tokens=(1, 1)))
    (tmp_path / "rollouts.jsonl").write_bytes(
        rollout_row(0, reward=1) + rollout_row(1, reward=0) + rollout_row(2, reward="n/a")
    )
    index = RolloutIndex(store, refresh_interval_s=0)
    index.run_once()
    page = index.page(Query(model="gpt-test"))
    t = page.overview.totals
    assert (t.rollouts, t.calls, t.errors, t.tokens_in, t.tokens_out) == (2, 3, 0, 460, 24)
    assert (t.rewarded, t.mean_reward) == (2, 0.5)
    tokens, latency, reward = page.overview.histograms
    assert (tokens.name, latency.name, reward.name) == ("tokens", "latency_ms", "reward")
    assert _bars(tokens) == [(64, 128, 2), (128, 256, 0), (256, 512, 1)]
    assert _bars(latency) == [(0, 1, 1), (1, 2, 0), (2, 4, 1), (4, 8, 0), (8, 16, 0),
                              (16, 32, 0), (32, 64, 1)]  # fmt: skip
    assert _bars(reward) == [(0, 0, 1), (1, 1, 1)]  # few values: a bar each
    everything = index.page(Query()).overview
    assert (everything.totals.rollouts, everything.totals.errors) == (3, 1)
    assert everything.totals.rewarded == 2  # "n/a" is no number
    assert index.page(Query()).overview is everything  # nothing changed: not summed again
    store.append("1-0", _line((1000, 24), 40.0))  # [1024, 2048)
    index.run_once()  # the background thread reads what the file gained
    again = index.page(Query(model="gpt-test")).overview
    assert (again.totals.calls, _bars(again.histograms[0])[-1]) == (4, (1024, 2048, 1))


def test_many_reward_values_take_ten_equal_bins() -> None:
    class Row:
        indexed, calls, errors, tokens_in, tokens_out = False, 0, 0, None, None

        def __init__(self, reward: float) -> None:
            self.reward = reward

    from model_call_capture.viewer._charts import CallBins

    rows = [(Row(i / 4), CallBins()) for i in range(21)]  # 0.0 .. 5.0
    rows += [(Row(1e308), CallBins()), (Row(-1e308), CallBins())]  # no overflow at the ends
    drawn = overview(rows)
    reward = drawn.histograms[2]
    assert len(reward.bins) == 10 and sum(b.count for b in reward.bins) == 23
    assert reward.bins[0].count == 1 and reward.bins[-1].count == 1
    assert [b.count for b in overview(rows[:21]).histograms[2].bins] == [
        2,
        2,
        2,
        2,
        2,
        2,
        2,
        2,
        2,
        3,
    ]
    assert drawn.totals.mean_reward is not None


def _retained(root: Path) -> tuple[RolloutIndex, int]:
    """An index that has read every rollout under `root`, and the bytes it holds."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        index = RolloutIndex(CaptureStore(root), refresh_interval_s=0)
        index.run_once()
        index.page(Query())
        gc.collect()
        return index, tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def test_what_the_index_holds_grows_with_rollouts_not_with_their_calls(tmp_path: Path) -> None:
    """200 rollouts of one call, and of 30 calls with tokens and latencies over every bin:
    the index holds a fixed amount per rollout (its summary and at most 48 bins a chart)."""
    few, many = CaptureStore(tmp_path / "few"), CaptureStore(tmp_path / "many")
    for r in range(200):
        few.append(f"{r}-0", _line((10, 5), 1.0))
        for c in range(30):
            tokens, ms = 2 ** (c % 20), 1.5 ** (c % 25)
            many.append(f"{r}-0", _line((tokens, c), ms, started_at=float(c)))
    few_index, few_bytes = _retained(tmp_path / "few")
    many_index, many_bytes = _retained(tmp_path / "many")
    assert many_index.page(Query()).overview.totals.calls == 6000
    assert few_index.page(Query()).overview.totals.calls == 200
    assert many_bytes < 2 * few_bytes and many_bytes / 200 < 16_000, (few_bytes, many_bytes)
