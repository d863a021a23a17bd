"""The packaged JSON Schemas: find them, load them, and validate a document offline.

The schemas in `schemas/v1/` are the source of truth for every persisted document. In a
wheel they ship inside the package (`model_call_capture/_schemas`); in a source checkout
they are read from `<repo>/schemas`. Every `$ref` resolves from those files alone: an
`$id` is an identifier, never a URL that is fetched.

    from model_call_capture.schemas import validate
    validate({"request": {}, "response": {}}, "capture-line")  # valid: returns None
    validate({"dialect": "gemini"}, "capture-line")  # raises SchemaValidationError at `$.dialect`

`jsonschema` and `referencing` are imported on first use, so importing this module is cheap.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _codec
from .errors import SchemaValidationError, UnknownSchemaError

if TYPE_CHECKING:
    from referencing import Registry

__all__ = [
    "SCHEMA_BASE_URI",
    "SchemaValidationError",
    "UnknownSchemaError",
    "errors",
    "is_valid",
    "load_schema",
    "registry",
    "schema_dir",
    "schema_names",
    "schema_uri",
    "validate",
]

SCHEMA_BASE_URI = "https://model-call-capture.dev/schemas/"
"""Prefix of every schema's `$id`; the rest of the `$id` is the file's path under `schemas/`."""

_SUFFIX = ".schema.json"


def schema_dir() -> Path:
    """The folder that holds `v1/`: the packaged copy, else `<repo>/schemas` of a checkout."""
    packaged = Path(__file__).resolve().parent / "_schemas"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "schemas"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"no schemas found at {packaged} or {checkout}")


def _schema_files() -> list[Path]:
    return sorted(schema_dir().rglob("*" + _SUFFIX))


@functools.cache
def _names() -> tuple[str, ...]:
    # Listed once per process: the packaged schemas do not change while it runs, and
    # `schema_uri` checks every name it is given against this list.
    root = schema_dir()
    return tuple(path.relative_to(root).as_posix() for path in _schema_files())


def schema_names() -> list[str]:
    """Every packaged schema as a path under `schemas/`, e.g. `v1/capture-line.schema.json`."""
    return list(_names())


def schema_uri(name: str) -> str:
    """The `$id` (plus any `#fragment`) of a schema given in any accepted spelling.

    Accepted: a full `$id`; a path under `schemas/` (`v1/capture-line.schema.json`); a
    v1 file stem (`capture-line`, `dialects/openai-chat`); each optionally followed by a
    fragment such as `#/$defs/ModelRef`.
    """
    base, hash_, fragment = name.partition("#")
    if not base.startswith(SCHEMA_BASE_URI):
        path = base if base.endswith(_SUFFIX) else f"v1/{base}{_SUFFIX}"
        base = SCHEMA_BASE_URI + path
    if base.removeprefix(SCHEMA_BASE_URI) not in _names():
        raise UnknownSchemaError(f"no schema {name!r}; known: {', '.join(schema_names())}")
    return base + hash_ + fragment


@functools.cache
def _documents() -> dict[str, dict[str, Any]]:
    documents: dict[str, dict[str, Any]] = {}
    root = schema_dir()
    for path in _schema_files():
        contents = _codec.decode(path.read_bytes())
        expected = SCHEMA_BASE_URI + path.relative_to(root).as_posix()
        if contents.get("$id") != expected:
            raise ValueError(f"{path}: $id must be {expected!r}, not {contents.get('$id')!r}")
        documents[expected] = contents
    return documents


def load_schema(name: str) -> dict[str, Any]:
    """The schema document (or `#/$defs/...` definition) named by `name`; see `schema_uri`.

    The returned dict is shared: copy it before changing it.
    """
    uri = schema_uri(name)
    base, _, fragment = uri.partition("#")
    document = _documents()[base]
    if not fragment:
        return document
    resolved = registry().resolver(base).lookup("#" + fragment)
    contents: dict[str, Any] = resolved.contents
    return contents


@functools.cache
def registry() -> Registry[Any]:
    """An offline `referencing.Registry` of every packaged schema, keyed by `$id`.

    It has no retriever: a `$ref` to anything else fails instead of going to the network.
    """
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources = [
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in _documents().items()
    ]
    return Registry().with_resources(resources)


@functools.cache
def _validator(uri: str) -> Any:
    from jsonschema import Draft202012Validator

    base, _, fragment = uri.partition("#")
    schema: dict[str, Any] = {"$ref": uri} if fragment else _documents()[base]
    return Draft202012Validator(schema, registry=registry())


def errors(document: Any, schema: str) -> Iterator[SchemaValidationError]:
    """Every reason `schema` rejects `document` (nothing when it is valid)."""
    uri = schema_uri(schema)
    for error in _validator(uri).iter_errors(document):
        yield SchemaValidationError(error.message, json_path=error.json_path, schema=uri)


def is_valid(document: Any, schema: str) -> bool:
    """Whether `schema` accepts `document` (a decoded JSON value)."""
    return bool(_validator(schema_uri(schema)).is_valid(document))


def validate(document: Any, schema: str) -> None:
    """Raise `SchemaValidationError` for the most relevant error, when `schema` rejects `document`.

    `document` is a decoded JSON value (dicts, lists, ...); `schema` any spelling
    `schema_uri` accepts, e.g. `"capture-line"` or `"model-call-capture#/$defs/ModelRef"`.
    """
    from jsonschema.exceptions import best_match

    uri = schema_uri(schema)
    error = best_match(_validator(uri).iter_errors(document))
    if error is not None:
        raise SchemaValidationError(error.message, json_path=error.json_path, schema=uri)
