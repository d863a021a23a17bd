"""The generated pydantic models (`model_call_capture.pydantic`) agree with the schemas.

They accept every valid case of the conformance corpus and reject every invalid one
(except the cases in `NOT_EXPRESSIBLE`, each with its reason), and they read the records
and attachments NeMo Gym derived (`../shared/gym-reference/**/*.expected.json`) and write
them back unchanged, unknown fields included.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from conftest import FULL_GYM_REFERENCE
from model_call_capture.pydantic import CaptureLine, ModelCallCapture, ModelCallRecord

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "schemas"

NOT_EXPRESSIBLE = frozenset({"if", "then", "else", "not"})
"""The JSON Schema keywords the generated models cannot express: the one known gap.

datamodel-code-generator writes no validation for a conditional (`if`/`then`: capture on
requires a directory) or a negation (`not`: a dialect's catch-all stream event is any object
that is *not* a known event). A case that the schemas reject only through these keywords
(valid once they are removed) is accepted by the models; where those rules matter, validate
with the JSON Schemas (or the library's msgspec types). Every other case must get the case
file's verdict.
"""


def without_inexpressible(schema: Any, names: bool = False) -> Any:
    """A copy of a schema without the `NOT_EXPRESSIBLE` keywords (property names are kept)."""
    if isinstance(schema, list):
        return [without_inexpressible(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if names:  # the keys of `properties` or `$defs` are names, not keywords
        return {key: without_inexpressible(value) for key, value in schema.items()}
    return {
        key: without_inexpressible(
            value, names=key in {"properties", "patternProperties", "$defs", "dependentSchemas"}
        )
        for key, value in schema.items()
        if key not in NOT_EXPRESSIBLE
    }


@functools.cache
def loosened_validator(target: str) -> Draft202012Validator:
    """A validator of `target` (`v1/<file>.schema.json#...`) by the schemas without `NOT_EXPRESSIBLE`."""
    docs = [
        without_inexpressible(json.loads(p.read_text()))
        for p in sorted((SCHEMAS / "v1").rglob("*.schema.json"))
    ]
    registry: Registry[Any] = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012)) for doc in docs
    )
    path, _, fragment = target.partition("#")
    schema_id = json.loads((SCHEMAS / path).read_text())["$id"]
    return Draft202012Validator({"$ref": f"{schema_id}#{fragment}"}, registry=registry)


def conformance_cases() -> list[tuple[str, str, str, Any, bool]]:
    """(case file, target schema, description, data, valid) for every case of the corpus."""
    cases = []
    for path in sorted((SCHEMAS / "conformance").rglob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        corpus = json.loads(path.read_text())
        for case in corpus["tests"]:
            cases.append(
                (
                    path.relative_to(REPO).as_posix(),
                    corpus["schema"],
                    case["description"],
                    case["data"],
                    case["valid"],
                )
            )
    return cases


CASES = conformance_cases()


def generated_type(target: str) -> Any:
    """The generated model (or type alias) for `v1/<file>.schema.json[#/$defs/<Name>]`."""
    path, _, fragment = target.partition("#")
    schema = json.loads((SCHEMAS / path).read_text())
    for token in filter(None, fragment.split("/")):
        schema = schema[token]
    return getattr(generated_module(Path(path)), schema.get("title", fragment.rsplit("/", 1)[-1]))


def generated_module(path: Path) -> Any:
    """The generated module of `v1/<file>.schema.json` (`model_call_capture.pydantic.<file>`)."""
    stem = path.relative_to("v1").as_posix().removesuffix(".schema.json")
    return importlib.import_module(
        "model_call_capture.pydantic." + stem.replace("/", ".").replace("-", "_")
    )


def accepts(tp: Any, data: Any) -> bool:
    """Whether pydantic validates `data` as `tp` (a model class or a type alias)."""
    adapter = pydantic.TypeAdapter(tp)
    try:
        adapter.validate_python(data)
    except pydantic.ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("file", "target", "description", "data", "valid"),
    CASES,
    ids=[f"{Path(c[0]).stem}: {c[2]}" for c in CASES],
)
def test_the_models_give_each_conformance_case_its_verdict(
    file: str, target: str, description: str, data: Any, valid: bool
) -> None:
    # A schema-valid case stays valid without the inexpressible keywords; only a rejection
    # can be lost, and only when the loosened schemas accept the case.
    expected = valid or loosened_validator(target).is_valid(data)
    assert accepts(generated_type(target), data) is expected


def test_the_known_gap_is_exactly_the_inexpressible_keywords() -> None:
    gaps = {
        (file, description)
        for file, target, description, data, valid in CASES
        if not valid and loosened_validator(target).is_valid(data)
    }
    print(
        f"conformance: {len(CASES)} cases, {len(CASES) - len(gaps)} agree, {len(gaps)} in the known gap"
    )
    assert {
        ("schemas/conformance/capture-config.json", "capture on without a directory"),
        ("schemas/conformance/capture-config.json", "capture on with a null directory"),
    } <= gaps
    for file, target, description, data, _ in CASES:
        if (file, description) in gaps:
            assert accepts(generated_type(target), data), (file, description)


def test_the_corpus_has_both_verdicts_for_the_models() -> None:
    assert len(CASES) > 0
    assert {True, False} <= {case[4] for case in CASES}


def test_the_models_accept_every_example_of_the_schemas() -> None:
    """Each titled document or `$defs` entry with `examples` accepts them as its model."""
    checked = 0
    for path in sorted((SCHEMAS / "v1").rglob("*.schema.json")):
        doc = json.loads(path.read_text())
        module = generated_module(path.relative_to(SCHEMAS))
        for key, definition in [("", doc), *doc.get("$defs", {}).items()]:
            if not definition.get("examples") or is_container(definition):
                continue
            adapter = pydantic.TypeAdapter(getattr(module, definition.get("title", key)))
            for example in definition["examples"]:
                adapter.validate_python(example)
                checked += 1
    assert checked >= 20


def is_container(schema: dict[str, Any]) -> bool:
    """A dialect document's root: it only holds `$defs` and accepts any value."""
    return not (
        {"type", "anyOf", "oneOf", "allOf", "$ref", "properties", "enum", "const"} & schema.keys()
    )


def expected_files(gym_reference_dir: Path) -> list[Path]:
    """Gym's `*.expected.json` files that carry records (not a refused rollout id)."""
    files = sorted(
        p
        for p in gym_reference_dir.rglob("*.expected.json")
        if "records" in json.loads(p.read_text())
    )
    assert len(files) > (100 if FULL_GYM_REFERENCE else 0)
    return files


def round_trip(model: type[pydantic.BaseModel], document: dict[str, Any]) -> dict[str, Any]:
    """Validate a JSON document as `model` and write it back as JSON."""
    written: dict[str, Any] = json.loads(
        model.model_validate_json(json.dumps(document)).model_dump_json(exclude_unset=True)
    )
    return written


def test_gym_records_and_attachments_round_trip(gym_reference_dir: Path) -> None:
    records = attachments = 0
    for path in expected_files(gym_reference_dir):
        expected = json.loads(path.read_text())
        for record in expected["records"]:
            assert round_trip(ModelCallRecord, record) == record, (
                f"{path}: call {record.get('call_index')}"
            )
            records += 1
        # Where Gym refused the rollout id, its "attachment" is `{"error": ...}`, no capture.
        if "attachment" in expected and "error" not in expected["attachment"]:
            assert round_trip(ModelCallCapture, expected["attachment"]) == expected["attachment"], (
                str(path)
            )
            attachments += 1
    print(f"round-tripped {records} records and {attachments} attachments")
    least = 100 if FULL_GYM_REFERENCE else 0
    assert records > least and attachments > least


def test_gym_capture_lines_get_the_schema_verdict_and_round_trip(gym_reference_dir: Path) -> None:
    schema = json.loads((SCHEMAS / "v1/capture-line.schema.json").read_text())
    resources = [
        (doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012))
        for doc in (
            json.loads(p.read_text()) for p in sorted((SCHEMAS / "v1").rglob("*.schema.json"))
        )
    ]
    validator = Draft202012Validator(schema, registry=Registry().with_resources(resources))
    accepted = rejected = 0
    for path in sorted(gym_reference_dir.rglob("*.capture.jsonl")):
        for number, raw in enumerate(path.read_bytes().splitlines(), 1):
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a torn line is the store's business, not the models'
            if validator.is_valid(line):
                assert round_trip(CaptureLine, line) == line, f"{path}:{number}"
                accepted += 1
            else:
                with pytest.raises(pydantic.ValidationError):
                    CaptureLine.model_validate(line)
                rejected += 1
    print(f"capture lines: {accepted} round-tripped, {rejected} rejected by both")
    assert accepted > (300 if FULL_GYM_REFERENCE else 0) and rejected >= 1


def test_unknown_fields_are_kept_and_typed_fields_are_typed() -> None:
    record = ModelCallRecord.model_validate(
        {
            **dict.fromkeys(
                ("model_call_id", "response_id", "model_ref", "model", "dialect", "status_code")
            ),
            **dict.fromkeys(("response_status", "finish_reason", "started_at", "completed_at")),
            **dict.fromkeys(
                ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens")
            ),
            **dict.fromkeys(
                ("cache_hit", "cache_creation_tokens", "reasoning_content", "error_category")
            ),
            **dict.fromkeys(("latency_total_ms", "latency_ttft_ms", "request", "response")),
            **dict.fromkeys(("request_raw", "response_raw")),
            "call_index": 3,
            "tool_calls": [
                {"call_id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
            ],
            "upstream_attempted": True,
            "a_later_field": [1],
        }
    )
    assert record.call_index == 3
    assert record.tool_calls[0].name == "get_weather"
    assert record.upstream_attempted is True  # a field since schema 1.1
    assert record.model_extra == {"a_later_field": [1]}
    with pytest.raises(pydantic.ValidationError, match="call_index"):
        ModelCallRecord.model_validate({**record.model_dump(), "call_index": "3"})
    line = CaptureLine.model_validate({"dialect": "chat", "client_session_id": "s-1"})
    assert line.dialect == "chat"
    assert line.model_dump(exclude_unset=True) == {"dialect": "chat", "client_session_id": "s-1"}


def test_the_generated_modules_import_only_pydantic_and_the_standard_library() -> None:
    allowed = {"__future__", "typing", "typing_extensions", "pydantic"}
    package = REPO / "src/model_call_capture/pydantic"
    modules = sorted(package.rglob("*.py"))
    imported = set()
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
    assert len(modules) >= 6
    assert imported <= allowed


def test_the_package_imports_without_the_generator() -> None:
    code = (
        "import sys\n"
        "sys.modules['datamodel_code_generator'] = None  # any import of it raises ImportError\n"
        "import model_call_capture.pydantic as m, model_call_capture.pydantic.dialects\n"
        "print(sorted(m.__all__)[:3])\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['CaptureConfig', 'CaptureLine', 'Dialect']"
