"""`mcc validate`: every line of every capture file against the JSON Schema and the typed contract."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import msgspec

from .. import _codec
from .._parallel import map_files
from ..errors import UnsupportedFormatError
from ..reader import DEFAULT_MAX_LINE_BYTES, OversizedLine, RawLines, decode_capture_line
from ..records import decode_line_lazily
from ..store import capture_files_under, read_file_lines
from ._common import (
    jobs_option,
    max_line_bytes_option,
    no_capture_files,
    plural,
    safe_text,
    stderr,
    stdout,
)

__all__ = ["FileCheck", "Problem", "capture_files", "check_file", "validate"]

# A line the contract accepts needs no other look: the conformance suite proves the
# msgspec contract and the JSON Schema give the same verdict on every case. Only a line
# it refuses is decoded again and run through jsonschema, to explain why.
_REFUSED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError, UnsupportedFormatError)

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
    """The files named, and every capture file under the directories named, sorted per argument.

    Whatever is named like a capture file is listed, a FIFO or a directory too: reading it
    reports it as unreadable, by name, instead of skipping it in silence.
    """
    files: list[Path] = []
    for arg in paths:
        path = Path(arg)
        if path.is_dir():
            found = capture_files_under(path)
            if not found:
                raise no_capture_files(path)
            files.extend(found)
        elif path.exists():
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


@dataclass(frozen=True, slots=True)
class FileCheck:
    """A file for a worker: its path and the line cap (picklable)."""

    path: Path
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


@dataclass(slots=True)
class _Checked:
    count: int = 0
    problems: list[Problem] = field(default_factory=list)


def _check(job: FileCheck) -> _Checked:
    count, problems = check_file(job.path, max_line_bytes=job.max_line_bytes)
    return _Checked(count, problems)


def check_file(
    path: Path, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> tuple[int, list[Problem]]:
    """The number of lines of one capture file, and its problems (1-based line numbers).

    The file is streamed (bounded memory whatever its size); a FIFO, a directory or an
    unreadable file is one problem at line 0.
    """
    lines = read_file_lines(path, numbering="editor", max_line_bytes=max_line_bytes)
    problems: list[Problem] = []
    try:
        problems.extend(_check_lines(path, lines))
    except OSError as exc:
        return lines.count, [*problems, Problem(path, 0, f"cannot read: {exc.strerror or exc}")]
    return lines.count, problems


def _check_lines(path: Path, lines: RawLines) -> Iterator[Problem]:
    for number, raw in lines:  # blank lines are skipped: they carry no call
        try:
            decode_line_lazily(raw, path=None, line_index=None)
        except _REFUSED:
            pass
        else:
            continue
        if type(raw) is OversizedLine:
            yield Problem(
                path,
                number,
                f"line too long: {raw.size} bytes, over --max-line-bytes "
                f"{lines.max_line_bytes} (not read)",
            )
            continue
        yield from _explain(path, number, raw, lines.unterminated)


def _explain(path: Path, number: int, raw: bytes, unterminated: bool) -> Iterator[Problem]:
    """Why the contract refused a line: invalid JSON, or the schema's and the contract's words."""
    try:
        document = _codec.decode(raw)
    except (_codec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        torn = " (the last line has no newline: a torn write?)" if unterminated else ""
        yield Problem(path, number, f"invalid JSON: {_one_line(str(exc))}{torn}")
        return
    if not isinstance(document, dict):
        yield Problem(path, number, f"not a JSON object but {type(document).__name__}")
        return
    for reason in (_schema_check(document), _contract_check(raw)):
        if reason is not None:
            yield Problem(path, number, reason)


@click.command()
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@jobs_option()
@max_line_bytes_option()
def validate(paths: tuple[str, ...], jobs: int | None, max_line_bytes: int) -> None:
    """Check every line of every capture file against the JSON Schema and the typed contract.

    PATH is a capture file or a directory (searched recursively for *.capture.jsonl).
    Prints `file:line: reason` for each problem (1-based physical line numbers, as
    editors count them), then a summary; exits with 1 when anything is wrong. Files
    are streamed and checked in parallel (`--jobs`); the output does not depend on the
    number of jobs.

    \b
    Example:
      mcc validate /data/model-calls
      mcc validate ./mcc-demo/model-calls/0-0.capture.jsonl
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    files = capture_files(paths)
    sizes = [_size(p) for p in files]
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
        checks = [FileCheck(path, max_line_bytes) for path in files]
        for checked, size in zip(map_files(_check, checks, jobs), sizes, strict=True):
            total_lines += checked.count
            for problem in checked.problems:
                bad_lines.add((problem.path, problem.line))
                out.print(safe_text(str(problem)), markup=False, highlight=False, soft_wrap=True)
            progress.advance(task, size)
    bad_files = len({path for path, _ in bad_lines})
    if bad_lines:
        out.print(
            f"{len(bad_lines):,} of {plural(total_lines, 'line')} invalid in {bad_files:,} of "
            f"{plural(len(files), 'file')}",
            markup=False,
            soft_wrap=True,
        )
        raise click.exceptions.Exit(1)
    verb = "is" if total_lines == 1 else "are"
    out.print(
        f"ok: {plural(total_lines, 'line')} in {plural(len(files), 'file')} {verb} valid",
        markup=False,
        soft_wrap=True,
    )


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0
