"""Full-text search over the rollouts' messages (`GET /api/search`, `viewer._search.Search`):
what it finds, that the query is taken literally and capped, that it stops at its caps and
says so, and that on a 10,000-rollout directory it stays within its time budget and its
memory does not grow with the directory."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from memory_tools import traced_peak
from model_call_capture.store import CaptureStore
from model_call_capture.viewer import RolloutIndex, create_app
from model_call_capture.viewer._search import Search, SearchResult
from servers import serve

from .conftest import SCRIPT, chat_line, write_hostile_dir


def _client(root: Path) -> TestClient:
    return TestClient(create_app(root), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def demo(demo_calls: Path) -> Iterator[TestClient]:
    with _client(demo_calls) as client:
        yield client


def _search(client: TestClient, q: str, **params: Any) -> dict[str, Any]:
    reply = client.get("/api/search", params={"q": q, **params})
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def test_amsterdam_is_found_in_the_demo(demo: TestClient) -> None:
    for query in ("Amsterdam", "amsterdam", "AMSTERDAM", "cycle to work in amster"):
        found = _search(demo, query)
        assert [h["rollout_id"] for h in found["hits"]] == ["3-0"], query
        assert (found["searched"], found["rollouts"], found["complete"]) == (4, 4, True)
        assert found["note"] == "searched 4 of 4 rollouts" and found["stopped"] is None
    hit = _search(demo, "Amsterdam")["hits"][0]
    assert (hit["call_index"], hit["where"], hit["role"]) == (0, "request", "user")
    start = hit["match_start"]
    assert hit["snippet"][start : start + 9] == "Amsterdam"
    # Tool results, tool arguments and answers are messages too.
    assert [h["rollout_id"] for h in _search(demo, "lyon: 18 c")["hits"]] == ["1-0"]
    assert len(_search(demo, '"city"')["hits"]) == 4  # the JSON of get_weather's arguments
    assert _search(demo, "Zanzibar")["hits"] == []


def test_the_query_is_literal_and_capped(demo: TestClient) -> None:
    for pattern in ("(a+)+$", ".*", "[A-Z]msterdam", "\\d", "%", "*"):
        assert _search(demo, pattern)["hits"] == [], pattern
    assert demo.get("/api/search", params={"q": "a" * 201}).status_code == 400
    assert demo.get("/api/search", params={"q": "   "}).status_code == 400
    assert demo.get("/api/search").status_code == 400
    for odd in (
        "\x00\x1b]52;c;x\x07",
        '"\\',
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
        "𝔸",
    ):
        assert _search(demo, odd)["hits"] == [], repr(odd)
    # Odd numbers fall back to the defaults, as the table's do.
    found = _search(demo, "Amsterdam", limit="²", budget_ms="-1")
    assert (found["max_matches"], found["budget_s"]) == (100, 5.0)


def test_hostile_messages_are_found_and_returned_as_text(tmp_path: Path) -> None:
    root = write_hostile_dir(tmp_path / "calls")
    with _client(root) as client:
        found = _search(client, "<SCRIPT>window")
    assert [h["rollout_id"] for h in found["hits"]] == ["evil"]
    assert SCRIPT in found["hits"][0]["snippet"]


def test_escaped_and_folded_text_is_found(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    # JSON may spell any character as \\uXXXX: the line is decoded, not matched as bytes.
    escaped = chat_line(user="Cycle to Amsterdam?").replace(b"Amsterdam", b"\\u0041msterdam")
    store.append("escaped", escaped)
    store.append("folded", chat_line(user="Die Straße ist nass."))  # casefold: strasse
    store.append("ligature", chat_line(user="a \ufb01le"))  # ﬁ casefolds to fi
    store.append("plain", chat_line(user="nothing here"))
    with _client(tmp_path) as client:
        assert [h["rollout_id"] for h in _search(client, "amsterdam")["hits"]] == ["escaped"]
        assert [h["rollout_id"] for h in _search(client, "STRASSE")["hits"]] == ["folded"]
        assert [h["rollout_id"] for h in _search(client, "FILE")["hits"]] == ["ligature"]


def test_it_stops_at_the_match_cap_and_goes_on_after(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for i in range(12):
        store.append(f"{i}-0", chat_line(user=f"rollout {i} asks about Amsterdam"))
    with _client(tmp_path) as client:
        first = _search(client, "amsterdam", limit="5")
        assert [h["rollout_id"] for h in first["hits"]] == ["0-0", "1-0", "2-0", "3-0", "4-0"]
        assert (first["stopped"], first["complete"], first["resume_after"]) == (
            "matches",
            False,
            "4-0",
        )
        assert first["note"] == "searched 5 of 12 rollouts; stopped after 5 matches"
        rest = _search(client, "amsterdam", limit="500", after=first["resume_after"])
    assert [h["rollout_id"] for h in rest["hits"]] == [f"{i}-0" for i in range(5, 12)]
    assert rest["complete"] and rest["note"] == "searched 12 of 12 rollouts"


def _write_many(root: Path, count: int) -> Path:
    """`count` rollouts of one chat call each, written as files directly (quick); one in
    five thousand mentions Amsterdam."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        user = f"rollout {i}: " + (
            "Is it dry in Amsterdam?" if i % 5000 == 4999 else "Hello there?"
        )
        line = chat_line(
            user=user, answer=f"answer {i} " + "lorem ipsum " * 20, started_at=1.7e9 + i
        )
        (root / f"{i}-0.capture.jsonl").write_bytes(line + b"\n")
    return root


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_many(tmp_path_factory.mktemp("many") / "calls", 10_000)


def _run(root: Path, query: str, budget_s: float) -> tuple[SearchResult, int]:
    """A search of `root` as the app runs it, and the peak memory it allocated. Without
    the app: its background thread would summarize the rollouts meanwhile (the index's
    memory, not the search's)."""
    index = RolloutIndex(CaptureStore(root))
    ids = index.ordered()
    for rollout_id in ids:  # the listing's paths cache their text when first opened
        rollout = index.rollout(rollout_id)  # (pathlib): the index's memory, not the search's
        assert rollout is not None
        for path in rollout.files:
            str(path)

    def work() -> SearchResult:
        search = Search(query, ids, index.rollout, max_line_bytes=1 << 20, budget_s=budget_s)
        while not search.done:
            search.step()
        return search.result()

    return traced_peak(work)


def test_a_10000_rollout_directory_is_searched_within_budget_and_bounded_memory(
    many: Path, tmp_path: Path
) -> None:
    small = _write_many(tmp_path / "small", 1_000)
    budget = 30.0
    found, peak_many = _run(many, "AMSTERDAM", budget)
    assert [h.rollout_id for h in found.hits] == ["4999-0", "9999-0"] or found.stopped == "time"
    assert found.searched == 10_000 or found.stopped == "time"
    _, peak_small = _run(small, "AMSTERDAM", budget)
    assert found.elapsed_s < budget + 1.0  # within the budget it enforces (plus one step)
    # One line at a time: ten times the rollouts, about the same memory (the hits aside).
    assert peak_many < 4 * 1024 * 1024, peak_many
    assert peak_many < 2 * peak_small + 512 * 1024, (peak_many, peak_small)


def test_the_api_stops_at_its_time_budget_and_says_how_far_it_got(many: Path) -> None:
    with _client(many) as client:
        found = _search(client, "Amsterdam", budget_ms="100")
        full = _search(client, "Amsterdam", budget_ms="10000")
    if found["stopped"] == "time":  # 0.1 s is less than 10,000 files take on any machine here
        assert found["searched"] < 10_000, found
        assert found["resume_after"] is not None or found["searched"] == 0, found
        assert (
            found["note"]
            == f"searched {found['searched']:,} of 10,000 rollouts; stopped after 0.1 s"
        )
    # Within the budget it enforces, plus one step's slack (a line, a thread switch).
    assert found["elapsed_s"] < found["budget_s"] + 2.0, found
    assert full["elapsed_s"] < full["budget_s"] + 2.0, full
    assert full["complete"] or full["stopped"] == "time"
    if full["complete"]:
        assert [h["rollout_id"] for h in full["hits"]] == ["4999-0", "9999-0"]
        assert full["note"] == "searched 10,000 of 10,000 rollouts"


def test_a_damaged_or_foreign_line_is_skipped(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.append("r", chat_line(user="Amsterdam first"))
    with open(store.path("r"), "ab") as f:
        f.write(b'{"dialect": "chat", "request": {"messages": [Amsterdam\n')
        f.write(
            json.dumps({"dialect": "nope", "request": {"messages": "Amsterdam"}}).encode() + b"\n"
        )
    store.append("s", json.dumps({"dialect": "chat", "request": [1, 2]}).encode())
    with _client(tmp_path) as client:
        found = _search(client, "amsterdam")
    assert [(h["rollout_id"], h["call_index"]) for h in found["hits"]] == [("r", 0)]
    assert found["complete"]


def _write_slow(root: Path) -> None:
    """One rollout of 300,000 lines that each pass the byte test for `needle` (its model
    names it) and must be decoded: seconds of searching, with no match."""
    line = json.dumps(
        {
            "dialect": "chat",
            "model": "needle",
            "request": {"messages": [{"role": "user", "content": "x"}]},
        }
    ).encode()
    (root / "big.capture.jsonl").write_bytes((line + b"\n") * 300_000)


_SLOW_SEARCH = b"GET /api/search?q=needle&budget_ms=10000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_client_that_goes_away_cancels_its_search(tmp_path: Path) -> None:
    """Over a real uvicorn: a client that hangs up ends its search at the next step, long
    before the budget (one rollout of 300,000 lines, each read whole: seconds of work)."""
    _write_slow(tmp_path)
    app = create_app(tmp_path)
    with serve(app) as server:
        with socket.create_connection((server.host, server.port)) as client:
            client.sendall(_SLOW_SEARCH)
            time.sleep(0.3)  # the search is under way
        done = app.state.searches
        deadline = time.monotonic() + 9.0  # under the 10 s budget the search would run
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
    assert done, "the search did not end before its budget"
    result = done[-1]
    assert (result.stopped, result.searched, result.complete) == ("cancelled", 0, False)
    assert result.note == "searched 0 of 1 rollouts; cancelled"


def test_a_rollout_of_segments_names_the_call_as_its_page_numbers_it(tmp_path: Path) -> None:
    segments = tmp_path / "r.capture.segments"
    segments.mkdir()
    (segments / "otherhost.1.0000abcd.jsonl").write_bytes(
        chat_line(user="first", started_at=1.0)
        + b"\n"
        + chat_line(user="Amsterdam", started_at=3.0)
        + b"\n"
    )
    (segments / "otherhost.2.0000abce.jsonl").write_bytes(
        chat_line(user="middle", started_at=2.0) + b"\n"
    )
    with _client(tmp_path) as client:
        hit = _search(client, "amsterdam")["hits"][0]
        items = client.get("/api/rollouts/r").json()["conversation"]["items"]
    assert (hit["rollout_id"], hit["call_index"]) == ("r", 2)  # merged by completion time
    assert items[2]["input"][0]["parts"][0]["text"] == "Amsterdam"


def test_searches_beyond_four_at_a_time_are_refused(tmp_path: Path) -> None:
    _write_slow(tmp_path)
    app = create_app(tmp_path)
    with serve(app) as server:
        clients = [socket.create_connection((server.host, server.port)) for _ in range(4)]
        try:
            for client in clients:
                client.sendall(_SLOW_SEARCH)
            time.sleep(0.3)  # all four under way
            with httpx.Client(base_url=server.url) as http:
                refused = http.get("/api/search", params={"q": "needle"})
        finally:
            for client in clients:
                client.close()
        deadline = time.monotonic() + 9.0
        while len(app.state.searches) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert refused.status_code == 429 and "4 searches are running" in refused.json()["error"]
    assert [r.stopped for r in app.state.searches] == ["cancelled"] * 4
