"""The msgspec contracts agree with the JSON Schemas, the conformance corpus and NeMo Gym's files.

Drift between `schemas/` (the source of truth) and `model_call_capture.contracts` is
caught four ways: the reduced schema forms are equal (and snapshotted), every
conformance case gets the same verdict from jsonschema and from msgspec, schema-valid
generated documents decode and round-trip, and every file NeMo Gym 0.7.0 wrote decodes.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema
from jsonschema import Draft202012Validator
from syrupy.assertion import SnapshotAssertion

import model_call_capture
from conftest import FULL_GYM_REFERENCE
from model_call_capture import contracts
from model_call_capture.contracts import (
    CaptureConfig,
    CaptureLine,
    ModelCallCapture,
    ModelCallMetrics,
    ModelCallRecord,
    ModelRef,
    ObservationGap,
    TokenTrajectory,
    ToolCall,
)
from model_call_capture.dialects import DIALECTS
from schema_tools import SCHEMAS_DIR, reduce_schema_file, reduce_struct, schema_registry

CAPTURE = "v1/model-call-capture.schema.json"

# Every exported contract type and the schema definition it mirrors.
CONTRACTS: dict[type[msgspec.Struct], tuple[str, str]] = {
    CaptureLine: ("v1/capture-line.schema.json", ""),
    ModelCallRecord: ("v1/model-call-record.schema.json", ""),
    ModelCallCapture: (CAPTURE, ""),
    ModelCallMetrics: (CAPTURE, "#/$defs/ModelCallMetrics"),
    ObservationGap: (CAPTURE, "#/$defs/ObservationGap"),
    ModelRef: (CAPTURE, "#/$defs/ModelRef"),
    ToolCall: (CAPTURE, "#/$defs/ToolCall"),
    CaptureConfig: ("v1/capture-config.schema.json", ""),
    TokenTrajectory: ("v1/token-trajectory.schema.json", ""),
}
CONFORMANCE_DIR = SCHEMAS_DIR / "conformance"
CONFORMANCE_FILES = sorted(
    p for p in CONFORMANCE_DIR.glob("*.json") if not p.name.endswith(".schema.json")
)

# Lines in ../shared/gym-reference that the folder damages on purpose (Gym counts them as
# unreadable too). Blank lines are not lines at all and are skipped by every reader.
DAMAGED_GYM_LINES = {
    ("collection/4-4.capture.jsonl", 1): "`{oops}`: not JSON",
    ("collection/9-7.capture.jsonl", 2): "model_ref.name is the number 1",
    ("collection/9-8.capture.jsonl", 2): "`{not-json}`: not JSON",
    ("collection/9-8.capture.jsonl", 4): "`[1,2]`: not an object",
    ("collection/9-8.capture.jsonl", 7): "a torn write: the line ends mid-string",
}


def _struct_types(path: str = "") -> dict[str, type[msgspec.Struct]]:
    """The Structs the titles of schema file `path` name, by name: those of contracts, and
    for a dialect's schema the ones its package exports (the package whose docstring names
    the file). Dialects share type names (`Request`, `Response`, `Usage`): a title is looked
    up in its own dialect only."""
    found = {
        name: value
        for name, value in vars(contracts).items()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct)
    }
    if path.startswith("v1/dialects/"):
        owners = [m for m in DIALECTS.values() if f"`schemas/{path}`" in (m.__doc__ or "")]
        assert len(owners) == 1, f"{path}: no one dialect package names it in its docstring"
        for name in owners[0].__all__:  # type: ignore[attr-defined]
            value = getattr(owners[0], name)
            if inspect.isclass(value) and issubclass(value, msgspec.Struct):
                found[name] = value
    return found


def _load(relative: str) -> Any:
    return json.loads((SCHEMAS_DIR / relative).read_text(encoding="utf-8"))


# --- structure -----------------------------------------------------------------------


def test_every_contract_type_is_exported_and_mirrored() -> None:
    structs = {
        name
        for name, value in vars(contracts).items()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct)
    }
    assert structs == {t.__name__ for t in CONTRACTS}
    for tp in CONTRACTS:
        assert getattr(model_call_capture, tp.__name__) is tp


@pytest.mark.parametrize("tp", list(CONTRACTS), ids=lambda tp: tp.__name__)
def test_reduced_struct_schema_equals_schema_file(tp: type[msgspec.Struct]) -> None:
    path, pointer = CONTRACTS[tp]
    assert reduce_struct(tp) == reduce_schema_file(path, pointer)


def test_reduced_forms_snapshot(snapshot_json: SnapshotAssertion) -> None:
    reduced = {tp.__name__: reduce_schema_file(*CONTRACTS[tp]) for tp in CONTRACTS}
    assert reduced == snapshot_json


def test_reduced_form_of_model_ref_spelled_out() -> None:
    assert reduce_struct(ModelRef) == {
        "ModelRef": {
            "properties": {"name": ["string"], "type": ["string"]},
            "required": ["name", "type"],
            "closed": False,
        }
    }


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("v1/capture-line.schema.json", "CaptureLine"),
        ("v1/model-call-record.schema.json", "ModelCallRecord"),
        ("v1/model-call-capture.schema.json", "ModelCallCapture"),
        ("v1/capture-config.schema.json", "CaptureConfig"),
        ("v1/token-trajectory.schema.json", "TokenTrajectory"),
    ],
)
def test_file_name_id_and_title_agree(path: str, title: str) -> None:
    """The file stem is the kebab-case of the root title, and the `$id` ends with the path."""
    document = _load(path)
    assert document["title"] == title
    assert document["$id"] == f"https://model-call-capture.dev/schemas/{path}"
    assert re.sub(r"(?<!^)(?=[A-Z])", "-", title).lower() + ".schema.json" == Path(path).name
    assert sorted(p.name for p in (SCHEMAS_DIR / "v1").glob("*.schema.json")) == [
        "capture-config.schema.json",
        "capture-line.schema.json",
        "model-call-capture.schema.json",
        "model-call-record.schema.json",
        "token-trajectory.schema.json",
    ]


@pytest.mark.parametrize("tp", list(CONTRACTS), ids=lambda tp: tp.__name__)
def test_property_descriptions_are_the_field_docstrings(tp: type[msgspec.Struct]) -> None:
    """The one-line docstring under each field is its documentation, in the schema too."""
    cls = ast.parse(inspect.getsource(tp)).body[0]
    assert isinstance(cls, ast.ClassDef)
    docstrings = {
        node.target.id: after.value.value
        for node, after in itertools.pairwise(cls.body)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
    }
    path, pointer = CONTRACTS[tp]
    schema = _load(path)
    for part in pointer.removeprefix("#/").split("/") if pointer else []:
        schema = schema[part]
    assert schema["title"] == tp.__name__
    assert schema["description"] == inspect.getdoc(tp)
    assert {name: prop["description"] for name, prop in schema["properties"].items()} == docstrings


def _titled(node: Any) -> list[str]:
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("title"), str):
            found.append(node["title"])
        for value in node.values():
            found += _titled(value)
    elif isinstance(node, list):
        for value in node:
            found += _titled(value)
    return found


@pytest.mark.parametrize(
    "path",
    [
        p.relative_to(SCHEMAS_DIR).as_posix()
        for p in sorted((SCHEMAS_DIR / "v1").rglob("*.schema.json"))
    ],
)
def test_titles_name_python_types(path: str) -> None:
    """A titled `$defs` entry is titled with its key; every titled object names a Struct.

    Untitled `$defs` entries are allowed: they are helpers (a union, a shared scalar),
    not types of their own.
    """
    document = _load(path)
    structs = _struct_types(path)
    for key, definition in document.get("$defs", {}).items():
        assert definition.get("title", key) == key, f"{path}#/$defs/{key}"
    for title in _titled(document):
        schema_objects = [
            d for d in [document, *document.get("$defs", {}).values()] if d.get("title") == title
        ]
        if any(d.get("type") == "object" for d in schema_objects):
            assert title in structs, (
                f"{path}: object title {title!r} is no Struct in contracts or dialects"
            )


V1_FILES = [
    p.relative_to(SCHEMAS_DIR).as_posix()
    for p in sorted((SCHEMAS_DIR / "v1").rglob("*.schema.json"))
]


def _properties(node: Any, where: str = "#") -> list[tuple[str, Any]]:
    found = []
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            found.append((f"{where}/properties/{name}", sub))
        for key, value in node.items():
            # Subschemas under these keywords constrain values; they do not define fields.
            if key not in ("examples", "if", "then", "else", "not", "contains", "dependentSchemas"):
                found += _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _properties(value, f"{where}/{index}")
    return found


@pytest.mark.parametrize("path", V1_FILES)
def test_every_property_has_a_description(path: str) -> None:
    missing = [
        where
        for where, sub in _properties(_load(path))
        if not (isinstance(sub, dict) and sub.get("description"))
    ]
    assert missing == []


@pytest.mark.parametrize("path", V1_FILES)
def test_examples_are_valid(path: str) -> None:
    """Each file has an example; every example of a file or a `$defs` entry is valid."""
    document = _load(path)
    assert document.get("examples"), f"{path} has no examples"
    structs = _struct_types(path)
    registry = schema_registry()
    targets = [
        ("", document),
        *((f"#/$defs/{key}", d) for key, d in document.get("$defs", {}).items()),
    ]
    for pointer, definition in targets:
        validator = Draft202012Validator({"$ref": document["$id"] + pointer}, registry=registry)
        for example in definition.get("examples", []):
            assert list(validator.iter_errors(example)) == [], f"{path}{pointer}"
            if definition.get("type") == "object" and definition.get("title") in structs:
                msgspec.json.decode(json.dumps(example).encode(), type=structs[definition["title"]])


# --- conformance corpus ----------------------------------------------------------------


def _cases() -> list[Any]:
    params = []
    for path in CONFORMANCE_FILES:
        document = json.loads(path.read_text(encoding="utf-8"))
        for index, case in enumerate(document["tests"]):
            params.append(pytest.param(document["schema"], case, id=f"{path.stem}[{index}]"))
    return params


CASES = _cases()


def test_conformance_files_match_the_meta_schema() -> None:
    meta = _load("conformance/conformance.schema.json")
    Draft202012Validator.check_schema(meta)
    validator = Draft202012Validator(meta)
    for path in CONFORMANCE_FILES:
        document = json.loads(path.read_text(encoding="utf-8"))
        assert list(validator.iter_errors(document)) == [], path.name
        descriptions = [case["description"] for case in document["tests"]]
        assert len(descriptions) == len(set(descriptions)), f"{path.name}: duplicate descriptions"


def test_conformance_corpus_size() -> None:
    assert len(CASES) >= 80
    verdicts = [p.values[1]["valid"] for p in CASES]
    assert verdicts.count(True) >= 30 and verdicts.count(False) >= 30


def _conformance_type(schema: str) -> type[msgspec.Struct]:
    path, _, fragment = schema.partition("#")
    target = _load(path)
    for part in fragment.removeprefix("/").split("/") if fragment else []:
        target = target[part]
    return _struct_types(path)[target["title"]]


@pytest.mark.parametrize(("schema", "case"), CASES)
def test_conformance_jsonschema_verdict(schema: str, case: dict[str, Any]) -> None:
    path, _, fragment = schema.partition("#")
    uri = _load(path)["$id"] + ("#" + fragment if fragment else "")
    validator = Draft202012Validator({"$ref": uri}, registry=schema_registry())
    assert validator.is_valid(case["data"]) is case["valid"], case["description"]


@pytest.mark.parametrize(("schema", "case"), CASES)
def test_conformance_msgspec_verdict(schema: str, case: dict[str, Any]) -> None:
    tp = _conformance_type(schema)
    raw = json.dumps(case["data"]).encode()
    try:
        msgspec.json.decode(raw, type=tp)
    except msgspec.ValidationError:
        accepted = False
    else:
        accepted = True
    assert accepted is case["valid"], case["description"]


def test_msgspec_error_names_the_json_path() -> None:
    with pytest.raises(
        msgspec.ValidationError, match=r"^Expected `str`, got `int` - at `\$\.model_ref\.name`$"
    ):
        msgspec.json.decode(b'{"model_ref":{"type":"bogus","name":1}}', type=CaptureLine)
    with pytest.raises(
        msgspec.ValidationError, match=r"^Expected `int` >= 0 - at `\$\.tokens_in`$"
    ):
        msgspec.convert(
            {
                "num_calls": 1,
                "tokens_in": -1,
                "tokens_out": None,
                "tokens_reasoning": None,
                "tokens_total": None,
                "cached_tokens": None,
                "latency_total_ms": None,
            },
            ModelCallMetrics,
        )


# --- generated documents -----------------------------------------------------------------


def _inline(node: Any, resolver: Any) -> Any:
    """A copy of `node` with every `$ref` replaced by its target (our schemas are not recursive)."""
    if isinstance(node, list):
        return [_inline(item, resolver) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref":
            resolved = resolver.lookup(value)
            out.update(_inline(resolved.contents, resolved.resolver))
        elif key in ("$id", "$schema", "$defs", "examples"):
            continue
        elif key == "properties":
            out[key] = {name: _inline(sub, resolver) for name, sub in value.items()}
        else:
            out[key] = _inline(value, resolver)
    return out


def _project(value: Any, schema: Any) -> Any:
    """`value` with only the properties `schema` names, missing ones filled from `default`."""
    if isinstance(schema, dict) and "anyOf" in schema:
        branch = next(b for b in schema["anyOf"] if Draft202012Validator(b).is_valid(value))
        return _project(value, branch)
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        props = schema["properties"]
        out = {name: _project(value[name], props[name]) for name in value if name in props}
        for name, sub in props.items():
            if name not in out and "default" in sub:
                out[name] = sub["default"]
        return out
    if (
        isinstance(value, list)
        and isinstance(schema, dict)
        and isinstance(schema.get("items"), dict)
    ):
        return [_project(item, schema["items"]) for item in value]
    return value


def _small(schema: Any) -> Any:
    """A narrower copy of `schema` (arrays of at most two items) so generation stays fast."""
    if isinstance(schema, list):
        return [_small(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: (value if key in ("enum", "const", "default", "required") else _small(value))
        for key, value in schema.items()
    }
    if "properties" in schema:
        out["properties"] = {name: _small(sub) for name, sub in schema["properties"].items()}
    if schema.get("type") == "array":
        out["maxItems"] = 2
    return out


def _standalone(tp: type[msgspec.Struct]) -> dict[str, Any]:
    path, pointer = CONTRACTS[tp]
    resolved = schema_registry().resolver().lookup(_load(path)["$id"] + pointer)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_inline(resolved.contents, resolved.resolver),
    }


@pytest.mark.parametrize("tp", list(CONTRACTS), ids=lambda tp: tp.__name__)
def test_schema_valid_documents_decode_and_round_trip(tp: type[msgspec.Struct]) -> None:
    schema = _standalone(tp)
    validator = Draft202012Validator(schema)
    small = _small(schema)

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )
    @given(from_schema(small))
    def check(document: Any) -> None:
        assert validator.is_valid(document)
        decoded = msgspec.json.decode(json.dumps(document).encode(), type=tp)
        rewritten = json.loads(msgspec.json.encode(decoded))
        assert msgspec.json.decode(msgspec.json.encode(decoded), type=tp) == decoded
        assert validator.is_valid(rewritten)
        # Every known field survives with its value (a default may be omitted on write);
        # unknown fields are dropped on purpose.
        assert _project(rewritten, schema) == _project(document, schema)

    check()


def test_inline_keeps_a_standalone_schema() -> None:
    schema = _standalone(ModelCallCapture)
    assert "$ref" not in json.dumps(schema)
    assert schema["properties"]["metrics"]["title"] == "ModelCallMetrics"


# --- the wire form -------------------------------------------------------------------------


def test_capture_line_writes_gyms_eleven_core_fields() -> None:
    line = CaptureLine(model_call_id="c1", dialect="chat", status_code=200, request={"a": 1})
    assert msgspec.json.encode(line) == (
        b'{"model_call_id":"c1","dialect":"chat","model_ref":null,"started_at":null,"completed_at":null,'
        b'"latency_ms":null,"latency_ttft_ms":null,"status_code":200,"error_category":null,'
        b'"request":{"a":1},"response":null}'
    )


def test_capture_line_writes_optional_fields_only_when_set() -> None:
    line = CaptureLine(
        format="model-call-capture/1", request=None, request_raw="{oops", stream=False
    )
    assert json.loads(msgspec.json.encode(line)) == {
        "format": "model-call-capture/1",
        "model_call_id": None,
        "dialect": None,
        "model_ref": None,
        "started_at": None,
        "completed_at": None,
        "latency_ms": None,
        "latency_ttft_ms": None,
        "status_code": None,
        "error_category": None,
        "request": None,
        "response": None,
        "request_raw": "{oops",
        "stream": False,
    }


def test_minimal_gym_line_reads_as_unknowns() -> None:
    line = msgspec.json.decode(
        b'{"request":{"i":0},"response":{},"a_field_of_a_later_gym":true}', type=CaptureLine
    )
    assert line == CaptureLine(request={"i": 0}, response={})
    assert (
        line.format is msgspec.UNSET
        and line.model_call_id is None
        and line.request_raw is msgspec.UNSET
        and line.upstream_attempted is msgspec.UNSET
    )


def test_gyms_execution_fields_are_schema_1_1_fields_of_the_line() -> None:
    line = msgspec.json.decode(
        b'{"upstream_attempted":false,"response_source":"local","upstream_status_code":null,'
        b'"local_response_reason":"context_length_exceeded","client_session_id":"sess-42"}',
        type=CaptureLine,
    )
    assert (
        line.upstream_attempted,
        line.response_source,
        line.upstream_status_code,
        line.local_response_reason,
        line.client_session_id,
    ) == (False, "local", None, "context_length_exceeded", "sess-42")
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.response_source`"):
        msgspec.json.decode(b'{"response_source":"cache"}', type=CaptureLine)


def test_attached_call_omits_payloads() -> None:
    record = msgspec.json.decode(
        json.dumps(_load(CAPTURE)["examples"][0]["calls"][0]).encode(), type=ModelCallRecord
    )
    encoded = json.loads(msgspec.json.encode(record))
    assert "request" not in encoded and "response_raw" not in encoded
    assert encoded["capture_cut"] is False


def test_capture_config_requires_a_directory_when_enabled() -> None:
    with pytest.raises(
        ValueError, match=r"^model_call_capture_dir is required when observability_enabled is true$"
    ):
        CaptureConfig(observability_enabled=True)
    assert CaptureConfig() == CaptureConfig(
        observability_enabled=False, model_call_capture_dir=None
    )
    assert msgspec.json.encode(CaptureConfig()) == b"{}"


def test_capture_line_format_constant() -> None:
    assert contracts.CAPTURE_LINE_FORMAT == "model-call-capture/1"
    assert (
        _load("v1/capture-line.schema.json")["properties"]["format"]["const"]
        == contracts.CAPTURE_LINE_FORMAT
    )


# --- NeMo Gym's files ----------------------------------------------------------------------


def _gym_lines(root: Path) -> tuple[list[tuple[str, int, bytes]], list[tuple[str, int, bytes]]]:
    good: list[tuple[str, int, bytes]] = []
    damaged: list[tuple[str, int, bytes]] = []
    for path in sorted(root.rglob("*.capture.jsonl")):
        name = path.relative_to(root).as_posix()
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            if not raw.strip():
                continue
            (damaged if (name, number) in DAMAGED_GYM_LINES else good).append((name, number, raw))
    return good, damaged


def test_every_gym_line_decodes_and_validates(gym_reference_dir: Path) -> None:
    good, damaged = _gym_lines(gym_reference_dir)
    validator = Draft202012Validator(
        {"$ref": _load("v1/capture-line.schema.json")["$id"]}, registry=schema_registry()
    )
    for name, number, raw in good:
        line = msgspec.json.decode(raw, type=CaptureLine)
        errors = [e.message for e in validator.iter_errors(json.loads(raw))]
        assert errors == [], f"{name}:{number}"
        assert line.format is msgspec.UNSET
    if FULL_GYM_REFERENCE:
        assert len(good) == 409
    assert {(name, number) for name, number, _ in damaged} == set(DAMAGED_GYM_LINES)


def test_damaged_gym_lines_are_rejected(gym_reference_dir: Path) -> None:
    _, damaged = _gym_lines(gym_reference_dir)
    validator = Draft202012Validator(
        {"$ref": _load("v1/capture-line.schema.json")["$id"]}, registry=schema_registry()
    )
    for name, number, raw in damaged:
        with pytest.raises((msgspec.DecodeError, msgspec.ValidationError)):
            msgspec.json.decode(raw, type=CaptureLine)
        try:
            document = json.loads(raw)
        except json.JSONDecodeError:
            continue
        assert not validator.is_valid(document), f"{name}:{number}"


def test_gym_expected_documents_validate_and_decode(gym_reference_dir: Path) -> None:
    registry = schema_registry()
    record_v = Draft202012Validator(
        {"$ref": _load("v1/model-call-record.schema.json")["$id"]}, registry=registry
    )
    capture_v = Draft202012Validator({"$ref": _load(CAPTURE)["$id"]}, registry=registry)
    metrics_v = Draft202012Validator(
        {"$ref": _load(CAPTURE)["$id"] + "#/$defs/ModelCallMetrics"}, registry=registry
    )
    counts = {"files": 0, "refused": 0, "records": 0, "calls": 0}
    for path in sorted(gym_reference_dir.rglob("*.expected.json")):
        expected = json.loads(path.read_text(encoding="utf-8"))
        counts["files"] += 1
        if "error" in expected["attachment"]:
            counts["refused"] += 1  # Gym refused the rollout id `.hidden`
            continue
        for record in expected["records"]:
            assert list(record_v.iter_errors(record)) == [], path.name
            decoded = msgspec.json.decode(json.dumps(record).encode(), type=ModelCallRecord)
            assert decoded.request == record["request"] and decoded.tokens_in == record["tokens_in"]
            counts["records"] += 1
        assert list(capture_v.iter_errors(expected["attachment"])) == [], path.name
        attachment = msgspec.json.decode(
            json.dumps(expected["attachment"]).encode(), type=ModelCallCapture
        )
        assert all(call.request is msgspec.UNSET for call in attachment.calls)
        counts["calls"] += len(attachment.calls)
        assert list(metrics_v.iter_errors(expected["metrics"])) == [], path.name
        metrics = msgspec.json.decode(
            json.dumps(expected["metrics"]).encode(), type=ModelCallMetrics
        )
        assert metrics.num_calls == len(expected["records"])
    assert counts["refused"] == 1 and counts["records"] == counts["calls"]
    if FULL_GYM_REFERENCE:
        assert counts == {"files": 158, "refused": 1, "records": 408, "calls": 408}


def test_every_list_of_dialect_names_is_the_registry_s() -> None:
    # The registry (`dialects.DIALECTS`) is the one place that lists the dialects; the
    # contract's Literal, the schema's closed enum and the generated pydantic alias sit
    # below it or outside Python, so each is checked against it here.
    from model_call_capture.pydantic import Dialect as PydanticDialect

    names = list(DIALECTS)
    assert list(typing.get_args(contracts.Dialect)) == names
    assert _load("v1/model-call-capture.schema.json")["$defs"]["Dialect"]["enum"] == names
    literal = typing.get_args(PydanticDialect.__value__)[0]
    assert list(typing.get_args(literal)) == names


def test_the_genai_mapping_names_every_dialect() -> None:
    # OpenTelemetry's operation, provider and token cap of each dialect (`genai`) are
    # facts per dialect name: a dialect added to the registry must get them too.
    from model_call_capture import genai

    names = set(DIALECTS)
    assert set(genai._OPERATION) == set(genai._PROVIDER) == set(genai._MAX_TOKENS) == names
