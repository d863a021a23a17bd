"""Restrict the tests mutmut runs for each mutated module to that module's own test files.

mutmut (3.8) runs, for a mutant, every selected test that called the mutated function
while it collected its stats: a store mutant ran the middleware's line tests too, because
they write through the store. It has no per-module option, so this script filters the
function-to-tests map it saved (`mutants/mutmut-stats.json`) to the files of `SCOPE`.
Fewer tests can only let more mutants survive, never fewer: the score stays honest.

Run it from the repository root after mutmut has collected its stats (CONTRIBUTING.md,
"Mutation testing"); `--check` only prints how many tests each module keeps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STATS = Path("mutants/mutmut-stats.json")

SCOPE = {
    "model_call_capture.store.": ("tests/test_store.py", "tests/reliability/test_hostile_files.py"),
    "model_call_capture.records.": ("tests/test_records.py", "tests/collection/test_attachment.py"),
    "model_call_capture.collection._attachment.": ("tests/collection/test_attachment.py",),
    "model_call_capture.middleware._outcome.": (
        "tests/middleware/test_outcome.py",
        "tests/middleware/test_line.py",
    ),
    "model_call_capture.middleware._line.": ("tests/middleware/test_line.py",),
}
"""Module prefix of mutmut's function names -> the test files that run for its mutants."""


def scope_of(function: str) -> tuple[str, ...]:
    """The test files of the module of a mangled function name (`SystemExit` if unmapped)."""
    for prefix, files in SCOPE.items():
        if function.startswith(prefix):
            return files
    raise SystemExit(f"no scope for {function}: add its module to SCOPE")


def main(argv: list[str]) -> int:
    """Filter the stats in place (or only report with `--check`); print what each module keeps."""
    stats = json.loads(STATS.read_text("utf-8"))
    tests_by_function: dict[str, list[str]] = stats["tests_by_mangled_function_name"]
    kept: dict[str, list[int]] = {}
    for function, tests in tests_by_function.items():
        files = scope_of(function)
        inside = sorted(t for t in tests if t.split("::", 1)[0] in files)
        counts = kept.setdefault(function.rsplit(".", 1)[0], [0, 0])
        counts[0] += len(tests)
        counts[1] += len(inside)
        tests_by_function[function] = inside
    for module, (before, after) in sorted(kept.items()):
        print(f"{module}: {before} -> {after} (function, test) pairs")
    if "--check" not in argv:
        STATS.write_text(json.dumps(stats), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
