"""The viewer's HTTP surface in-process (Starlette's TestClient over the real app and files):
JSON endpoints, headers, what it refuses, and that it never writes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from conftest import CompletionsRollout
from model_call_capture.store import CaptureStore
from model_call_capture.viewer import CSP, create_app

from .conftest import HOSTILE_MODEL, SCRIPT, chat_line, rollout_row, write_hostile_dir


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return write_hostile_dir(tmp_path / "calls")


@pytest.fixture
def client(hostile: Path) -> Iterator[TestClient]:
    with TestClient(create_app(hostile), base_url="http://127.0.0.1") as client:
        yield client


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.iterdir())}


def test_the_table_api(client: TestClient) -> None:
    page = client.get("/api/rollouts").json()
    assert [r["rollout_id"] for r in page["rollouts"]] == ["evil", "plain"]
    evil = page["rollouts"][0]
    assert (evil["calls"], evil["errors"], evil["damaged"], evil["gaps"]) == (2, 1, 1, 2)
    assert evil["models"] == [HOSTILE_MODEL]
    assert (page["total"], page["rollouts_in_directory"], page["page"]) == (2, 2, 1)
    assert page["dialects"] == ["chat"] and page["models"] == [HOSTILE_MODEL, "gpt-test"]
    filtered = client.get("/api/rollouts", params={"model": "gpt-test"}).json()
    assert [r["rollout_id"] for r in filtered["rollouts"]] == ["plain"]
    by_errors = client.get("/api/rollouts", params={"sort": "errors", "order": "desc"}).json()
    assert [r["rollout_id"] for r in by_errors["rollouts"]] == ["evil", "plain"]
    # Unknown sort keys and odd numbers fall back to the defaults.
    odd = client.get("/api/rollouts", params={"sort": "__class__", "page": "-3", "page_size": "x"})
    assert odd.status_code == 200 and odd.json()["page"] == 1
    # Digits that `str.isdigit` accepts and `int` does not (superscripts) used to be a 500.
    for page in ("\u00b2", "1\u2075", "\u2460"):
        odd = client.get("/api/rollouts", params={"page": page, "page_size": page})
        assert odd.status_code == 200 and odd.json()["page"] == 1, page


def test_the_rollout_api(client: TestClient) -> None:
    body = client.get("/api/rollouts/evil").json()
    assert body["summary"]["rollout_id"] == "evil"
    items = body["conversation"]["items"]
    assert [i["kind"] for i in items] == ["call", "damaged", "call"]
    assert items[1] == {
        "kind": "damaged",
        "line": 2,
        "reason": "Invalid enum value '<script>window.__pwned = 1</script>' - at `$.dialect`",
    }
    assert items[0]["input"][0]["parts"][0]["text"].startswith(SCRIPT)  # as text, unchanged
    assert items[2]["status_code"] == 502
    raw = client.get("/api/rollouts/evil/calls/0").json()
    assert raw["response_raw"] == {"text": f"data: {SCRIPT}\n\n", "cut": 0}
    assert raw["request"]["text"].startswith('{\n  "model": ')
    assert client.get("/api/rollouts/evil/calls/1").status_code == 404  # the damaged line
    assert client.get("/api/rollouts/evil/summary").json()["calls"] == 2


@pytest.mark.parametrize(
    "path",
    [
        "/api/rollouts/missing",
        "/api/rollouts/..%2F..%2Fetc%2Fpasswd",
        "/api/rollouts/.hidden",
        "/rollouts/%2E%2E",
        "/rollouts/evil%00",
        "/static/..%2F_app.py",
        "/static/index.html",
        "/static/../viewer/_app.py",
        "/api/rollouts/evil/calls/99",
    ],
)
def test_only_what_is_under_dir_is_served(client: TestClient, path: str) -> None:
    reply = client.get(path)
    assert reply.status_code == 404, (path, reply.text[:200])
    assert "import" not in reply.text and "root:" not in reply.text


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for path in ("/", "/rollouts/evil", "/static/rollout.js", "/api/rollouts", "/nope"):
        reply = client.get(path)
        assert reply.headers["content-security-policy"] == CSP, path
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["x-frame-options"] == "DENY"
    assert "script-src 'self';" in CSP and "'unsafe-inline'" not in CSP
    assert client.get("/static/rollout.js").headers["content-type"] == (
        "text/javascript; charset=utf-8"
    )
    assert client.get("/api/rollouts").headers["content-type"] == "application/json"


def test_pages_have_no_inline_script_or_style(client: TestClient) -> None:
    for path in ("/", "/rollouts/evil"):
        html = client.get(path).text
        assert "<script>" not in html and "style=" not in html and "<style" not in html
        assert html.count("<script") == html.count('<script src="/static/') >= 2


def test_it_is_read_only(client: TestClient, hostile: Path) -> None:
    before = _tree(hostile)
    for method in ("post", "put", "delete", "patch"):
        assert getattr(client, method)("/api/rollouts/evil").status_code == 405
    for path in ("/", "/api/rollouts", "/api/rollouts/evil", "/api/rollouts/evil/calls/0"):
        assert client.get(path).status_code == 200
    assert _tree(hostile) == before
    assert sorted(os.listdir(hostile)) == ["evil.capture.jsonl", "plain.capture.jsonl"]


def test_other_hosts_are_refused(hostile: Path) -> None:
    # A page on another site could reach a local server by DNS rebinding; its requests
    # carry that site's name in Host.
    with TestClient(create_app(hostile), base_url="http://evil.example") as client:
        assert client.get("/api/rollouts").status_code == 400
    with TestClient(create_app(hostile), base_url="http://localhost:8000") as client:
        assert client.get("/api/rollouts").status_code == 200


def test_new_calls_and_rollouts_appear(client: TestClient, hostile: Path) -> None:
    from model_call_capture.store import CaptureStore

    store = CaptureStore(hostile)
    store.append("plain", chat_line(user="again"))
    store.append("new", chat_line())
    client.app.state.index.refresh(force=True)  # type: ignore[attr-defined]
    page = client.get("/api/rollouts").json()
    assert [(r["rollout_id"], r["calls"]) for r in page["rollouts"]] == [
        ("evil", 2),
        ("new", 1),
        ("plain", 2),
    ]


def test_a_huge_turn_is_cut_and_a_huge_line_is_damaged(tmp_path: Path) -> None:
    from model_call_capture.store import CaptureStore

    store = CaptureStore(tmp_path)
    store.append("big", chat_line(user="u" * 3_000_000))
    store.append("big", chat_line(user="v" * 9_000_000))
    app = create_app(tmp_path, max_line_bytes=5_000_000)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        reply = client.get("/api/rollouts/big")
        assert reply.status_code == 200 and len(reply.content) < 100_000
        call, damaged = reply.json()["conversation"]["items"]
        part = call["input"][0]["parts"][0]
        assert (len(part["text"]), part["cut"]) == (20_000, 2_980_000)
        assert damaged == {
            "kind": "damaged",
            "line": 2,
            "reason": "longer than the longest line this reader keeps",
        }
        raw = client.get("/api/rollouts/big/calls/0").json()["request"]
        assert len(raw["text"]) == 1_000_000 and raw["cut"] > 2_000_000


def test_deeply_nested_json_is_served(tmp_path: Path) -> None:
    from model_call_capture.store import CaptureStore

    deep = "[" * 950 + "]" * 950
    line = json.loads(chat_line(tool=("t", deep)))
    line["request"]["deep"] = json.loads(deep)
    CaptureStore(tmp_path).append("r", json.dumps(line).encode())
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        reply = client.get("/api/rollouts/r")
        assert reply.status_code == 200
        (call,) = reply.json()["conversation"]["items"]
        part = call["output"][0]["parts"][1]
        indented = json.dumps(json.loads(deep), indent=2)
        assert (part["arguments"], part["cut"]) == (indented[:20_000], len(indented) - 20_000)
        raw = client.get("/api/rollouts/r/calls/0")
        assert raw.status_code == 200 and '"deep":' in raw.json()["request"]["text"]


def test_a_completions_rollout_reads_as_prompts_and_answers(
    completions_rollout: CompletionsRollout,
) -> None:
    with TestClient(
        create_app(completions_rollout.directory), base_url="http://127.0.0.1"
    ) as client:
        (row,) = client.get("/api/rollouts").json()["rollouts"]
        assert (row["rollout_id"], row["dialects"], row["calls"]) == ("c-0", ["completions"], 4)
        items = client.get("/api/rollouts/c-0").json()["conversation"]["items"]
    assert [i["dialect"] for i in items] == ["completions"] * 4
    first = items[0]
    assert [t["role"] for t in first["input"]] == ["prompt"]
    assert first["input"][0]["parts"][0]["name"] == "token_ids"
    assert json.loads(first["input"][0]["parts"][0]["text"]) == completions_rollout.seen[0][0]
    assert [t["role"] for t in first["output"]] == ["assistant"]
    assert first["output"][0]["parts"][0]["text"].startswith("It is 18 \u00b0C")


def _view_stderr(directory: Path, *args: str) -> tuple[str, str]:
    """`mcc view` as a subprocess: its stdout's first line, and what it wrote on stderr
    within its first seconds (it is stopped with Ctrl-C's signal then)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", "view", str(directory), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "BROWSER": "/bin/false"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    time.sleep(2)  # --open tries the browser 0.5 s after start
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    return first, err


def test_view_warns_about_every_interface_an_empty_directory_and_no_browser(
    tmp_path: Path,
) -> None:
    first, err = _view_stderr(tmp_path, "--host", "0.0.0.0", "--open")
    port = re.fullmatch(r"Serving http://127\.0\.0\.1:(\d+)/\n", first)
    assert port, first  # a URL a browser can open, not http://0.0.0.0:PORT/
    assert (
        f"mcc view: warning: listening on every interface: anyone who can reach this machine "
        f"on port {port.group(1)} can read these captures"
    ) in err
    assert f"mcc view: warning: {tmp_path} holds no capture files yet" in err
    assert (
        f"mcc view: warning: no browser could be opened here; open http://127.0.0.1:{port.group(1)}/ yourself"
        in err
    )
    CaptureStore(tmp_path).append("r", chat_line())
    _, err = _view_stderr(tmp_path)
    assert "warning" not in err


def test_the_header_names_the_directory_as_given_and_as_read(tmp_path: Path) -> None:
    root = tmp_path / "model-calls"
    CaptureStore(root).append("0-0", chat_line())
    (tmp_path / "rollouts.jsonl").write_bytes(rollout_row(0, reward=1))
    app = create_app(root, shown="./run <b>1</b>")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        info = client.get("/api/info").json()
    assert info == {
        "directory": "./run <b>1</b>",
        "capture_dir": str(root.resolve()),
        "rollouts_file": str(tmp_path / "rollouts.jsonl"),
    }


def test_reward_filters_and_field_sorts_over_http(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for rollout_id in ("0-0", "1-0", "2-0"):
        store.append(rollout_id, chat_line())
    elsewhere = tmp_path / "elsewhere.jsonl"  # `--rollouts FILE`: any name, any place
    elsewhere.write_bytes(
        rollout_row(0, reward=3, grade="b") + rollout_row(1, reward=1, grade="a")
        + rollout_row(2, reward=2, grade="c")
    )  # fmt: skip
    with TestClient(create_app(tmp_path, rollouts=elsewhere), base_url="http://127.0.0.1") as c:
        # A page never waits for a read of the rollouts file under way in the background
        # thread (it shows the rewards on its next poll), so the test waits for the join.
        deadline = time.monotonic() + 30
        while any(r["reward"] is None for r in c.get("/api/rollouts").json()["rollouts"]):
            assert time.monotonic() < deadline, "the rewards were never joined"
            time.sleep(0.05)

        def ids(**params: str) -> list[str]:
            reply = c.get("/api/rollouts", params=params)
            assert reply.status_code == 200
            return [r["rollout_id"] for r in reply.json()["rollouts"]]

        assert ids(sort="reward") == ["1-0", "2-0", "0-0"]
        assert ids(sort="reward", order="desc") == ["0-0", "2-0", "1-0"]
        assert ids(sort="field:grade") == ["1-0", "0-0", "2-0"]
        assert ids(reward_min="1.5") == ["0-0", "2-0"]
        assert ids(reward_min="1.5", reward_max="2.5") == ["2-0"]
        # Numbers that are none are ignored: nan, inf, text, a thousand digits.
        for odd in ("nan", "inf", "-Infinity", "abc", "9" * 1000, "1e999"):
            assert ids(reward_min=odd, reward_max=odd) == ["0-0", "1-0", "2-0"], odd
        assert ids(sort="field:" + "x" * 5000) == ["0-0", "1-0", "2-0"]
        page = c.get("/api/rollouts").json()
        assert page["fields"] == ["reward", "grade"]
        assert page["rollouts"][0]["reward"] == 3 and page["rollouts"][0]["fields"]["grade"] == "b"
        assert page["overview"]["totals"]["mean_reward"] == 2
        assert [h["name"] for h in page["overview"]["histograms"]] == [
            "tokens", "latency_ms", "reward",
        ]  # fmt: skip


def test_view_warns_when_the_rollouts_file_it_names_is_not_there(tmp_path: Path) -> None:
    CaptureStore(tmp_path).append("r", chat_line())
    missing = tmp_path / "later" / "rollouts.jsonl"
    _, err = _view_stderr(tmp_path, "--rollouts", str(missing))
    assert f"mcc view: warning: {missing} is not a file yet; rewards show once it is" in err
