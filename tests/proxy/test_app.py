"""`mcc serve` fills in each call's execution (schema 1.1), as its own process on 127.0.0.1.

The proxy says on every line whether it tried its upstream, who answered, the upstream's
status, and why it answered itself: `upstream_unreachable` for its 502 (nothing listens
on the port), `upstream_timeout` for its 504 (a socket that accepts and never answers),
`request_too_large` for a 413 it gives before sending anything upstream. The upstream is
the demo model server in its own process, or a bare socket; expected values are by hand.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from model_call_capture.middleware._context import CaptureContext
from model_call_capture.proxy import ProxyApp
from model_call_capture.records import read_model_call_records
from model_call_capture.store import CaptureStore
from servers import serve

from .conftest import API_KEY, closed_port, lines, listening_socket, mcc_serve

EXECUTION = (
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
)


def _execution(line: Any) -> tuple[Any, ...]:
    return tuple(getattr(line, name) for name in EXECUTION)


def test_its_own_502_says_the_upstream_was_unreachable(tmp_path: Path) -> None:
    with mcc_serve(f"http://127.0.0.1:{closed_port()}", tmp_path) as served:
        client = openai.OpenAI(
            base_url=f"{served.url}/ng-rollout/down-2/v1", api_key=API_KEY, max_retries=0
        )
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
            )
    assert raised.value.status_code == 502
    (line,) = lines(served.capture_dir, "down-2")
    assert (line.status_code, line.error_category) == (502, "connection")
    # It tried (a connection was attempted); nobody upstream answered.
    assert _execution(line) == (True, "local", None, "upstream_unreachable")
    (record,) = read_model_call_records(CaptureStore(served.capture_dir), "down-2")
    assert (record.response_source, record.local_response_reason) == (
        "local",
        "upstream_unreachable",
    )


def test_its_own_504_says_the_upstream_timed_out(tmp_path: Path) -> None:
    silent = listening_socket()  # the kernel accepts; nothing ever answers
    try:
        upstream = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with mcc_serve(upstream, tmp_path, "--timeout", "0.3") as served:
            response = httpx.post(
                f"{served.url}/ng-rollout/slow-2/v1/responses",
                json={"model": "demo-gpt", "input": "hi"},
                timeout=20,
            )
    finally:
        silent.close()
    assert response.status_code == 504
    assert response.json()["error"]["type"] == "upstream_timeout"
    (line,) = lines(served.capture_dir, "slow-2")
    assert (line.status_code, line.error_category) == (504, "timeout")
    assert _execution(line) == (True, "local", None, "upstream_timeout")


@pytest.fixture(scope="module")
def proxy(upstream_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with mcc_serve(
        upstream_url, tmp_path_factory.mktemp("exec"), "--max-request-bytes", "4096"
    ) as served:
        yield served


def test_an_upstream_answer_carries_the_upstreams_status(proxy: Any) -> None:
    ok = httpx.post(
        f"{proxy.url}/ng-rollout/up-1/v1/chat/completions",
        json={"model": "demo-gpt", "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-session-id": "sess-9"},
    )
    failed = httpx.post(
        f"{proxy.url}/ng-rollout/up-1/v1/chat/completions",
        json={"model": "status_429", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert (ok.status_code, failed.status_code) == (200, 429)
    first, second = lines(proxy.capture_dir, "up-1")
    assert _execution(first) == (True, "upstream", 200, None)
    assert first.client_session_id == "sess-9"
    assert _execution(second) == (True, "upstream", 429, None)
    assert second.error_category == "rate_limit"


def test_a_413_before_anything_went_upstream_was_not_attempted(proxy: Any) -> None:
    body = b'{"model": "demo-gpt", "input": "' + b"x" * 5000 + b'"}'
    response = httpx.post(
        f"{proxy.url}/ng-rollout/big-1/v1/responses",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    (line,) = lines(proxy.capture_dir, "big-1")
    assert (line.status_code, line.error_category) == (413, "client_error")
    assert _execution(line) == (False, "local", None, "request_too_large")


async def _redirecting_upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers every request 307 to a root-relative path, as a server adding a slash does."""
    if scope["type"] != "http":
        return
    headers = [(b"location", b"/v1/chat/completions/"), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def test_a_redirect_from_the_upstream_keeps_the_prefix(tmp_path: Path) -> None:
    with serve(_redirecting_upstream) as upstream, mcc_serve(upstream.url, tmp_path) as served:
        response = httpx.post(
            f"{served.url}/ng-rollout/moved-1/v1/chat/completions", json={"model": "m"}
        )
    assert response.status_code == 307
    assert response.headers["location"] == "/ng-rollout/moved-1/v1/chat/completions/"
    (line,) = lines(served.capture_dir, "moved-1")
    assert _execution(line) == (True, "upstream", 307, None)


def test_a_target_refused_inside_the_proxy_is_a_local_answer() -> None:
    # In process: the outer guard of `mcc serve` refuses such a target before capture,
    # so only a `ProxyApp` mounted without it meets one (here, a fragment in the path).
    context = CaptureContext("r-1", "id", "chat")
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions#x",
        "raw_path": b"/v1/chat/completions#x",
        "query_string": b"",
        "headers": [],
        "extensions": {"model_call_capture": context},
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(ProxyApp(f"http://127.0.0.1:{closed_port()}")(scope, receive, send))
    assert sent[0]["status"] == 400
    run = context.execution
    assert run is not None
    assert (run.upstream_attempted, run.response_source, run.local_response_reason) == (
        False,
        "local",
        "invalid_request_target",
    )
