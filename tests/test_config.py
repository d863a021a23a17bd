"""Capture configuration: the seed's example loads; a bad directory is a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from model_call_capture.config import (
    CaptureConfigError,
    ServerInstance,
    load_capture_config,
    load_global_config,
    load_server_instances,
)
from model_call_capture.contracts import CaptureConfig

# The example of ../shared/seed/model-call-capture.txt, verbatim.
SEED_EXAMPLE = """\
observability_enabled: true
model_call_capture_dir: /data/model-calls

policy_model:
  responses_api_models:
    vllm_model:
      entrypoint: app.py
"""


def test_the_seed_example_loads_from_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_text(SEED_EXAMPLE)
    assert load_capture_config(path) == CaptureConfig(
        observability_enabled=True, model_call_capture_dir="/data/model-calls"
    )
    assert load_capture_config(str(path)) == load_capture_config(path)
    assert load_server_instances(path) == {
        "policy_model": ServerInstance(
            name="policy_model",
            server_type="responses_api_models",
            implementation="vllm_model",
            host=None,
            port=None,
            settings={"entrypoint": "app.py"},
        )
    }


def test_capture_is_off_by_default() -> None:
    off = CaptureConfig(observability_enabled=False, model_call_capture_dir=None)
    assert load_capture_config(None) == off
    assert load_capture_config({}) == off
    assert load_capture_config({"policy_model": {"responses_api_models": {"x": {}}}}) == off


def test_a_relative_dir_is_ignored_while_capture_is_off() -> None:
    assert load_capture_config({"model_call_capture_dir": "relative/dir"}) == CaptureConfig(
        observability_enabled=False, model_call_capture_dir=None
    )
    assert load_capture_config({"model_call_capture_dir": "/abs"}).model_call_capture_dir == "/abs"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"observability_enabled": True}, "model_call_capture_dir is not set"),
        (
            {"observability_enabled": True, "model_call_capture_dir": ""},
            "model_call_capture_dir is not set",
        ),
        (
            {"observability_enabled": True, "model_call_capture_dir": None},
            "model_call_capture_dir is not set",
        ),
        (
            {"observability_enabled": True, "model_call_capture_dir": "data/calls"},
            "must be an absolute path when observability_enabled is true, got 'data/calls'",
        ),
        (
            {"observability_enabled": True, "model_call_capture_dir": "~/calls"},
            "must be an absolute path",
        ),
        (
            {"observability_enabled": "yes", "model_call_capture_dir": "/d"},
            "must be true or false, got 'yes'",
        ),
        ({"model_call_capture_dir": 5}, "must be a path string, got 5"),
        ({"capture_stream_raw": "sometimes"}, "capture_stream_raw must be one of"),
        ({"capture_max_bytes": -1}, "capture_max_bytes must be a non-negative integer"),
        (
            {"capture_memory_budget_bytes": "1 GiB"},
            "capture_memory_budget_bytes must be a non-negative integer, got '1 GiB'",
        ),
        (
            {"capture_memory_budget_bytes": True},
            "capture_memory_budget_bytes must be a non-negative",
        ),
    ],
)
def test_unusable_settings_are_clear_errors(settings: dict[str, object], message: str) -> None:
    with pytest.raises(CaptureConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_capture_config(settings)


def test_all_capture_settings_are_read() -> None:
    assert load_capture_config(
        {
            "observability_enabled": True,
            "model_call_capture_dir": Path("/data/calls"),
            "capture_max_bytes": 1024,
            "capture_stream_raw": "never",
            "capture_memory_budget_bytes": 1 << 20,
        }
    ) == CaptureConfig(
        observability_enabled=True,
        model_call_capture_dir="/data/calls",
        capture_max_bytes=1024,
        capture_stream_raw="never",
        capture_memory_budget_bytes=1 << 20,
    )


def test_server_instances_with_host_and_port(tmp_path: Path) -> None:
    path = tmp_path / "env.yaml"
    path.write_text(
        SEED_EXAMPLE.replace(
            "entrypoint: app.py", "entrypoint: app.py\n      host: 127.0.0.1\n      port: 8001"
        )
        + "simple_agent:\n  responses_api_agents:\n    simple_agent:\n      host: '::1'\n      port: '9000'\n"
        + "some_setting: 3\nlist_setting: [1, 2]\n"
    )
    servers = load_server_instances(path)
    assert sorted(servers) == ["policy_model", "simple_agent"]
    assert servers["policy_model"].base_url == "http://127.0.0.1:8001"
    assert servers["simple_agent"].server_type == "responses_api_agents"
    assert servers["simple_agent"].base_url == "http://[::1]:9000"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "must hold a mapping at the top level, got list"),
        ("a: [\n", "is not valid YAML"),
    ],
)
def test_a_bad_yaml_file_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CaptureConfigError, match=message):
        load_capture_config(path)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CaptureConfigError, match="cannot read config file"):
        load_capture_config(tmp_path / "nope.yaml")


def test_an_empty_file_means_capture_off(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_global_config(path) == {}
    assert load_capture_config(path).observability_enabled is False


def test_capture_layout_is_auto_unless_set_and_one_of_three() -> None:
    on = {"observability_enabled": True, "model_call_capture_dir": "/data/model-calls"}
    assert load_capture_config(on).capture_layout == "auto"
    assert load_capture_config({**on, "capture_layout": "segments"}).capture_layout == "segments"
    with pytest.raises(CaptureConfigError, match="capture_layout must be one of"):
        load_capture_config({**on, "capture_layout": "per-host"})
