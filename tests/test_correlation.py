"""Correlation: rollout ids from run bodies, the /ng-rollout/<id> prefix, gated agent helpers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request  # module level: FastAPI resolves string annotations here

from model_call_capture import correlation, rollout_ids
from model_call_capture.contracts import CaptureConfig
from model_call_capture.correlation import (
    RolloutCorrelation,
    add_rollout_self_call_route,
    base_url_for_run,
    configure_correlation,
    resolve_model_base_url,
    rollout_id_from_run,
    url_path_for_request,
    url_path_for_run,
)
from model_call_capture.errors import InvalidRolloutIdError
from model_call_capture.rollout_ids import (
    apply_rollout_prefix,
    rollout_id_for_body,
    rollout_path_prefix,
    split_rollout_prefix,
)

GLOBAL_CONFIG: dict[str, Any] = {
    "observability_enabled": True,
    "model_call_capture_dir": "/data/model-calls",
    "policy_model": {
        "responses_api_models": {
            "vllm_model": {"entrypoint": "app.py", "host": "10.0.0.5", "port": 8000}
        }
    },
    "judge": {"responses_api_models": {"openai_model": {"entrypoint": "app.py"}}},
}
ON = RolloutCorrelation.from_config(GLOBAL_CONFIG)
OFF = RolloutCorrelation.from_config({**GLOBAL_CONFIG, "observability_enabled": False})
RUN = {"_ng_task_index": 4, "_ng_rollout_index": 2, "responses_create_params": {"input": "hi"}}


@pytest.fixture(autouse=True)
def _restore_process_correlation() -> Iterator[None]:
    saved = correlation.current_correlation()
    yield
    configure_correlation(saved)


# -- rollout ids (the rule every module checks) ---------------------------------------


@pytest.mark.parametrize(
    "rollout_id",
    ["0-0", "3-1-a2", "s7.0-0", "A", "run_1.task-2", "a" * 200, "x..y"],
)
def test_valid_rollout_ids_are_accepted(rollout_id: str) -> None:
    assert rollout_ids.validate_rollout_id(rollout_id) == rollout_id


@pytest.mark.parametrize(
    "rollout_id",
    [
        "",
        ".",
        "..",
        "../etc/passwd",
        "a/b",
        "/abs",
        "-leading-dash",
        ".hidden",
        "_under",
        "a b",
        "a\n",  # `$` would accept a trailing newline; the rule must not
        "a\x00b",
        "rollout\u2215slash",  # DIVISION SLASH, a look-alike of "/"
        "\uff10-0",  # FULLWIDTH DIGIT ZERO
        "é",
        "a" * 201,
        "a" * 300,
    ],
)
def test_invalid_rollout_ids_are_refused(rollout_id: str) -> None:
    with pytest.raises(InvalidRolloutIdError) as info:
        rollout_ids.validate_rollout_id(rollout_id)
    message = str(info.value)
    assert "^[A-Za-z0-9][A-Za-z0-9._-]*$" in message
    assert "at most 200 characters" in message
    assert repr(rollout_id)[:40] in message


def test_an_overlong_id_is_shown_truncated_in_the_message() -> None:
    with pytest.raises(InvalidRolloutIdError) as info:
        rollout_ids.validate_rollout_id("a" * 300)
    assert "a" * 100 not in str(info.value)
    assert "302 chars" in str(info.value)


# -- rollout ids from run bodies ----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"_ng_task_index": 4, "_ng_rollout_index": 2}, "4-2"),
        ({"_ng_task_index": 4, "_ng_rollout_index": 2, "_ng_attempt_index": 0}, "4-2"),
        ({"_ng_task_index": 4, "_ng_rollout_index": 2, "_ng_attempt_index": 3}, "4-2-a3"),
        ({"_ng_rollout_id": "s7.0-0", "_ng_task_index": 1, "_ng_rollout_index": 1}, "s7.0-0"),
        (
            {"_ng_rollout_id": "explicit", "_ng_attempt_index": 2},
            "explicit",
        ),  # explicit ids are used as is
        ({"_ng_task_index": 4}, None),
        ({}, None),
        ({"_ng_rollout_id": None, "_ng_task_index": 0, "_ng_rollout_index": 0}, "0-0"),
    ],
)
def test_rollout_id_for_body(body: dict[str, Any], expected: str | None) -> None:
    assert rollout_id_for_body(body) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"_ng_rollout_id": "../etc"}, "invalid rollout id '../etc'"),
        ({"_ng_rollout_id": 5}, "invalid rollout id 5"),
        (
            {"_ng_task_index": -1, "_ng_rollout_index": 0},
            "_ng_task_index must be a non-negative integer, got -1",
        ),
        ({"_ng_task_index": "1", "_ng_rollout_index": 0}, "got '1'"),
        ({"_ng_task_index": True, "_ng_rollout_index": 0}, "got True"),
        (
            {"_ng_task_index": 1, "_ng_rollout_index": 0, "_ng_attempt_index": 1.5},
            "_ng_attempt_index",
        ),
    ],
)
def test_malformed_ids_and_indices_are_refused(body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRolloutIdError, match=message.replace(".", r"\.")):
        rollout_id_for_body(body)


def test_prefix_helpers() -> None:
    assert rollout_path_prefix("4-2") == "/ng-rollout/4-2"
    assert apply_rollout_prefix("/v1/responses", "4-2") == "/ng-rollout/4-2/v1/responses"
    assert (
        apply_rollout_prefix("v1/chat/completions", "4-2") == "/ng-rollout/4-2/v1/chat/completions"
    )
    assert (
        apply_rollout_prefix("/ng-rollout/old/v1/messages", "new") == "/ng-rollout/new/v1/messages"
    )
    assert split_rollout_prefix("/ng-rollout/4-2/v1/responses") == ("4-2", "/v1/responses")
    assert split_rollout_prefix("/ng-rollout/4-2") == ("4-2", "/")
    assert split_rollout_prefix("/v1/responses") == (None, "/v1/responses")
    with pytest.raises(InvalidRolloutIdError):
        apply_rollout_prefix("/v1/responses", "a/b")


def test_helpers_prefix_only_when_capture_is_on() -> None:
    assert ON.rollout_id_from_run(RUN) == "4-2"
    assert ON.url_path_for_run("/v1/responses", RUN) == "/ng-rollout/4-2/v1/responses"
    assert (
        ON.base_url_for_run("http://10.0.0.5:8000/v1", RUN)
        == "http://10.0.0.5:8000/ng-rollout/4-2/v1"
    )
    assert ON.base_url_for_run("http://h:1", RUN) == "http://h:1/ng-rollout/4-2"
    assert ON.base_url_for_run("http://h:1/v1/?x=1", RUN) == "http://h:1/ng-rollout/4-2/v1/?x=1"
    assert ON.url_path_for_run("/v1/responses", {"other": 1}) == "/v1/responses"

    assert OFF.rollout_id_from_run(RUN) is None
    assert OFF.url_path_for_run("/v1/responses", RUN) == "/v1/responses"
    assert OFF.base_url_for_run("http://10.0.0.5:8000/v1", RUN) == "http://10.0.0.5:8000/v1"
    assert (
        OFF.url_path_for_request("/v1/responses", "/ng-rollout/4-2/v1/responses") == "/v1/responses"
    )


def test_resolve_model_base_url_from_the_server_instances() -> None:
    assert ON.resolve_model_base_url("policy_model", "4-2") == "http://10.0.0.5:8000/ng-rollout/4-2"
    assert ON.resolve_model_base_url("policy_model", None) == "http://10.0.0.5:8000"
    assert OFF.resolve_model_base_url("policy_model", "4-2") == "http://10.0.0.5:8000"
    with pytest.raises(
        KeyError,
        match=r"no server instance 'nope' in the global config; known: \['judge', 'policy_model'\]",
    ):
        ON.resolve_model_base_url("nope", "4-2")
    with pytest.raises(ValueError, match="'judge' has no host and port"):
        ON.resolve_model_base_url("judge", "4-2")


def test_module_functions_use_the_process_wide_correlation() -> None:
    configure_correlation(None)  # capture off: the default
    assert url_path_for_run("/v1/responses", RUN) == "/v1/responses"
    assert rollout_id_from_run(RUN) is None
    configure_correlation(GLOBAL_CONFIG)
    assert url_path_for_run("/v1/responses", RUN) == "/ng-rollout/4-2/v1/responses"
    assert rollout_id_from_run(RUN) == "4-2"
    assert base_url_for_run("http://x/v1", RUN) == "http://x/ng-rollout/4-2/v1"
    assert resolve_model_base_url("policy_model", "4-2") == "http://10.0.0.5:8000/ng-rollout/4-2"
    assert url_path_for_request("/v1/chat/completions", "/ng-rollout/9-9/v1/responses") == (
        "/ng-rollout/9-9/v1/chat/completions"
    )
    # An explicit correlation wins over the process-wide one.
    assert url_path_for_run("/v1/responses", RUN, correlation=OFF) == "/v1/responses"


def test_url_path_for_request_with_asgi_scopes() -> None:
    scope = {
        "type": "http",
        "path": "/ng-rollout/7-1-a2/v1/responses",
        "raw_path": b"/ng-rollout/7-1-a2/v1/responses",
    }
    assert ON.url_path_for_request("/v1/messages", scope) == "/ng-rollout/7-1-a2/v1/messages"
    assert (
        ON.url_path_for_request("/v1/messages", {"type": "http", "path": "/v1/responses"})
        == "/v1/messages"
    )
    with pytest.raises(InvalidRolloutIdError):
        ON.url_path_for_request(
            "/v1/messages", {"type": "http", "path": "/ng-rollout/..%2F/v1/responses"}
        )


@pytest.mark.parametrize("framework", ["fastapi", "starlette"])
def test_self_call_route_carries_the_prefix_through_a_real_server(framework: str) -> None:
    from servers import serve

    app: Any
    if framework == "fastapi":
        app = api = FastAPI()

        @api.post("/v1/responses")
        async def responses(request: Request) -> dict[str, Any]:
            return {"model_path": ON.url_path_for_request("/v1/chat/completions", request)}

        add_rollout_self_call_route(app)
    else:
        from starlette.applications import Starlette
        from starlette.requests import Request as StarletteRequest
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def endpoint(request: StarletteRequest) -> JSONResponse:
            return JSONResponse(
                {"model_path": ON.url_path_for_request("/v1/chat/completions", request)}
            )

        app = Starlette(routes=[Route("/v1/responses", endpoint, methods=["POST"])])
        add_rollout_self_call_route(app)

    with serve(app) as server:
        prefixed = httpx.post(f"{server.url}/ng-rollout/3-0-a1/v1/responses", json={})
        plain = httpx.post(f"{server.url}/v1/responses", json={})
        bad = httpx.post(f"{server.url}/ng-rollout/a%2F..%2Fb/v1/responses", json={})
    assert prefixed.json() == {"model_path": "/ng-rollout/3-0-a1/v1/chat/completions"}
    assert plain.json() == {"model_path": "/v1/chat/completions"}
    assert bad.status_code in (404, 500)  # never a prefixed call with a path in its id


def test_self_call_route_needs_a_route_to_mirror() -> None:
    from starlette.applications import Starlette

    with pytest.raises(ValueError, match="no route at '/v1/responses' to mirror"):
        add_rollout_self_call_route(Starlette())


def test_default_correlation_is_capture_off() -> None:
    assert RolloutCorrelation().capture == CaptureConfig()
    assert RolloutCorrelation().enabled is False


# -- the prefix in an ASGI scope (the capture middleware) ----------------------------


@pytest.mark.parametrize(
    ("path", "raw_path", "root_path", "expected"),
    [
        (
            "/ng-rollout/3-1/v1/messages",
            b"/ng-rollout/3-1/v1/messages",
            "",
            ("3-1", "/v1/messages", b"/v1/messages"),
        ),
        ("/ng-rollout/3-1", b"/ng-rollout/3-1", "", ("3-1", "/", b"/")),
        (
            "/ng-rollout/a/../b/v1/x",
            b"/ng-rollout/a%2F..%2Fb/v1/x",
            "",
            ("a/../b", "/v1/x", b"/v1/x"),
        ),
        ("/ng-rollout/\u00e9/v1/x", b"/ng-rollout/%C3%A9/v1/x", "", ("\u00e9", "/v1/x", b"/v1/x")),
        ("/ng-rollout/r/v1/x", None, "", ("r", "/v1/x", None)),
        (
            "/api/ng-rollout/r/v1/x",
            b"/api/ng-rollout/r/v1/x",
            "/api",
            ("r", "/api/v1/x", b"/api/v1/x"),
        ),
    ],
)
def test_prefix_is_split_from_path_and_raw_path(
    path: str, raw_path: bytes | None, root_path: str, expected: tuple[str, str, bytes | None]
) -> None:
    scope: dict[str, Any] = {
        "type": "http",
        "path": path,
        "root_path": root_path,
        "query_string": b"q=1",
    }
    if raw_path is not None:
        scope["raw_path"] = raw_path
    split = rollout_ids.split_scope_prefix(scope)
    assert split is not None
    rollout_id, new_scope = split
    assert (rollout_id, new_scope["path"], new_scope.get("raw_path")) == expected
    assert new_scope["root_path"] == root_path and new_scope["query_string"] == b"q=1"
    assert scope["path"] == path  # the caller's scope is not modified


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/ng-rollouts/x/v1", "/ng-rollout"])
def test_paths_without_the_prefix_are_left_alone(path: str) -> None:
    scope = {"type": "http", "path": path, "raw_path": path.encode()}
    assert rollout_ids.split_scope_prefix(scope) is None


@pytest.mark.parametrize(
    ("path", "root_path", "route"),
    [
        ("/v1/messages", "", "/v1/messages"),
        ("/api/v1/messages", "/api", "/v1/messages"),
        ("/api", "/api", "/api"),
        ("/other/v1/messages", "/api", "/other/v1/messages"),
    ],
)
def test_route_path_is_the_path_without_root_path(path: str, root_path: str, route: str) -> None:
    assert rollout_ids.route_path({"path": path, "root_path": root_path}) == route
