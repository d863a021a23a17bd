"""`model_call_capture.schemas`: finding, loading and validating against the packaged schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from model_call_capture import schemas
from model_call_capture.schemas import SchemaValidationError, UnknownSchemaError

REPO = Path(__file__).resolve().parents[1]
BASE = "https://model-call-capture.dev/schemas/"
ALL_FILES = sorted(
    p.relative_to(REPO / "schemas").as_posix() for p in (REPO / "schemas").rglob("*.schema.json")
)

LINE = {
    "model_call_id": "c1",
    "dialect": "chat",
    "model_ref": {"type": "responses_api_models", "name": "policy_model"},
    "status_code": 200,
    "request": {"model": "m"},
    "response": {"id": "chatcmpl-1"},
}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_schema_dir_is_the_checkout_folder() -> None:
    # An editable install has no `_schemas` inside the package; the wheel has (hatch force-include).
    assert schemas.schema_dir() == REPO / "schemas"


def test_schema_names_lists_every_file() -> None:
    names = schemas.schema_names()
    assert names == ALL_FILES
    assert {
        "conformance/conformance.schema.json",
        "v1/capture-config.schema.json",
        "v1/capture-line.schema.json",
        "v1/model-call-capture.schema.json",
        "v1/model-call-record.schema.json",
    } <= set(names)


@pytest.mark.parametrize("path", ALL_FILES)
def test_every_schema_is_valid_2020_12_with_id_mirroring_its_path(path: str) -> None:
    document = json.loads((REPO / "schemas" / path).read_text(encoding="utf-8"))
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(document)
    assert document["$id"] == BASE + path
    assert isinstance(document.get("title"), str) and document["title"]


@pytest.mark.parametrize("path", ALL_FILES)
def test_every_ref_resolves_offline(path: str) -> None:
    document = schemas.load_schema(path)
    resolver = schemas.registry().resolver(document["$id"])
    refs = _refs(document)
    for ref in refs:
        assert resolver.lookup(ref).contents is not None, ref


def test_registry_never_fetches() -> None:
    with pytest.raises(Unresolvable):
        schemas.registry().resolver().lookup(
            "https://json-schema.org/draft/2020-12/meta/core-not-there"
        )
    with pytest.raises(Unresolvable):
        schemas.registry().resolver(BASE + "v1/capture-line.schema.json").lookup(
            "missing.schema.json"
        )


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("capture-line", BASE + "v1/capture-line.schema.json"),
        ("v1/capture-line.schema.json", BASE + "v1/capture-line.schema.json"),
        (BASE + "v1/capture-line.schema.json", BASE + "v1/capture-line.schema.json"),
        (
            "model-call-capture#/$defs/ModelRef",
            BASE + "v1/model-call-capture.schema.json#/$defs/ModelRef",
        ),
        ("conformance/conformance.schema.json", BASE + "conformance/conformance.schema.json"),
    ],
)
def test_schema_uri_spellings(name: str, uri: str) -> None:
    assert schemas.schema_uri(name) == uri


@pytest.mark.parametrize(
    "name",
    [
        "capture_line",
        "v2/capture-line.schema.json",
        "https://example.com/capture-line.schema.json",
        "",
    ],
)
def test_unknown_schema_names_are_refused(name: str) -> None:
    with pytest.raises(UnknownSchemaError, match=r"^no schema "):
        schemas.schema_uri(name)


def test_load_schema_document_and_definition() -> None:
    assert schemas.load_schema("capture-line")["title"] == "CaptureLine"
    model_ref = schemas.load_schema("model-call-capture#/$defs/ModelRef")
    assert model_ref["title"] == "ModelRef"
    assert model_ref["required"] == ["type", "name"]


def test_validate_accepts_a_valid_line() -> None:
    schemas.validate(LINE, "capture-line")  # raises on an invalid document
    assert schemas.is_valid(LINE, "capture-line") is True
    assert list(schemas.errors(LINE, "capture-line")) == []


def test_validate_names_the_json_path() -> None:
    bad = {**LINE, "model_ref": {"type": "bogus", "name": 1}}
    with pytest.raises(SchemaValidationError) as caught:
        schemas.validate(bad, "capture-line")
    error = caught.value
    assert error.json_path == "$.model_ref.name"
    assert error.message == "1 is not of type 'string'"
    assert error.schema == BASE + "v1/capture-line.schema.json"
    assert (
        str(error)
        == f"1 is not of type 'string' - at `$.model_ref.name` (schema {BASE}v1/capture-line.schema.json)"
    )
    assert isinstance(error, ValueError)


def test_validate_root_error_and_definition() -> None:
    with pytest.raises(SchemaValidationError) as caught:
        schemas.validate([1, 2], "capture-line")
    assert caught.value.json_path == "$"
    assert caught.value.message == "[1, 2] is not of type 'object'"
    with pytest.raises(SchemaValidationError) as caught:
        schemas.validate({"num_calls": -1}, "model-call-capture#/$defs/ModelCallMetrics")
    assert caught.value.schema == BASE + "v1/model-call-capture.schema.json#/$defs/ModelCallMetrics"


def test_errors_lists_every_problem_with_its_path() -> None:
    bad = {**LINE, "dialect": "gemini", "latency_ms": -1, "status_code": "200"}
    found = sorted((e.json_path, e.message) for e in schemas.errors(bad, "capture-line"))
    assert found == [
        ("$.dialect", "'gemini' is not valid under any of the given schemas"),
        ("$.latency_ms", "-1 is less than the minimum of 0"),
        ("$.status_code", "'200' is not of type 'integer', 'null'"),
    ]


def test_validate_attachment_follows_refs_across_files() -> None:
    attachment = {
        "rollout_id": "7-0",
        "metrics": {
            "num_calls": 1,
            "tokens_in": 1,
            "tokens_out": 1,
            "tokens_reasoning": None,
            "tokens_total": 2,
            "cached_tokens": None,
            "latency_total_ms": 3.0,
        },
        "calls": [{"call_index": 0}],
    }
    errors = sorted(e.message for e in schemas.errors(attachment, "model-call-capture"))
    assert errors[0] == "'cache_creation_tokens' is a required property"
    assert all(
        e.json_path == "$.calls[0]" for e in schemas.errors(attachment, "model-call-capture")
    )


def test_config_requires_dir_when_enabled() -> None:
    with pytest.raises(SchemaValidationError) as caught:
        schemas.validate({"observability_enabled": True}, "capture-config")
    assert caught.value.message == "'model_call_capture_dir' is a required property"
    assert schemas.is_valid(
        {"observability_enabled": True, "model_call_capture_dir": "/data/calls"}, "capture-config"
    )


def _conformance_cases() -> list[Any]:
    cases = []
    for path in sorted((REPO / "schemas" / "conformance").glob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        document = json.loads(path.read_text(encoding="utf-8"))
        cases += [
            pytest.param(document["schema"], case, id=f"{path.stem}[{i}]")
            for i, case in enumerate(document["tests"])
        ]
    return cases


@pytest.mark.parametrize(("schema", "case"), _conformance_cases())
def test_package_validator_gives_the_conformance_verdict(schema: str, case: dict[str, Any]) -> None:
    assert schemas.is_valid(case["data"], schema) is case["valid"], case["description"]
    assert (list(schemas.errors(case["data"], schema)) == []) is case["valid"]
