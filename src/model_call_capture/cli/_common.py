"""What the `mcc` commands share: consoles, locating a capture directory, reading its records,
and showing captured text safely.

Captured text (models, tool names, finish reasons, payloads, file names) is hostile: it
reaches the terminal only through `safe_text` (control characters shown escaped, so an
escape sequence cannot drive the terminal, write the clipboard or plant a link) and,
where rich renders it, as a `Text` (`literal`), which rich never parses as markup.
"""

from __future__ import annotations

import math
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import msgspec
from rich.console import Console
from rich.text import Text

from ..contracts import ModelCallRecord
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..store import CaptureStore, Rollout, rollout_of_file

__all__ = [
    "JsonNote",
    "RolloutRecords",
    "Sources",
    "capture_root",
    "command_name",
    "fmt_int",
    "fmt_ms",
    "jobs_option",
    "listen",
    "literal",
    "max_line_bytes_option",
    "no_capture_files",
    "note",
    "open_captures",
    "open_sources",
    "percentile",
    "plural",
    "read_rollouts",
    "safe_json",
    "safe_text",
    "stderr",
    "stdout",
    "unreadable_note",
]


# C0 and C1 controls and DEL (escape sequences, including 8-bit CSI/OSC), and the
# invisible direction overrides that make text read differently from what it is.
_UNSAFE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str, *, multiline: bool = False) -> str:
    """`text` with every control character shown escaped (`\\x1b`), safe to print.

    Tabs are kept; newlines are kept only when `multiline` (a payload), and escaped in
    a name or a table cell, where a newline could forge a line of output.
    """
    return (_UNSAFE_TEXT if multiline else _UNSAFE_LINE).sub(_escaped, text)


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What JSON writes as it is and a terminal may obey (C0 controls are escaped already)."""


def safe_json(encoded: bytes) -> str:
    """JSON text with DEL, C1 controls and direction overrides written as `\\u` escapes.

    They can only be inside strings, where the escape is the same character: the text
    reads back to the same value, and printed on a terminal it drives nothing.
    """
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded.decode())


def literal(text: str, *, multiline: bool = False) -> Text:
    """Captured `text` for rich: escaped by `safe_text`, and never read as markup."""
    return Text(safe_text(text, multiline=multiline))


def stdout() -> Console:
    """The console for results: as wide as the terminal, or `COLUMNS` (piped too; else 80).

    Tables take their own width (`_table.print_table`): piped without `COLUMNS`, they are
    printed whole at their natural width.
    """
    return Console(highlight=False)


def plural(count: int, noun: str) -> str:
    """`1 line`, `2 lines`, `1,024 lines`: a count and its noun, singular for one."""
    return f"{count:,} {noun if count == 1 else noun + 's'}"


def command_name() -> str:
    """`mcc CMD` for the command running (`mcc` outside one): how its stderr lines start."""
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx is not None else "mcc"


def note(text: str, *, kind: str = "note") -> None:
    """One note on stderr, `mcc CMD: note: text` (or `warning`), yellow on a terminal.

    Every command says what it skipped or could not read this way, never on stdout, so
    stdout stays the result (a table, JSON, a file) for pipes; `--json` outputs carry the
    same notes in their JSON. The text is printed escaped (`safe_text`).
    """
    line = Text(safe_text(f"{command_name()}: {kind}: {text}"), style="yellow")
    stderr().print(line, soft_wrap=True)


class JsonNote(msgspec.Struct, kw_only=True):
    """One note of a `--json` output (`"notes"`), every member present (null: not known).

    The same notes `note` prints on stderr, for a script: what was skipped or read in
    part, where (file and 1-based line, as `mcc validate` and editors show them).
    """

    kind: str
    """`damaged` (a line skipped as unreadable), `newer` (a line of a newer format: the
    rollout is read up to it), `unreadable_file` (a file that could not be read)."""
    rollout: str | None = None
    file: str | None = None
    line: int | None = None
    """The line's number in `file`, from 1, blank lines counted."""
    message: str


def unreadable_note(count: int, directory: str | Path) -> str:
    """The one note of every command on the lines it could not read (for `note`)."""
    return f"{plural(count, 'unreadable line')} skipped (mcc validate {directory} lists them)"


def stderr() -> Console:
    """The console for progress and notes, so stdout stays clean for pipes."""
    return Console(stderr=True, highlight=False)


def capture_root(path: str | Path) -> Path:
    """The capture directory: `path`, or `path/model-calls` (a demo dir) when `path` holds no rollout."""
    root = Path(path)
    if not root.is_dir():
        raise click.ClickException(f"{root}: no such directory")
    nested = root / "model-calls"
    if nested.is_dir() and not CaptureStore(root).has_rollouts():
        return nested
    return root


def no_capture_files(path: str | Path) -> click.ClickException:
    """The one error of every command given a directory without capture files (exit 1)."""
    return click.ClickException(f"{path}: no capture files (*.capture.jsonl) in this directory")


def open_captures(path: str | Path) -> CaptureStore:
    """The store of the capture directory `path` (`capture_root`), refusing one without captures.

    One rule for every command that reads captures (docs/cli.md, "Conventions"): a
    missing directory and a directory with no capture file are each one error line and
    exit code 1, never an empty table or an empty export.
    """
    store = CaptureStore(capture_root(path))
    if not store.has_rollouts():
        raise no_capture_files(path)
    return store


@dataclass(slots=True)
class RolloutRecords:
    """The readable records of one rollout, and how many of its lines could not be read."""

    rollout_id: str
    records: list[ModelCallRecord]
    invalid_count: int


def read_rollouts(root: Path, rollout_ids: Sequence[str] | None = None) -> list[RolloutRecords]:
    """The records of every rollout in `root` (or of `rollout_ids`), in rollout-id order."""
    from ..records import read_available_model_call_records

    store = CaptureStore(root)
    ids = store.rollout_ids() if rollout_ids is None else list(rollout_ids)
    out = []
    for rollout_id in ids:
        records, invalid = read_available_model_call_records(store, rollout_id)
        out.append(RolloutRecords(rollout_id, list(records), invalid))
    return out


def jobs_option() -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The `--jobs N` option shared by the commands that read many files."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes reading files in parallel [default: all cores].",
    )


def max_line_bytes_option() -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The `--max-line-bytes N` option of the commands that read capture files."""
    return click.option(
        "--max-line-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_LINE_BYTES,
        show_default=True,
        help="A longer line is counted as damaged, without being held in memory.",
    )


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank `p`th percentile (a value that occurred); None for no values.

    Sorting makes a transient list of the values (one group's at a time in `mcc stats`).
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a table cell; `-` when unknown."""
    return "-" if value is None else f"{value:,.1f}"


def fmt_int(value: int | None) -> str:
    """A count for a table cell; `-` when unknown."""
    return "-" if value is None else f"{value:,}"


def listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket; bound here so a taken port is one clear error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    sock.set_inheritable(True)
    return sock


@dataclass(frozen=True, slots=True)
class Sources:
    """What a reading command was pointed at: capture directories and files, as rollouts."""

    paths: tuple[str, ...]
    """The paths as the user typed them."""
    rollouts: list[Rollout]
    """Every rollout of each directory, and each file's own rollout, in the order named."""
    store: CaptureStore | None = None
    """The store when the paths are one directory: what a reader keyed by the directory
    (an incremental export's state) is given instead of the rollouts."""

    @property
    def label(self) -> str:
        """The paths, for a note that names what was read (`mcc validate LABEL`)."""
        return " ".join(self.paths)


def open_sources(paths: Sequence[str]) -> Sources:
    """The rollouts of the capture directories and capture files `paths`, as `validate` takes them.

    A directory is read as `capture_root` says (a demo directory's `model-calls/`); a file
    is its own rollout (`store.rollout_of_file`: that file alone, a segment too). A missing
    path, or a file whose name is not a capture file's, is one error line.
    """
    rollouts: list[Rollout] = []
    store = None
    for path in paths:
        if Path(path).is_dir():
            store = open_captures(path)
            rollouts += store.rollouts()
        elif not Path(path).exists():
            raise click.ClickException(f"{path}: no such file or directory")
        else:
            try:
                rollouts.append(rollout_of_file(path))
            except ValueError:
                raise click.ClickException(
                    f"{path}: not a capture file (<rollout_id>.capture.jsonl)"
                ) from None
    return Sources(tuple(paths), rollouts, store if len(paths) == 1 else None)
