"""`model_call_capture.dropin.CaptureMiddleware`: configured from the environment, built from `app` only.

The class is loaded the way vLLM's `--middleware` loads it: imported by path and added to
a Starlette app with `app.add_middleware(cls)`, which later calls `cls(app)` with no other
argument. Servers here are real uvicorn servers on 127.0.0.1 driven by the official openai
SDK; the environment is the test process's own (`monkeypatch.setenv`), as an API-server
process inherits it. The same class inside a real vLLM is in tests/test_vllm.py.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from model_call_capture.demo.model_server import create_app
from model_call_capture.dropin import CaptureMiddleware, field_variables, settings_from_environ
from model_call_capture.errors import CaptureConfigError
from model_call_capture.rollout_ids import route_path
from servers import serve

from .conftest import ANSWER, new_rollout, read_lines

ALL_VARIABLES = ("MCC_CAPTURE_DIR", "MCC_MODEL_SERVER_NAME", "MCC_CONFIG", *field_variables())


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MCC_ variable leaks in from the machine running the tests."""
    for var in ALL_VARIABLES:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def fresh_log_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the first instance of its process (the log-once flag is per process)."""
    monkeypatch.setattr("model_call_capture.dropin._said_off", False)


class RoutedModel:
    """The scripted model server as one route's ASGI endpoint, seeing the route's path."""

    def __init__(self) -> None:
        self.demo = create_app()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.demo({**scope, "path": route_path(scope), "root_path": ""}, receive, send)


def model_app() -> Starlette:
    """A Starlette app routing `/v1/...` to the scripted model server, as vLLM's FastAPI does."""
    model = RoutedModel()
    paths = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
    return Starlette(routes=[Route(path, model, methods=["POST"]) for path in paths])


def with_dropin() -> Starlette:
    """`model_app()` with the drop-in added by import path, exactly as vLLM adds `--middleware`."""
    app = model_app()
    module, _, name = "model_call_capture.dropin.CaptureMiddleware".rpartition(".")
    app.add_middleware(getattr(importlib.import_module(module), name))
    return app


def chat(base_url: str, *, stream: bool = False) -> str:
    """One chat call through the openai SDK; the text the client saw."""
    messages: Any = [{"role": "user", "content": "Weather in Paris?"}]
    with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=10) as client:
        if stream:
            chunks = client.chat.completions.create(
                model="demo-gpt", messages=messages, stream=True
            )
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        reply = client.chat.completions.create(model="demo-gpt", messages=messages)
        return reply.choices[0].message.content or ""


@pytest.fixture
def capture_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The two variables a user adds to turn capture on; the capture directory."""
    monkeypatch.setenv("MCC_CAPTURE_DIR", str(tmp_path / "captures"))
    monkeypatch.setenv("MCC_MODEL_SERVER_NAME", "policy_model")
    return tmp_path / "captures"


# -- the class, as a server loads it ---------------------------------------------------------


def test_built_from_app_alone_positionally_or_as_keyword(capture_env: Path) -> None:
    app = model_app()
    for middleware in (CaptureMiddleware(app), CaptureMiddleware(app=app)):
        assert middleware.app is app
        assert middleware.config.observability_enabled is True
        assert middleware.config.model_call_capture_dir == str(capture_env)
        assert middleware.model_ref.name == "policy_model"


def test_added_by_import_path_captures_prefixed_calls_only(capture_env: Path) -> None:
    rollout = new_rollout()
    with serve(with_dropin()) as server:
        assert chat(f"{server.url}/ng-rollout/{rollout}/v1") == ANSWER
        assert chat(f"{server.url}/ng-rollout/{rollout}/v1", stream=True) == ANSWER
        assert chat(f"{server.url}/v1") == ANSWER
    lines = read_lines(capture_env, rollout)
    assert [line["dialect"] for line in lines] == ["chat", "chat"]
    assert [line["model_ref"] for line in lines] == [
        {"type": "responses_api_models", "name": "policy_model"}
    ] * 2
    assert lines[1]["request"]["stream"] is True
    assert sorted(p.name for p in capture_env.iterdir()) == [f"{rollout}.capture.jsonl"]


def test_two_servers_append_to_one_rollout_file(capture_env: Path) -> None:
    """Each API-server process builds its own instance; the rollout's calls share one file."""
    rollout = new_rollout()
    with serve(with_dropin()) as first, serve(with_dropin()) as second:
        for server in (first, second, first, second):
            chat(f"{server.url}/ng-rollout/{rollout}/v1")
    assert len(read_lines(capture_env, rollout)) == 4


def test_root_path_keeps_working(capture_env: Path) -> None:
    rollout = new_rollout()
    with serve(with_dropin(), root_path="/api") as server:
        # Behind a proxy that strips /api, as `--root-path` means: the app sees /api/ng-rollout/...
        assert chat(f"{server.url}/ng-rollout/{rollout}/v1") == ANSWER
        assert chat(f"{server.url}/v1") == ANSWER
    assert len(read_lines(capture_env, rollout)) == 1


def test_lifespan_passes_through(capture_env: Path) -> None:
    """The app's own startup and shutdown run through the drop-in (uvicorn lifespan on)."""
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("startup")
        yield
        events.append("shutdown")

    app = Starlette(routes=model_app().routes, lifespan=lifespan)
    app.add_middleware(CaptureMiddleware)
    rollout = new_rollout()
    with serve(app, lifespan="on") as server:
        assert events == ["startup"]
        chat(f"{server.url}/ng-rollout/{rollout}/v1")
    assert events == ["startup", "shutdown"]
    assert len(read_lines(capture_env, rollout)) == 1


@pytest.mark.asyncio
async def test_websocket_scope_reaches_the_app_untouched(capture_env: Path) -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    scope = {"type": "websocket", "path": "/ng-rollout/r1/v1/realtime", "headers": []}
    await CaptureMiddleware(app)(scope, _never, _never)
    assert seen == [scope]
    assert seen[0] is scope


async def _never(*_: Any) -> Any:
    raise AssertionError("not called")


# -- capture off ------------------------------------------------------------------------------


def test_no_variable_passes_through_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.INFO, logger="model_call_capture")
    with serve(with_dropin()) as first, serve(with_dropin()) as second:
        for server in (first, second):
            assert chat(f"{server.url}/ng-rollout/{new_rollout()}/v1") == ANSWER
    said = [r for r in caplog.records if r.name == "model_call_capture.dropin"]
    assert [(r.levelname, r.getMessage()) for r in said] == [
        (
            "WARNING",
            "model-call capture is off (MCC_CAPTURE_DIR is not set): calls pass through "
            "uncaptured, the /ng-rollout/<id> prefix is still stripped",
        )
    ]
    assert list(tmp_path.iterdir()) == []


def test_observability_enabled_false_turns_it_off(
    capture_env: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MCC_OBSERVABILITY_ENABLED", "false")
    with serve(with_dropin()) as server:
        chat(f"{server.url}/ng-rollout/{new_rollout()}/v1")
    assert not capture_env.exists()
    assert "(MCC_OBSERVABILITY_ENABLED is false)" in caplog.text


# -- settings -----------------------------------------------------------------------------------


def test_config_file_gives_the_defaults_and_variables_override_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        "observability_enabled: true\n"
        f"model_call_capture_dir: {tmp_path / 'from-file'}\n"
        "capture_max_bytes: 1000\n"
        "capture_stream_raw: always\n"
        "policy_model:\n  responses_api_models:\n    vllm_model: {port: 8000}\n"
    )
    monkeypatch.setenv("MCC_CONFIG", str(config))
    monkeypatch.setenv("MCC_MODEL_SERVER_NAME", "policy_model")
    monkeypatch.setenv("MCC_CAPTURE_MAX_BYTES", "2048")
    settings = settings_from_environ()
    assert settings.config.observability_enabled is True
    assert settings.config.model_call_capture_dir == str(tmp_path / "from-file")
    assert settings.config.capture_max_bytes == 2048
    assert settings.config.capture_stream_raw == "always"
    monkeypatch.setenv("MCC_CAPTURE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("MCC_CAPTURE_STREAM_RAW", "never")
    monkeypatch.setenv("MCC_CAPTURE_MEMORY_BUDGET_BYTES", "0")
    settings = settings_from_environ()
    assert settings.config.model_call_capture_dir == str(tmp_path / "from-env")
    assert settings.config.capture_stream_raw == "never"
    assert settings.config.capture_memory_budget_bytes == 0


def test_every_other_config_field_has_its_variable() -> None:
    assert field_variables() == {
        "MCC_CAPTURE_LAYOUT": "capture_layout",
        "MCC_CAPTURE_MAX_BYTES": "capture_max_bytes",
        "MCC_CAPTURE_MEMORY_BUDGET_BYTES": "capture_memory_budget_bytes",
        "MCC_CAPTURE_STREAM_RAW": "capture_stream_raw",
        "MCC_OBSERVABILITY_ENABLED": "observability_enabled",
        "MCC_OTLP_ENDPOINT": "otlp_endpoint",
    }


def test_config_file_that_leaves_capture_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("observability_enabled: false\n")
    monkeypatch.setenv("MCC_CONFIG", str(config))
    settings = settings_from_environ()
    assert settings.config.observability_enabled is False
    assert (
        settings.off_reason == "MCC_CAPTURE_DIR is not set and MCC_CONFIG does not turn capture on"
    )


BAD = [
    (
        {"MCC_CAPTURE_DIR": "captures"},
        "MCC_CAPTURE_DIR must be an absolute directory, got 'captures'",
    ),
    ({"MCC_CAPTURE_DIR": ""}, "MCC_CAPTURE_DIR must be an absolute directory, got ''"),
    ({"MCC_CAPTURE_DIR": "/c"}, "MCC_MODEL_SERVER_NAME is not set"),
    ({"MCC_CAPTURE_DIR": "/c", "MCC_MODEL_SERVER_NAME": " "}, "MCC_MODEL_SERVER_NAME is empty"),
    ({"MCC_CAPTURE_MAX_BYTES": "-1"}, "MCC_CAPTURE_MAX_BYTES='-1': capture_max_bytes must be"),
    ({"MCC_CAPTURE_MAX_BYTES": "64M"}, "MCC_CAPTURE_MAX_BYTES='64M': capture_max_bytes must be"),
    ({"MCC_CAPTURE_MAX_BYTES": "true"}, "MCC_CAPTURE_MAX_BYTES='true': capture_max_bytes must be"),
    (
        {"MCC_CAPTURE_MAX_BYTES": ""},
        "MCC_CAPTURE_MAX_BYTES must hold one value for capture_max_bytes",
    ),
    (
        {"MCC_CAPTURE_MEMORY_BUDGET_BYTES": "[1]"},
        "MCC_CAPTURE_MEMORY_BUDGET_BYTES must hold one value",
    ),
    (
        {"MCC_CAPTURE_STREAM_RAW": "sometimes"},
        "MCC_CAPTURE_STREAM_RAW='sometimes': capture_stream_raw",
    ),
    (
        {"MCC_OBSERVABILITY_ENABLED": "maybe"},
        "MCC_OBSERVABILITY_ENABLED='maybe': observability_enabled",
    ),
    (
        {"MCC_OBSERVABILITY_ENABLED": "true"},
        "the capture settings of MCC_OBSERVABILITY_ENABLED: observability_enabled is true but "
        "model_call_capture_dir is not set",
    ),
    ({"MCC_CONFIG": ""}, "MCC_CONFIG is empty"),
    (
        {"MCC_CONFIG": "/nonexistent/run.yaml"},
        "MCC_CONFIG: cannot read config file /nonexistent/run.yaml",
    ),
]


@pytest.mark.parametrize(("environ", "message"), BAD, ids=[str(e) for e, _ in BAD])
def test_a_bad_value_is_one_error_naming_the_variable(
    environ: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var, value in environ.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(CaptureConfigError) as caught:
        CaptureMiddleware(model_app())
    assert message in str(caught.value)


def test_a_config_file_with_a_bad_value_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("observability_enabled: true\nmodel_call_capture_dir: relative\n")
    monkeypatch.setenv("MCC_CONFIG", str(config))
    monkeypatch.setenv("MCC_MODEL_SERVER_NAME", "policy_model")
    with pytest.raises(
        CaptureConfigError,
        match=r"^the capture settings of MCC_CONFIG: model_call_capture_dir must be an absolute path",
    ):
        settings_from_environ()


def test_a_bad_value_stops_the_server_from_starting(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Starlette builds its middleware at startup: the error stops uvicorn, capture is never silently off."""
    monkeypatch.setenv("MCC_CAPTURE_DIR", "relative/captures")
    with (
        pytest.raises(RuntimeError, match="uvicorn failed to start"),
        serve(with_dropin(), lifespan="on"),
    ):
        pass
    assert "MCC_CAPTURE_DIR must be an absolute directory, got 'relative/captures'" in (
        capfd.readouterr().err
    )


def test_unprefixed_calls_on_a_capturing_server_are_untouched(capture_env: Path) -> None:
    with serve(with_dropin()) as server:
        reply = httpx.post(
            f"{server.url}/v1/chat/completions",
            json={"model": "demo-gpt", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 200
    assert json.loads(reply.content)["choices"][0]["message"]["content"] == ANSWER
    assert not capture_env.exists() or list(capture_env.iterdir()) == []


def test_importing_it_with_a_bad_value_fails(tmp_path: Path) -> None:
    """vLLM imports `--middleware` classes while it starts: a bad variable stops it there."""
    env = {k: v for k, v in os.environ.items() if k not in ALL_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", "import model_call_capture.dropin"],
        env={**env, "MCC_CAPTURE_MAX_BYTES": "lots"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "model_call_capture.errors.CaptureConfigError: MCC_CAPTURE_MAX_BYTES='lots': "
        "capture_max_bytes must be a non-negative integer, got 'lots'"
    )
