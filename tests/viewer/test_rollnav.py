"""Previous/next rollout: the rollouts around one in the table's natural order, from an
endpoint that answers for one rollout (the page never holds the whole index)."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from model_call_capture.store import CaptureStore
from model_call_capture.viewer import create_app

from .conftest import chat_line

IDS = ["10-0", "2-0", "a", "1-0", "2-1"]
NATURAL = ["1-0", "2-0", "2-1", "10-0", "a"]


def write_ids(root: Path) -> Path:
    store = CaptureStore(root)
    for rollout_id in IDS:
        store.append(rollout_id, chat_line(user=f"in {rollout_id}"))
    return root


def test_neighbours_follow_natural_order_and_stop_at_the_ends(tmp_path: Path) -> None:
    with TestClient(create_app(write_ids(tmp_path)), base_url="http://127.0.0.1") as client:
        found = {r: client.get(f"/api/rollouts/{r}/neighbours").json() for r in NATURAL}
        assert client.get("/api/rollouts/nope/neighbours").status_code == 404
        assert client.get("/api/rollouts/..%2F..%2Fetc/neighbours").status_code == 404
        CaptureStore(tmp_path).append("3-0", chat_line())  # a new rollout joins the order
        client.app.state.index.refresh(force=True)  # type: ignore[attr-defined]  # (not in 1 s)
        after = client.get("/api/rollouts/2-1/neighbours").json()
    assert found == {
        "1-0": {"previous": None, "next": "2-0"},
        "2-0": {"previous": "1-0", "next": "2-1"},
        "2-1": {"previous": "2-0", "next": "10-0"},
        "10-0": {"previous": "2-1", "next": "a"},
        "a": {"previous": "10-0", "next": None},
    }
    assert after == {"previous": "2-0", "next": "3-0"}
