"""`mcc validate`: every line of every capture file against the JSON Schema and the typed contract."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import msgspec

from .. import _codec
from ..errors import UnsupportedFormatError
from ..reader import RawLines, decode_capture_line
from ..store import CAPTURE_SUFFIX
from ._common import stderr, stdout

__all__ = ["Problem", "capture_files", "check_file", "validate"]

# Above this much data a progress bar is worth drawing (only ever on a terminal).
_PROGRESS_MIN_BYTES = 16 * 1024 * 1024
_PROGRESS_MIN_FILES = 200


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with one line of one file (line 0: the file itself)."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def capture_files(paths: tuple[str, ...]) -> list[Path]:
    """The files named, and every `*.capture.jsonl` under the directories named, sorted per argument."""
    files: list[Path] = []
    for arg in paths:
        path = Path(arg)
        if path.is_dir():
            found = sorted(p for p in path.rglob(f"*{CAPTURE_SUFFIX}") if p.is_file())
            if not found:
                raise click.ClickException(f"{path}: no *{CAPTURE_SUFFIX} files in this directory")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise click.ClickException(f"{path}: no such file or directory")
    return files


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _schema_check(document: Any) -> str | None:
    """Validate a decoded line against the packaged capture-line JSON Schema."""
    from ..schemas import SchemaValidationError, validate

    try:
        validate(document, "capture-line")
    except SchemaValidationError as exc:
        return f"schema: {_one_line(exc.message)} - at `{exc.json_path}`"
    return None


def _contract_check(raw: bytes) -> str | None:
    """Decode the line exactly as readers do (`CaptureLine`, format major checked)."""
    try:
        decode_capture_line(raw)
    except (msgspec.ValidationError, UnsupportedFormatError) as exc:
        return f"contract: {_one_line(str(exc))}"
    return None


def check_file(path: Path) -> tuple[int, list[Problem]]:
    """The number of lines of one capture file, and its problems (1-based line numbers)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return 0, [Problem(path, 0, f"cannot read: {exc.strerror or exc}")]
    lines = RawLines((data,), numbering="editor")
    problems = list(_check_lines(path, lines))
    return lines.count, problems


def _check_lines(path: Path, lines: RawLines) -> Iterator[Problem]:
    for number, raw in lines:  # blank lines are skipped: they carry no call
        try:
            document = _codec.decode(raw)
        except (_codec.DecodeError, UnicodeDecodeError) as exc:
            torn = " (the last line has no newline: a torn write?)" if lines.unterminated else ""
            yield Problem(path, number, f"invalid JSON: {_one_line(str(exc))}{torn}")
            continue
        if not isinstance(document, dict):
            yield Problem(path, number, f"not a JSON object but {type(document).__name__}")
            continue
        for reason in (_schema_check(document), _contract_check(raw)):
            if reason is not None:
                yield Problem(path, number, reason)


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
def validate(paths: tuple[str, ...]) -> None:
    """Check every line of every capture file against the JSON Schema and the typed contract.

    PATH is a capture file or a directory (searched recursively for *.capture.jsonl).
    Prints `file:line: reason` for each problem (1-based physical line numbers, as
    editors count them), then a summary; exits with 1 when anything is wrong.

    \b
    Example:
      mcc validate /data/model-calls
      mcc validate ./mcc-demo/model-calls/0-0.capture.jsonl
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    files = capture_files(paths)
    sizes = [p.stat().st_size for p in files]
    err = stderr()
    show_progress = err.is_terminal and (
        sum(sizes) >= _PROGRESS_MIN_BYTES or len(files) >= _PROGRESS_MIN_FILES
    )
    out = stdout()
    bad_lines: set[tuple[Path, int]] = set()
    total_lines = 0
    with Progress(
        TextColumn("validating"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not show_progress,
    ) as progress:
        task = progress.add_task("validate", total=sum(sizes))
        for path, size in zip(files, sizes, strict=True):
            count, problems = check_file(path)
            total_lines += count
            for problem in problems:
                bad_lines.add((problem.path, problem.line))
                out.print(str(problem), markup=False, highlight=False, soft_wrap=True)
            progress.advance(task, size)
    bad_files = len({path for path, _ in bad_lines})
    if bad_lines:
        out.print(
            f"{len(bad_lines)} of {total_lines} lines invalid in {bad_files} of {len(files)} files",
            markup=False,
        )
        raise click.exceptions.Exit(1)
    out.print(f"ok: {total_lines} lines in {len(files)} files are valid", markup=False)
