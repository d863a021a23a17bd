"""Regenerate every artifact derived from the JSON Schemas in `schemas/v1/`.

    python codegen/generate.py          # rewrite the generated files
    python codegen/generate.py --check  # regenerate in a temporary folder and diff (CI)

Artifacts:
- `codegen/typescript/**/*.d.ts`: TypeScript declarations, one module per schema
  (json-schema-to-typescript, pinned by `codegen/package-lock.json`);
- `src/model_call_capture/pydantic/`: pydantic v2 models, one module per schema
  (datamodel-code-generator, pinned in the `dev` extra);
- the field tables of `docs/formats.md` between `<!-- BEGIN GENERATED FIELDS: <name> -->`
  and `<!-- END GENERATED FIELDS: <name> -->`, where `<name>` is the schema's path under
  `schemas/v1/` without `.schema.json` (`capture-line`, `dialects/openai-chat`).

Both code generators read a prepared copy of the schemas (see `prepare_typescript` and
`prepare_pydantic`): plain JSON Schema with local references only, so that the output
depends on the schemas and the pinned generators alone.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = Path("schemas/v1")
CODEGEN = Path("codegen")
TS_OUT = CODEGEN / "typescript"
PY_OUT = Path("src/model_call_capture/pydantic")
DOCS = Path("docs/formats.md")
COMMAND = "python codegen/generate.py"
SUFFIX = ".schema.json"

# Keywords that say something about the type of an instance; a schema with none of them
# accepts any JSON value.
TYPE_KEYWORDS = frozenset(
    {
        "type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not", "if",
        "properties", "patternProperties", "additionalProperties", "items", "prefixItems",
        "required", "tsType",
    }
)  # fmt: skip
# Keywords whose value is a map of name -> subschema.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
# Keywords whose value is a subschema or a list of subschemas.
SCHEMA_KEYWORDS = (
    "items", "prefixItems", "additionalProperties", "unevaluatedProperties", "contains",
    "propertyNames", "not", "if", "then", "else", "anyOf", "oneOf", "allOf",
    "unevaluatedItems",
)  # fmt: skip


class GenerationError(Exception):
    """A schema or a marker that the generator cannot turn into an artifact."""


def header(comment: str, source: str) -> str:
    """The first line of every generated file: generated, from what, by which command."""
    return f"{comment} Generated from {source} by `{COMMAND}`; do not edit by hand.\n"


# --- reading and preparing the schemas ------------------------------------------------


def schema_paths(root: Path) -> list[Path]:
    """Every schema document under `root / schemas/v1`, relative to that folder, sorted."""
    base = root / SCHEMAS
    return sorted(p.relative_to(base) for p in base.rglob(f"*{SUFFIX}"))


def schema_name(path: Path) -> str:
    """`dialects/openai-chat` for `dialects/openai-chat.schema.json`."""
    return path.as_posix().removesuffix(SUFFIX)


def load_schemas(root: Path) -> dict[Path, dict[str, Any]]:
    """The schema documents, by path relative to `schemas/v1`."""
    schemas = {
        p: json.loads((root / SCHEMAS / p).read_text(encoding="utf-8")) for p in schema_paths(root)
    }
    if not schemas:
        raise GenerationError(f"no *{SUFFIX} under {root / SCHEMAS}")
    return schemas


def subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """`schema` and every subschema in it, depth first, in document order."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in SCHEMA_MAPS:
        for sub in (schema.get(key) or {}).values():
            yield from subschemas(sub)
    for key in SCHEMA_KEYWORDS:
        value = schema.get(key)
        for sub in value if isinstance(value, list) else [value]:
            yield from subschemas(sub)


def is_object_schema(schema: dict[str, Any]) -> bool:
    """Whether the schema describes only objects (`type: object` or object properties)."""
    kind = schema.get("type")
    return kind == "object" or (kind is None and "properties" in schema)


def local_refs(schemas: dict[Path, dict[str, Any]]) -> dict[Path, dict[str, Any]]:
    """Copies of the schemas whose `$ref`s to other schemas are relative file paths.

    A reference may name another schema relatively or by its `$id` URL; after this no
    generator ever looks for a schema on the network. The `$id`s are dropped too, because
    the generators resolve references by file path and an `$id` URL would send a resolver
    to the network.
    """
    ids = {doc["$id"]: path for path, doc in schemas.items() if "$id" in doc}
    prepared: dict[Path, dict[str, Any]] = {}
    for path, original in schemas.items():
        doc = copy.deepcopy(original)
        base = doc.pop("$id", "")
        for sub in subschemas(doc):
            ref = sub.get("$ref")
            if not isinstance(ref, str) or ref.startswith("#"):
                continue
            url, fragment = urldefrag(urljoin(base, ref))
            target = ids.get(url)
            if target is None:  # a relative file reference that no $id names
                target = Path(os.path.normpath(path.parent / urldefrag(ref)[0]))
                if target not in schemas:
                    raise GenerationError(
                        f"{SCHEMAS / path}: $ref {ref!r} names no schema under {SCHEMAS}"
                    )
            pointer = f"#{fragment}" if fragment else ""
            relative = Path(os.path.relpath(target, path.parent)).as_posix()
            sub["$ref"] = (pointer or "#") if target == path else relative + pointer
        prepared[path] = doc
    return prepared


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """The value at a JSON pointer (`/$defs/ModelRef`) in `doc`."""
    for token in filter(None, pointer.split("/")):
        doc = doc[token.replace("~1", "/").replace("~0", "~")]
    return doc


def bundle(path: Path, schemas: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    """`schemas[path]` made self-contained: every definition it reaches in another schema
    file is copied into its `$defs` under the definition's title, once.

    The schemas refer to each other in a cycle (a record names the attachment's `Dialect`,
    the attachment lists records), which would make json-schema-to-typescript declare one
    type several times (`ModelRef`, `ModelRef1`) when it follows the files itself.
    """
    doc = copy.deepcopy(schemas[path])
    defs: dict[str, Any] = doc.setdefault("$defs", {})
    names: dict[tuple[Path, str], str] = {(path, f"/$defs/{key}"): key for key in defs}

    def localize(schema: dict[str, Any], file: Path) -> None:
        for sub in list(subschemas(schema)):
            ref = sub.get("$ref")
            if not isinstance(ref, str):
                continue
            target_ref, _, pointer = ref.partition("#")
            target = Path(os.path.normpath(file.parent / target_ref)) if target_ref else file
            if target == path:
                sub["$ref"] = f"#{pointer}"
                continue
            key = (target, pointer)
            if key not in names:
                imported = copy.deepcopy(resolve_pointer(schemas[target], pointer))
                for keyword in ("$defs", "$schema", "$id", "examples"):
                    imported.pop(keyword, None)
                name = (
                    imported.get("title")
                    or pointer.rsplit("/", 1)[-1]
                    or target.name.removesuffix(SUFFIX)
                )
                if name in defs:
                    raise GenerationError(
                        f"{SCHEMAS / path}: two definitions are named {name!r}; give them distinct titles"
                    )
                names[key] = name
                defs[name] = imported
                localize(imported, target)
            sub["$ref"] = f"#/$defs/{names[key]}"

    localize(doc, path)
    return doc


def is_any_schema(schema: dict[str, Any]) -> bool:
    """Whether a schema has no keyword that constrains the type of an instance."""
    return not (TYPE_KEYWORDS & schema.keys())


def prepare_typescript(schemas: dict[Path, dict[str, Any]]) -> dict[Path, dict[str, Any]]:
    """Self-contained schemas for json-schema-to-typescript.

    A schema that accepts any value gets `tsType: unknown`: json-schema-to-typescript
    would otherwise type it as an object. A dialect document whose root only holds
    `$defs` becomes an empty closed object, so that its definitions are declared; the
    generator removes that empty interface again (see `drop_container`).
    """
    local = local_refs(schemas)
    prepared: dict[Path, dict[str, Any]] = {}
    for path in schemas:
        doc = bundle(path, local)
        for sub in subschemas(doc):
            if "$ref" in sub and sub.keys() - {"$ref"}:
                # $RefParser merges a reference with its sibling keywords into a new
                # object, which json-schema-to-typescript declares again (`Message1`).
                sub["allOf"] = [{"$ref": sub.pop("$ref")}, *sub.get("allOf", [])]
            elif sub is not doc and is_any_schema(sub):
                sub["tsType"] = "unknown"
        if is_any_schema(doc):
            doc.update(
                {"type": "object", "properties": {}, "additionalProperties": False, CONTAINER: True}
            )
        prepared[path] = doc
    return prepared


CONTAINER = "x-mcc-container"
"""Marks a prepared root that only holds `$defs`."""


def prepare_pydantic(schemas: dict[Path, dict[str, Any]]) -> dict[Path, dict[str, Any]]:
    """Schemas for datamodel-code-generator.

    An object schema that does not mention `additionalProperties` gets
    `additionalProperties: true`: JSON Schema objects are open by default, and
    datamodel-code-generator would otherwise drop unknown fields (`extra='ignore'`).
    A dialect root that only holds `$defs` becomes `Any`; its examples (whole
    conversations) would only bloat that alias.
    """
    prepared = local_refs(schemas)
    for doc in prepared.values():
        if is_any_schema(doc):
            doc.pop("examples", None)
        for sub in subschemas(doc):
            if is_object_schema(sub) and "additionalProperties" not in sub:
                sub["additionalProperties"] = sub.get("unevaluatedProperties", True)
    return prepared


def write_tree(
    folder: Path, schemas: dict[Path, dict[str, Any]], rename: dict[Path, Path] | None = None
) -> None:
    """Write `schemas` under `folder`, at their own paths or at `rename[path]`."""
    for path, doc in schemas.items():
        out = folder / (rename or {}).get(path, path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


# --- TypeScript -----------------------------------------------------------------------


def ensure_node_modules() -> None:
    """Install the pinned npm tools from the lockfile when they are missing."""
    if (REPO / CODEGEN / "node_modules" / "json-schema-to-typescript").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise GenerationError(
            "npm is not installed; install Node.js >= 20, then run `npm ci --prefix codegen`"
        )
    print("codegen/node_modules is missing: running `npm ci --prefix codegen`", file=sys.stderr)
    subprocess.run(
        [npm, "ci", "--prefix", str(REPO / CODEGEN), "--no-audit", "--no-fund"],
        check=True, stdout=sys.stderr,
    )  # fmt: skip


def generate_typescript(schemas: dict[Path, dict[str, Any]], work: Path) -> dict[Path, str]:
    """`codegen/typescript/<schema path>.d.ts` for every schema."""
    ensure_node_modules()
    folder = work / "typescript-input"
    prepared = prepare_typescript(schemas)
    write_tree(folder, prepared)
    paths = [p.as_posix() for p in schemas]
    done = subprocess.run(
        ["node", str(REPO / CODEGEN / "json2ts.mjs"), str(folder), *paths],
        check=True, capture_output=True, text=True, cwd=REPO / CODEGEN,
    )  # fmt: skip
    compiled: dict[str, str] = json.loads(done.stdout)
    files: dict[Path, str] = {}
    for path, code in compiled.items():
        doc = prepared[Path(path)]
        if doc.get(CONTAINER):
            code = drop_container(code, doc.get("title", ""), path)
        files[TS_OUT / (schema_name(Path(path)) + ".d.ts")] = header(
            "//", (SCHEMAS / path).as_posix()
        ) + code.lstrip("\n")
    return files


def drop_container(code: str, title: str, path: str) -> str:
    """Remove the empty interface declared for a root that only holds `$defs`."""
    name = re.sub(r"[^A-Za-z0-9_$]", "", title)
    declaration = re.compile(
        r"^(/\*\*\n(?: \*.*\n)*? \*/\n)?export interface " + re.escape(name) + r" \{\}\n",
        re.MULTILINE,
    )
    code, count = declaration.subn("", code, count=1)
    if count != 1:
        raise GenerationError(
            f"{SCHEMAS / path}: no empty `interface {name}` to remove from the TypeScript output"
        )
    return code


# --- pydantic -------------------------------------------------------------------------


def module_path(path: Path) -> Path:
    """`dialects/openai_chat.json` for `dialects/openai-chat.schema.json`."""
    return path.parent / (path.name.removesuffix(SUFFIX).replace("-", "_") + ".json")


BASE_MODULE = "model_call_capture.pydantic._base"
BASE_SOURCE = '''"""The base class of the generated models."""

from pydantic import BaseModel, ConfigDict


class JsonModel(BaseModel):
    """A model that writes the schema's field names by default (`from`, not `from_`).

    A field whose JSON name is not a Python identifier gets an alias; without this a
    plain `model_dump_json()` would write the Python name and not round-trip.
    """

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True)
'''

DATAMODEL_CODEGEN_OPTIONS = [
    "--input-file-type", "jsonschema",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.11",
    "--use-title-as-name",
    "--use-schema-description",
    "--use-field-description",
    "--use-annotated",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-double-quotes",
    "--enum-field-as-literal", "all",
    # A JSON `1` is not the string "1": validate like JSON Schema, not like a form.
    "--strict-types", "str", "int", "float", "bool",
    # A property with a default may be absent, not null (unless the schema allows null).
    "--strict-nullable",
    # Absent is not null (msgspec's UNSET): an optional field without a default is MISSING.
    "--use-missing-sentinel",
    "--target-pydantic-version", "2.14",
    "--use-type-alias",
    "--disable-timestamp",
    # Write the schema's field names (`from`, not `from_`) without asking: see BASE_MODULE.
    "--base-class", f"{BASE_MODULE}.JsonModel",
    # Output must not depend on the black/isort versions installed.
    "--formatters", "builtin",
]  # fmt: skip


def generate_pydantic(schemas: dict[Path, dict[str, Any]], work: Path) -> dict[Path, str]:
    """`src/model_call_capture/pydantic/<schema path>.py` and the package `__init__`s."""
    folder = work / "pydantic-input"
    prepared = prepare_pydantic(schemas)
    # Module names come from file names: `capture_line`, not `capture_line_schema`.
    renamed = {p: module_path(p) for p in prepared}
    for doc in prepared.values():
        for sub in subschemas(doc):
            ref = sub.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                file, _, fragment = ref.partition("#")
                file = file.removesuffix(SUFFIX).replace("-", "_") + ".json"
                sub["$ref"] = file + (f"#{fragment}" if fragment else "")
    write_tree(folder, prepared, renamed)
    out = work / "pydantic-output"
    subprocess.run(
        [sys.executable, "-m", "datamodel_code_generator", "--input", str(folder), "--output", str(out),
         *DATAMODEL_CODEGEN_OPTIONS],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    sources = {module_path(p).with_suffix(".py"): (SCHEMAS / p).as_posix() for p in schemas}
    files: dict[Path, str] = {}
    for file in sorted(out.rglob("*.py")):
        rel = file.relative_to(out)
        text = file.read_text(encoding="utf-8")
        # Replace datamodel-code-generator's two-line header with ours.
        text = re.sub(r"\A# generated by datamodel-codegen:\n#   filename: .*\n", "", text)
        dots = "." * len(rel.parts)
        text = text.replace(f"from {BASE_MODULE} import", f"from {dots}_base import")
        source = sources.get(rel, f"the schemas under {(SCHEMAS / rel.parent).as_posix()}/")
        files[PY_OUT / rel] = header("#", source) + text.lstrip("\n")
    files.update(package_inits(schemas, files))
    return files


def package_inits(schemas: dict[Path, dict[str, Any]], modules: dict[Path, str]) -> dict[Path, str]:
    """The package `__init__`s: the top level re-exports the titled types of the core schemas.

    Dialect types stay in their modules (`model_call_capture.pydantic.dialects.openai_chat`):
    each dialect has its own `Request`, `Response` and `Usage`.
    """
    exports: dict[str, str] = {}
    for path, doc in schemas.items():
        if path.parent != Path("."):
            continue
        module = module_path(path).with_suffix("")
        defined = module_names(modules[PY_OUT / module.with_suffix(".py")])
        for sub in [doc, *(doc.get("$defs") or {}).values()]:
            title = sub.get("title") if isinstance(sub, dict) else None
            if title and title in defined:
                exports.setdefault(title, module.as_posix().replace("/", "."))
    by_module: dict[str, list[str]] = {}
    for name, module in sorted(exports.items()):
        by_module.setdefault(module, []).append(name)
    lines = [
        header("#", f"the schemas under {SCHEMAS.as_posix()}/"),
        PACKAGE_DOC,
        "",
        "from __future__ import annotations",
        "",
    ]
    lines += [
        f"from .{module} import {', '.join(names)}" for module, names in sorted(by_module.items())
    ]
    lines += ["", "__all__ = [", *(f'    "{name}",' for name in sorted(exports)), "]", ""]
    dialects = sorted(module_path(p).stem for p in schemas if p.parent == Path("dialects"))
    dialect_doc = DIALECTS_DOC.format(modules=", ".join(f"`{m}`" for m in dialects))
    return {
        PY_OUT / "_base.py": header("#", COMMAND.split()[-1]) + BASE_SOURCE,
        PY_OUT / "__init__.py": "\n".join(lines),
        PY_OUT / "dialects" / "__init__.py": header(
            "#", f"the schemas under {(SCHEMAS / 'dialects').as_posix()}/"
        )
        + dialect_doc,
    }


def module_names(source: str) -> set[str]:
    """Names a generated module defines or imports at top level."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


PACKAGE_DOC = '''"""Pydantic v2 models of the model-call-capture documents, generated from the JSON Schemas.

For pipelines and FastAPI apps that speak pydantic; the library itself uses the msgspec
Structs of `model_call_capture.contracts`. Objects the schemas leave open accept (and keep)
unknown fields. Dialect payloads live in `model_call_capture.pydantic.dialects`.

    from model_call_capture.pydantic import CaptureLine, ModelCallRecord
    record = ModelCallRecord.model_validate_json(text)
"""'''

DIALECTS_DOC = '''"""Pydantic v2 models of the dialect payloads, one module per dialect: {modules}.

Each module holds the dialect's request, response and stream-event types, named as in
the schema's `$defs`; validate a union alias (a stream event) with `pydantic.TypeAdapter`.
"""
'''


# --- docs/formats.md field tables -----------------------------------------------------

MARKERS = re.compile(
    r"(<!-- BEGIN GENERATED FIELDS: (?P<name>[\w./-]+) -->\n)(?P<body>.*?)(<!-- END GENERATED FIELDS: (?P=name) -->)",
    re.DOTALL,
)


def cell(text: str) -> str:
    """Markdown table cell text: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def type_text(schema: Any) -> str:
    """A short human name for the type a schema accepts."""
    if schema is True or schema == {}:
        return "any"
    if schema is False:
        return "nothing"
    if "$ref" in schema:
        ref = schema["$ref"]
        return (
            ref.rsplit("/", 1)[-1]
            if "#" in ref
            else Path(ref.split("#")[0]).name.removesuffix(SUFFIX)
        )
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " \\| ".join(type_text(s) for s in schema[key])
    kinds = schema.get("type")
    if kinds is None:
        return "object" if "properties" in schema else "any"
    names = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "array":
            names.append(f"array of {type_text(schema.get('items', True))}")
        else:
            names.append(kind)
    return " \\| ".join(names)


def field_table(title: str, schema: dict[str, Any]) -> str:
    """A Markdown table of the properties of one object schema."""
    required = set(schema.get("required", []))
    lines = [f"**{title}**: {cell(schema.get('description', ''))}", ""]
    lines += ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        prop = prop if isinstance(prop, dict) else {}
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        description = cell(prop.get("description", ""))
        lines.append(
            f"| `{name}` | {type_text(prop)} | {'yes' if name in required else 'no'} | {default} | {description} |"
        )
    open_ = schema.get("additionalProperties", schema.get("unevaluatedProperties", True))
    if open_ is not False:
        lines += [
            "",
            "Other fields are allowed." if open_ is True else f"Other fields: {type_text(open_)}.",
        ]
    return "\n".join(lines)


def fields_section(path: Path, doc: dict[str, Any]) -> str:
    """The generated body between one pair of markers: the tables of a schema's objects."""
    parts = [f"<!-- {header('', (SCHEMAS / path).as_posix()).strip()} -->"]
    if doc.get("properties"):
        parts.append(field_table(doc.get("title", schema_name(path)), doc))
    for key, sub in sorted((doc.get("$defs") or {}).items()):
        if isinstance(sub, dict) and sub.get("properties"):
            parts.append(field_table(sub.get("title", key), sub))
    return "\n\n".join(parts) + "\n"


def generate_docs(schemas: dict[Path, dict[str, Any]], root: Path) -> dict[Path, str]:
    """`docs/formats.md` with every marked field table regenerated (nothing else changes)."""
    docs = root / DOCS
    if not docs.is_file():
        return {}
    by_name = {schema_name(p): p for p in schemas}
    # `openai-chat` names `dialects/openai-chat` too, unless two folders share the name.
    stems = [p.name.removesuffix(SUFFIX) for p in schemas]
    by_name |= {
        stem: p
        for stem, p in zip(stems, schemas, strict=False)
        if stems.count(stem) == 1 and stem not in by_name
    }

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in by_name:
            known = ", ".join(sorted(by_name))
            raise GenerationError(f"{DOCS}: marker {name!r} names no schema (known: {known})")
        return match[1] + fields_section(by_name[name], schemas[by_name[name]]) + match[4]

    return {DOCS: MARKERS.sub(fill, docs.read_text(encoding="utf-8"))}


# --- putting it together --------------------------------------------------------------


def generate(root: Path = REPO) -> dict[Path, str]:
    """Every generated artifact, by path relative to the repository, from the schemas."""
    schemas = load_schemas(root)
    with tempfile.TemporaryDirectory(prefix="mcc-codegen-") as work:
        artifacts = {
            **generate_typescript(schemas, Path(work)),
            **generate_pydantic(schemas, Path(work)),
            **generate_docs(schemas, root),
        }
    return dict(sorted(artifacts.items()))


def owned_files(root: Path) -> set[Path]:
    """Files in the generated folders now, so files no schema produces any more are found."""
    found: set[Path] = set()
    for folder, pattern in ((TS_OUT, "*.d.ts"), (PY_OUT, "*.py")):
        found.update(p.relative_to(root) for p in (root / folder).rglob(pattern))
    return found


def differences(artifacts: dict[Path, str], root: Path = REPO) -> dict[Path, str]:
    """The unified diff of each committed file that differs from what would be generated."""
    diffs: dict[Path, str] = {}
    for path in sorted(set(artifacts) | owned_files(root)):
        current = (root / path).read_text(encoding="utf-8") if (root / path).is_file() else ""
        wanted = artifacts.get(path, "")
        if current != wanted:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True), wanted.splitlines(keepends=True),
                f"{path} (committed)", f"{path} (generated)",
            )  # fmt: skip
            diffs[path] = "".join(diff)
    return diffs


def write(artifacts: dict[Path, str], root: Path = REPO) -> None:
    """Write the artifacts and delete generated files that no schema produces any more."""
    for path in sorted(owned_files(root) - set(artifacts)):
        (root / path).unlink()
    for path, text in artifacts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate in a temporary folder and diff; write nothing",
    )
    args = parser.parse_args(argv)
    try:
        artifacts = generate()
    except (GenerationError, subprocess.CalledProcessError, FileNotFoundError) as error:
        detail = getattr(error, "stderr", None) or ""
        print(f"codegen failed: {error}\n{detail}", file=sys.stderr)
        return 2
    if not args.check:
        write(artifacts)
        print(f"wrote {len(artifacts)} generated files")
        return 0
    diffs = differences(artifacts)
    if not diffs:
        print(f"{len(artifacts)} generated files match the schemas")
        return 0
    for diff in diffs.values():
        print(diff[:4000], end="" if diff.endswith("\n") else "\n")
    print(
        f"\n{len(diffs)} generated file(s) differ from the schemas in {SCHEMAS}/:", file=sys.stderr
    )
    for path in diffs:
        print(f"  {path}", file=sys.stderr)
    print(f"fix: {COMMAND}   (then commit the result)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
