"""Reduce a msgspec type's JSON Schema and a schema file's definition to one comparable form.

The schemas in `schemas/` are the source of truth and the msgspec Structs are written by
hand; this helper lets a test prove that the two agree without caring about wording,
ordering, `description`s, `examples`, bounds or how a union is spelled.

Usage (any test module under `tests/`, subfolders included: `tests/conftest.py` puts
this folder on `sys.path`)::

    from schema_tools import reduce_schema_file, reduce_struct


    def test_request_matches_schema() -> None:
        assert reduce_struct(ChatRequest) == reduce_schema_file(
            "v1/dialects/openai-chat.schema.json", "#/$defs/ChatRequest"
        )

`reduce_struct(T)` reduces `msgspec.json.schema(T)`; `reduce_schema_file(path, pointer)`
reduces the definition at `pointer` (default: the document root) of a file under
`schemas/`, following `$ref`s into other schema files offline. Both return the same shape,
a dict keyed by the `title` of every object definition reachable from the start::

    {
        "ModelRef": {
            "properties": {"name": ["string"], "type": ["string"]},
            "required": ["name", "type"],
            "closed": False,
        }
    }

Each property reduces to a sorted list of tokens:
- a JSON type: `string`, `integer`, `number`, `boolean`, `null`, `object`, `array`;
- `any` for a schema without a type constraint (`{}`, `Any` in Python);
- `ref:<Title>` for a `$ref` to a titled object definition (which is reduced as well);
- `enum:<json>` for each non-null `enum`/`const` value (`type` beside an enum is ignored,
  so `{"type": "string", "const": "x"}` and msgspec's `{"enum": ["x"]}` agree);
- `array[<item tokens>]` when `items` is given, `object{<value tokens>}` when
  `additionalProperties` is a schema (`dict[str, int]`).
`anyOf`/`oneOf`/`allOf` branches and `type` lists are merged into one token set.
`closed` is True when the object sets `additionalProperties: false`
(msgspec's `forbid_unknown_fields=True`).

Rules this implies for schema authors: give every object a `title` equal to its Python
type name and put it in `$defs` (an inline object with properties reduces to just
`object`, and will not match a Struct); use the same JSON types msgspec emits
(`float` -> `number`, `int` -> `integer`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
"""The repository's schema folder (`schemas/`)."""

Reduced = dict[str, dict[str, Any]]
"""Title -> {"properties": {name: [tokens]}, "required": [names], "closed": bool}."""

_JSON_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")


def schema_files(root: Path = SCHEMAS_DIR) -> list[Path]:
    """Every `*.schema.json` under `root`, sorted, subfolders (like `v1/dialects/`) included."""
    return sorted(root.rglob("*.schema.json"))


def schema_registry(root: Path = SCHEMAS_DIR) -> Registry[Any]:
    """An offline `referencing` registry of every schema file under `root`, keyed by `$id`."""
    resources = []
    for path in schema_files(root):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append(
            (contents["$id"], Resource.from_contents(contents, default_specification=DRAFT202012))
        )
    return Registry().with_resources(resources)


def reduce_struct(tp: Any) -> Reduced:
    """Reduce `msgspec.json.schema(tp)` (a Struct, or a union of Structs) to the comparable form."""
    schema = msgspec.json.schema(tp)
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:msgspec", resource)
    return _Reducer(registry).reduce_from("urn:msgspec", "")


def reduce_schema_file(path: str | Path, pointer: str = "", *, root: Path = SCHEMAS_DIR) -> Reduced:
    """Reduce the definition at JSON pointer `pointer` (e.g. `#/$defs/ModelRef`) of a schema file.

    `path` is relative to `root` (`schemas/`) or absolute. `$ref`s resolve offline through
    every schema file under `root`.
    """
    full = Path(path) if Path(path).is_absolute() else root / path
    uri = json.loads(full.read_text(encoding="utf-8"))["$id"]
    return _Reducer(schema_registry(root)).reduce_from(uri, pointer.removeprefix("#"))


def reduce_schema(schema: dict[str, Any], *, root: Path = SCHEMAS_DIR) -> Reduced:
    """Reduce an in-memory schema document; `$ref`s to schema files under `root` resolve too."""
    uri = schema.get("$id", "urn:in-memory")
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry = schema_registry(root).with_resource(uri, resource)
    return _Reducer(registry).reduce_from(uri, "")


class _Reducer:
    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry
        self.out: Reduced = {}

    def reduce_from(self, uri: str, pointer: str) -> Reduced:
        resolved = self.registry.resolver().lookup(f"{uri}#{pointer}")
        tokens = self._tokens(resolved.contents, resolved.resolver)
        if not self.out and "object" in tokens:
            raise ValueError(f"{uri}#{pointer} is an object without a title; give it one")
        return {title: self.out[title] for title in sorted(self.out)}

    def _object(self, schema: dict[str, Any], resolver: Any) -> str:
        title = schema["title"]
        if title in self.out:
            return f"ref:{title}"
        entry: dict[str, Any] = {}
        self.out[title] = entry  # placed first so recursive types terminate
        entry["properties"] = {
            name: sorted(self._tokens(sub, resolver))
            for name, sub in sorted(schema.get("properties", {}).items())
        }
        entry["required"] = sorted(schema.get("required", []))
        entry["closed"] = schema.get("additionalProperties") is False
        return f"ref:{title}"

    def _tokens(self, schema: Any, resolver: Any) -> set[str]:
        if schema is True or schema == {}:
            return {"any"}
        if schema is False:
            return set()
        tokens: set[str] = set()
        constrained = False
        if "$ref" in schema:
            constrained = True
            resolved = resolver.lookup(schema["$ref"])
            tokens |= self._tokens(resolved.contents, resolved.resolver)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                constrained = True
                for branch in schema[key]:
                    tokens |= self._tokens(branch, resolver)
        if "enum" in schema or "const" in schema:
            constrained = True
            values = schema["enum"] if "enum" in schema else [schema["const"]]
            for value in values:
                tokens.add("null" if value is None else "enum:" + json.dumps(value, sort_keys=True))
        elif "type" in schema:
            constrained = True
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            for json_type in types:
                if json_type not in _JSON_TYPES:
                    raise ValueError(f"unknown JSON type {json_type!r}")
                tokens.add(self._typed(json_type, schema, resolver))
        if not constrained:
            if "properties" in schema and "title" in schema:
                return {self._object(schema, resolver)}
            return {"any"}
        return tokens

    def _typed(self, json_type: str, schema: dict[str, Any], resolver: Any) -> str:
        if json_type == "object":
            if "title" in schema and "properties" in schema:
                return self._object(schema, resolver)
            values = schema.get("additionalProperties")
            if isinstance(values, dict) and values:
                return "object{" + ",".join(sorted(self._tokens(values, resolver))) + "}"
            return "object"
        if json_type == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
            return "array[" + ",".join(sorted(self._tokens(schema["items"], resolver))) + "]"
        return json_type
