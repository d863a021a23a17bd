"""Tripwires for the layout (CONTRIBUTING.md, "Habits"): small rooms, no import cycle.

A module that passes 500 lines becomes a package with one module per concern; a function
over 80 lines becomes named steps. Generated code (`model_call_capture.pydantic`) is the
generator's business and is left out. Imports between the library's own modules form no
cycle, so every layer can be read (and imported) before the ones built on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "model_call_capture"
GENERATED = PACKAGE / "pydantic"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _hand_written() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if GENERATED not in p.parents]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def test_the_layout_checks_see_the_package() -> None:
    assert len(_hand_written()) > 30
    assert "model_call_capture.contracts" in MODULES


@pytest.mark.parametrize("path", _hand_written(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_at_most_500_lines(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines: split it by concern"


def _long_functions(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{node.name} (line {node.lineno}, {length} lines)"


@pytest.mark.parametrize("path", _hand_written(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_functions_are_at_most_80_lines(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert list(_long_functions(tree)) == []


def test_the_function_check_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert list(_long_functions(ast.parse(f"def f():\n{body}\n"))) == ["f (line 1, 81 lines)"]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time_nodes(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run when the module is imported: not function bodies, not TYPE_CHECKING."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _import_time_nodes(node.body)
            yield from _import_time_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _import_time_nodes(block)
            for handler in node.handlers:
                yield from _import_time_nodes(handler.body)
        else:
            yield node


def _imports(name: str, path: Path) -> set[str]:
    """The library modules that importing `name` imports directly."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_time_nodes(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in MODULES and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _parents(name: str) -> set[str]:
    """Importing `a.b.c` runs `a` and `a.b` first."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))} & MODULES.keys()


def test_no_import_cycle() -> None:
    # An edge to a package's own parent __init__ is how Python imports submodules, not a
    # cycle of ours; edges from a parent to its children are kept.
    graph = {n: _imports(n, p) - _parents(n) for n, p in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# -- the layer table of docs/architecture.md ----------------------------------------------

ARCHITECTURE = PACKAGE.parents[1] / "docs" / "architecture.md"
FACADE = "model_call_capture"  # the package's own __init__: it gathers what users import


def _layer_table(text: str) -> list[tuple[str, list[str]]]:
    """(layer, its modules) for each row of the table under "## Layers", top row first.

    A module is a backticked name in the modules column (`store/` is the package and every
    module in it); backticked names inside a parenthesis are descriptions, not modules.
    """
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows: list[tuple[str, list[str]]] = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("layer", "---") or set(cells[0]) <= {"-"}:
            continue
        depth, names, name = 0, [], ""
        inside = False
        for char in cells[1]:
            if char == "`":
                if inside and depth == 0:
                    names.append(name)
                inside, name = not inside, ""
            elif inside:
                name += char
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
        rows.append((cells[0], names))
    return rows


def _layer_of(table: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Each library module's row number in the table (a module missing from it: absent)."""
    rank: dict[str, int] = {}
    for number, (_, names) in enumerate(table):
        for name in names:
            dotted = f"model_call_capture.{name.rstrip('/').replace('/', '.')}"
            for module in MODULES:
                if module == dotted or (name.endswith("/") and module.startswith(dotted + ".")):
                    rank[module] = number
    return rank


def _all_imports(name: str, path: Path) -> set[str]:
    """Every library module `name` imports anywhere: at import time, in a function, or
    under TYPE_CHECKING (a type is a dependency too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in MODULES and m != name}


def _upward_imports(rank: dict[str, int], graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} ({rank[module]}) imports {other} ({rank[other]})"
        for module, imported in sorted(graph.items())
        for other in sorted(imported)
        if module in rank and other in rank and rank[other] > rank[module]
    ]


def test_every_module_has_a_layer_in_the_table() -> None:
    rank = _layer_of(_layer_table(ARCHITECTURE.read_text(encoding="utf-8")))
    generated = {m for m in MODULES if m.startswith("model_call_capture.pydantic")}
    assert sorted(set(MODULES) - set(rank) - generated - {FACADE}) == []


def test_every_module_imports_only_from_its_layer_and_below() -> None:
    rank = _layer_of(_layer_table(ARCHITECTURE.read_text(encoding="utf-8")))
    graph = {n: _all_imports(n, p) - _parents(n) for n, p in MODULES.items() if n != FACADE}
    assert _upward_imports(rank, graph) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    table = _layer_table(
        "## Layers\n| layer | modules | io |\n|---|---|---|\n"
        "| low | `errors` (the `CaptureError` tree), `store/` | no |\n| high | `cli/` | yes |\n"
    )
    assert table == [("low", ["errors", "store/"]), ("high", ["cli/"])]
    rank = _layer_of(table)
    assert rank["model_call_capture.store._files"] == 0 and rank["model_call_capture.cli"] == 1
    graph = {"model_call_capture.errors": {"model_call_capture.cli.show"}}
    assert _upward_imports(rank, graph) == [
        "model_call_capture.errors (0) imports model_call_capture.cli.show (1)"
    ]


def test_no_import_cycle_even_through_type_checking_or_function_imports() -> None:
    graph = {n: _all_imports(n, p) - _parents(n) for n, p in MODULES.items()}
    assert _cycles(graph) == []


def test_no_import_cycle_in_the_benchmarks() -> None:
    root = PACKAGE.parents[1] / "benchmarks"
    names = {f"benchmarks.{p.stem}": p for p in root.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ("benchmarks." + (node.module or "")).rstrip(".") if node.level else ""
                base = base or node.module or ""
                found.update({base, *(f"{base}.{a.name}" for a in node.names)})
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in names and m != name}
    assert len(graph) > 10
    assert _cycles(graph) == []
