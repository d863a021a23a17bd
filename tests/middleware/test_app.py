"""The ASGI shell: which requests are captured, the prefix, mounting, the capture context."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from model_call_capture.contracts import CaptureConfig
from model_call_capture.demo.model_server import create_app
from model_call_capture.middleware import (
    CAPTURE_EXTENSION,
    CaptureMiddleware,
    install_model_call_capture,
)

from .conftest import (
    ANSWER,
    SERVER_NAME,
    call,
    capturing,
    chat_body,
    config_for,
    new_rollout,
    only_line,
    post,
)


def test_install_on_fastapi_uses_add_middleware_and_routes_the_stripped_path(
    tmp_path: Path,
) -> None:
    api = FastAPI()

    @api.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        context = request.scope["extensions"][CAPTURE_EXTENSION]
        context.error_category = "connection"  # as a proxy whose upstream failed would
        return JSONResponse({"error": {"message": "upstream unreachable"}}, status_code=502)

    mounted = install_model_call_capture(api, config_for(tmp_path), model_server_name=SERVER_NAME)
    assert mounted is api
    rollout = new_rollout()
    reply = post(api, rollout, chat_body())
    assert reply.status == 502
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"]) == (502, "connection")
    assert line["response"] == {"error": {"message": "upstream unreachable"}}


def test_install_accepts_a_global_config_mapping(tmp_path: Path) -> None:
    app = install_model_call_capture(
        create_app(),
        {
            "observability_enabled": True,
            "model_call_capture_dir": str(tmp_path),
            "policy_model": {},
        },
        model_server_name=SERVER_NAME,
    )
    assert isinstance(app, CaptureMiddleware)
    assert app.store is not None


def test_non_http_scopes_pass_straight_through(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    middleware = CaptureMiddleware(app, config=config_for(tmp_path), model_server_name=SERVER_NAME)
    scope = {"type": "websocket", "path": "/ng-rollout/r/v1/chat/completions"}

    async def never(*_: Any) -> Any:
        raise AssertionError

    asyncio.run(middleware(scope, never, never))
    assert seen == [scope] and seen[0] is scope


@pytest.mark.parametrize(
    ("path_id", "shown"),
    [
        ("%2E%2E%2F%2E%2E%2Fescaped", "../../escaped"),
        ("..", ".."),
        ("%C3%A9t%C3%A9", "\u00e9t\u00e9"),
        ("%EF%BD%81bc", "\uff41bc"),  # a fullwidth look-alike of "abc"
        ("a" * 300, "a" * 300),
        (".hidden", ".hidden"),
    ],
)
def test_invalid_rollout_ids_are_forwarded_not_captured_and_logged(
    path_id: str, shown: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "captures"
    directory.mkdir()
    app = capturing(directory)
    with caplog.at_level(logging.WARNING, "model_call_capture"):
        for _ in range(2):
            reply = call(
                app,
                f"/ng-rollout/{path_id}/v1/chat/completions",
                json.dumps(chat_body()).encode(),
            )
            assert reply.status == 200
            assert ANSWER.encode() in reply.body
    assert list(directory.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["captures"]
    warnings = [r.getMessage() for r in caplog.records if "without capture" in r.getMessage()]
    assert len(warnings) == 1
    assert "invalid rollout id" in warnings[0]


def test_capture_disabled_strips_the_prefix_and_writes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "captures"
    app = install_model_call_capture(
        create_app(),
        CaptureConfig(model_call_capture_dir=str(directory)),
        model_server_name=SERVER_NAME,
    )

    async def complete() -> None:
        async with openai.AsyncOpenAI(
            base_url="http://testserver/ng-rollout/0-0/v1",
            api_key="k",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)),
        ) as client:
            reply = await client.chat.completions.create(
                model="demo-gpt", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == ANSWER

    asyncio.run(complete())
    assert not directory.exists()


def test_unprefixed_and_unobserved_calls_are_not_captured(tmp_path: Path) -> None:
    app = capturing(tmp_path)
    assert post(app, None, chat_body()).json()["object"] == "chat.completion"
    rollout = new_rollout()
    models = call(app, f"/ng-rollout/{rollout}/v1/models", method="GET")
    assert models.json()["object"] == "list"
    assert list(tmp_path.iterdir()) == []
