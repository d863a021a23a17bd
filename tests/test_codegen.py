"""The generated types of other languages: committed, current, and proven in their language.

- `codegen/generate.py --check` finds the committed artifacts equal to a fresh generation,
  and on drift names the files and the command that fixes them;
- the TypeScript declarations compile with `tsc --strict` together with `codegen/usage.ts`;
- ajv (npm, JSON Schema 2020-12) gives every case of `schemas/conformance/` the verdict the
  case file states, and so does Python's jsonschema: the two languages agree.

The npm tools come from `codegen/package-lock.json`; when `codegen/node_modules` is absent
the session fixture runs `npm ci --prefix codegen` itself (CI does too).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from conftest import require_capability

REPO = Path(__file__).resolve().parents[1]
CODEGEN = REPO / "codegen"
SCHEMAS = REPO / "schemas"
FIX = "python codegen/generate.py"


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """`codegen/node_modules`, installed from the lockfile when missing."""
    folder = CODEGEN / "node_modules"
    if not (folder / ".package-lock.json").is_file():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            needed = "Node.js >= 20 and npm are needed for the TypeScript checks: install them, then run `npm ci --prefix codegen`"
            require_capability("Node.js and npm", False, needed)  # .ci/run installs them
        assert npm is not None
        done = subprocess.run(
            [npm, "ci", "--prefix", str(CODEGEN), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.fail(
                f"`npm ci --prefix codegen` failed; run it by hand to see why:\n{done.stderr}"
            )
    return folder


def run(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run a command and capture its output (never raises on a non-zero status)."""
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=240
    )


def test_committed_artifacts_match_the_schemas(node_modules: Path) -> None:
    done = run(sys.executable, CODEGEN / "generate.py", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("generated files match the schemas")


def test_every_generated_file_says_it_is_generated_from_what_by_which_command() -> None:
    declarations = CODEGEN / "typescript" / "model-call-record.d.ts"
    models = REPO / "src/model_call_capture/pydantic/capture_line.py"
    assert declarations.read_text().splitlines()[0] == (
        "// Generated from schemas/v1/model-call-record.schema.json by `python codegen/generate.py`; do not edit by hand."
    )
    assert models.read_text().splitlines()[0] == (
        "# Generated from schemas/v1/capture-line.schema.json by `python codegen/generate.py`; do not edit by hand."
    )
    generated = [
        *(CODEGEN / "typescript").rglob("*.d.ts"),
        *(REPO / "src/model_call_capture/pydantic").rglob("*.py"),
    ]
    first_lines = {path.read_text().splitlines()[0] for path in generated}
    assert all(
        line.startswith(("// Generated from schemas/v1/", "# Generated from "))
        for line in first_lines
    )
    assert all(
        line.endswith("by `python codegen/generate.py`; do not edit by hand.")
        for line in first_lines
    )
    # One declaration file per schema, mirroring schemas/v1/.
    schemas = sorted(
        p.relative_to(SCHEMAS / "v1").as_posix() for p in (SCHEMAS / "v1").rglob("*.schema.json")
    )
    typescript = sorted(
        p.relative_to(CODEGEN / "typescript").as_posix()
        for p in (CODEGEN / "typescript").rglob("*.d.ts")
    )
    assert typescript == [s.replace(".schema.json", ".d.ts") for s in schemas]


@pytest.fixture
def scratch_repo(tmp_path: Path, node_modules: Path) -> Path:
    """A copy of the parts of the repository that the generator reads and writes."""
    for part in ("schemas", "src/model_call_capture/pydantic", "codegen/typescript", "docs"):
        if (REPO / part).exists():
            shutil.copytree(REPO / part, tmp_path / part)
    for name in ("generate.py", "json2ts.mjs", "package.json", "package-lock.json"):
        shutil.copy(CODEGEN / name, tmp_path / "codegen" / name)
    (tmp_path / "codegen" / "node_modules").symlink_to(node_modules)
    return tmp_path


def test_check_names_the_drifted_files_and_the_fix_command(scratch_repo: Path) -> None:
    schema = scratch_repo / "schemas/v1/capture-config.schema.json"
    doc = json.loads(schema.read_text())
    doc["properties"]["observability_enabled"]["description"] = "Turn capture on, everywhere."
    schema.write_text(json.dumps(doc, indent=2))
    stale = scratch_repo / "codegen/typescript/removed-schema.d.ts"
    stale.write_text("// a schema that no longer exists\n")

    done = run(sys.executable, "codegen/generate.py", "--check", cwd=scratch_repo)

    assert done.returncode == 1
    assert "+   * Turn capture on, everywhere." in done.stdout  # the diff of the declarations
    listed = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    changed = {
        "codegen/typescript/capture-config.d.ts",
        "codegen/typescript/removed-schema.d.ts",
        "src/model_call_capture/pydantic/capture_config.py",
    }
    docs = scratch_repo / "docs/formats.md"
    if docs.is_file() and "<!-- BEGIN GENERATED FIELDS: capture-config -->" in docs.read_text():
        changed.add("docs/formats.md")
    assert set(listed) == changed
    assert f"fix: {FIX}" in done.stderr

    fixed = run(sys.executable, "codegen/generate.py", cwd=scratch_repo)
    assert fixed.returncode == 0, fixed.stderr
    assert not stale.exists()
    assert (
        "   * Turn capture on, everywhere.\n"
        in (scratch_repo / "codegen/typescript/capture-config.d.ts").read_text()
    )


EXAMPLE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://model-call-capture.dev/schemas/v1/example-note.schema.json",
    "title": "ExampleNote",
    "description": "A note | with a pipe.",
    "type": "object",
    "properties": {
        "text": {"description": "The text,\nover two lines.", "type": "string"},
        "count": {"description": "How many.", "type": ["integer", "null"], "default": None},
        "ref": {
            "description": "Which server.",
            "$ref": "model-call-capture.schema.json#/$defs/ModelRef",
        },
        "tags": {"description": "Tags.", "type": "array", "items": {"enum": ["a", "b"]}},
    },
    "required": ["text"],
    "additionalProperties": False,
    "$defs": {
        "Part": {
            "title": "Part",
            "description": "One part.",
            "type": "object",
            "properties": {"kind": {"description": "Always `part`.", "const": "part"}},
        }
    },
}


def test_field_tables_are_generated_between_the_markers_only(scratch_repo: Path) -> None:
    (scratch_repo / "schemas/v1/example-note.schema.json").write_text(json.dumps(EXAMPLE_SCHEMA))
    docs = scratch_repo / "docs/formats.md"
    docs.parent.mkdir(exist_ok=True)
    prose = "# Formats\n\nHand-written prose.\n\n"
    stale = "| stale | table |\n"
    docs.write_text(
        f"{prose}<!-- BEGIN GENERATED FIELDS: example-note -->\n{stale}<!-- END GENERATED FIELDS: example-note -->\n\nMore prose.\n"
    )

    done = run(sys.executable, "codegen/generate.py", cwd=scratch_repo)

    assert done.returncode == 0, done.stderr
    assert docs.read_text() == (
        prose + "<!-- BEGIN GENERATED FIELDS: example-note -->\n"
        "<!-- Generated from schemas/v1/example-note.schema.json by `python codegen/generate.py`; do not edit by hand. -->\n"
        "\n"
        "**ExampleNote**: A note \\| with a pipe.\n"
        "\n"
        "| field | type | required | default | description |\n"
        "|---|---|---|---|---|\n"
        "| `text` | string | yes |  | The text, over two lines. |\n"
        "| `count` | integer \\| null | no | `null` | How many. |\n"
        "| `ref` | ModelRef | no |  | Which server. |\n"
        '| `tags` | array of `"a"` \\| `"b"` | no |  | Tags. |\n'
        "\n"
        "**Part**: One part.\n"
        "\n"
        "| field | type | required | default | description |\n"
        "|---|---|---|---|---|\n"
        '| `kind` | `"part"` | no |  | Always `part`. |\n'
        "\n"
        "Other fields are allowed.\n"
        "<!-- END GENERATED FIELDS: example-note -->\n\nMore prose.\n"
    )
    unknown = "<!-- BEGIN GENERATED FIELDS: no-such-schema -->\n<!-- END GENERATED FIELDS: no-such-schema -->\n"
    docs.write_text(docs.read_text() + unknown)
    failed = run(sys.executable, "codegen/generate.py", "--check", cwd=scratch_repo)
    assert failed.returncode == 2
    assert "docs/formats.md: marker 'no-such-schema' names no schema" in failed.stderr


def test_typescript_compiles_strictly_with_the_usage_file(node_modules: Path) -> None:
    tsc = node_modules / ".bin" / "tsc"
    done = run(tsc, "--strict", "--noEmit", "-p", CODEGEN)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_usage_file_reads_gym_capture_lines_and_records(
    node_modules: Path, tmp_path: Path, gym_reference_dir: Path
) -> None:
    """Compiled to JavaScript, usage.ts reads a real capture file and a real attachment."""
    out = tmp_path / "js"
    emitted = run(
        node_modules / ".bin" / "tsc", "-p", CODEGEN, "--noEmit", "false", "--outDir", out
    )
    assert emitted.returncode == 0, emitted.stdout + emitted.stderr
    (out / "package.json").write_text('{"type": "module"}')
    script = (
        "import { readFileSync } from 'node:fs';"
        "const usage = await import(process.argv[1]);"
        "const lines = usage.readCaptureLines(readFileSync(process.argv[2], 'utf8'));"
        "const text = usage.chatText(usage.chatResponse(lines[0]));"
        "const { records, tokens, gaps } = usage.readAttachment("
        "  JSON.stringify(JSON.parse(readFileSync(process.argv[3], 'utf8')).attachment));"
        "console.log(JSON.stringify([lines.map(usage.describeLine), text, records.map(usage.toolNames), tokens, gaps]));"
    )
    matrix = gym_reference_dir / "matrix"
    done = run(
        "node", "--input-type=module", "-e", script,
        (out / "usage.js").as_uri(),
        matrix / "chat-chunked-json.capture.jsonl",
        matrix / "chat-chunked-json.expected.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        ["chat via responses_api_models/fake_model: 200 in 21.0 ms"],
        "Let me check.",
        [["get_weather"]],
        160,
        [],
    ]


def test_the_usage_file_would_catch_an_imprecise_declaration(
    node_modules: Path, tmp_path: Path
) -> None:
    """The `@ts-expect-error` lines of usage.ts fail the compile when a type is too loose."""
    loose = tmp_path / "codegen"
    shutil.copytree(CODEGEN / "typescript", loose / "typescript")
    shutil.copy(CODEGEN / "tsconfig.json", loose / "tsconfig.json")
    usage = (CODEGEN / "usage.ts").read_text()
    (loose / "usage.ts").write_text(usage.replace('{ dialect: "gemini" }', '{ dialect: "chat" }'))
    done = run(node_modules / ".bin" / "tsc", "--strict", "--noEmit", "-p", loose)
    assert done.returncode != 0
    assert "error TS2578: Unused '@ts-expect-error' directive." in done.stdout


def jsonschema_verdicts() -> dict[tuple[str, str], bool]:
    """(case file, case description) -> Python jsonschema's verdict, for every case."""
    resources = []
    for path in sorted((SCHEMAS / "v1").rglob("*.schema.json")):
        contents = json.loads(path.read_text())
        resources.append(
            (contents["$id"], Resource.from_contents(contents, default_specification=DRAFT202012))
        )
    registry: Registry[Any] = Registry().with_resources(resources)
    verdicts: dict[tuple[str, str], bool] = {}
    for path in conformance_files():
        corpus = json.loads(path.read_text())
        target, _, fragment = corpus["schema"].partition("#")
        schema_id = json.loads((SCHEMAS / target).read_text())["$id"]
        # No format checker: `format` is an annotation in 2020-12, for ajv too.
        validator = Draft202012Validator({"$ref": f"{schema_id}#{fragment}"}, registry=registry)
        for case in corpus["tests"]:
            verdicts[(path.relative_to(REPO).as_posix(), case["description"])] = validator.is_valid(
                case["data"]
            )
    return verdicts


def conformance_files() -> list[Path]:
    """The case files of the conformance corpus (not its meta-schema)."""
    return sorted(
        p for p in (SCHEMAS / "conformance").rglob("*.json") if not p.name.endswith(".schema.json")
    )


def expected_verdicts() -> dict[tuple[str, str], bool]:
    """(case file, case description) -> the verdict the case file states."""
    expected = {}
    for path in conformance_files():
        for case in json.loads(path.read_text())["tests"]:
            expected[(path.relative_to(REPO).as_posix(), case["description"])] = case["valid"]
    return expected


def test_ajv_and_jsonschema_give_every_conformance_case_its_verdict(node_modules: Path) -> None:
    done = run("node", CODEGEN / "conformance.mjs", REPO)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    ajv = {(row["file"], row["description"]): row["valid"] for row in rows}
    errors = {(row["file"], row["description"]): row["errors"] for row in rows}
    expected = expected_verdicts()
    python = jsonschema_verdicts()

    assert len(rows) == len(ajv), "case descriptions must be unique within a file"
    assert ajv.keys() == expected.keys() == python.keys()
    assert {case: errors[case] for case in expected if ajv[case] != expected[case]} == {}
    assert {case for case in expected if python[case] != expected[case]} == set()
    # Both verdicts occur, so agreement is not vacuous.
    assert {True, False} <= set(expected.values())
    counts = {
        "cases": len(expected),
        "valid": sum(expected.values()),
        "ajv agrees": sum(ajv[c] == python[c] for c in expected),
    }
    print(f"conformance: {counts}")
