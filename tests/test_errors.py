"""The exception tree: every library error is a `CaptureError` and keeps its builtin base.

Each error is raised the way a user meets it (a bad id, a damaged file, bad settings, a
second collector), then caught by its old builtin base, so `except ValueError` code keeps
working, and checked to be a `CaptureError`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import model_call_capture
from model_call_capture import (
    CaptureConfigError,
    CaptureError,
    CaptureStore,
    CollectorBusyError,
    DamagedLineError,
    InvalidRolloutIdError,
    SchemaValidationError,
    UnknownSchemaError,
    UnsupportedFormatError,
    collect,
    load_capture_config,
    read_model_call_records,
)
from model_call_capture import errors as errors_module
from model_call_capture.contracts import CAPTURE_LINE_FORMAT
from model_call_capture.schemas import load_schema, validate

_NEWER_FORMAT = CAPTURE_LINE_FORMAT.split("/")[0] + "/99"


def _bad_rollout_id(tmp_path: Path) -> None:
    CaptureStore(tmp_path).append("../outside", b"{}")


def _damaged_line(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_bytes(b'{"model_call_id": "ok"}\n{"torn": \n')
    read_model_call_records(store, "r")


def _newer_format(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    store.path("r").write_text(f'{{"format": "{_NEWER_FORMAT}", "model_call_id": "x"}}\n')
    store.read("r")


def _bad_settings(tmp_path: Path) -> None:
    load_capture_config({"observability_enabled": True, "model_call_capture_dir": "relative"})


def _unknown_schema(tmp_path: Path) -> None:
    load_schema("no-such-schema")


def _rejected_document(tmp_path: Path) -> None:
    validate({"dialect": "gemini"}, "capture-line")


def _second_collector(tmp_path: Path) -> None:
    capture = tmp_path / "captures"

    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return {}

    async def both() -> None:
        first = asyncio.create_task(
            collect([{}], slow, capture_dir=capture, output_path=tmp_path / "1.jsonl")
        )
        await asyncio.sleep(0.05)
        try:
            await collect([{}], slow, capture_dir=capture, output_path=tmp_path / "2.jsonl")
        finally:
            await first

    asyncio.run(both())


@pytest.mark.parametrize(
    ("situation", "error", "builtin"),
    [
        (_bad_rollout_id, InvalidRolloutIdError, ValueError),
        (_damaged_line, DamagedLineError, ValueError),
        (_newer_format, UnsupportedFormatError, ValueError),
        (_bad_settings, CaptureConfigError, ValueError),
        (_unknown_schema, UnknownSchemaError, LookupError),
        (_rejected_document, SchemaValidationError, ValueError),
        (_second_collector, CollectorBusyError, RuntimeError),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_error_is_a_capture_error_and_keeps_its_builtin_base(
    situation: Callable[[Path], None],
    error: type[Exception],
    builtin: type[Exception],
    tmp_path: Path,
) -> None:
    with pytest.raises(builtin) as caught:  # what code written before the tree catches
        situation(tmp_path)
    assert type(caught.value) is error
    assert isinstance(caught.value, CaptureError)


def test_collector_busy_error_of_the_tree_keeps_runtime_error() -> None:
    assert issubclass(errors_module.CollectorBusyError, CaptureError)
    assert issubclass(errors_module.CollectorBusyError, RuntimeError)


def _exported_exceptions() -> list[str]:
    return [
        name
        for name in model_call_capture.__all__
        if inspect.isclass(value := getattr(model_call_capture, name))
        and issubclass(value, BaseException)
    ]


@pytest.mark.parametrize(
    "name",
    _exported_exceptions(),
)
def test_every_exported_exception_is_a_capture_error_of_the_tree(name: str) -> None:
    exported = getattr(model_call_capture, name)
    assert issubclass(exported, CaptureError)
    assert exported is getattr(errors_module, name)


def test_the_tree_is_exported_whole() -> None:
    assert set(errors_module.__all__) <= set(model_call_capture.__all__) | {"CollectorBusyError"}
    assert "CaptureError" in _exported_exceptions()
